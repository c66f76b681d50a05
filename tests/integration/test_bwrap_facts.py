"""bwrap_facts run for real through Ansible on this host, with real bwrap.

Kernel-side failures are provoked for real: a child user namespace whose
user.max_user_namespaces is 0 (ENOSPC), and seccomp filters that make
clone/unshare(CLONE_NEWUSER) fail (EPERM, EINVAL), loaded by
tests/helpers/seccomp_exec.py with Debian's python3-seccomp.
"""
import os
import pwd
import shutil
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.diagnostics import codes
from conftest import ROOT, run_module

SECCOMP = [shutil.which("python3", path="/usr/bin") or "/usr/bin/python3",
           os.path.join(ROOT, "tests", "helpers", "seccomp_exec.py")]


@pytest.mark.rule("R-DIAG-1")
def test_bwrap_present_is_active(bwrap_path):
    res = run_module("metnos.sandbox.bwrap_facts", {})
    assert res["status"] == {"bwrap_available": True, "bwrap_path": bwrap_path,
                             "disabled_via_env": False, "active": True}
    assert res["userns"]["smoke_test"]["passed"] is True
    assert res["userns"]["smoke_test"]["uid"] != 0, "the smoke test must not run as root"
    assert res["bwrap"]["package"]["name"] == "bubblewrap"
    assert res["verdict"] in ("pass", "warn")
    assert res["changed"] is False
    assert res["ansible_facts"]["metnos_bwrap"]["status"]["active"] is True


@pytest.mark.rule("R-FAIL-1", "R-FAIL-3", "R-SEC-6")
def test_path_without_bwrap_fails_closed():
    res = run_module("metnos.sandbox.bwrap_facts", {"path": "/nonexistent"})
    assert res["status"]["active"] is False
    assert res["status"]["bwrap_available"] is False
    assert {"bwrap_missing", "executor_os_sandbox_unavailable"} <= set(codes(res["diagnostics"]))
    assert res["verdict"] == "fail"


@pytest.mark.rule("R-FAIL-1", "R-FAIL-3")
@pytest.mark.parametrize("value", ["Off", "0", "FALSE", "no"])
def test_metnos_sandbox_disables(value):
    res = run_module("metnos.sandbox.bwrap_facts", {"environment": {"METNOS_SANDBOX": value}, "smoke_test": False})
    assert res["status"]["disabled_via_env"] is True and res["status"]["active"] is False
    assert {"sandbox_disabled_via_env", "executor_os_sandbox_unavailable"} <= set(codes(res["diagnostics"]))


def test_surprising_value_is_a_separate_warning():
    res = run_module("metnos.sandbox.bwrap_facts", {"environment": {"METNOS_SANDBOX": " OFF"}, "smoke_test": False})
    assert res["status"]["disabled_via_env"] is False and res["status"]["active"] is True
    assert "sandbox_env_value_ambiguous" in codes(res["diagnostics"])
    assert "sandbox_disabled_via_env" not in codes(res["diagnostics"])


