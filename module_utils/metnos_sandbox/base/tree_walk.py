# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one walker of a tree root searches: by descriptor, never through a symbolic link (attack2 finding 2).

Each folder is opened in its parent's descriptor (O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC), proved to be the
folder its entry named (st_dev, st_ino), listed with scandir(fd), and each entry is lstat'ed in it: a folder
the owner swaps for a link (renameat2 RENAME_EXCHANGE) between the listing and the open is never followed,
and a folder or entry that vanished or was swapped stops the walk as "changed", never as an exception other
than Stopped. Depth first: one descriptor per level, at most MAX_WALK_DEPTH.

Callers: profile/channels.py::walk (the render's channel search), service/groups.py::group_files.
profile/descriptors.py (the launcher's one file, stdlib only, no import of the core) holds the same functions,
kept equal to these by tests/unit/test_tree_walk.py.
"""
from __future__ import absolute_import, annotations, division, print_function

import errno
import os
import stat
from typing import FrozenSet, Iterator, List, Optional, Tuple

MAX_WALK_DEPTH = 200           # folders open at once in tree (one descriptor each), below RLIMIT_NOFILE
WALK_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
STOPPED = {"entries": "the bound of entries was reached at %s", "deep": "%%s is nested more than %d folders deep"
           % MAX_WALK_DEPTH, "unreadable": "%s cannot be listed",
           "changed": "%s changed while searched (it vanished or was swapped)"}


class Stopped(ValueError):
    """A walk that did not finish: ``why`` "entries" (its bound), "deep" (MAX_WALK_DEPTH), "unreadable" (``error``)
    or "changed" (a folder or entry vanished or was swapped while searched: the search cannot be trusted)."""

    def __init__(self, why: str, folder: str, error: str = "") -> None:
        ValueError.__init__(self, STOPPED.get(why, "%s") % folder + (" (%s)" % error if error else ""))
        self.why, self.folder, self.error = why, folder, error


def _open_below(name: str, parent: Optional[int], path: str, ident: Optional[Tuple[int, int]]) -> int:
    """Folder ``name`` opened in ``parent`` (None: top), never through a link, proved ``ident`` (dev, ino) if given."""
    try:
        fd = os.open(name, WALK_FLAGS, dir_fd=parent)
    except OSError as exc:
        gone = exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
        raise Stopped("changed" if gone else "unreadable", path, exc.strerror or "") from None
    info = os.fstat(fd)
    if ident is not None and (info.st_dev, info.st_ino) != ident:
        os.close(fd)
        raise Stopped("changed", path)
    return fd


def _open_listed(entry: "os.DirEntry[str]", parent: int, path: str) -> int:
    """Folder ``entry`` (listed, not lstat'ed) opened and proved by the listing's inode on the parent's device; else
    (a mount point, an overlay's own numbering, a swap) by an lstat before a second open, as tree() proves one."""
    fd = _open_below(entry.name, parent, path, None)
    here = os.fstat(fd)
    if (here.st_dev, here.st_ino) == (os.fstat(parent).st_dev, entry.inode()):
        return fd
    os.close(fd)
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError as exc:
        raise Stopped("changed", path, exc.strerror or "") from None
    return _open_below(entry.name, parent, path, (info.st_dev, info.st_ino))


def _listed(entry: "os.DirEntry[str]") -> str:
    """"folder", "plain" (a file or a link) or "" (another type, or unknown) from the listing's type (no lstat)."""
    try:
        return "folder" if entry.is_dir(follow_symlinks=False) else (
            "plain" if entry.is_file(follow_symlinks=False) or entry.is_symlink() else "")
    except OSError:
        return ""           # lstat'ed by tree(), which says why it stops


def tree(top: str, budget: List[int], skip: FrozenSet[str] = frozenset(), passing: bool = False,
         special_only: bool = False) -> Iterator[Tuple[str, os.stat_result]]:
    """(path, lstat) of every entry below ``top``, depth first, by descriptor (base/tree_walk.py). ``budget``
    (shared, decremented): entries still allowed; ``skip``: folders not entered; ``passing``: pass an entry that
    vanished and a subfolder unreadable or swapped; ``special_only``: only what is neither a folder, a file nor a link
    (a channel search's), those told by the listing's type (_listed), not lstat'ed. Stopped when unfinished."""
    stack = [(_open_below(top, None, top, None), top)]
    listings = [os.scandir(stack[0][0])]
    try:
        while listings:
            entry = next(listings[-1], None)
            if entry is None:
                listings.pop().close()
                os.close(stack.pop()[0])
                continue
            folder = stack[-1][1]
            path = folder.rstrip("/") + "/" + entry.name
            budget[0] -= 1
            if budget[0] < 0:
                raise Stopped("entries", folder)
            listed = _listed(entry) if special_only else ""
            if listed == "plain":
                continue
            if listed != "folder":
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    if passing:
                        continue
                    raise Stopped("changed", path, exc.strerror or "") from None
                yield path, info
            if (listed == "folder" or stat.S_ISDIR(info.st_mode)) and path not in skip:
                if len(stack) >= MAX_WALK_DEPTH:
                    raise Stopped("deep", path)
                try:
                    fd = (_open_listed(entry, stack[-1][0], path) if listed == "folder"
                          else _open_below(entry.name, stack[-1][0], path, (info.st_dev, info.st_ino)))
                except Stopped:
                    if passing:
                        continue
                    raise
                stack.append((fd, path))
                listings.append(os.scandir(fd))
    finally:
        for listing in listings:
            listing.close()
        for fd, _folder in stack:
            os.close(fd)
