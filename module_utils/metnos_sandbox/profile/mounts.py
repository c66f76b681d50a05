# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's mount table and the aliases it creates: one folder reachable under several paths.

A bind mount (fstab ``/data/metnos /srv/metnos none bind``, systemd ``BindPaths=``, a container
volume, ``mount --bind /etc /backup/etc``) makes a folder reachable under another path, and
``os.path.realpath`` cannot see it: it resolves symlinks, not mounts. The renderer judges trees
through their aliases too (docs/profile-invariants.md), from evidence outside any path text:
``/proc/self/mountinfo``, where every mount names its filesystem (``major:minor``) and the folder
of that filesystem it shows (``root``).

A path's *identity* is (filesystem, folder within it), taken from every mount whose mount point is
the path or one of its ancestors (all of them, not only the topmost: stacked or hidden mounts then
add aliases, never remove one). Its *aliases* are every other path showing the same folder: for
each mount of the same filesystem whose root is the folder or one of its ancestors, the mount point
plus the rest of the folder. With ``parts``, a mount showing a folder *below* it is an alias of a
part of it, and so is every other path showing a folder mounted *inside* it (under any of its names).

Each mount also names its filesystem type: ``pseudo`` holds the mount points of the kernel's
pseudo-filesystems (PSEUDO_FSTYPES: proc, sysfs, cgroup, ...), which a writable grant must not
reach (bwrap binds recursively: a procfs or cgroup2 mount below a granted folder comes along).
Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import bisect
import os
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ..base import paths
from ..base.records import Record
from ..host import mountinfo

MOUNTINFO = "/proc/self/mountinfo"
MAX_MOUNTINFO_BYTES = 64 * 1024 * 1024      # ~100,000 mounts; beyond it the table is not judged complete
# The kernel's pseudo-filesystems: each shows kernel state or kernel objects, not files, and writing
# into one changes the host (cgroup membership and limits, sysctls, EFI variables, BPF pins, kernel
# configuration items, ...). Every in-tree one of Linux 6.x that can be mounted; a writable grant at,
# below or above a mount of any of them is refused (docs/profile-invariants.md).
PSEUDO_FSTYPES = frozenset((
    "proc", "sysfs", "cgroup", "cgroup2", "cpuset", "debugfs", "tracefs", "bpf", "securityfs", "configfs",
    "devpts", "devtmpfs", "mqueue", "efivarfs", "pstore", "binfmt_misc", "fusectl", "hugetlbfs", "autofs",
    "nsfs", "rpc_pipefs", "nfsd", "selinuxfs", "smackfs", "binder", "resctrl", "sockfs", "pipefs", "bdev",
    "anon_inodefs", "dax", "ipathfs", "qibfs", "spufs", "xenfs", "openpromfs", "gadgetfs", "functionfs",
    "ocfs2_dlmfs"))


def _join(point: str, rest: str) -> str:
    """point + rest, rest being '' or '/...'."""
    return (point.rstrip("/") + rest) or "/"


def _rest(folder: str, root: str) -> str:
    """What ``folder`` adds below ``root`` ('' or '/...'); folder is at or below root."""
    if root == "/":
        return "" if folder == "/" else folder
    return folder[len(root):]


class Mount(Record):
    """One line of mountinfo: the filesystem (``major:minor``), the folder of it shown (``root``),
    where (``point``) and the filesystem type."""
    fs: bytes
    root: str
    point: str
    fstype: str = ""


class Identity(Record):
    """What a path shows: a filesystem and a folder within it."""
    fs: bytes
    folder: str


