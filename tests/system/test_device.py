"""A paired Linux device (R-SCOPE-4, the spec's Linux device row) in a real systemd container playing a user's
workstation: playbooks/site.yml with metnos_sandbox_placement: device stores the device profile (the server's plus
--unshare-pid and --new-session) and its probe proves it (the role fails the play otherwise); the sandbox_probe
module's device checks all hold, read by root without CAP_SYS_PTRACE (podman's default) for the service's user; and a
weakened device profile - the stored argv without its PID namespace, or without its own session - is caught with its
own code. The workstation's Metnos client is stood in for by a systemd service (User=metnos) and by the probe
itself, which starts bwrap as that client does: in a process group of its own, killed whole at the deadline."""
import json
import os

import pytest

from conftest import ROOT, podman, run_site, start_host, stop_host

pytestmark = pytest.mark.rule("R-SCOPE-4")

PROFILE = "/etc/metnos/sandbox/profiles/device_proof.json"
MANIFEST = {"name": "device_proof", "origin": "metnos-sandbox-ops/tests", "revision": 1,
            "capabilities": ["fs:read:/srv/notes/**"]}
HOST = {"python_executable": "/usr/bin/python3"}
UNIT = "[Service]\nUser=metnos\nExecStart=/bin/sleep infinity\n"
CORE = "/opt/metnos-device/module_utils"
# The core's device proof in the workstation, as root (no CAP_SYS_PTRACE in the container) starting bwrap as the
# service's user, on the stored profile's argv without the words named.
WEAKENED = r'''
import json, pwd, sys
sys.path.insert(0, "%s")
from metnos_sandbox.base import verdicts
from metnos_sandbox.probe import device
argv = json.load(open("%s"))["argv"]
user = pwd.getpwnam("metnos")
for drop in sys.argv[1:]:
    words = [w for w in argv if w != drop] if drop != "-" else argv
    got = device.prove(device.DeviceProfile(argv=words), "/usr/bin/python3", 20,
                       user={"uid": user.pw_uid, "gid": user.pw_gid})
    print(json.dumps({"drop": drop, "passed": verdicts.probe_passed(got),
                      "codes": sorted(set(d["code"] for d in got["diagnostics"])),
                      "failed": [c["name"] for c in got["checks"] if not c["ok"]]}))
''' % (CORE, PROFILE)


@pytest.fixture(scope="module")
def workstation(tmp_path_factory):
    host = start_host("metnos-device")
    try:
        host.write_many({"/srv/metnos/executors/device_proof/main.py": "print('ok')\n", "/srv/notes/a.txt": "n\n"})
        host.install_unit("svc", UNIT)
        host.sh("mv /etc/systemd/system/metnos-svc.service /etc/systemd/system/metnos.service && "
                "systemctl daemon-reload && systemctl start metnos.service")
        play, recap = run_site(host, {"workstation": {"metnos_sandbox_placement": "device",
                                                      "metnos_sandbox_manifests": [{"manifest": MANIFEST}],
                                                      "metnos_sandbox_host": HOST}},
                               tmp_path_factory.mktemp("device"), "--skip-tags", "bwrap_host_install")
        yield host, play, recap
    finally:
        stop_host(host)


def test_the_device_is_provisioned_with_the_device_profile_and_its_probe_passes(workstation):
    host, play, recap = workstation
    assert play.returncode == 0 and recap["workstation"]["failed"] == 0, play.stdout[-5000:] + play.stderr[-2000:]
    stored = json.loads(host.sh("cat %s" % PROFILE).stdout)
    argv = stored["argv"]
    options = argv[:argv.index("--")]
    assert "--unshare-pid" in options and "--new-session" in options and "--unshare-net" in options
    assert options[options.index("--tmpfs") + 1] == "/tmp"
    assert stored["placement"] == {"placement": "device", "rule": "R-SCOPE-4",
                                   "flags": ["--unshare-pid", "--new-session"], "downgrades": []}


def test_the_probe_module_proves_every_row_of_the_device_profile(workstation):
    host, play, _recap = workstation
    assert play.returncode == 0, play.stdout[-3000:]
    # root here has no CAP_SYS_PTRACE (podman's default set): the service user's links are read with its credentials
    assert not int(host.sh("awk '/^CapEff/ {print $2}' /proc/self/status").stdout.strip(), 16) & (1 << 19)
    got = host.module("metnos.sandbox.sandbox_probe", {"unit": "metnos.service", "timeout": 60,
                                                       "host": dict(HOST, placement="device")})
    assert got["passed"], json.dumps(got.get("diagnostics"))[:3000]
    assert "--unshare-pid" in got["profile"]["argv"]
    checks = dict((c["name"], c) for c in got["device"]["checks"])
    assert sorted(checks) == ["device_deadline_kills_group", "device_network", "device_pid_namespace",
                              "device_private_tmp", "device_process_group"]
    assert all(c["ok"] for c in checks.values()), checks
    pids = checks["device_pid_namespace"]["observed"]
    assert pids["outside"] != pids["probe"] and set(pids["listed_inside"]) <= set(pids["own_namespace"])


def test_a_weakened_device_profile_is_caught(workstation):
    host, play, _recap = workstation
    assert play.returncode == 0, play.stdout[-3000:]
    host.sh("rm -rf /opt/metnos-device && mkdir -p /opt/metnos-device")
    podman("cp", os.path.join(ROOT, "module_utils"), "%s:%s" % (host.name, CORE))
    host.write("/opt/metnos-device/weakened.py", WEAKENED)
    out = host.sh("chmod -R a+rX /opt/metnos-device && python3 /opt/metnos-device/weakened.py - --unshare-pid "
                  "--new-session", timeout=300).stdout
    rows = dict((r["drop"], r) for r in (json.loads(line) for line in out.splitlines() if line.startswith("{")))
    assert rows["-"]["passed"], rows["-"]
    assert rows["--unshare-pid"]["codes"] == ["probe_device_deadline_escaped", "probe_device_pid_shared"], rows
    assert rows["--new-session"]["codes"] == ["probe_device_group_shared"], rows
    # the probe left nothing of the sandbox behind
    assert host.sh("grep -l '^m[dg]-' /proc/[0-9]*/comm 2>/dev/null | wc -l", check=False).stdout.strip() == "0"
