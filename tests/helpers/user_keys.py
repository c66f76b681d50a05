"""Keys in a user's own user keyring (@u), and what a sandbox reaches of them (issue 51).

``python3 user_keys.py add DESCRIPTION VALUE [PERM]``: adds a "user" key to the caller's user keyring (the service
user's: run it as that user), with the hex permissions PERM when given, prints its serial.
``python3 user_keys.py drop SERIAL``: invalidates it (or unlinks it from @u).
``python3 user_keys.py reach``: run inside a sandbox, joins a new session keyring and links every user keyring
/proc/keys shows it by serial (KEYCTL_LINK) into a keyring of its own there, then prints the payload of every
"user" key it can read - the leak, proven by the canary the test planted.
``python3 user_keys.py read``: the same without linking anything: only what its own keyrings already reach
(KeyringMode=shared links the user's @u in a unit's session keyring).
x86_64 system call numbers (keyctl 250, add_key 248).
Used by the matrix's keyring_user_key row (tests/helpers/probe_mutations.py) and
tests/integration/test_probe_keyrings.py.
"""
import ctypes
import sys

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
KEYCTL, ADD_KEY = 250, 248
USER_KEYRING, SESSION_KEYRING = -4, -3


def keyctl(*words):
    return LIBC.syscall(KEYCTL, *[ctypes.c_long(w) if isinstance(w, int) else w for w in words])


def add(description, value, perm=None):
    """``perm``: hex permissions set on the key (KEYCTL_SETPERM), e.g. systemd's 0b0b0000 for its invocation_id key:
    the key is then added to the session keyring (possessed: setattr), linked into @u, given ``perm`` and unlinked
    from the session keyring (a container's session keyring is not the user's: @u there is not possessed)."""
    data = value.encode()
    where = USER_KEYRING if perm is None else SESSION_KEYRING
    serial = LIBC.syscall(ADD_KEY, b"user", description.encode(), data, len(data), ctypes.c_int(where))
    if serial < 0:
        sys.exit("add_key: errno %d" % ctypes.get_errno())
    if perm is not None:
        for step, words in (("link", (8, serial, USER_KEYRING)), ("setperm", (5, serial, int(perm, 16))),
                            ("unlink", (9, serial, SESSION_KEYRING))):     # KEYCTL_LINK, _SETPERM, _UNLINK
            if keyctl(*words) < 0:
                sys.exit("%s: errno %d" % (step, ctypes.get_errno()))
    print(serial)


def drop(serial):
    """Invalidate the key; where this process does not possess it (its session keyring is not the user's: a
    container runtime's, a unit's), only unlink it from @u (its one link: the kernel then collects it)."""
    if keyctl(21, int(serial)) < 0 and keyctl(9, int(serial), USER_KEYRING) < 0:    # KEYCTL_INVALIDATE, _UNLINK
        sys.exit("invalidate and unlink: errno %d" % ctypes.get_errno())


def reach():
    """Join a new session keyring of its own first (whatever session keyring the caller's runner gave it: a CI
    runner's may not take links), then link every user keyring /proc/keys shows, its own included (where the kernel
    gives a new user namespace no @u of its own, its own is the host's), each into a keyring of its own made in the
    session keyring: a keyring holds one link per type and description, so every "_uid.0" linked straight into the
    session keyring would displace the one before (other user namespaces' root keyrings are shown too: the host's
    was lost whenever one of theirs came later in /proc/keys). What did not link is said on stderr."""
    if keyctl(1, None) < 0:                             # KEYCTL_JOIN_SESSION_KEYRING, anonymous
        print("join session keyring: errno %d" % ctypes.get_errno(), file=sys.stderr)
    with open("/proc/keys") as handle:
        lines = [line.split() for line in handle]
    for words in lines:
        if words[7] == "keyring" and words[8].startswith("_uid."):
            holder = LIBC.syscall(ADD_KEY, b"keyring", ("reach-" + words[0]).encode(), None, 0,
                                  ctypes.c_int(SESSION_KEYRING))
            if holder < 0 or keyctl(8, int(words[0], 16), holder) < 0:     # KEYCTL_LINK into the holder
                print("link %s %s: errno %d" % (words[0], words[8], ctypes.get_errno()), file=sys.stderr)
    read()


def read():
    """Print the payload of every "user" key /proc/keys shows that this process may read."""
    with open("/proc/keys") as handle:
        lines = [line.split() for line in handle]
    buf = ctypes.create_string_buffer(256)
    for words in lines:
        if words[7] == "user":
            size = keyctl(11, int(words[0], 16), buf, 256)  # KEYCTL_READ
            if size > 0:
                print(buf.raw[:size].decode("utf-8", "replace"))


if __name__ == "__main__":
    {"add": add, "drop": drop, "reach": reach, "read": read}[sys.argv[1]](*sys.argv[2:])
