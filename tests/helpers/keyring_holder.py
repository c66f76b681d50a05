"""A host process holding a session keyring, for the keyring proof (tests/integration/test_probe_keyrings.py).

``keyring_holder.py host JOIN BWRAP-OPTION...``: joins a new session keyring (JOIN "join"), keeps the one it
was started with ("unit": a transient unit's, systemd's KeyringMode=private; tests/system/
test_probe_weakened_systemd.py) or keeps none ("none"), adds a user key with a canary to its session keyring
(with "none", to its user-session keyring, which every host process of its uid without a session keyring reaches
as its session keyring: never asking for its session keyring, which would install that one as its own, inherited
by bwrap), runs bwrap with the options
given and this file bound at /keyring_holder.py as the command (``inside SERIAL``), then reads back, by the
serial the sandbox printed, the key the sandbox added. Prints one JSON line: what the sandbox read of the host's
key, and what the host read of the sandbox's key. x86_64 system call numbers (add_key 248, keyctl 250).
"""
import ctypes
import json
import os
import subprocess
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SESSION, USER_SESSION = -3, -5


def add_key(description, payload, where=SESSION):
    serial = libc.syscall(248, b"user", description, payload, len(payload), ctypes.c_int(where))
    return serial if serial >= 0 else "error:%d" % ctypes.get_errno()


def read_key(serial):
    buf = ctypes.create_string_buffer(256)
    size = libc.syscall(250, 11, ctypes.c_int(serial), buf, 256)     # KEYCTL_READ
    return buf.raw[:size].decode() if size >= 0 else "error:%d" % ctypes.get_errno()


def host(join, options):
    if join == "join":
        libc.syscall(250, 1, b"metnos-proof-keyring")               # KEYCTL_JOIN_SESSION_KEYRING
    where = USER_SESSION if join == "none" else SESSION
    mine = add_key(b"metnos-host-key", b"host-canary-" + os.urandom(4).hex().encode(), where)
    here = os.path.abspath(__file__)
    done = subprocess.run(["bwrap"] + options + ["--ro-bind", here, "/keyring_holder.py", "--",
                                                 sys.executable, "/keyring_holder.py", "inside", str(mine)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    inside = json.loads(done.stdout.decode() or "{}")
    theirs = inside.get("added")
    seen = {"host_key": mine, "host_payload": read_key(mine) if isinstance(mine, int) else None,
            "inside_read": inside.get("read"), "inside_added": theirs,
            "host_read": read_key(theirs) if isinstance(theirs, int) else None,
            "rc": done.returncode, "stderr": done.stderr.decode()[-400:]}
    if isinstance(mine, int):       # nothing left: the user-session keyring outlives this process (KEYCTL_UNLINK)
        seen["unlinked"] = libc.syscall(250, 9, ctypes.c_int(mine), ctypes.c_int(where))
    print(json.dumps(seen))


def inside(serial):
    read = read_key(int(serial))
    added = add_key(b"metnos-sandbox-key", b"sandbox-canary")
    print(json.dumps({"read": read, "added": added}))


if __name__ == "__main__":
    if sys.argv[1] == "host":
        host(sys.argv[2], sys.argv[3:])
    else:
        inside(sys.argv[2])
