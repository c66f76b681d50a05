# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one atomic file writer: a temporary file in the target's own, already checked folder, then one rename.

Used for rendered profiles (store.py), the service's drop-in and PATH file (metnos_service_env), the
audit's spooled host results and its reports (document.py). A reader never sees a half-written file.

The folder is opened component by component without following a link (``O_NOFOLLOW``), except a link in a
folder that only root (or this process's own uid) can write: the system's own links (``/var/run``). Every
later step is relative to that folder's descriptor: the temporary file (``O_EXCL|O_NOFOLLOW``), its mode set
before the rename, ``fsync``, ``renameat`` in that folder, ``fsync`` of the folder. So a link planted by
someone else on the way is refused (``LinkRefused``), never followed. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import errno
import os
import pwd
import re
import stat
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

from . import owners, safe_read

TEMP_TRIES = 100
MAX_LINKS = 40                  # the kernel's own bound on links followed in one lookup
READ_LIMIT = 1 << 20            # a file read back (drop-in, PATH file) is small: refuse more
# The toolkit's own temporary names: ".<name>.<12 hex digits>" (temporary()).
TEMP_NAME = re.compile(r"\A\..+\.[0-9a-f]{12}\Z")
# Debris is a temporary file older than this run: it was left by a run that died.
RUN_STARTED = time.time()
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
PATH_ONLY = getattr(os, "O_PATH", os.O_RDONLY)


class PathRefused(OSError):
    """A path the toolkit will not go through: ``path`` (the component that failed), ``owner`` (its
    owner's name, or None), ``reason``. Each subclass is one refusal with its own code at the caller."""

    def __init__(self, path: str, owner: Optional[str], reason: str) -> None:
        OSError.__init__(self, "%s: %s (owner %s)" % (path, reason, owner or "unknown"))
        self.path, self.owner, self.reason = path, owner, reason


class NotAFolder(PathRefused):
    """A component where a folder is expected is a regular file (or another non-folder)."""


class LinkRefused(PathRefused):
    """A symbolic link in a folder that someone other than root (or this process's uid) can write."""


class NotRegular(PathRefused):
    """A file to read or replace is a FIFO, socket, device, folder or symbolic link."""


def owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return "uid %d" % uid


def _kind(mode: int) -> str:
    for test, word in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISDIR, "a folder"), (stat.S_ISREG, "a regular file")):
        if test(mode):
            return word
    return "of unknown type"


def trusted_folder(st: os.stat_result, fd: int) -> bool:
    """Only root, or this process's own uid, can change the entries of the folder open on ``fd`` (``st`` its
    fstat), so a link in it is theirs: owners.change_reasons with its ACL read (through the O_PATH descriptor's
    /proc/self/fd link), no group write bit accepted (root's group neither: attack2 finding 3), no sticky
    exception."""
    return not owners.change_reasons(st, fd, sticky_folders=False, root_group=False, own_uid=os.geteuid())


