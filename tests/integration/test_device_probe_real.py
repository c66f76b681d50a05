"""A paired Linux device's profile (R-SCOPE-4) proven in real bwrap, as root and as nobody (setpriv before the
probe, which then starts bwrap as nobody, as a device's client running as its user does): the rendered device
profile passes every check of probe/device.py, and each weakened profile is caught with its own code - no PID
namespace (probe_device_pid_shared, and the planted process outlives the deadline: probe_device_deadline_escaped),
a shared process group (probe_device_group_shared), the host's /tmp or the host's network
(probe_device_check_failed). Real processes, real namespaces, the host's real /proc: nothing is faked."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.verdicts import probe_passed
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import device, run
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import host_context, renderer

pytestmark = [pytest.mark.skipif(not shutil.which("bwrap") or os.geteuid() != 0, reason="needs bwrap and root"),
              pytest.mark.rule("R-SCOPE-4")]

CORE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "module_utils")
PYTHON = "/usr/bin/python3"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
# The device's proof run by nobody: the bare core (relative imports), as the audit's payload runs it.
AS_NOBODY = ("import json, sys; sys.path.insert(0, sys.argv[1]); from metnos_sandbox.probe import device; "
             "profile = device.DeviceProfile(argv=json.loads(sys.argv[2]), host_network=sys.argv[4] == 'host'); "
             "print(json.dumps(device.prove(profile, sys.argv[3], 20)))")


@pytest.fixture(scope="module")
def tree():
    root = tempfile.mkdtemp(prefix="metnos-device-", dir="/var/tmp")
    os.chmod(root, 0o755)
    for folder in ("runtime", "venv/lib", "executors/ex"):
        os.makedirs(os.path.join(root, folder))
    yield root
    shutil.rmtree(root)


def rendered(tree, caps=(), placement="device"):
    host = host_context.HostContext({
        "runtime_dir": tree + "/runtime", "executors_dir": tree + "/executors", "python_executable": PYTHON,
        "python_prefix": tree + "/venv", "python_package_roots": [tree + "/venv/lib"], "i18n_dbs": [],
        "lexicon_dbs": [], "writable_roots": [tree], "placement": placement})
    prof = renderer.render_safe({"name": "ex", "origin": "metnos/core", "revision": 1, "capabilities": list(caps)},
                                host, {}, None, None)
    assert prof["decision"] == "wrapped", prof["diagnostics"]
    assert not prof["descriptors"]
    return prof


def prove(argv, user, host_network=False):
    if user == "root":
        return device.prove(device.DeviceProfile(argv=argv, host_network=host_network), PYTHON, 20)
    out = subprocess.run(NOBODY + [PYTHON, "-I", "-c", AS_NOBODY, CORE, json.dumps(argv), PYTHON,
                                   "host" if host_network else "none"],
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


# Root without CAP_SYS_PTRACE (root in a container) starting bwrap as nobody (the service's user): the payload's
# namespace links are refused to root and read with the payload's own credentials.
AS_ROOT_WITHOUT_PTRACE = ("import json, sys; sys.path.insert(0, sys.argv[1]); from metnos_sandbox.probe import device; "
                          "profile = device.DeviceProfile(argv=json.loads(sys.argv[2])); "
                          "print(json.dumps(device.prove(profile, sys.argv[3], 20, "
                          "user={'uid': 65534, 'gid': 65534})))")


def prove_without_ptrace(argv):
    out = subprocess.run(["capsh", "--drop=cap_sys_ptrace", "--", "-c", 'exec "$0" "$@"', PYTHON, "-I", "-c",
                          AS_ROOT_WITHOUT_PTRACE, CORE, json.dumps(argv), PYTHON],
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def codes(result):
    return sorted(set(d["code"] for d in result["diagnostics"]))


def failed(result):
    return sorted(c["name"] for c in result["checks"] if not c["ok"])


def without(argv, *words):
    out = list(argv)
    for word in words:
        out.remove(word)
    return out


USERS = ["root", "nobody"]


@pytest.mark.parametrize("user", USERS)
def test_the_rendered_device_profile_is_proven(tree, user):
    result = prove(rendered(tree)["argv"], user)
    assert probe_passed(result), result
    assert [c["name"] for c in result["checks"]] == [
        "device_pid_namespace", "device_process_group", "device_network", "device_private_tmp",
        "device_deadline_kills_group"]
    pids = result["checks"][0]["observed"]
    assert pids["outside"] != pids["probe"] and set(pids["listed_inside"]) <= set(pids["own_namespace"])


@pytest.mark.parametrize("user", USERS)
def test_a_device_profile_that_keeps_the_host_network_is_proven_with_it(tree, user):
    argv = rendered(tree, ["net:http"])["argv"]
    assert "--unshare-net" not in argv
    result = prove(argv, user, host_network=True)
    assert probe_passed(result), result


@pytest.mark.parametrize("user", USERS)
def test_without_a_pid_namespace_host_processes_are_seen_and_the_planted_process_outlives_the_deadline(tree, user):
    result = prove(without(rendered(tree)["argv"], "--unshare-pid"), user)
    assert not probe_passed(result)
    assert codes(result) == ["probe_device_deadline_escaped", "probe_device_pid_shared"]
    survivors = [c for c in result["checks"] if c["name"] == "device_deadline_kills_group"][0]["observed"]
    assert survivors["comms"] and all(c.startswith("mg-") for c in survivors["comms"])
    assert not [pid for pid in survivors["survivors"] if os.path.exists("/proc/%d" % pid)
                and open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] != "Z"], "left behind"


@pytest.mark.parametrize("user", USERS)
def test_a_shared_process_group_is_caught(tree, user):
    result = prove(without(rendered(tree)["argv"], "--new-session"), user)
    assert codes(result) == ["probe_device_group_shared"], result["diagnostics"]
    group = [c for c in result["checks"] if c["name"] == "device_process_group"][0]["observed"]
    assert group["payload"]["pgrp"] == group["bwrap"]["pgrp"]


@pytest.mark.parametrize("user", USERS)
def test_the_hosts_tmp_is_caught(tree, user):
    argv = rendered(tree)["argv"]
    at = argv.index("--tmpfs")
    argv = argv[:at] + ["--bind", "/tmp", "/tmp"] + argv[at + 2:]
    result = prove(argv, user)
    assert codes(result) == ["probe_device_check_failed"] and failed(result) == ["device_private_tmp"]


@pytest.mark.parametrize("user", USERS)
def test_a_network_the_profile_does_not_keep_is_caught(tree, user):
    result = prove(without(rendered(tree)["argv"], "--unshare-net"), user)
    assert codes(result) == ["probe_device_check_failed"] and failed(result) == ["device_network"]


def test_a_server_profile_run_as_a_device_fails_on_both_rows(tree):
    """The server profile has neither flag: the sandbox sees the host's processes and stays in bwrap's process
    group - which is also why the deadline's SIGKILL to that group still reaches the planted process."""
    result = prove(rendered(tree, placement="server")["argv"], "root")
    assert codes(result) == ["probe_device_group_shared", "probe_device_pid_shared"]


