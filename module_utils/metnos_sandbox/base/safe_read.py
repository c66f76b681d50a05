# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a file that someone other than root may control: once, bounded, never through a link root did not
choose, and refused when it changed while it was read (issue 49 item 3, issue 52 item 3).

``read_once(path, limit)``:

- the path is walked from ``/``: while every folder on the way is root's and nobody else can write it (a
  *trusted* folder), a link there is root's own choice and is followed; from the first folder someone else can
  write (its owner is not root, or group/other may write it) the rest is opened without following any link:
  ``openat2`` with ``RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH`` (a ctypes syscall) where the kernel has it,
  ``O_NOFOLLOW | O_DIRECTORY`` component by component with ``dir_fd`` elsewhere;
- the file is opened ``O_NONBLOCK | O_CLOEXEC | O_NOCTTY`` (a FIFO neither blocks nor is read: ``fifo``),
  ``fstat`` says a regular file within ``limit`` bytes;
- when a folder on the way is a non-root user's, the file is judged as that user would see it: a file the
  user could not read (mode bits, its groups) is refused (``owner_cannot_read``), so a hard link to a root-only
  file never gets its content read by root for them; likewise for a folder its group may write (the file must be
  that group's to read, or everyone's) and one others may write (the file must be everyone's to read);
  in a sticky folder the group and others cannot replace the next entry: its owner is the one judged;
- it is read ONCE into memory; ``fstat`` before and after (size, mtime_ns, ctime_ns, inode, device) must match
  and the bytes read must be the size: else ``changed``. A file whose ctime is younger than RECENT_SECONDS is
  looked at again SETTLE_SECONDS later (an editor that truncates, then writes in place, is caught between the two:
  the empty or half-written file looked stable while it was read).

Refusals raise ``Refused`` (``reason``, the path it is about, the owners involved); the caller turns it into its
own diagnostic code. Nothing here prints or keeps the content of a refused file. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import ctypes
import errno
import grp
import os
import pwd
import stat
import time
from typing import Callable, List, Optional, Set, Tuple

from . import owners

SETTLE_SECONDS = 0.1
# A file whose ctime is younger than this is looked at again after SETTLE_SECONDS: the kernel stamps times from a
# coarse clock that was measured here (a Firecracker VM, Linux 6.18) to lag by 125 ms to 4 s, and a truncate that
# comes within the same coarse tick leaves the times as they were: a young-looking ctime is all it says.
RECENT_SECONDS = 10.0
MAX_LINK_HOPS = 40
SYS_OPENAT2 = 437          # the same number on every Linux architecture (the unified syscall table, 5.6+)
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)

# The reasons of a refusal (Refused.reason).
MISSING = "missing"
LINK = "link"
FIFO = "fifo"
NOT_REGULAR = "not_regular"
TOO_LARGE = "too_large"
OWNER_CANNOT_READ = "owner_cannot_read"
CHANGED = "changed"
UNREADABLE = "unreadable"
REASONS = (MISSING, LINK, FIFO, NOT_REGULAR, TOO_LARGE, OWNER_CANNOT_READ, CHANGED, UNREADABLE)


class Refused(Exception):
    """A file read_once would not read. ``reason`` (one of REASONS); ``path``: what it is about (the link, for
    LINK); ``owner``: the user named with it (the controlling folder's owner, or the file's); ``target_owner``: the
    owner of what a refused link points to ("" when unknown); ``error``: the system's words; ``size``."""

    def __init__(self, reason: str, path: str, owner: str = "", target_owner: str = "", error: str = "",
                 size: int = 0) -> None:
        Exception.__init__(self, "%s: %s" % (reason, path))
        self.reason = reason
        self.path = path
        self.owner = owner
        self.target_owner = target_owner
        self.error = error
        self.size = size


