# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The in-sandbox half of root's proof (root_proof.py): run alone (its own source, ``python -I -S -c``) as the
command of the profile's bwrap argv, it tries what root's capabilities in the sandbox's user namespace allow,
without harming the host:

* a remount of a read-only bind writable - ``mount(2)`` with MS_REMOUNT|MS_BIND, which changes only the flags of
  that mount in the sandbox's own mount namespace (never the filesystem's: MS_REMOUNT without MS_BIND would), and
  nothing is written through it;
* a file of /proc/sys opened for writing - opened, held open for the outside to see, never written.

It prints one JSON line (what it saw), holds the descriptor and the mount while the outside reads its
/proc/PID from the host, and exits when a line arrives on stdin (or stdin closes). Stdlib only.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import os
import sys
from typing import Any, Dict, List, Optional

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
KEPT = (("nosuid", MS_NOSUID), ("nodev", MS_NODEV), ("noexec", MS_NOEXEC))
SYS_FILE = "/proc/sys/kernel/core_pattern"


def mount_options(target: str, mountinfo: str = "/proc/self/mountinfo") -> Optional[List[str]]:
    """The per-mount options of the topmost mount at ``target`` in ``mountinfo`` (None: not a mount point)."""
    found = None
    try:
        with open(mountinfo) as handle:
            for line in handle:
                fields = line.split()
                if len(fields) > 5 and fields[4] == target:
                    found = fields[5].split(",")
    except (IOError, OSError):
        return None
    return found


def remount_writable(target: str, c: Any) -> Dict[str, Any]:
    """mount(NULL, target, NULL, MS_REMOUNT|MS_BIND|<kept flags>): the bind's own flags, writable. ``c``: the
    ctypes package, imported only where the witness runs alone (an audited host's core imports no ctypes)."""
    before = mount_options(target)
    flags = MS_REMOUNT | MS_BIND
    for name, bit in KEPT:
        if before and name in before:
            flags |= bit
    libc = c.CDLL(None, use_errno=True)
    rc = libc.mount(None, target.encode(), None, c.c_ulong(flags), None)
    errno = c.get_errno() if rc != 0 else 0
    return {"target": target, "before": before, "rc": rc, "errno": errno,
            "error": os.strerror(errno) if errno else None, "after": mount_options(target)}


def open_for_writing(path: str) -> Dict[str, Any]:
    """open(path, O_WRONLY) and keep the descriptor (never written): {"fd"} or {"error"}."""
    try:
        return {"path": path, "fd": os.open(path, os.O_WRONLY | os.O_CLOEXEC)}
    except OSError as exc:
        return {"path": path, "fd": None, "error": exc.strerror or str(exc)}


def main(args: List[str], c: Any) -> int:
    target = args[0] if args else "/usr"
    seen = {"pid": os.getpid(), "uid": os.getuid(), "remount": remount_writable(target, c),
            "sys": open_for_writing(SYS_FILE)}
    sys.stdout.write(json.dumps(seen, sort_keys=True) + "\n")
    sys.stdout.flush()
    sys.stdin.readline()                 # held until the outside has read this process's /proc
    return 0


if __name__ == "__main__":
    import ctypes
    raise SystemExit(main(sys.argv[1:], ctypes))
