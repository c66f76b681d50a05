"""Keyrings are not namespaced (issue 51), the leak proven from outside: a host process that holds a session
keyring starts the real bwrap under the strict profile; the sandbox reads the host's key by its serial, and the
host reads back the key the sandbox added to the session keyring they share - as root and as nobody. The control:
the same host process without a session keyring of its own (the kernel then gives the sandbox's user namespace a
user-session keyring of its own) shares nothing. That the probe fails the shared keyring with its own codes is the
matrix's row keyring_joined (tests/integration/test_probe_matrix.py); this file also runs the probe on the same
plant from a holder (the row's wrapper) and on a clean start."""
import json
import os
import pwd
import shutil
import subprocess
import tempfile

import pytest

from helpers import probe_mutations

HOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers", "keyring_holder.py")
pytestmark = pytest.mark.skipif(os.uname()[4] != "x86_64", reason="the holder uses x86_64 system call numbers")


@pytest.fixture(scope="module")
def holder():
    where = tempfile.mkdtemp(prefix="metnos-keyring-")
    os.chmod(where, 0o755)
    path = os.path.join(where, "keyring_holder.py")
    shutil.copy(HOLDER, path)
    os.chmod(path, 0o644)
    yield path
    shutil.rmtree(where)


def _hold(holder, user, join):
    argv = probe_mutations.strict_profile()["argv"]
    command = [probe_mutations.PYTHON, holder, "host", join] + argv[1:argv.index("--")]
    if user != "root":
        entry = pwd.getpwnam(user)
        command = ["setpriv", "--reuid", str(entry.pw_uid), "--regid", str(entry.pw_gid), "--clear-groups",
                   "--"] + command
    done = subprocess.run(command, capture_output=True, timeout=90)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.decode().splitlines()[-1])


@pytest.mark.parametrize("user", probe_mutations.USERS)
def test_a_shared_session_keyring_carries_keys_both_ways(holder, user):
    seen = _hold(holder, user, "join")
    assert seen["rc"] == 0, seen
    # the canary: the host's key payload, read inside by its serial
    assert seen["host_payload"].startswith("host-canary-") and seen["inside_read"] == seen["host_payload"], seen
    # and the sandbox's key, read by the host after the sandbox is gone
    assert seen["host_read"] == "sandbox-canary", seen


@pytest.mark.parametrize("user", probe_mutations.USERS)
def test_without_a_session_keyring_nothing_is_shared(holder, user):
    seen = _hold(holder, user, "none")
    assert seen["rc"] == 0, seen
    assert seen["host_payload"].startswith("host-canary-"), seen
    assert str(seen["inside_read"]).startswith("error:"), seen
    assert isinstance(seen["inside_added"], int) and str(seen["host_read"]).startswith("error:"), seen
    # and the holder's key is unlinked from the host's user-session keyring (which outlives the holder)
    assert seen["unlinked"] == 0, seen


@pytest.mark.parametrize("user", probe_mutations.USERS)
def test_the_service_users_own_user_keyring_is_reached_by_serial(user):
    """The matrix's keyring_user_key row, the leak proven from outside: a key planted in the user's own user
    keyring (@u, the host's) before the packaged bwrap runs the strict profile as that user; the sandbox finds the
    keyring's serial in /proc/keys, links it into its own session keyring and reads the key: the host gets the
    canary back. The control: once the key is invalidated, the same sandbox reads nothing."""
    canary = "metnos-canary-%s" % os.urandom(6).hex()
    argv = probe_mutations.strict_profile()["argv"]
    with open(probe_mutations.USER_KEYS) as handle:
        reach = [probe_mutations.PYTHON, "-c", handle.read(), "reach"]
    command = probe_mutations.as_user(user, [argv[0]] + argv[1:argv.index("--")] + ["--"] + reach)
    undo = probe_mutations.user_key(canary)(user)
    try:
        done = subprocess.run(command, capture_output=True, timeout=60)
    finally:
        undo()
    assert done.returncode == 0, done.stderr
    assert canary in done.stdout.decode().split(), (done.stdout, done.stderr)
    after = subprocess.run(command, capture_output=True, timeout=60)
    assert after.returncode == 0 and canary not in after.stdout.decode(), after