def test_userns_enospc_in_child_namespace_with_zero_limit():
    """F2 for real: user.max_user_namespaces=0 inside a child user namespace."""
    prefix = ["unshare", "-Ur", "sh", "-c",
              'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "sh"]
    res = run_module("metnos.sandbox.bwrap_facts", {"smoke_user": "root"}, prefix=prefix)
    assert res["userns"]["max_user_namespaces"] == 0
    assert "userns_max_namespaces_zero" in codes(res["diagnostics"])
    assert "bwrap_smoke_failed" in codes(res["diagnostics"])
    assert "smoke_ran_as_root" in codes(res["diagnostics"])
    smoke = res["userns"]["smoke_test"]
    assert smoke["setup_failed"] is True
    assert smoke["classification"]["cause"] == "userns_enospc"


@pytest.mark.parametrize("errno_name,cause", [("EPERM", "userns_eperm"), ("EINVAL", "userns_einval"),
                                              ("ENOSPC", "userns_enospc")])
def test_userns_refused_by_seccomp(errno_name, cause):
    """As on a host/container/unit that forbids user namespaces; run as the unprivileged default user."""
    res = run_module("metnos.sandbox.bwrap_facts", {}, prefix=SECCOMP + [errno_name, "--"])
    assert res["verdict"] == "fail"
    smoke = res["userns"]["smoke_test"]
    assert smoke["user"] == "nobody" and smoke["setup_failed"]
    assert smoke["classification"]["cause"] == cause
    failed = [d for d in res["diagnostics"] if d["code"] == "bwrap_smoke_failed"][0]
    assert failed["details"]["cause"] == cause
    assert failed["remediation"]
    # The sysctls are fine: bwrap_facts must not blame them.
    assert "userns_max_namespaces_zero" not in codes(res["diagnostics"])


def test_bad_options_fail_cleanly():
    res = run_module("metnos.sandbox.bwrap_facts", {"path": 5})
    assert res["failed"] and "path must be a string" in res["msg"]
    assert "Traceback" not in str(res)
    res = run_module("metnos.sandbox.bwrap_facts", {"smoke_user": "no-such-user-x"})
    assert res["failed"] and "no-such-user-x" in res["msg"] and "does not exist" in res["msg"]
    res = run_module("metnos.sandbox.bwrap_facts", {"environment": {"METNOS_SANDBOX": 0}})
    assert res["failed"] and "METNOS_SANDBOX" in res["msg"] and "string" in res["msg"]
    res = run_module("metnos.sandbox.bwrap_facts", {"smoke_tset": True})
    assert res["failed"] and "smoke_tset" in res["msg"]


def test_check_mode_same_result():
    res = run_module("metnos.sandbox.bwrap_facts", {"smoke_test": False}, check=True)
    assert res["changed"] is False and res["status"]["active"] is True


PLANTER = "mtn-bwfacts-%d" % os.getpid()


@pytest.fixture(scope="module")
def planted_bwrap():
    """A real user (useradd) owns <tmp>/bin/bwrap: a shell script that, when anyone runs it, appends its uid to a
    canary file in a 0777 folder beside it (so that root, the user or nobody could leave the trace)."""
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PLANTER], check=True)
    top = tempfile.mkdtemp(prefix="metnos-bwfacts-", dir="/var/tmp")
    try:
        os.chmod(top, 0o755)
        planter = pwd.getpwnam(PLANTER)
        bindir, canary = os.path.join(top, "bin"), os.path.join(top, "canary")
        os.mkdir(bindir, 0o755)
        os.mkdir(canary)
        os.chmod(canary, 0o777)
        script = os.path.join(bindir, "bwrap")
        with open(script, "w") as handle:
            handle.write("#!/bin/sh\nid -u >> %s/ran\nexit 0\n" % canary)
        os.chmod(script, 0o755)
        for path in (bindir, script):
            os.chown(path, planter.pw_uid, planter.pw_gid)
        yield {"bin": bindir, "bwrap": script, "ran": os.path.join(canary, "ran"), "user": planter}
    finally:
        shutil.rmtree(top, ignore_errors=True)
        subprocess.run(["userdel", PLANTER], check=False)


@pytest.mark.rule("R-SEC-6")
@pytest.mark.parametrize("smoke_user", ["root", "nobody", PLANTER])
def test_users_bwrap_is_never_smoke_tested(planted_bwrap, smoke_user):
    """Attack report finding 2: a bwrap on the PATH that its user owns is judged not root's (bwrap_not_run_not_roots)
    and the smoke test is skipped, whoever smoke_user is: nothing of it runs (the canary file stays absent)."""
    ran = planted_bwrap["ran"]
    if os.path.exists(ran):
        os.unlink(ran)
    # canary: the planted file really runs and really leaves its trace when someone executes it
    subprocess.run(["setpriv", "--reuid", str(planted_bwrap["user"].pw_uid), "--regid",
                    str(planted_bwrap["user"].pw_gid), "--clear-groups", planted_bwrap["bwrap"]], check=True)
    with open(ran) as handle:
        assert handle.read().split() == [str(planted_bwrap["user"].pw_uid)]
    os.unlink(ran)

    res = run_module("metnos.sandbox.bwrap_facts", {"path": planted_bwrap["bin"] + ":/usr/bin:/bin",
                                                   "smoke_user": smoke_user})
    assert not os.path.exists(ran), "the user's bwrap ran: uid %s" % open(ran).read().split()
    assert res["bwrap"]["path"] == planted_bwrap["bwrap"]
    assert res["bwrap"]["not_run"], "the user's bwrap must be judged not root's"
    assert "bwrap_not_run_not_roots" in [d["code"] for d in res["diagnostics"]]
    assert res["userns"]["smoke_test"] == {"ran": False, "reason": "not root's"}
    assert res["verdict"] == "fail"
