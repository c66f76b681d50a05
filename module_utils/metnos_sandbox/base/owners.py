# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who can write a program root is about to run (issue 49, item 2: root executes only what root owns).

Judged from the filesystem alone, nothing run: every component of the path from ``/`` (each ``lstat``ed, no
link followed), each symlink met on the way judged as a file of its folder and then its target walked the same
way (the link's own folder judged too), the file itself, and its interpreter (``#!`` line, or an ELF's
``PT_INTERP``) walked again, a few levels deep. A component fails when

- it is owned by another uid than root (``owned``),
- it is writable by its group and that group is not root's (``group_writable``),
- it is writable by others, unless it is a folder with the sticky bit (``/tmp``: others cannot replace an
  entry there that they do not own, and the entry is judged itself) (``world_writable``),
- it carries a POSIX ACL entry that lets a named user or group other than root write it, the ACL's mask
  allowing (its access ACL, or a folder's default ACL: what its new entries get), or an ACL that cannot be read
  (``acl``: the xattrs parsed here, no getfacl; ``owner_name`` names the writers),
- it cannot be read or does not exist, the walk is too long, a link loops, or its ``#!`` line is
  ``/usr/bin/env NAME`` (NAME is found on a PATH at run time, judged nowhere) (``unknown``).

The API (stable; the enforce branch uses it too):

- ``problems(path) -> List[Problem]``: every failing component, in walk order; ``[]`` when root alone can
  change what runs.
- ``as_root(path) -> List[Problem]``: problems(path) when this process is root, [] otherwise (the call sites'
  question: may I run it myself?).
- ``python_problems(path)`` / ``as_root_python(path)``: the same for a Python interpreter, with the pyvenv.cfg it
  reads beside its unresolved path or one folder up, the ``home`` that names and the standard library there.
- ``owner(found) -> Optional[int]``: the one non-root uid that owns the failing components (the user a program
  that fails is run as, through run_as), None when there is none or more than one (then it is not run at all).
- ``findings(code, program, found) -> List[Diagnostic]``: one finding of ``code`` per problem (the code's
  variants are registry.NOT_ROOTS_FIXES').
- ``Problem``: ``path`` (the component), ``uid``, ``gid``, ``mode``, ``reason`` (one of REASONS), ``fix`` (a
  command that makes this component root's, runs as pasted), ``owner_name`` (the user's name, or the uid).

Pure Python, no Ansible imports, Python 3.8+.
"""
from __future__ import absolute_import, annotations, division, print_function

import errno
import grp
import os
import pwd
import re
import shlex
import stat
import struct
from typing import Any, List, Optional, Set, Tuple, Union

from . import diagnostics
from .records import Record

REASONS = ("owned", "group_writable", "world_writable", "acl", "unknown")
MAX_LINKS = 40            # the kernel's own limit on links followed in one lookup
MAX_COMPONENTS = 4096     # PATH_MAX: a walk longer than this is refused
MAX_INTERPRETERS = 4      # binfmt_script's own nesting limit
HEAD_BYTES = 256          # a #! line is at most this long on Linux (BINPRM_BUF_SIZE)
ELF_MAGIC = b"\x7fELF"
PT_INTERP = 3
MAX_PROGRAM_HEADERS = 256
ACL_NAMES = ("system.posix_acl_access", "system.posix_acl_default")
ACL_VERSION = 2           # POSIX_ACL_XATTR_VERSION
ACL_USER, ACL_GROUP, ACL_MASK = 0x02, 0x08, 0x10     # the entry tags of a named user, a named group, the mask
ACL_WRITE = 0x02
PYVENV_BYTES = 4096       # a pyvenv.cfg longer than this is read no further
MAX_TREE = 20000          # entries of a standard library walked before it is called unknown
STDLIB_NAME = re.compile(r"python3\.[0-9]+\Z")


class Problem(Record):
    """One component of a path that someone other than root can change."""
    path: str
    uid: int
    gid: int
    mode: int
    reason: str
    fix: str
    owner_name: str


def user_name(uid: int) -> str:
    """The user's name, or the uid as text when no such user exists."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _fix(path: str, reason: str) -> str:
    quoted = shlex.quote(path)
    if reason == "owned":
        return "chown -h root:root %s" % quoted
    if reason == "group_writable":
        return "chmod g-w %s" % quoted
    if reason == "acl":
        return "setfacl -b %s" % quoted
    if reason == "world_writable":
        return "chmod o-w %s" % quoted
    return "ls -ld %s" % quoted


def acl_writers(where: Union[str, int]) -> Optional[List[str]]:
    """The named users and groups other than root that the access ACL of ``where`` (a path, not followed, or an
    open descriptor) and the default ACL of a folder (what its new entries get) let write: their entries' write
    bit, with the ACL's mask. Read from the ``system.posix_acl_*`` xattrs and parsed here (no getfacl):
    ``["user:NAME", "group:NAME"]``, [] without such an entry or ACL; None when an ACL cannot be read or parsed
    (unknown is a failure)."""
    out: List[str] = []
    for name in ACL_NAMES:
        try:
            data = _xattr(where, name)
        except OSError as exc:
            if exc.errno in (errno.ENODATA, errno.ENOTSUP, errno.ENOENT, errno.EOPNOTSUPP):
                continue
            return None
        entries = acl_entries(data)
        if entries is None:
            return None
        mask = next((perm for tag, perm, _id in entries if tag == ACL_MASK), 7)
        out.extend(_acl_name(tag, ident) for tag, perm, ident in entries
                   if tag in (ACL_USER, ACL_GROUP) and ident != 0 and perm & mask & ACL_WRITE)
    return sorted(set(out))


def _xattr(where: Union[str, int], name: str) -> bytes:
    """The xattr ``name`` of a path (not followed) or a descriptor; an O_PATH descriptor (no fgetxattr through it:
    EBADF) is read through its /proc/self/fd magic link, which names the object itself (there a missing link,
    /proc not mounted, is unknown: EIO, never "no ACL")."""
    if not isinstance(where, int):
        return os.getxattr(where, name, follow_symlinks=False)
    try:
        return os.getxattr(where, name)
    except OSError as exc:
        if exc.errno != errno.EBADF:
            raise
    try:
        return os.getxattr("/proc/self/fd/%d" % where, name)
    except FileNotFoundError:
        raise OSError(errno.EIO, "/proc/self/fd/%d cannot be read" % where) from None


def acl_entries(data: bytes) -> Optional[List[Tuple[int, int, int]]]:
    """The (tag, permissions, id) entries of a POSIX ACL xattr (little-endian: a version, then 8-byte entries);
    None when it is not one."""
    if len(data) < 4 or (len(data) - 4) % 8 or struct.unpack_from("<I", data, 0)[0] != ACL_VERSION:
        return None
    return [struct.unpack_from("<HHI", data, offset) for offset in range(4, len(data), 8)]


def _acl_name(tag: int, ident: int) -> str:
    if tag == ACL_USER:
        return "user:%s" % user_name(ident)
    try:
        return "group:%s" % grp.getgrgid(ident).gr_name
    except KeyError:
        return "group:%d" % ident


def change_reasons(info: os.stat_result, where: Optional[Union[str, int]] = None, sticky_folders: bool = True,
                   root_group: bool = True, own_uid: int = 0) -> List[str]:
    """Why someone other than root (and ``own_uid``) can change this component (its lstat/fstat ``info``): one
    of REASONS each. The one judgement of "only root can change it" the core has; the rules that differ on
    purpose are parameters:

    - ``sticky_folders``: a folder others may write but with the sticky bit passes (others cannot replace an
      entry there they do not own; the entry is judged itself) - owners' walk; a reader that opens entries it
      has not judged itself does not accept it.
    - ``root_group``: a group write bit is accepted when the group is root's (gid 0).
    - ``own_uid``: a uid besides root whose components pass (a writer running as that user: its own folders).
    - ``where``: the path (not followed) or descriptor (an O_PATH one too: read through /proc/self/fd) whose ACL
      xattrs are read (acl_writers); None: the ACL is not judged.

    A symbolic link is judged by its owner alone (its own mode is always 0777 and means nothing)."""
    mode = info.st_mode
    reasons = []
    if info.st_uid not in (0, own_uid):
        reasons.append("owned")
    if stat.S_ISLNK(mode):
        return reasons
    if mode & stat.S_IWGRP and not (root_group and info.st_gid == 0):
        reasons.append("group_writable")
    if mode & stat.S_IWOTH and not (sticky_folders and stat.S_ISDIR(mode) and mode & stat.S_ISVTX):
        reasons.append("world_writable")
    if where is not None and acl_writers(where) != []:
        reasons.append("acl")          # a named user or group may write it (or its ACL cannot be read)
    return reasons


def judge_component(path: str, info: os.stat_result) -> List[Problem]:
    """The problems of one component, from its lstat and its ACL xattrs (change_reasons)."""
    out = []
    for reason in change_reasons(info, path):
        who = user_name(info.st_uid)
        if reason == "acl":
            who = ", ".join(acl_writers(path) or ["an ACL entry that cannot be read"])
        out.append(Problem(path, info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode), reason, _fix(path, reason),
                           who))
    return out


def _unknown(path: str) -> Problem:
    return Problem(path, -1, -1, 0, "unknown", _fix(path, "unknown"), "unknown")


def resolve(path: str, found: List[Problem]) -> Optional[str]:
    """Walk ``path`` (absolute) from ``/`` component by component without following a link by the system:
    each component judged (appended to ``found``), each link's target walked in its place. The real path, or
    None when the walk could not finish (an ``unknown`` problem is appended)."""
    if not path.startswith("/"):
        found.append(_unknown(path))
        return None
    pending = [part for part in path.split("/") if part not in ("", ".")]
    pending.reverse()
    current = "/"
    found.extend(judge_component("/", os.lstat("/")))
    links = steps = 0
    while pending:
        steps += 1
        part = pending.pop()
        if part == "..":
            current = os.path.dirname(current) or "/"
            continue
        candidate = os.path.join(current, part)
        try:
            info = os.lstat(candidate)
        except OSError:
            found.append(_unknown(candidate))
            return None
        found.extend(judge_component(candidate, info))
        if stat.S_ISLNK(info.st_mode):
            links += 1
            try:
                target = os.readlink(candidate)
            except OSError:
                target = ""
            if links > MAX_LINKS or not target or steps > MAX_COMPONENTS:
                found.append(_unknown(candidate))
                return None
            if target.startswith("/"):
                current = "/"
            pending.extend(reversed([piece for piece in target.split("/") if piece not in ("", ".")]))
            continue
        current = candidate
    return current


def _read_head(path: str, size: int, offset: int = 0) -> bytes:
    """At most ``size`` bytes of a regular file at ``offset``, opened without following a link and without
    blocking (a FIFO in its place gives nothing)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.pread(fd, size, offset)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _elf_interpreter(path: str, head: bytes) -> Optional[str]:
    """An ELF file's PT_INTERP (its dynamic loader), None for a static one or one that cannot be read."""
    if len(head) < 64 or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    wide, order = head[4] == 2, "<" if head[5] == 1 else ">"
    if wide:
        phoff, = struct.unpack_from(order + "Q", head, 32)
        phentsize, phnum = struct.unpack_from(order + "HH", head, 54)
    else:
        phoff, = struct.unpack_from(order + "I", head, 28)
        phentsize, phnum = struct.unpack_from(order + "HH", head, 42)
    if phnum > MAX_PROGRAM_HEADERS or phentsize < (56 if wide else 32):
        return None
    table = _read_head(path, phentsize * phnum, phoff)
    for index in range(phnum):
        entry = table[index * phentsize:(index + 1) * phentsize]
        if len(entry) < phentsize or struct.unpack_from(order + "I", entry, 0)[0] != PT_INTERP:
            continue
        if wide:
            offset, = struct.unpack_from(order + "Q", entry, 8)
            size, = struct.unpack_from(order + "Q", entry, 32)
        else:
            offset, = struct.unpack_from(order + "I", entry, 4)
            size, = struct.unpack_from(order + "I", entry, 16)
        name = _read_head(path, min(size, 4096), offset).split(b"\0")[0]
        return os.fsdecode(name) or None
    return None


def interpreter(path: str) -> Optional[str]:
    """The program the kernel runs for ``path`` first: its ``#!`` interpreter or its ELF loader; None for
    neither."""
    head = _read_head(path, HEAD_BYTES)
    if head.startswith(b"#!"):
        words = head[2:].split(b"\n")[0].split()
        return os.fsdecode(words[0]) if words else None
    if head.startswith(ELF_MAGIC):
        return _elf_interpreter(path, _read_head(path, 64))
    return None


def problems(path: str) -> List[Problem]:
    """Every component of ``path``, the links on the way, the file and its interpreters (see the module's
    docstring) that someone other than root can change: [] when root alone can."""
    found: List[Problem] = []
    seen: Set[str] = set()
    todo: Optional[str] = path
    depth = 0
    while todo is not None and todo not in seen:
        if depth > MAX_INTERPRETERS:
            found.append(_unknown(todo))
            break
        seen.add(todo)
        real = resolve(todo, found)
        if real is None:
            break
        try:
            regular = stat.S_ISREG(os.lstat(real).st_mode)
        except OSError:
            regular = False
        if not regular:
            found.append(_unknown(real))
            break
        todo = interpreter(real)
        if todo is not None and os.path.basename(todo) == "env":
            found.append(_unknown(real))      # #!/usr/bin/env NAME: NAME is found on a PATH, judged nowhere
            break
        depth += 1
    return unique(found)


def unique(found: List[Problem]) -> List[Problem]:
    """``found`` with each (component, reason) once, in its first place."""
    out: List[Problem] = []
    keys: Set[Tuple[str, str]] = set()
    for problem in found:
        if (problem.path, problem.reason) not in keys:
            keys.add((problem.path, problem.reason))
            out.append(problem)
    return out


def owner(found: List[Problem]) -> Optional[int]:
    """The one non-root uid that owns the failing components (the user to run such a program as); None when
    none does, more than one does, or any other reason stands beside ``owned`` (a folder its group or others
    can write, an ACL, an unknown: a third user could swap what the owner's run executes)."""
    uids = {problem.uid for problem in found if problem.reason == "owned"}
    if len(uids) != 1 or any(problem.reason != "owned" for problem in found):
        return None
    return uids.pop()


def _stdlib_folders(home: str) -> List[str]:
    """The ``lib/pythonX.Y`` folders Python may take its standard library from for a venv's ``home``: those
    below ``home`` and each folder above it (getpath's landmark search), names read as data."""
    out: List[str] = []
    prefix = home
    while True:
        lib = os.path.join(prefix, "lib")
        try:
            names = os.listdir(lib) if stat.S_ISDIR(os.lstat(lib).st_mode) else []
        except OSError:
            names = []
        out.extend(os.path.join(lib, name) for name in sorted(names)
                   if STDLIB_NAME.match(name) and os.path.isdir(os.path.join(lib, name)))
        if prefix == "/":
            return out
        prefix = os.path.dirname(prefix)


def _walk_tree(top: str, found: List[Problem]) -> None:
    """Every entry below ``top`` (already walked) judged from its lstat, no link followed, bounded."""
    count = 0
    for folder, folders, files in os.walk(top, followlinks=False):
        for name in folders + files:
            count += 1
            if count > MAX_TREE:
                found.append(_unknown(top))
                return
            path = os.path.join(folder, name)
            try:
                found.extend(judge_component(path, os.lstat(path)))
            except OSError:
                found.append(_unknown(path))


def _venv_home(config: str) -> Optional[str]:
    """The ``home =`` value of a pyvenv.cfg (read without following a link, bounded); None without one."""
    for line in _read_head(config, PYVENV_BYTES).decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "home":
            return value.strip()
    return None


def _venv_problems(python: str, found: List[Problem]) -> None:
    """pyvenv.cfg is part of the program (Python reads it, -I -S or not, beside the UNRESOLVED executable or
    one folder up): a folder where another user could create one is a problem (sticky or not); an existing one
    is walked, and the ``home`` it names and the standard library found from there are walked too."""
    folder = os.path.dirname(os.path.abspath(python))
    for place in (folder, os.path.dirname(folder)):
        real = resolve(place, found)
        if real is None:
            return
        try:
            info = os.lstat(real)
        except OSError:
            found.append(_unknown(real))
            return
        if info.st_mode & stat.S_IWOTH:           # sticky too: another user may create pyvenv.cfg there
            found.append(Problem(real, info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode), "world_writable",
                                 _fix(real, "world_writable"), user_name(info.st_uid)))
        config = os.path.join(real, "pyvenv.cfg")
        try:
            os.lstat(config)
        except FileNotFoundError:
            continue
        except OSError:
            found.append(_unknown(config))
            return
        config_real = resolve(config, found)
        if config_real is None:
            return
        home = _venv_home(config_real)
        if home is None:
            return
        home_real = resolve(home, found) if home.startswith("/") else None
        if home_real is None:
            found.append(_unknown(home or config_real))
            return
        for stdlib in _stdlib_folders(home_real):
            if resolve(stdlib, found) is not None:
                _walk_tree(stdlib, found)
        return                                     # Python reads the first pyvenv.cfg it finds


