#!/usr/bin/python3
"""Plant a real kernel-side user-namespace failure, then exec a command.

Usage: /usr/bin/python3 seccomp_exec.py ERRNO -- CMD [ARGS...]

Loads a seccomp filter that makes unshare()/clone() with CLONE_NEWUSER fail
with ERRNO (EPERM, ENOSPC or EINVAL), as a host with user namespaces disabled,
a container's default seccomp profile, or systemd's RestrictNamespaces= would.
clone3() returns ENOSYS so that libc falls back to clone(), whose flags a
filter can inspect. Needs Debian's python3-seccomp (system Python).
"""
import errno
import os
import sys

import seccomp

CLONE_NEWUSER = 0x10000000


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        sys.exit("usage: seccomp_exec.py EPERM|ENOSPC|EINVAL -- CMD [ARGS...]")
    code = getattr(errno, argv[1])
    filt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for call in ("unshare", "clone"):
        filt.add_rule(seccomp.ERRNO(code), call,
                      seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
    filt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    filt.load()
    os.execvp(argv[3], argv[3:])


if __name__ == "__main__":
    main(sys.argv)