class _How(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_OPENAT2: List[Optional[Callable[..., int]]] = []       # the syscall function once looked up ([None]: none here)


def _syscall() -> Optional[Callable[..., int]]:
    if not _OPENAT2:
        try:
            function = ctypes.CDLL(None, use_errno=True).syscall
            function.restype = ctypes.c_long
            _OPENAT2.append(function)
        except (OSError, AttributeError):
            _OPENAT2.append(None)
    return _OPENAT2[0]


def openat2_beneath(folder_fd: int, relative: str, flags: int) -> Optional[int]:
    """openat2(folder_fd, relative, flags, RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS): the fd, or
    None when the kernel (or libc) has no openat2. OSError as the kernel says (ELOOP: a link on the way)."""
    function = _syscall()
    if function is None:
        return None
    how = _How(flags, 0, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
    fd = function(ctypes.c_long(SYS_OPENAT2), ctypes.c_int(folder_fd), ctypes.c_char_p(os.fsencode(relative)),
                  ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))
    if fd >= 0:
        return int(fd)
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EPERM):     # no openat2 here (an old kernel, or a seccomp filter)
        _OPENAT2[:] = [None]
        return None
    raise OSError(code, os.strerror(code), relative)


def user_name(uid: int) -> str:
    try:
        return "%s (uid %d)" % (pwd.getpwuid(uid).pw_name, uid)
    except KeyError:
        return "uid %d" % uid


def trusted(info: os.stat_result, fd: Optional[int] = None) -> bool:
    """A folder root owns and nobody else can write (owners.change_reasons: no group write bit even for root's
    group, no sticky exception - the walk follows links there; the ACL of ``fd``, an open folder, judged too)."""
    return not owners.change_reasons(info, fd, sticky_folders=False, root_group=False)


def group_name(gid: int) -> str:
    try:
        return "the members of group %s (gid %d)" % (grp.getgrgid(gid).gr_name, gid)
    except KeyError:
        return "the members of gid %d" % gid


OTHERS = "any user (a folder on the way is writable by others)"


def can_read(uid: int, info: os.stat_result) -> bool:
    """Whether ``uid`` may read a file of this owner, group and mode (root: always)."""
    if uid == 0:
        return True
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IRUSR)
    try:
        entry = pwd.getpwuid(uid)
        groups = set(os.getgrouplist(entry.pw_name, entry.pw_gid))
    except KeyError:
        groups = set()
    if info.st_gid in groups:
        return bool(info.st_mode & stat.S_IRGRP)
    return bool(info.st_mode & stat.S_IROTH)


class _Walk(object):
    """Where the walk of a path stands: the open folder, the path so far, the owners of the folders someone else
    can write (the controllers), the groups that may write one (``groups``), whether others may (``others``), and
    whether such a folder was passed."""

    def __init__(self) -> None:
        self.fd = os.open("/", FOLDER_FLAGS)
        self.where = "/"
        self.controllers: Set[int] = set()
        self.groups: Set[int] = set()
        self.others = False
        self.beneath = False

    def judge(self, folder: os.stat_result, entry_owner: Optional[int]) -> None:
        """Who can put an entry in this folder (``entry_owner``: the owner of the next entry on the way, None when
        it is not known yet)."""
        if folder.st_uid != 0:
            self.controllers.add(folder.st_uid)
        if not folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return
        if folder.st_mode & stat.S_ISVTX and entry_owner is not None:
            if entry_owner != 0:       # sticky: the group and others cannot replace the entry, its owner (or root) can
                self.controllers.add(entry_owner)
            return
        if folder.st_mode & stat.S_IWGRP:
            self.groups.add(folder.st_gid)
        if folder.st_mode & stat.S_IWOTH:
            self.others = True

    def cannot_read(self, info: os.stat_result) -> Optional[str]:
        """Who controls a folder on the way but could not read this file, or None."""
        for uid in sorted(self.controllers):
            if not can_read(uid, info):
                return user_name(uid)
        if self.others and not info.st_mode & stat.S_IROTH:
            return OTHERS
        for gid in sorted(self.groups):
            if not (info.st_gid == gid and info.st_mode & stat.S_IRGRP or info.st_mode & stat.S_IROTH):
                return group_name(gid)
        return None

    def enter(self, name: str, fd: int) -> None:
        os.close(self.fd)
        self.fd = fd
        self.where = os.path.join(self.where, name)

    def close(self) -> None:
        os.close(self.fd)


