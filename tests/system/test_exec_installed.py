"""On a system-test host, after the role: ``metnos-sandbox-exec --profile <a stored profile>`` runs the executor
in the sandbox the profile describes, installed from the collection tarball, never from the checkout (issue 43).

One Debian 12 systemd container (CAP_SYS_ADMIN, as the other system tests' hosts). The built tarball is
installed as a user would (tests/helpers/installed_collection.py: ``ansible-galaxy collection install`` into a
temporary path, a user's environment); the collection's own playbook ``metnos.sandbox.site`` - the installed
one, with only the installed collection and the podman connection on Ansible's path - applies the roles to the
container with one manifest, so the role stores ``/etc/metnos/sandbox/profiles/exec_proof.json`` and installs
the launcher. Then, on the host, the launcher runs that profile as root (it drops to the profile's run_as,
nobody), and the evidence is taken from both
sides: inside, the executor reports its namespaces and what it can see and write; outside, the host's own
namespaces, a secret the profile does not grant, the file the executor wrote where the profile grants writing,
and the launcher's bytes and ``--version`` against the files of the tarball."""
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor.core_install import version_of
from conftest import PODMAN_ENV, ROOT, SYSTEMD_IMAGES, bwrap_image, start_host, stop_host
from helpers import installed_collection
from helpers.ansible_run import ansible_tool

PROFILE = "/etc/metnos/sandbox/profiles/exec_proof.json"
# The executor: what it sees from inside the sandbox, as one JSON line on stdout, and its pid in the one folder
# where the profile lets it write; it waits there for the test to read its namespaces from outside.
MAIN = """import json, os, time
seen = {"ns": dict((n, os.readlink("/proc/self/ns/" + n)) for n in sorted(os.listdir("/proc/self/ns"))
                   if not n.endswith("_for_children")),
        "uid": os.getuid(), "notes": open("/srv/notes/a.txt").read(),
        "secret_visible": os.path.lexists("/srv/secret/token"), "root_home_visible": os.path.lexists("/root/exec.out"),
        "runtime_visible": os.path.exists("/srv/metnos/executors/exec_proof/main.py")}
for name, path in (("notes_writable", "/srv/notes/planted"), ("etc_writable", "/etc/planted")):
    try:
        open(path, "w").write("x")
        seen[name] = True
    except OSError as exc:
        seen[name] = exc.errno
open("/var/lib/metnos/exec-out/proof", "w").write(str(os.getpid()))
for _ in range(600):                       # held until the test has looked at this process from outside
    if os.path.exists("/var/lib/metnos/exec-out/go"):
        break
    time.sleep(0.05)
print(json.dumps(seen))
"""
MANIFEST = {"name": "exec_proof", "origin": "metnos-sandbox-ops/tests", "revision": 1,
            "capabilities": ["fs:read:/srv/notes/**", "fs:write:/var/lib/metnos/exec-out"]}
HOST_NS = ("python3 -c 'import json, os; print(json.dumps(dict((n, os.readlink(\"/proc/self/ns/\" + n)) for n in "
           "os.listdir(\"/proc/self/ns\") if not n.endswith(\"_for_children\"))))'")
# bwrap's flag -> the namespace it makes (the mount namespace is always new)
UNSHARE = {"--unshare-user": "user", "--unshare-ipc": "ipc", "--unshare-uts": "uts", "--unshare-net": "net",
           "--unshare-pid": "pid", "--unshare-cgroup": "cgroup"}


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def _from_tarball(member):
    with tarfile.open(installed_collection.tarball()) as tar:
        handle = tar.extractfile(member)
        assert handle is not None, member
        return handle.read()