def test_probe_service_proves_a_device_host_and_leaves_a_server_as_it_was(tree):
    params = {"unit": None, "timeout": 30, "context": "direct",
              "host": {"python_executable": PYTHON, "python_prefix": tree + "/venv",
                       "executors_dir": tree + "/executors", "runtime_dir": tree + "/runtime", "placement": "device"}}
    got = run.probe_service(params, bwrap.default_runner)
    assert got["passed"], got["diagnostics"]
    assert "--unshare-pid" in got["profile"]["argv"] and probe_passed(got["device"])
    params["host"]["placement"] = "server"
    got = run.probe_service(params, bwrap.default_runner)
    assert got["passed"] and "device" not in got


@pytest.mark.skipif(not shutil.which("capsh"), reason="needs capsh")
def test_root_without_cap_sys_ptrace_proves_the_service_users_sandbox_and_catches_a_weakened_one(tree):
    argv = rendered(tree)["argv"]
    result = prove_without_ptrace(argv)
    assert probe_passed(result), result
    result = prove_without_ptrace(without(argv, "--unshare-pid"))
    assert codes(result) == ["probe_device_deadline_escaped", "probe_device_pid_shared"]


def test_a_declared_downgrade_is_reported_as_declared_and_excuses_only_its_own_flag(tree):
    reason = "this client's platform gives no PID namespace"
    argv = without(rendered(tree)["argv"], "--unshare-pid")
    result = device.prove(device.DeviceProfile(argv=argv, downgrades=[{"flag": "--unshare-pid", "reason": reason}]),
                          PYTHON, 20)
    assert probe_passed(result) and codes(result) == ["device_profile_downgraded"], result["diagnostics"]
    assert all(d["severity"] == "warning" and reason in d["message"] for d in result["diagnostics"])
    excused = [c for c in result["checks"] if not c["ok"]]
    assert sorted(c["name"] for c in excused) == ["device_deadline_kills_group", "device_pid_namespace"]
    assert all(c["declared_downgrade"] == {"flag": "--unshare-pid", "reason": reason} for c in excused)
    # declaring the other flag excuses nothing of this one
    result = device.prove(device.DeviceProfile(argv=argv, downgrades=[{"flag": "--new-session", "reason": reason}]),
                          PYTHON, 20)
    assert not probe_passed(result)
    assert codes(result) == ["probe_device_deadline_escaped", "probe_device_pid_shared"]


def test_probe_service_reports_a_declared_downgrade_without_failing(tree):
    reason = "this client's platform gives no PID namespace"
    params = {"unit": None, "timeout": 30, "context": "direct",
              "host": {"python_executable": PYTHON, "python_prefix": tree + "/venv",
                       "executors_dir": tree + "/executors", "runtime_dir": tree + "/runtime", "placement": "device",
                       "device_downgrades": [{"flag": "--unshare-pid", "reason": reason}]}}
    got = run.probe_service(params, bwrap.default_runner)
    assert "--unshare-pid" not in got["profile"]["argv"]
    assert got["passed"], got["diagnostics"]
    assert set(d["code"] for d in got["diagnostics"]) == {"device_profile_downgraded"}


@pytest.mark.parametrize("argv", [["/nonexistent/bwrap", "--"], ["bwrap", "--ro-bind", "/nonexistent", "/x", "--"]],
                         ids=["no_bwrap", "setup_fails"])
def test_a_payload_that_never_reports_fails_and_leaves_nothing(argv):
    before = set(n for n in os.listdir("/tmp") if n.startswith(".metnos-"))
    result = device.prove(device.DeviceProfile(argv=argv), PYTHON, 10)
    assert not probe_passed(result) and codes(result) == ["probe_device_check_failed"]
    assert failed(result) == ["device_payload"]
    assert set(n for n in os.listdir("/tmp") if n.startswith(".metnos-")) == before