class MountTable(object):
    """Mounts as (filesystem, root, mount point), indexed by mount point and by filesystem.

    ``complete`` is False when the table could not be read whole (too large); an unreadable table
    (no /proc, e.g. a controller that only previews) is empty and complete: no alias is known."""

    __slots__ = ("by_point", "by_fs", "complete", "count", "pseudo", "pseudo_type", "types", "_sorted")

    def __init__(self, entries: Iterable[Sequence[object]] = (), complete: bool = True) -> None:
        self.by_point: Dict[str, List[Tuple[bytes, str]]] = {}
        self.by_fs: Dict[bytes, List[Tuple[str, str]]] = {}
        self.pseudo_type: Dict[str, str] = {}
        self.types: Dict[str, str] = {}          # every mount point's type, the top mount's ('' when unknown)
        self._sorted: Optional[List[str]] = None
        self.count = 0
        self.complete = complete
        for entry in entries:
            fs, root, point = entry[0], entry[1], entry[2]
            if not (isinstance(fs, bytes) and isinstance(root, str) and isinstance(point, str)):
                raise AssertionError("a mount table entry of unexpected types: %r" % (entry,))
            fstype = entry[3] if len(entry) > 3 else ""
            if fstype in PSEUDO_FSTYPES and point.startswith("/"):
                self.pseudo_type.setdefault(point, str(fstype))
            if point.startswith("/"):
                self.types[point] = str(fstype)
            if not root.startswith("/") or not point.startswith("/"):
                continue                     # nsfs and other roots that are not folders
            self.by_point.setdefault(point, []).append((fs, root))
            self.by_fs.setdefault(fs, []).append((root, point))
            self.count += 1
        self.pseudo = paths.RelatedRoots(self.pseudo_type)

    def pseudo_related(self, path: str) -> Optional[Tuple[str, str]]:
        """(mount point, type) of a pseudo-filesystem mounted at, below or above ``path``, or None."""
        if not self.pseudo.related(path):
            return None
        for point in sorted(self.pseudo_type):
            if paths.related(path, point):
                return point, self.pseudo_type[point]
        return None

    @classmethod
    def read(cls, path: str = MOUNTINFO, limit: Optional[int] = None) -> MountTable:
        limit = MAX_MOUNTINFO_BYTES if limit is None else limit
        chunks: List[bytes] = []
        size = 0
        try:
            with open(path, "rb") as handle:
                while size <= limit:
                    chunk = handle.read(65536)      # /proc files are read in pieces; no big buffer
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
        except OSError:
            return cls()
        data = b"".join(chunks)
        complete = size <= limit
        entries = [Mount(line.dev, os.fsdecode(line.root), os.fsdecode(line.point), os.fsdecode(line.fstype))
                   for line in mountinfo.parse(data[:limit])]       # the one parser (a short or cut line: none)
        return cls(entries, complete)

    def identities(self, path: str) -> List[Identity]:
        """(filesystem, folder) pairs that ``path`` (absolute, normalised, resolved) shows."""
        out = []
        current, rest = path, ""
        while True:
            for fs, root in self.by_point.get(current, ()):
                out.append(Identity(fs, _join(root, rest)))
            if current == "/":
                return out
            parent = os.path.dirname(current)
            rest = current[len(parent.rstrip("/")):] + rest
            current = parent

    def aliases(self, path: str, parts: bool = True) -> List[str]:
        """Every other path that shows ``path``'s folder (and, with ``parts``, a part of it: a mount elsewhere
        showing a folder below it, and every other path showing what is mounted inside it - a mount point
        below ``path`` shows a folder of some filesystem, and wherever else that folder is shown, writing
        there writes inside ``path``)."""
        if not self.by_point:
            return []
        out: Set[str] = set()
        for fs, folder in self.identities(path):
            self._shown(fs, folder, out, parts)
        if parts:
            # what is mounted inside the tree, under any of its names, and wherever else that is shown (a
            # pseudo-filesystem's mounts are left to their own rule: no writable grant reaches one anywhere)
            for name in [path] + sorted(alias for alias in out if alias != path):
                for point in self._points_below(name):
                    if point in self.pseudo_type:
                        continue
                    for fs, root in self.by_point[point]:
                        self._shown(fs, root, out, True)
            out = set(alias for alias in out if not paths.under(alias, path))
        out.discard(path)
        return sorted(out)

    def _shown(self, fs: bytes, folder: str, out: Set[str], parts: bool) -> None:
        """Add to ``out`` every mount point showing ``folder`` of ``fs`` (with ``parts``: or a folder below it)."""
        for root, point in self.by_fs.get(fs, ()):
            if paths.under(folder, root):
                out.add(_join(point, _rest(folder, root)))
            elif parts and paths.under(root, folder):
                out.add(point)

    def _points_below(self, path: str) -> List[str]:
        """The mount points strictly below ``path`` (a sorted index, built at first use)."""
        if self._sorted is None:
            self._sorted = sorted(self.by_point)
        prefix = path.rstrip("/") + "/"
        start = bisect.bisect_left(self._sorted, prefix)
        end = bisect.bisect_left(self._sorted, prefix[:-1] + chr(ord("/") + 1))
        return self._sorted[start:end]