@pytest.fixture(scope="module")
def applied():
    top = tempfile.mkdtemp(prefix="metnos-exec-sys-", dir="/var/tmp")
    host = start_host("metnos-exec12", extra=("--cap-add", "SYS_ADMIN"), image=bwrap_image(SYSTEMD_IMAGES["12"]))
    try:
        host.write_many({"/srv/metnos/executors/exec_proof/main.py": MAIN, "/srv/notes/a.txt": "note\n",
                         "/srv/secret/token": "s3cr3t\n"})
        # the executors' user (the role's metnos_sandbox_run_as) owns the folder the profile grants writing
        host.sh("mkdir -p /var/lib/metnos/exec-out && chown nobody:nogroup /var/lib/metnos/exec-out && "
                "chmod 0600 /srv/secret/token")
        collection = installed_collection.install(top)
        project = os.path.join(top, "project")
        inventory = {"all": {"hosts": {"sys": {"ansible_host": host.name}},
                             "vars": {"ansible_connection": "containers.podman.podman",
                                      "ansible_python_interpreter": "/usr/bin/python3"}}}
        variables = {"metnos_sandbox_manifests": [{"manifest": MANIFEST}],
                     "metnos_sandbox_host": {"python_executable": "/usr/bin/python3"},
                     "metnos_sandbox_check_service": False, "metnos_sandbox_probe": False,
                     "metnos_sandbox_run_as": "nobody"}
        for name, doc in (("inventory.json", inventory), ("vars.json", variables)):
            with open(os.path.join(project, name), "w") as handle:
                json.dump(doc, handle)
        # The installed collection and the podman connection plugin only: nothing of the checkout.
        paths = [os.path.join(top, "collections"), os.path.join(ROOT, ".ansible", "collections")]
        assert not os.path.exists(os.path.join(paths[1], "ansible_collections", "metnos"))
        env = installed_collection.user_env(top, ANSIBLE_COLLECTIONS_PATH=os.pathsep.join(paths),
                                            CONTAINERS_CONF=PODMAN_ENV["CONTAINERS_CONF"])
        # bubblewrap is in the image already (tests/integration/test_site.py covers the install)
        play = subprocess.run([ansible_tool("ansible-playbook"), "-i", "inventory.json", "metnos.sandbox.site",
                               "-e", "@vars.json", "--skip-tags", "bwrap_host_install"],
                              capture_output=True, text=True, cwd=project, env=env, timeout=900)
        yield {"host": host, "play": play, "collection": collection}
    finally:
        stop_host(host)
        shutil.rmtree(top, ignore_errors=True)


def test_the_installed_role_stores_the_profile_and_the_tarballs_launcher(applied):
    host, play = applied["host"], applied["play"]
    assert play.returncode == 0, play.stdout[-5000:] + play.stderr[-3000:]
    assert "sys " in play.stdout and " failed=0 " in play.stdout, play.stdout[-3000:]
    stored = json.loads(host.sh("cat %s" % PROFILE).stdout)
    assert stored["argv"][0].endswith("bwrap") and stored["argv"][-1] == "/srv/metnos/executors/exec_proof/main.py"

    core = _from_tarball("plugins/module_utils/metnos_sandbox/profile/descriptors.py")
    version = version_of({"profile/descriptors.py": core})          # the core's release, as the role names it
    launcher = _from_tarball("roles/metnos_sandbox/files/metnos-sandbox-exec")
    said = host.sh("cd / && env -i PATH=/usr/local/sbin:/usr/sbin:/usr/bin metnos-sandbox-exec --version").stdout
    assert said.strip() == "metnos-sandbox-exec %s core sha256 %s" % (version, _sha256(core)), said
    on_host = host.sh("readlink -f \"$(command -v metnos-sandbox-exec)\" && "
                      "sha256sum /usr/local/lib/metnos-sandbox-exec/descriptors.py && "
                      "tail -n +2 /usr/local/lib/metnos-sandbox-exec/metnos-sandbox-exec | sha256sum").stdout.split()
    assert on_host[0] == "/usr/local/lib/metnos-sandbox-exec/metnos-sandbox-exec"
    assert on_host[1] == _sha256(core)
    assert on_host[3] == _sha256(launcher.split(b"\n", 1)[1])         # the tarball's launcher below its shebang
    assert "sha256 %s" % _sha256(core) in play.stdout                  # what the role reported


