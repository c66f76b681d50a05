# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bwrap's mount table as bwrap builds it, and what can still move once a profile is rendered.

bwrap performs the mount operations of its argv in order, inside a new root (a private tmpfs).
For each one it creates the destination's missing parents (mkdir, following symbolic links) and
mounts on it (mount(2) follows symbolic links in the destination), *inside the new root as the
earlier operations left it*: below an earlier bind, a destination's components are the host's
entries of that bind's source folder - with whatever links were planted there - and an absolute
link there points at bwrap's setup root, not at the host's. A destination judged on the host can
therefore mean something else inside. The renderer does not try to predict that: it mounts every
grant **at its resolved host path only** (source == destination, no symbolic link in it), and
``violations`` proves, operation by operation, that no earlier mount, ``--symlink``, ``--proc`` or
``--dev`` changes what that path means inside (docs/profile-invariants.md, "The mount model").
The final invariant check runs the same proof over the argv it reads back.

Stability (``unstable_folder``): a path whose walk from ``/`` passes through a folder that anyone
other than root can write can be changed between rendering and running: an entry is replaced by
a symbolic link or by another folder. Such a source is bound by descriptor at exec time (bwrap's
``--bind-fd``/``--ro-bind-fd``, opened race-free and proven to be the object judged: see
descriptors.py); the components of a descriptor bind's destination that lie *between* an earlier
bind and it must not be replaceable (bwrap checks the last component itself: the object mounted
must be the descriptor's). Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import stat
from typing import Dict, List, Optional, Sequence, Tuple

from ..base import paths
from ..base.records import Record
from . import channels

BINDS = ("ro", "rw")
# The one destination that is not its source: the system bus, where the filtering proxy's socket is bound
# (granters._grant_bus; the final check allows it only from host.system_bus_proxy). Inside bwrap's own root.
RELOCATED = frozenset((channels.SYSTEM_BUS,))
MAX_PURE = 256
_WRITE_OTHERS = stat.S_IWGRP | stat.S_IWOTH


class Op(Record):
    """One mount operation of the argv: kind (ro, rw, symlink, proc, dev, tmpfs), source (a bind's
    host path, a symlink's target; None otherwise), destination, and whether a bind is by descriptor."""
    kind: str
    src: Optional[str]
    dest: str
    fd: bool = False


class Finding(Record):
    """What the model found wrong with one destination: ``kind`` 'differs' (inside the new root the
    destination is not the host path judged) or 'unstable' (it can be moved at run time)."""
    dest: str
    kind: str
    text: str


class Stats(object):
    """lstat() of host paths, each asked once (one render shares one)."""

    __slots__ = ("_seen", "unstable", "models", "looked")

    def __init__(self) -> None:
        self._seen: Dict[str, Optional[os.stat_result]] = {}
        self.unstable: Dict[str, Optional[str]] = {}             # unstable_folder's answers
        self.models: Dict[Tuple[Op, ...], List[Finding]] = {}   # violations' answers (on these lstats)
        self.looked = False                                      # violations() asked lstat() something

    def lstat(self, path: str) -> Optional[os.stat_result]:
        try:
            return self._seen[path]
        except KeyError:
            pass
        info: Optional[os.stat_result]
        try:
            info = os.lstat(path)
        except (OSError, ValueError):
            info = None
        self._seen[path] = info
        return info


def replaceable(folder: Optional[os.stat_result], entry: Optional[os.stat_result]) -> bool:
    """Someone other than root can replace ``entry`` in ``folder``: the folder is not root's, or is
    group- or world-writable - unless it is root's and sticky and the entry is root's too (then only
    root may rename or remove it, as in /tmp). An unreadable folder counts as replaceable."""
    if folder is None or entry is None:
        return True
    if folder.st_uid == 0 and not folder.st_mode & _WRITE_OTHERS:
        return False
    return not (folder.st_mode & stat.S_ISVTX and folder.st_uid == 0 and entry.st_uid == 0)


def unstable_folder(path: str, stats: Stats) -> Optional[str]:
    """The first folder on the walk from / to ``path`` (absolute, resolved) in which someone other
    than root can replace the next component, or None when only root can change the walk."""
    if path in stats.unstable:
        return stats.unstable[path]
    found: Optional[str] = None
    current = "/"
    for part in path.strip("/").split("/") if path != "/" else []:
        entry = (current if current != "/" else "") + "/" + part
        if replaceable(stats.lstat(current), stats.lstat(entry)):
            found = current
            break
        current = entry
    stats.unstable[path] = found
    return found


def _cover(path: str, placed: Dict[str, int]) -> Optional[str]:
    """The destination placed so far that ``path`` is at or below, the deepest one (the last mounted
    there: destinations are unique and parents come first)."""
    if path in placed:
        return path
    for ancestor in paths.ancestors(path):
        if ancestor in placed:
            return ancestor
    return None


def _bind(op: Op, ops: Sequence[Op], placed: Dict[str, int], stats: Stats) -> List[Finding]:
    """Walk one bind's destination through the mounts before it, as bwrap's mkdir and mount(2) do: the
    components below the deepest destination placed on its way (those above it were walked when it was)."""
    if op.src != op.dest and op.dest not in RELOCATED:
        return [Finding(op.dest, "differs", "its source %s is not its destination: bwrap resolves the destination "
                                            "anew inside the new root" % op.src)]
    below: List[str] = []                               # the components below ``cover``, nearest first
    cover: Optional[str] = None
    for path in (op.dest,) + paths.ancestors(op.dest):
        if path not in placed:
            if cover is None:
                below.append(path)
            continue
        earlier = ops[placed[path]]
        if earlier.kind == "symlink":
            return [Finding(op.dest, "differs", "%s passes through the --symlink %s -> %s" % (op.dest, path,
                                                                                              earlier.src))]
        if earlier.kind in ("proc", "dev"):
            return [Finding(op.dest, "differs", "%s is inside the --%s at %s" % (op.dest, earlier.kind, path))]
        cover = path if cover is None else cover
    if cover is None:
        return []                                       # folders bwrap creates in its own root
    earlier = ops[placed[cover]]
    if earlier.kind not in BINDS or earlier.src is None:
        return []                                       # inside bwrap's own tmpfs: bwrap creates them
    if below:
        stats.looked = True                             # the answer now depends on the host, not only on ops
    for path in reversed(below):
        found = _entry(op, path, earlier.src + path[len(cover):], cover, stats)
        if found is not None:
            return [found]
    return []


def _entry(op: Op, path: str, host: str, cover: str, stats: Stats) -> Optional[Finding]:
    """One component of a destination below an earlier bind (shown from the host's ``host``)."""
    info = stats.lstat(host)
    if info is None:
        return Finding(op.dest, "differs", "%s does not exist in the folder mounted at %s: bwrap would create it "
                                           "there" % (path, cover))
    if stat.S_ISLNK(info.st_mode):
        return Finding(op.dest, "differs", "%s is a symbolic link inside the new root (mounted at %s): bwrap "
                                           "follows it there" % (path, cover))
    if path != op.dest and not stat.S_ISDIR(info.st_mode):
        return Finding(op.dest, "differs", "%s is not a folder inside the new root" % path)
    if path == cover or (op.fd and path == op.dest):
        return None                                     # a mount point; bwrap checks a descriptor's last one
    if replaceable(stats.lstat(os.path.dirname(host)), info):
        return Finding(op.dest, "unstable", "%s lies in %s, which someone other than root can write: it can be "
                                            "replaced between rendering and running" % (path,
                                                                                        os.path.dirname(path)))
    return None


# violations() of op lists none of whose destinations lies below a bind: a function of the ops alone (no lstat),
# so kept across renders (bounded).
_PURE: Dict[Tuple[Op, ...], List[Finding]] = {}


def violations(ops: Sequence[Op], stats: Optional[Stats] = None) -> List[Finding]:
    """Every destination whose meaning inside the new root, at the moment bwrap mounts it, is not the
    host path it names (or can be moved at run time). ``ops`` in argv order. With the same ``stats`` (the
    same lstat answers) the same ops get the same answer, computed once."""
    stats = stats or Stats()
    key = tuple(ops)
    if key in stats.models:
        return list(stats.models[key])
    if key in _PURE:
        return list(_PURE[key])
    looked, stats.looked = stats.looked, False
    placed: Dict[str, int] = {}
    out: List[Finding] = []
    for i, op in enumerate(ops):
        if op.kind in BINDS:
            out += _bind(op, ops, placed, stats)
        else:
            cover = _cover(os.path.dirname(op.dest), placed)
            if cover is not None and ops[placed[cover]].kind in BINDS:
                out.append(Finding(op.dest, "differs", "the --%s %s would be made inside the folder mounted at %s"
                                   % (op.kind, op.dest, cover)))
        placed[op.dest] = i
    stats.models[key] = list(out)
    if not stats.looked:            # no component lies below a bind: the answer is the ops' alone, kept for all
        if len(_PURE) >= MAX_PURE:
            _PURE.clear()
        _PURE[key] = list(out)
    stats.looked = looked or stats.looked
    return out
