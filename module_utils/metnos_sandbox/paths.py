# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Path containment, one rule for the whole core: ``under(path, root)`` is true when ``path`` is
``root`` or lies below it, component by component (``/etc2`` is not under ``/etc``), whatever
trailing slash ``root`` carries. Both are absolute, already normalised or resolved by the caller:
this is text, so resolve before judging. ``Roots`` asks the same rule of a fixed set of roots at
C speed (the renderer asks it thousands of times per render). Pure Python, no Ansible imports.
"""

from __future__ import absolute_import, annotations, division, print_function

import functools
import os
from typing import FrozenSet, Iterable, Tuple


def under(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it."""
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def related(path: str, root: str) -> bool:
    """``path`` is at, below or above ``root``."""
    # above: root under path (the arguments swapped on purpose)
    return under(path, root) or under(root, path)  # pylint: disable=arguments-out-of-order


@functools.lru_cache(maxsize=4096)
def ancestors(path: str) -> Tuple[str, ...]:
    """'/a/b/c' -> ('/a/b', '/a', '/'), nearest first (cached: base paths repeat every render)."""
    out = []
    current = path
    while current not in ("/", ""):
        current = os.path.dirname(current)
        out.append(current)
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
