"""Root's session keyring never reaches the code of the user root runs (attack2 finding 1), planted for real: a
root process joins a session keyring holding a secret key (what pam_keyinit's ``su -l``/``login`` or a root unit
give root), then runs a real user's code (made with useradd, removed after) through base/run_as.py ``run``
(setpriv) and ``call`` (a forked drop). That code reads its session keyring and every key in it with keyctl
(tests/helpers/keyrings_real.py, through ctypes). Canary: the same code started with run_as.command's setpriv argv
alone (no keyring of its own) reads the secret. Through run and call it finds a keyring of its own, no key.

Mutations run by hand: run_as._fresh_keyring returning at once (no join): run and call both read the secret and
this test fails; join_session_keyring's serial check inverted: run gives rc 127 session_keyring_kept, fails."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import run_as
from helpers import forked, keyrings_real, real_user

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd"), reason="needs root and useradd")

SECRET = "metnos-root-only-canary-secret"
HELPER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers", "keyrings_real.py")


def _in_root_session(script, user):
    """Fork; the child joins a session keyring with SECRET in it and gives back what the user's code read through
    plain setpriv (the canary), run_as.run and run_as.call."""
    def read_as_user():
        keyrings_real.hold(SECRET)
        argv = ["/usr/bin/python3", "-I", "-S", script]
        plain = subprocess.run(run_as.command(argv, user.uid, user.gid), capture_output=True, timeout=60)
        ran = run_as.run(argv, user.uid, user.gid)
        called = run_as.call(user.uid, user.gid, keyrings_real.stolen_bytes, None)
        return {"plain": plain.stdout.decode(), "run": [ran.rc, ran.stdout.decode(), ran.stderr.decode()],
                "call": called.decode(), "root": keyrings_real.stolen()}
    return forked.answer_of_child(read_as_user)


def _planted_helper():
    """(its folder, its path): the helper copied where every user can read it (/var/tmp, 0755 folder, 0644 file),
    so the test user's code runs it; the caller removes the folder."""
    top = tempfile.mkdtemp(prefix="metnos-keyring-", dir="/var/tmp")
    os.chmod(top, 0o755)
    script = os.path.join(top, "steal.py")
    shutil.copy(HELPER, script)
    os.chmod(script, 0o644)
    return top, script


def test_run_as_gives_the_users_code_a_keyring_of_its_own():
    top, script = _planted_helper()
    try:
        with real_user.made("mskr") as user:
            seen = _in_root_session(script, user)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    assert SECRET in seen["root"]["keys"], seen["root"]                # root holds it
    plain = json.loads(seen["plain"])
    assert plain["keys"] == [SECRET] and plain["uid"] == user.uid, plain      # canary: plain setpriv leaks it
    rc, out, err = seen["run"]
    assert rc == 0, err
    ran = json.loads(out)
    assert ran["uid"] == user.uid and ran["keys"] == [] and ran["session"] != plain["session"], ran
    called = json.loads(seen["call"])
    assert called["uid"] == user.uid and called["keys"] == [] and called["session"] != plain["session"], called


@pytest.mark.parametrize("action", ["errno", "kill"])
def test_under_a_keyctl_filter_run_as_never_guesses(action):
    """Root holding a secret in its session keyring runs run_as.run and run_as.call under a real seccomp filter on
    keyctl (libseccomp for /usr/bin/python3, as SystemCallFilter=~@keyring loads one): answered EPERM, no keyring
    is reachable (proven in a child) and the user's code runs, reading no key; a filter that kills keyctl is
    refused (run: rc 127 session_keyring_kept, call: no answer), root's process itself never killed. Mutation run
    by hand: keyring_plan returning JOIN under a filter: the kill case's child dies by SIGSYS (rc -31, no code) and
    the errno case is refused: both fail."""
    if subprocess.run(["/usr/bin/python3", "-c", "import seccomp"], capture_output=True).returncode:
        pytest.skip("no python3-seccomp for /usr/bin/python3")
    collections = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                               "collections")
    top, script = _planted_helper()
    try:
        with real_user.made("mskf") as user:
            proc = subprocess.run(["/usr/bin/python3", "-I", "-S", script, "hold", SECRET, "--",
                                   "/usr/bin/python3", "-I", script, "filter", action, "--",
                                   "/usr/bin/python3", "-I", script, "run_as", collections, str(user.uid),
                                   str(user.gid)], capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    seen = json.loads(proc.stdout)
    rc, out, err = seen["run"]
    if action == "kill":
        assert rc == 127 and err.startswith("session_keyring_kept: keyctl kills"), seen
        assert seen["call"] == "", seen
    else:
        assert rc == 0, err
        assert json.loads(out)["keys"] == [] and json.loads(out)["uid"] == user.uid, out
        assert json.loads(seen["call"])["keys"] == [], seen
