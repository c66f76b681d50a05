# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Paths under roots, one rule for the whole core: ``under(path, root)`` is true when ``path`` is
``root`` or lies below it, component by component (``/etc2`` is not under ``/etc``), whatever
trailing slash ``root`` carries. Both are absolute, already normalised or resolved by the caller:
this is text, so resolve before judging. ``Roots`` asks the same rule of a fixed set of roots at
C speed (the renderer asks it thousands of times per render). Pure Python, no Ansible imports.
"""

from __future__ import absolute_import, annotations, division, print_function

import functools
import os
import stat
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple

from .records import Record


def under(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it."""
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def related(path: str, root: str) -> bool:
    """``path`` is at, below or above ``root``."""
    # above: root under path (the arguments swapped on purpose)
    return under(path, root) or under(root, path)  # pylint: disable=arguments-out-of-order


@functools.lru_cache(maxsize=4096)
def ancestors(path: str) -> Tuple[str, ...]:
    """'/a/b/c' -> ('/a/b', '/a', '/'), nearest first (cached: base paths repeat every render). Ends where
    dirname() no longer moves ('/', '', and the '//' POSIX leaves as it is)."""
    out = []
    current = path
    while True:
        parent = os.path.dirname(current)
        if parent == current:
            break
        out.append(parent)
        current = parent
    return tuple(out)


class Roots(object):
    """The rule of ``under`` against a fixed set of roots, for absolute normalised paths:
    ``roots.under(p)`` is ``any(under(p, r) for r in roots)``, answered by a set lookup and one
    ``str.startswith`` over a tuple of ``root/`` prefixes instead of a Python loop
    (tests/unit/test_mount_aliases.py holds the two forms equal)."""

    __slots__ = ("exact", "prefixes")

    def __init__(self, roots: Iterable[str]) -> None:
        listed = list(roots)
        self.exact: FrozenSet[str] = frozenset(listed)
        self.prefixes: Tuple[str, ...] = tuple(set(r.rstrip("/") + "/" for r in listed))

    def under(self, path: str) -> bool:
        """``path`` is at or below one of the roots."""
        return path in self.exact or path.startswith(self.prefixes)


class RelatedRoots(Roots):
    """Roots that also answer ``related``: ``roots.related(p)`` is ``any(related(p, r) for r in
    roots)`` (every ancestor of every root is kept in a set: built once, asked often)."""

    __slots__ = ("above",)

    def __init__(self, roots: Iterable[str]) -> None:
        listed = list(roots)
        Roots.__init__(self, listed)
        self.above: FrozenSet[str] = frozenset(a for r in listed for a in ancestors(r))

    def related(self, path: str) -> bool:
        """``path`` is at, below or above one of the roots."""
        return path in self.exact or path in self.above or path.startswith(self.prefixes)


# ---------------------------------------------------------------- bounded resolution (the kernel's rules)

MAX_LINKS = 40                 # the kernel's MAXSYMLINKS: following one more is ELOOP
MAX_RESOLVED = 4096            # PATH_MAX: a longer resolved path is ENAMETOOLONG for realpath(3)
MAX_STEPS = 100000             # components looked up by one Resolver (one render shares one)


class Lookup(Record):
    """How the kernel resolves one absolute path, name by name (lookup()). ``dirs``: every directory a name is
    looked up in, in order, each once - whoever may change one of them decides where the path leads (a link
    on the way is replaced by replacing its name in its directory). ``resolved``: where the path leads when
    every name exists, else None. ``missing``: the first name not found, as its path in the directory it was
    looked up in (whoever can write that directory can create it). ``error``: why the kernel would refuse
    the lookup: 'links' (ELOOP), 'long' (ENAMETOOLONG), 'notdir' (ENOTDIR), 'denied' (any other error)."""
    dirs: Tuple[str, ...]
    resolved: Optional[str]
    missing: Optional[str]
    error: Optional[str]


def lookup(path: str) -> Lookup:
    """Resolve the absolute ``path`` as the kernel does - each name looked up in the directory reached so far,
    each symbolic link's target put in its place ('..' is the parent of the directory reached: after a link,
    its target's), at most MAX_LINKS links, no resolved path over MAX_RESOLVED - and say where each name was
    looked up. Reads with lstat/readlink only (it follows nothing itself)."""
    dirs: List[str] = []
    seen = set()
    pending = path.split("/")[::-1]             # a stack: the first name on top
    current, links = "/", 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        if current not in seen:
            seen.add(current)
            dirs.append(current)
        candidate = (current if current != "/" else "") + "/" + part
        if len(candidate) > MAX_RESOLVED or len(part.encode("utf-8", "surrogateescape")) > 255:
            return Lookup(tuple(dirs), None, None, "long")
        try:
            info = os.lstat(candidate)
            target = os.readlink(candidate) if stat.S_ISLNK(info.st_mode) else None
        except FileNotFoundError:
            return Lookup(tuple(dirs), None, candidate, None)
        except NotADirectoryError:
            return Lookup(tuple(dirs), None, None, "notdir")
        except (OSError, ValueError):
            return Lookup(tuple(dirs), None, None, "denied")
        if target is None:
            current = candidate
            continue
        links += 1
        if links > MAX_LINKS:
            return Lookup(tuple(dirs), None, None, "links")
        pending.extend(target.split("/")[::-1])
        if target.startswith("/"):
            current = "/"
    return Lookup(tuple(dirs), current, None, None)


