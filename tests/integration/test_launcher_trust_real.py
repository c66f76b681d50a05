"""The installed launcher's interpreter judged again at every audit and monitor run (issue 49, left from the last
session: launcher_installed_not_roots, audit/launcher_trust.py), planted for real: the shipped launcher installed
as the role installs it (root's 0755 folder, its #! line naming a venv's interpreter with -IS, a link to it), a
venv made with ``python3 -m venv``, root's; then, after the install, a user made here with useradd (removed
after) is given the venv in one way each: chown, a group or other write bit, an ACL entry (setfacl), the
interpreter's link swapped for one to the user's own copy, the pyvenv.cfg's home pointed at the user's folder.

Each case: the user can really write there (the canary: a file written as the user with setpriv), and the
audit's check finds it, naming the component, its owner, the launcher and the fix; the clean install has no
finding (so the finding is the plant's); one case goes through the whole audit (host_audit.audit_host) and is in
its report, one through the monitor's run (proof.run, exec_link in its configuration) and is in its stored
result. A launcher not installed is not judged.

Mutations run by hand (each made the tests below fail): launcher_trust.findings without its python_problems call
(the home case and the whole-audit test failed: the pyvenv.cfg and its home are judged only there); host_audit
without the launcher_trust line (the whole-audit and the monitor tests failed)."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit, launcher_trust
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import proof
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec
from helpers import real_user

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("setfacl"),
                                reason="needs root, useradd and setfacl")

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCHER = os.path.join(HERE, "roles", "metnos_sandbox", "files", "metnos-sandbox-exec")


def _install(top):
    """The role's install below ``top`` (root's 0755): venv/ (python3 -m venv, root's), lib/metnos-sandbox-exec
    whose #! line names the venv's interpreter with -IS, and sbin/metnos-sandbox-exec, the link to it."""
    python = os.path.join(top, "venv", "bin", "python3")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", os.path.join(top, "venv")], check=True)
    os.makedirs(os.path.join(top, "lib"))
    os.makedirs(os.path.join(top, "sbin"))
    with open(LAUNCHER) as handle:
        body = handle.read().split("\n", 1)[1]
    launcher = os.path.join(top, "lib", "metnos-sandbox-exec")
    with open(launcher, "w") as handle:
        handle.write("#!%s -IS\n%s" % (python, body))
    os.chmod(launcher, 0o755)
    link = os.path.join(top, "sbin", "metnos-sandbox-exec")
    os.symlink(launcher, link)
    return link


def _chown(top, user):
    subprocess.run(["chown", "-R", "%d:%d" % (user.uid, user.gid), os.path.join(top, "venv")], check=True)
    return "venv", "owned"


def _group_write(top, user):
    folder = os.path.join(top, "venv", "bin")
    os.chown(folder, 0, user.gid)
    os.chmod(folder, 0o775)
    return "venv/bin", "group_writable"


def _other_write(top, user):
    os.chmod(os.path.join(top, "venv"), 0o757)
    return "venv", "world_writable"


def _acl(top, user):
    subprocess.run(["setfacl", "-m", "u:%s:rwx" % user.name, os.path.join(top, "venv", "bin")], check=True)
    return "venv/bin", "acl"


def _link_swap(top, user):
    """The interpreter's link now names the user's own copy of the interpreter."""
    own = os.path.join(top, "users")
    os.mkdir(own)
    shutil.copy("/usr/bin/python3", os.path.join(own, "python3"))
    subprocess.run(["chown", "-R", "%d:%d" % (user.uid, user.gid), own], check=True)
    python = os.path.join(top, "venv", "bin", "python3")
    os.unlink(python)
    os.symlink(os.path.join(own, "python3"), python)
    return "users", "owned"


def _home(top, user):
    """pyvenv.cfg's home names a folder of the user's (the standard library Python would look for there)."""
    own = os.path.join(top, "users")
    os.makedirs(os.path.join(own, "bin"))
    subprocess.run(["chown", "-R", "%d:%d" % (user.uid, user.gid), own], check=True)
    with open(os.path.join(top, "venv", "pyvenv.cfg"), "w") as handle:
        handle.write("home = %s/bin\ninclude-system-site-packages = false\n" % own)
    return "users", "owned"


# (case, plant, where the user writes to prove the plant is real, relative to the install's top)
CASES = [
    ("chown", _chown, "venv/bin"),
    ("group_write", _group_write, "venv/bin"),
    ("other_write", _other_write, "venv"),
    ("acl", _acl, "venv/bin"),
    ("link_swap", _link_swap, "users"),
    ("home", _home, "users/bin"),
]


@pytest.fixture(scope="module")
def user():
    with real_user.made("mslt") as made:
        yield made


@pytest.fixture
def top():
    folder = tempfile.mkdtemp(prefix="metnos-launcher-trust-", dir="/var/tmp")
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _writes_as(user, folder):
    """True when ``user`` can create a file in ``folder`` (setpriv: its uid, gid and groups, nothing else)."""
    proc = subprocess.run(["setpriv", "--reuid", str(user.uid), "--regid", str(user.gid), "--init-groups",
                           "/usr/bin/touch", os.path.join(folder, "planted")], capture_output=True, timeout=30)
    return proc.returncode == 0


def test_a_clean_install_has_no_finding_and_no_launcher_is_not_judged(top, user):
    link = _install(top)
    assert launcher_trust.interpreter(link) == os.path.join(top, "venv", "bin", "python3")
    assert launcher_trust.findings(link) == []
    assert not _writes_as(user, os.path.join(top, "venv", "bin"))
    assert launcher_trust.findings(os.path.join(top, "sbin", "absent")) == []


@pytest.mark.parametrize("case,plant,writable", CASES, ids=[case[0] for case in CASES])
def test_the_audit_finds_an_interpreter_made_someone_elses_after_install(top, user, case, plant, writable):
    link = _install(top)
    named, reason = plant(top, user)
    assert _writes_as(user, os.path.join(top, writable)), "the plant gives the user nothing: %s" % case
    found = launcher_trust.findings(link)
    component = os.path.join(top, named)
    mine = [diag for diag in found if diag["details"]["path"] == component]
    assert mine, [diag["message"] for diag in found]
    assert reason in {_reason(diag) for diag in mine}, found
    diag = [diag for diag in mine if _reason(diag) == reason][0]
    assert diag["code"] == "launcher_installed_not_roots" and diag["severity"] == "error"
    assert diag["details"]["launcher"] == link and diag["details"]["program"].startswith(top)
    assert component in diag["remediation"][0] and component in diag["message"]
    if reason in ("owned", "acl"):           # the owner, or the ACL entry's user, is named
        assert user.name in diag["message"], diag["message"]


def _reason(diag):
    """The reason of a finding, read back from its fix (the variant's command)."""
    command = diag["remediation"][0]
    for reason, start in (("owned", "chown"), ("group_writable", "chmod g-w"), ("world_writable", "chmod o-w"),
                          ("acl", "setfacl")):
        if command.startswith(start):
            return reason
    return "unknown"


def test_the_whole_audit_reports_it(top, user):
    """Through host_audit.audit_host (what the audit's payload and the monitor run), no unit, no probe."""
    link = _install(top)
    _chown(top, user)
    params = spec.with_defaults(spec.AUDIT, {"unit": "", "probe": False, "exec_link": link,
                                             "monitor_result": os.path.join(top, "no-monitor.json")})
    result = host_audit.audit_host(params)
    found = [diag for diag in result["diagnostics"] if diag["code"] == "launcher_installed_not_roots"]
    assert found and result["verdict"] == "fail", result["diagnostics"]
    assert {diag["details"]["path"] for diag in found} >= {os.path.join(top, "venv"),
                                                            os.path.join(top, "venv", "pyvenv.cfg")}


def test_the_monitors_run_reports_it(top, user):
    """proof.run, the monitor's timer run, with the configuration the role writes (exec_link in it): the ACL case
    is in its stored result and it is not proven."""
    link = _install(top)
    _acl(top, user)
    config = os.path.join(top, "config.json")
    with open(config, "w") as handle:
        json.dump({"schema": proof.CONFIG_SCHEMA, "audit": {"unit": "", "probe": True, "timeout": 30.0,
                                                            "profile_dir": os.path.join(top, "profiles"),
                                                            "exec_link": link}}, handle)
    os.chmod(config, 0o600)
    os.mkdir(os.path.join(top, "textfile"))
    outputs = proof.Outputs(os.path.join(top, "textfile"), os.path.join(top, "last.json"), lambda fields: None)
    _status, record = proof.run(config, outputs)
    found = [diag for diag in record["audit"]["diagnostics"] if diag["code"] == "launcher_installed_not_roots"]
    assert [diag["details"]["path"] for diag in found] == [os.path.join(top, "venv", "bin")], found
    assert record["proven"] is False and "setfacl -b" in found[0]["remediation"][0]