def _link_refusal(walk: _Walk, full: str) -> Optional[Refused]:
    """The first link on the way from the walk's folder to ``full`` (looked at with lstat, never followed for
    content), or None when there is none."""
    path = walk.where
    parts = [p for p in full[len(walk.where):].split("/") if p]
    for name in parts:
        path = os.path.join(path, name)
        try:
            info = os.lstat(path)
        except OSError:
            break
        if stat.S_ISLNK(info.st_mode):
            try:
                target_owner = user_name(os.stat(path).st_uid)
            except OSError:
                target_owner = ""
            owner = ", ".join(user_name(uid) for uid in sorted(walk.controllers)) or "another user"
            return Refused(LINK, path, owner=owner, target_owner=target_owner)
    return None


def _open_trusted(walk: _Walk, parts: List[str], hops: int) -> Tuple[List[str], int]:
    """Walk the folders of ``parts`` while they are trusted, following root's own links; returns the parts left
    (below the first folder someone else can write, or the file's name) and the links followed so far."""
    while len(parts) > 1:
        info = os.fstat(walk.fd)
        if not trusted(info, walk.fd):
            return parts, hops
        name = parts[0]
        if name in ("", "."):
            parts = parts[1:]
            continue
        try:
            child = os.open(name, FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=walk.fd)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR) or not os.path.islink(os.path.join(walk.where, name)):
                raise
            hops += 1
            if hops > MAX_LINK_HOPS:
                raise
            target = os.readlink(name, dir_fd=walk.fd)
            if target.startswith("/"):
                walk.enter("/", os.open("/", FOLDER_FLAGS))
                walk.where = "/"
            parts = [p for p in target.split("/") if p] + parts[1:]
            continue
        walk.enter(name, child)
        parts = parts[1:]
    return parts, hops


def _open_file(path: str, flags: int = FILE_FLAGS) -> Tuple[int, Optional[_Walk], str]:
    """The open file (``flags``: FOLDER_FLAGS for a folder), the walk that judged the folders on its way someone
    else can write (None: all were trusted), and its path."""
    parts = [p for p in os.path.abspath(path).split("/") if p]
    if not parts:
        raise Refused(NOT_REGULAR, path)
    walk = _Walk()
    hops = 0
    try:
        while True:
            parts, hops = _open_trusted(walk, parts, hops)
            if len(parts) > 1 or not trusted(os.fstat(walk.fd), walk.fd):
                break
            try:       # the file itself, in a trusted folder: a link there is root's
                fd = os.open(parts[0], flags | os.O_NOFOLLOW, dir_fd=walk.fd)
                return fd, None, os.path.join(walk.where, parts[0])
            except OSError as exc:      # a link opened O_DIRECTORY | O_NOFOLLOW: ENOTDIR
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR) or hops >= MAX_LINK_HOPS or \
                        not os.path.islink(os.path.join(walk.where, parts[0])):
                    raise
                hops += 1
                target = os.readlink(parts[0], dir_fd=walk.fd)
                if target.startswith("/"):
                    walk.enter("/", os.open("/", FOLDER_FLAGS))
                    walk.where = "/"
                parts = [p for p in target.split("/") if p]
        return _open_beneath(walk, parts, flags)
    finally:
        walk.close()


def _open_beneath(walk: _Walk, parts: List[str], flags: int) -> Tuple[int, Optional[_Walk], str]:
    """The rest of the path, below a folder someone else can write: no link followed, nothing above it reached.
    Every folder on the way is judged (_Walk.judge) with the owner of the entry it leads to."""
    full = os.path.join(walk.where, *parts)
    if ".." in parts:
        raise Refused(LINK, full, owner="another user")
    folder = os.fstat(walk.fd)
    try:
        for name in parts[:-1]:        # the owners of every folder on the way, opened without following links
            child = os.open(name, FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=walk.fd)
            walk.enter(name, child)
            info = os.fstat(child)
            walk.judge(folder, info.st_uid)
            folder = info
        fd = openat2_beneath(walk.fd, parts[-1], flags)
        if fd is None:
            fd = os.open(parts[-1], flags | os.O_NOFOLLOW, dir_fd=walk.fd)
    except OSError as exc:
        walk.judge(folder, None)
        refusal = _link_refusal(walk, full) if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EXDEV) else None
        if refusal is not None:
            raise refusal from None
        raise
    walk.judge(folder, os.fstat(fd).st_uid)
    return fd, walk, full


