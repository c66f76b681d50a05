"""Real keyrings for tests (attack2 finding 1): ``hold`` gives this process a named session keyring with a secret
key in it (what pam_keyinit or a root unit gives root), ``stolen`` is what code run later reads of its session
keyring (KEYCTL_READ of @s, then KEYCTL_READ of each key, as the attacker's code did). keyctl/add_key through
ctypes (no keyutils package here). As a script: ``hold SECRET -- ARGV...`` holds then execs ARGV; with no
argument, prints ``stolen()`` as JSON (the user's code); ``filter errno|kill -- ARGV...`` (run by /usr/bin/python3,
which has python3-seccomp) loads a real seccomp filter answering keyctl with EPERM or killing it (as systemd's
SystemCallFilter=~@keyring does), then execs ARGV; ``run_as COLLECTIONS UID GID`` runs this file as the user through
base/run_as.py run and call (imported from COLLECTIONS) and prints what each read, as JSON."""
import ctypes
import errno
import json
import os
import sys

KEYCTL = {"x86_64": 250, "aarch64": 219}
ADD_KEY = {"x86_64": 248, "aarch64": 217}
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long


def keyctl(*args):
    return LIBC.syscall(KEYCTL[os.uname()[4]], *args)


def hold(secret):
    """Join a session keyring named "_ses" and add a user key holding ``secret``: (keyring serial, key serial)."""
    ring = keyctl(1, ctypes.c_char_p(b"_ses"))
    assert ring > 0, ctypes.get_errno()
    data = secret.encode()
    key = LIBC.syscall(ADD_KEY[os.uname()[4]], ctypes.c_char_p(b"user"), ctypes.c_char_p(b"metnos-test:secret"),
                       ctypes.c_char_p(data), ctypes.c_size_t(len(data)), ctypes.c_int(-3))
    assert key > 0, ctypes.get_errno()
    return ring, key


def stolen():
    """{"session": the session keyring's serial, "keys": the payloads read from every key linked in it}."""
    serial = keyctl(0, ctypes.c_int(-3), 0)
    buf = ctypes.create_string_buffer(4096)
    size = keyctl(11, ctypes.c_int(-3), buf, 4096)
    linked = [ctypes.c_int32.from_buffer(buf, i).value for i in range(0, max(size, 0) // 4 * 4, 4)]
    keys = []
    for key in linked:
        got = keyctl(11, ctypes.c_int(key), buf, 4096)
        keys.append(buf.raw[:got].decode("utf-8", "replace") if got >= 0 else "error %d" % ctypes.get_errno())
    return {"session": serial, "keys": keys, "uid": os.getuid()}


def stolen_bytes(_arg=None):
    return json.dumps(stolen()).encode()


if __name__ == "__main__":
    if sys.argv[1:2] == ["hold"]:
        hold(sys.argv[2])
        os.execv(sys.argv[4], sys.argv[4:])
    if sys.argv[1:2] == ["filter"]:
        import seccomp  # pylint: disable=import-error
        rules = seccomp.SyscallFilter(seccomp.ALLOW)
        rules.add_rule(seccomp.ERRNO(errno.EPERM) if sys.argv[2] == "errno" else seccomp.KILL, "keyctl")
        rules.load()
        os.execv(sys.argv[4], sys.argv[4:])
    if sys.argv[1:2] == ["run_as"]:
        sys.path.insert(0, sys.argv[2])
        from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import run_as
        uid, gid = int(sys.argv[3]), int(sys.argv[4])
        ran = run_as.run(["/usr/bin/python3", "-I", "-S", os.path.abspath(__file__)], uid, gid)
        called = run_as.call(uid, gid, stolen_bytes, None)
        sys.stdout.write(json.dumps({"run": [ran.rc, ran.stdout.decode(), ran.stderr.decode()],
                                     "call": called.decode()}))
        sys.exit(0)
    sys.stdout.write(json.dumps(stolen()))