def test_the_stored_profile_runs_in_the_sandbox_it_describes(applied):
    host = applied["host"]
    assert applied["play"].returncode == 0, applied["play"].stdout[-3000:]
    argv = json.loads(host.sh("cat %s" % PROFILE).stdout)["argv"]
    outside = json.loads(host.sh(HOST_NS).stdout)
    host.sh("rm -rf /var/lib/metnos/exec-out/* /root/exec.*; cd / && setsid sh -c 'env -i "
            "PATH=/usr/local/sbin:/usr/sbin:/usr/bin metnos-sandbox-exec --profile %s >/root/exec.out "
            "2>/root/exec.err; echo $? >/root/exec.rc' </dev/null >/dev/null 2>&1 &" % PROFILE)
    # from outside, while it runs: the executor's process (its pid in the granted folder, checked against the
    # host's /proc) and the namespaces the host's kernel says it is in - read as nobody, the user it runs as (the
    # container's root has no CAP_SYS_PTRACE to read another user's /proc/<pid>/ns)
    seen = json.loads(host.sh(
        "for i in $(seq 300); do test -s /var/lib/metnos/exec-out/proof && break; sleep 0.1; done; "
        "pid=$(cat /var/lib/metnos/exec-out/proof); setpriv --reuid=nobody --regid=nogroup --clear-groups "
        "python3 -c 'import json, os, sys; p = \"/proc/%s/\" % "
        "sys.argv[1]; print(json.dumps({\"cmdline\": open(p + \"cmdline\").read().split(chr(0)), "
        "\"ns\": dict((n, os.readlink(p + \"ns/\" + n)) for n in os.listdir(p + \"ns\"))}))' \"$pid\"",
        timeout=60).stdout)
    host.sh("touch /var/lib/metnos/exec-out/go; for i in $(seq 300); do test -s /root/exec.rc && break; "
            "sleep 0.1; done")
    run = host.sh("cat /root/exec.rc /root/exec.err; echo ---; cat /root/exec.out").stdout
    status, out = run.split("---\n", 1)
    assert status.split("\n", 1)[0] == "0", run
    inside = json.loads(out.strip().splitlines()[-1])
    assert seen["cmdline"][:2] == argv[-2:] and argv[-1] == "/srv/metnos/executors/exec_proof/main.py", seen

    # the namespaces: a new one for each the profile's argv unshares (and the mount namespace), the host's for the rest
    fresh = {"mnt"} | set(UNSHARE[flag] for flag in argv if flag in UNSHARE)
    assert {"mnt", "user", "ipc", "uts", "net"} <= fresh, argv
    assert fresh | {"pid", "cgroup"} <= set(inside["ns"]) and set(inside["ns"]) <= set(seen["ns"]), (inside, seen)
    for name, link in outside.items():
        if name in inside["ns"]:
            assert inside["ns"][name] == seen["ns"][name], (name, inside["ns"], seen["ns"])    # both sides agree
            assert (inside["ns"][name] != link) == (name in fresh), (name, link, inside["ns"][name], argv)
    # what it sees: the granted notes and its own code read-only; not what the profile does not grant
    assert inside["notes"] == "note\n" and inside["runtime_visible"] is True
    assert inside["uid"] == 65534, inside           # started by root, run as the profile's run_as (nobody)
    assert inside["secret_visible"] is False and inside["root_home_visible"] is False, inside
    # EACCES / EROFS / ENOENT: read-only where granted, absent where not
    assert inside["notes_writable"] in (13, 30) and inside["etc_writable"] in (2, 13, 30), inside
    # from outside: nothing planted on the host, the proof where writing is granted
    host.sh("test ! -e /srv/notes/planted && test ! -e /etc/planted && test -s /var/lib/metnos/exec-out/proof && "
            "test -e /root/exec.out && test -s /srv/secret/token")
