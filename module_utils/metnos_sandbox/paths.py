# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Path containment, one rule for the whole core: ``under(path, root)`` is true when ``path`` is
``root`` or lies below it, component by component (``/etc2`` is not under ``/etc``), whatever
trailing slash ``root`` carries. Both are absolute, already normalised or resolved by the caller:
this is text, so resolve before judging. Pure Python, no Ansible imports.
"""

from __future__ import absolute_import, annotations, division, print_function


def under(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it."""
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def related(path: str, root: str) -> bool:
    """``path`` is at, below or above ``root``."""
    return under(path, root) or under(root, path)