def open_folder(path: str, create_mode: Optional[int] = None) -> int:
    """A descriptor (O_RDONLY|O_DIRECTORY) of the folder ``path``, reached without following a link that
    someone else could have planted. Missing folders are created with ``create_mode`` when it is given
    (mkdirat in the folder above, never through a link). Raises NotAFolder, LinkRefused, PathRefused, OSError."""
    if not os.path.isabs(path):
        path = os.path.abspath(path)
    pending = [part for part in path.split("/") if part not in ("", ".")]
    done = ""
    fd = os.open("/", PATH_ONLY | os.O_DIRECTORY | CLOEXEC)
    links = 0
    try:
        while pending:
            part = pending.pop(0)
            if part == "..":
                raise PathRefused(path, None, "a '..' component: name the folder itself")
            try:
                next_fd = os.open(part, PATH_ONLY | os.O_DIRECTORY | os.O_NOFOLLOW | CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                if create_mode is None:
                    raise
                try:
                    os.mkdir(part, create_mode, dir_fd=fd)
                except FileExistsError:
                    pass
                pending.insert(0, part)
                continue
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                here = done + "/" + part
                if not stat.S_ISLNK(st.st_mode):
                    raise NotAFolder(here, owner_name(st.st_uid), "not a directory: %s where a folder is expected"
                                     % _kind(st.st_mode)) from None
                folder = os.fstat(fd)
                links += 1
                if not trusted_folder(folder, fd) or links > MAX_LINKS:
                    raise LinkRefused(here, owner_name(folder.st_uid), "a symbolic link in a folder that %s (its "
                                      "owner), its group or an ACL entry can write: not followed"
                                      % owner_name(folder.st_uid)) from None
                if st.st_uid not in (0, os.geteuid()):
                    raise LinkRefused(here, owner_name(st.st_uid), "a symbolic link owned by %s: not followed"
                                      % owner_name(st.st_uid)) from None
                target = os.readlink(part, dir_fd=fd)
                # The walk so far is the real path (no untrusted link was followed): the joined target is exact.
                pending = [p for p in os.path.normpath(os.path.join(done or "/", target)).split("/")
                           if p not in ("", ".")] + pending
                done = ""
                os.close(fd)
                fd = os.open("/", PATH_ONLY | os.O_DIRECTORY | CLOEXEC)
                continue
            os.close(fd)
            fd, done = next_fd, done + "/" + part
        return os.open(".", os.O_RDONLY | os.O_DIRECTORY | CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)


def reached(path: str) -> Tuple[str, bool]:
    """What ``path`` (absolute) names, reached by descriptor: (its real path, as the kernel names the object
    opened, and whether it is a folder). The folders on the way are opened by open_folder (a link followed only
    when no one but root could have planted it); the last component is opened in its folder's descriptor with
    O_NOFOLLOW: a folder is that descriptor's own path (/proc/self/fd), anything else is named in its folder; a
    link there is followed only when that folder is trusted (trusted_folder) and the link root's. Nothing found
    is FileNotFoundError; an untrusted link raises LinkRefused (no link someone else controls is followed: what
    it names is never looked at), a '..' PathRefused."""
    for _hop in range(MAX_LINKS + 1):
        folder, name = os.path.split(os.path.normpath(path))
        fd = open_folder(folder or "/")
        try:
            where = os.readlink("/proc/self/fd/%d" % fd)
            if not name:
                return where, True
            try:
                found = os.open(name, PATH_ONLY | os.O_DIRECTORY | os.O_NOFOLLOW | CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
            else:
                try:
                    return os.readlink("/proc/self/fd/%d" % found), True
                finally:
                    os.close(found)
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISLNK(info.st_mode):
                return os.path.join(where, name), False
            if not trusted_folder(os.fstat(fd), fd) or info.st_uid not in (0, os.geteuid()):
                raise LinkRefused(os.path.join(where, name), owner_name(info.st_uid),
                                  "a symbolic link %s or its folder can change: not followed"
                                  % owner_name(info.st_uid))
            path = os.path.normpath(os.path.join(where, os.readlink(name, dir_fd=fd)))
        finally:
            os.close(fd)
    raise PathRefused(path, None, "more than %d symbolic links" % MAX_LINKS)


def temporary(folder_fd: int, name: str) -> Tuple[int, str]:
    """A new file ``.<name>.<12 hex digits>`` in the folder, created exclusively (never a link followed),
    mode 0600: (descriptor, its name in the folder). What tempfile.mkstemp does, without importing tempfile
    (shutil, random, bz2, lzma: on every audited host; its cost: docs/benchmarks.md)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | CLOEXEC
    for _try in range(TEMP_TRIES):
        tmp = ".%s.%s" % (name, os.urandom(6).hex())
        try:
            return os.open(tmp, flags, 0o600, dir_fd=folder_fd), tmp
        except FileExistsError:
            continue
    raise FileExistsError("no free temporary name beside %s after %d tries" % (name, TEMP_TRIES))


def remove_debris(folder_fd: int, folder: str) -> List[str]:
    """Remove the toolkit's own temporary files that a run older than this one left in the folder (a regular
    file of this uid with a temporary name, changed before this run started). Returns their paths."""
    removed = []
    for entry in sorted(os.listdir(folder_fd)):
        if not TEMP_NAME.match(entry):
            continue
        try:
            st = os.stat(entry, dir_fd=folder_fd, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_mtime < RUN_STARTED:
                os.unlink(entry, dir_fd=folder_fd)
                removed.append(os.path.join(folder, entry))
        except FileNotFoundError:
            continue
    return removed


def clean_folder(folder: str) -> List[str]:
    """remove_debris in ``folder`` opened as open_folder() does (links refused): for a writer whose files were
    already current, so that a temporary file a killed earlier run left is removed at the next run all the same.
    Returns the paths removed."""
    folder_fd = open_folder(folder)
    try:
        return remove_debris(folder_fd, folder)
    finally:
        os.close(folder_fd)


def _write_all(fd: int, content: Union[str, Iterable[str]]) -> None:
    for chunk in ([content] if isinstance(content, str) else content):
        data = chunk.encode("utf-8")
        while data:
            data = data[os.write(fd, data):]


def replace(path: str, content: Union[str, Iterable[str]], mode: int = 0o644,
            move: Optional[Callable[[str, str], object]] = None, create_mode: Optional[int] = None) -> List[str]:
    """Write ``content`` (text, or an iterable of text chunks streamed as they come) to ``path`` atomically.

    The folder is opened as open_folder() does (created with ``create_mode`` when given); the temporary file
    is written, fsynced and given ``mode`` there, renamed over the name in that same folder, and the folder
    fsynced. A symbolic link at ``path`` itself is replaced, never followed. ``move`` is accepted for the
    callers that pass AnsibleModule.atomic_move and not used: a move by path would follow the links this
    writer refuses. The temporary file is removed whatever happens. Returns the debris removed
    (remove_debris)."""
    del move
    folder, name = os.path.split(os.path.abspath(path))
    folder_fd = open_folder(folder, create_mode)
    try:
        removed = remove_debris(folder_fd, folder)
        fd, tmp = temporary(folder_fd, name)
        try:
            try:
                _write_all(fd, content)
                os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            os.fsync(folder_fd)
        finally:
            try:
                os.unlink(tmp, dir_fd=folder_fd)
            except FileNotFoundError:
                pass
        return removed
    finally:
        os.close(folder_fd)


def read_regular(path: str, limit: int = READ_LIMIT) -> Optional[Tuple[str, os.stat_result]]:
    """The text of the regular file ``path`` and its fstat, or None when it does not exist. Opened in its
    checked folder without following a link and without blocking (O_NONBLOCK): a FIFO, a link or any other
    non-regular file raises NotRegular at once; more than ``limit`` bytes, or a file that changed while it was
    read, raises PathRefused. Read by safe_read.read_stable (the one read loop); the opening differs on purpose
    from safe_read.read_once's: a writer follows no link at all in the folder it writes, where a reader follows
    root's own links in root's folders."""
    folder, name = os.path.split(os.path.abspath(path))
    try:
        folder_fd = open_folder(folder)
    except FileNotFoundError:
        return None
    try:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | CLOEXEC, dir_fd=folder_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                raise
            st = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
            raise NotRegular(path, owner_name(st.st_uid), "%s, not a regular file" % _kind(st.st_mode)) from None
        try:
            st = os.fstat(fd)
            data = safe_read.read_stable(fd, path, None, limit)
            return data.decode("utf-8", "replace"), st
        except safe_read.Refused as exc:
            if exc.reason in (safe_read.FIFO, safe_read.NOT_REGULAR):
                raise NotRegular(path, owner_name(st.st_uid), "%s, not a regular file" % _kind(st.st_mode)) from None
            raise PathRefused(path, owner_name(st.st_uid), "larger than %d bytes" % limit if exc.reason ==
                              safe_read.TOO_LARGE else "changed while it was read") from None
        finally:
            os.close(fd)
    finally:
        os.close(folder_fd)


# --------------------------------------------------------------------------- a managed file with its backup
def backup_name(path: str) -> str:
    """``<path>.<pid>.<YYYY-MM-DD@HH:MM:SS>~`` (AnsibleModule.backup_local's spelling)."""
    return "%s.%d.%s~" % (path, os.getpid(), time.strftime("%Y-%m-%d@%H:%M:%S", time.localtime()))


def current(path: str) -> Optional[str]:
    """The text of the managed file, None when it does not exist (read_regular's refusals raise)."""
    found = read_regular(path)
    return found[0] if found is not None else None


def replace_keeping_backup(path: str, content: str, mode: int = 0o644,
                           create_mode: Optional[int] = 0o755) -> Dict[str, Any]:
    """Write ``content`` to ``path`` when it or the mode differs (a backup first of a regular file this uid
    owns, i.e. one the writer wrote: never of another's file, never of a link's target): {"changed", "backup"
    (path or None), "debris" (the dead runs' temporary files removed)}."""
    found = read_regular(path)
    if found is not None and found[0] == content and stat.S_IMODE(found[1].st_mode) == mode:
        return {"changed": False, "backup": None, "debris": []}
    backup = None
    debris = []
    if found is not None and found[1].st_uid == os.geteuid():
        backup = backup_name(path)
        debris += replace(backup, found[0], stat.S_IMODE(found[1].st_mode))
    debris += replace(path, content, mode, create_mode=create_mode)
    return {"changed": True, "backup": backup, "debris": sorted(set(debris))}