class Unresolvable(ValueError):
    """A path the kernel would not resolve: more than MAX_LINKS symbolic links (``why`` 'links',
    ELOOP), a resolved form longer than MAX_RESOLVED ('long'), or the resolver's shared budget of
    MAX_STEPS component lookups spent ('budget')."""

    def __init__(self, path: str, why: str) -> None:
        ValueError.__init__(self, "%s: %s" % (why, path[:200]))
        self.path = path
        self.why = why


class Resolver(object):
    """os.path.realpath's answer (non-strict: a missing component is kept as written), computed
    iteratively with the kernel's bounds, and shared: every symbolic link read and every link's
    resolution is kept, so that many paths into the same long chains cost one walk of each.

    ``resolve(path)`` raises Unresolvable instead of recursing without bound (CPython's realpath
    overflows the stack on a chain of ~1,000 links) or answering a loop with the loop's text."""

    __slots__ = ("_target", "_done", "_full", "steps", "_lstat")

    def __init__(self, steps: int = MAX_STEPS,
                 lstat: Optional[Callable[[str], Optional[os.stat_result]]] = None) -> None:
        self._target: Dict[str, Optional[str]] = {}              # path -> its link target, None if not a link
        self._done: Dict[str, Tuple[str, int]] = {}              # link path -> (resolved, links it follows)
        self._lstat = lstat                                      # a shared lstat() cache (the render's), if any
        self._full: Dict[str, Tuple[str, int]] = {}           # path asked (or a prefix) -> (resolved, links)
        self.steps = steps

    def readlink(self, path: str) -> Optional[str]:
        """The target of the symbolic link at ``path``, None when it is none (or missing); read once."""
        if path in self._target:
            return self._target[path]
        target: Optional[str] = None
        if self._lstat is not None:                              # one lstat answers both: a link, and its mode
            info = self._lstat(path)
            if info is not None and stat.S_ISLNK(info.st_mode):
                try:
                    target = os.readlink(path)
                except (OSError, ValueError):
                    target = None
        else:
            try:
                target = os.readlink(path)
            except (OSError, ValueError):
                target = None
        self._target[path] = target
        return target

    def resolve(self, path: str) -> str:
        """The resolved form of an absolute ``path``; raises Unresolvable. Every prefix of a path resolved
        is kept, so a path below one already resolved costs only its own last components."""
        full = self._full
        hit = full.get(path)
        if hit is not None:
            return hit[0]
        # the longest prefix already resolved: a prefix ends before a '/', the first '/' ends none
        first = path.find("/")
        cut = path.rfind("/")
        while cut > first and path[:cut] not in full:
            cut = path.rfind("/", 0, cut)
        if cut > first:
            current, links = full[path[:cut]]
        else:
            current, links, cut = "/", 0, first
        return self._walk_plain(path, cut + 1, current, links)

    def _walk_plain(self, path: str, pos: int, current: str, links: int) -> str:
        """The components of ``path`` from offset ``pos`` on, the common case without a stack: plain names
        of entries that are not symbolic links, each prefix kept as it is resolved. The first component
        that is not ('', '.', '..', a link) hands itself and the rest to _walk, which then does exactly
        what it would have done with all of them (the same steps, checks and kept answers)."""
        full = self._full
        parts = path[pos:].split("/")
        for index, part in enumerate(parts):
            candidate = (current if current != "/" else "") + "/" + part
            if part in ("", ".", "..") or candidate in self._done:
                return self._walk(path, current, links, stack(path, pos, parts[index:]))
            self.steps -= 1
            if self.steps < 0:
                raise Unresolvable(path, "budget")
            if len(candidate) > MAX_RESOLVED:
                raise Unresolvable(path, "long")
            if self.readlink(candidate) is not None:
                self.steps += 1                              # _walk counts this component itself
                return self._walk(path, current, links, stack(path, pos, parts[index:]))
            current = candidate
            pos += len(part)
            full[path[:pos]] = (current, links)
            pos += 1
        return current

    def _walk(self, path: str, current: str, links: int, stack: List[Any]) -> str:
        while stack:
            part = stack.pop()
            if isinstance(part, tuple):
                if part[0] == "full":                    # a prefix of the path asked: keep its answer
                    self._full[part[1]] = (current, links)
                else:                                    # a link's expansion ends here: keep its answer
                    self._done[part[1]] = (current, links - part[2])
                continue
            if part in ("", "."):
                continue
            if part == "..":
                current = os.path.dirname(current)
                continue
            self.steps -= 1
            if self.steps < 0:
                raise Unresolvable(path, "budget")
            candidate = (current if current != "/" else "") + "/" + part
            if len(candidate) > MAX_RESOLVED:
                raise Unresolvable(path, "long")
            done = self._done.get(candidate)
            if done is not None:
                links += done[1]
                if links > MAX_LINKS:
                    raise Unresolvable(path, "links")
                current = done[0]
                continue
            target = self.readlink(candidate)
            if target is None:
                current = candidate
                continue
            if links + 1 > MAX_LINKS:
                raise Unresolvable(path, "links")
            stack.append(("link", candidate, links))
            links += 1
            stack.extend(reversed(target.split("/")))
            if target.startswith("/"):
                current = "/"
        return current


def stack(path: str, pos: int, parts: List[str]) -> List[Any]:
    """Resolver._walk's stack for the components ``parts`` of ``path`` from offset ``pos``: each component,
    then the prefix it ends (kept once it pops), the first component on top."""
    pairs = []
    for part in parts:
        pos += len(part)
        pairs.append((part, path[:pos]))
        pos += 1
    stack: List[Any] = []
    for part, prefix in reversed(pairs):
        stack.append(("full", prefix))
        stack.append(part)
    return stack
