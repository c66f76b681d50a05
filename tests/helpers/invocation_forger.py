#!/usr/bin/python3
"""A bwrap wrapper for the matrix's keyring_invocation_forged row (issue 51), run as the unit's process of a
transient unit: it forges systemd's invocation_id key before the sandbox starts.

It finds systemd's key in the unit's session keyring (KEYCTL_SEARCH), reads its 16 bytes (the unit's process
possesses it), unlinks it, adds a "user" key of its own under the same description with the same content, readable
by anyone (so that the probe, outside, reads it as it reads systemd's), then executes the real bwrap with its own
arguments. Type, description and content are systemd's: only the owner (the service user, not uid 0) tells the
forgery apart. x86_64 system call numbers (keyctl 250, add_key 248). Exits 70 when a step fails, naming it.
"""
import ctypes
import os
import sys

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
KEYCTL, ADD_KEY = 250, 248
SESSION_KEYRING = -3
KEYCTL_SETPERM, KEYCTL_UNLINK, KEYCTL_SEARCH, KEYCTL_READ = 5, 9, 10, 11
# possessor: everything; user, group and other: view, read, search
ANYONE_READS = 0x3f0b0b0b


def step(name, value):
    if value < 0:
        sys.stderr.write("invocation forger: %s failed, errno %d\n" % (name, ctypes.get_errno()))
        sys.exit(70)
    return value


def forge():
    real = step("search", LIBC.syscall(KEYCTL, KEYCTL_SEARCH, ctypes.c_long(SESSION_KEYRING), b"user",
                                       b"invocation_id", ctypes.c_long(0)))
    buf = ctypes.create_string_buffer(64)
    size = step("read", LIBC.syscall(KEYCTL, KEYCTL_READ, ctypes.c_long(real), buf, ctypes.c_long(64)))
    step("unlink", LIBC.syscall(KEYCTL, KEYCTL_UNLINK, ctypes.c_long(real), ctypes.c_long(SESSION_KEYRING)))
    forged = step("add_key", LIBC.syscall(ADD_KEY, b"user", b"invocation_id", buf.raw[:size], ctypes.c_long(size),
                                          ctypes.c_long(SESSION_KEYRING)))
    step("setperm", LIBC.syscall(KEYCTL, KEYCTL_SETPERM, ctypes.c_long(forged), ctypes.c_long(ANYONE_READS)))


if __name__ == "__main__":
    forge()
    os.execv("/usr/bin/bwrap", ["/usr/bin/bwrap"] + sys.argv[1:])