def python_problems(path: str) -> List[Problem]:
    """problems(path) for a Python interpreter: also the pyvenv.cfg it would read, the ``home`` that names and
    the standard library found there (see _venv_problems)."""
    found = problems(path)
    _venv_problems(path, found)
    return unique(found)


def as_root_python(path: str) -> List[Problem]:
    """python_problems(path) when this process is root, [] otherwise (see as_root)."""
    return python_problems(path) if os.geteuid() == 0 else []


def as_root(path: str) -> List[Problem]:
    """problems(path) when this process is root (what it must not run itself); [] for another user, who can
    drop no privilege and runs what it runs as itself."""
    return problems(path) if os.geteuid() == 0 else []


def is_roots(path: str) -> bool:
    """True when root alone can change what running ``path`` runs."""
    return not problems(path)


def findings(code: str, program: str, found: List[Problem], **more: Any) -> List[diagnostics.Diagnostic]:
    """One finding of ``code`` (a code whose variants are registry.NOT_ROOTS_FIXES') per problem: the
    component, its owner, the program root would have run (and the code's own details ``more``); its fix runs
    as pasted."""
    return [diagnostics.make(code, variant=problem.reason, program=program, path=problem.path,
                             owner=problem.owner_name, mode="%04o" % problem.mode, gid=problem.gid, **more)
            for problem in found]