def _same(first: os.stat_result, second: os.stat_result) -> bool:
    return (first.st_size, first.st_mtime_ns, first.st_ctime_ns, first.st_ino, first.st_dev) == \
        (second.st_size, second.st_mtime_ns, second.st_ctime_ns, second.st_ino, second.st_dev)


def read_once(path: str, limit: int) -> bytes:
    """The content of the regular file at ``path`` (at most ``limit`` bytes), read once and stable; raises Refused
    (see the module's docstring)."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise Refused(UNREADABLE, str(path), error="not a path")
    try:
        fd, walk, where = _open_file(path)
    except Refused:
        raise
    except OSError as exc:
        raise Refused(MISSING if exc.errno == errno.ENOENT else UNREADABLE, path,
                      error=exc.strerror or str(exc)) from None
    try:
        return read_stable(fd, where, walk, limit)
    except OSError as exc:
        raise Refused(UNREADABLE, where, error=exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def list_folder(path: str) -> List[str]:
    """The names in the folder at ``path``, opened like read_once's files (no link someone else controls followed)
    and listed only when whoever controls a folder on the way could list it too; raises Refused (MISSING also for
    something that is not a folder)."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise Refused(UNREADABLE, str(path), error="not a path")
    try:
        fd, walk, where = _open_file(path, FOLDER_FLAGS)
    except Refused:
        raise
    except OSError as exc:
        raise Refused(MISSING if exc.errno in (errno.ENOENT, errno.ENOTDIR) else UNREADABLE, path,
                      error=exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        who = walk.cannot_read(info) if walk is not None else None
        if who is not None:
            raise Refused(OWNER_CANNOT_READ, where, owner=who, target_owner=user_name(info.st_uid))
        return sorted(os.listdir(fd))
    except OSError as exc:
        raise Refused(UNREADABLE, where, error=exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def read_stable(fd: int, where: str, walk: Optional[_Walk], limit: int) -> bytes:
    """The content of the open file ``fd`` (``where``: its path, for the refusals), read once: a regular file (a
    FIFO, opened O_NONBLOCK, refused at once), readable by whoever controls a folder on the way (``walk``; None:
    no one but root), at most ``limit`` bytes, its fstat the same before and after (a file still being written
    is looked at again after SETTLE_SECONDS). The one read loop of the core: files.read_regular (the writers'
    reader, which opens the file its own way) reads through it too. Raises Refused."""
    before = os.fstat(fd)
    if stat.S_ISFIFO(before.st_mode):
        raise Refused(FIFO, where, owner=user_name(before.st_uid))
    if not stat.S_ISREG(before.st_mode):
        raise Refused(NOT_REGULAR, where, owner=user_name(before.st_uid))
    who = walk.cannot_read(before) if walk is not None else None
    if who is not None:
        raise Refused(OWNER_CANNOT_READ, where, owner=who, target_owner=user_name(before.st_uid))
    if before.st_size > limit:
        raise Refused(TOO_LARGE, where, owner=user_name(before.st_uid), size=before.st_size)
    chunks: List[bytes] = []
    total = 0
    while total <= limit:
        chunk = os.read(fd, limit + 1 - total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    data = b"".join(chunks)
    after = os.fstat(fd)
    age = time.time() - after.st_ctime_ns / 1e9
    if _same(before, after) and age < RECENT_SECONDS:
        time.sleep(SETTLE_SECONDS)
        after = os.fstat(fd)
    if not _same(before, after) or len(data) != after.st_size:
        if len(data) > limit and after.st_size > limit:
            raise Refused(TOO_LARGE, where, owner=user_name(after.st_uid), size=len(data))
        raise Refused(CHANGED, where, owner=user_name(after.st_uid))
    return data
