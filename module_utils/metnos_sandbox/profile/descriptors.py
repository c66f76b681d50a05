# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bind sources that cannot move: descriptors opened race-free when a profile is executed.

A source whose walk from / passes through a folder that someone other than root can write
(mountmodel.unstable_folder) could be swapped for a symbolic link or another folder between
rendering and running, and bwrap follows symbolic links in a source path when it mounts it. The
renderer therefore names such a source by descriptor: ``--ro-bind-fd N DEST`` / ``--bind-fd N
DEST``, with a fixed number N (FD_BASE, FD_BASE + 1, ... in mount order: equal inputs give equal
argv) and, in the profile's ``descriptors``, the object judged: its path (the destination: every
grant is mounted at its resolved host path), device, inode and type.

Whoever executes the profile opens each one with ``open_judged`` - component by component from
/, O_PATH|O_NOFOLLOW, never following a symbolic link - proves it is the object judged (st_dev,
st_ino, type), puts it on N and executes bwrap, which mounts the descriptor's object and checks
once more (fstat of the descriptor against lstat of the mount point: a swap in between ends bwrap
with "Race condition binding dirfd"). Anything else ends with ``bind_source_moved`` before bwrap
runs. A profile with descriptors cannot be run as a plain argv: N is not open, bwrap stops at
setup ("Can't find source path /proc/self/fd/N"), it never mounts something else.

The consumers: the probe (its ``_descriptor_launcher`` hook wraps bwrap's argv with
``launcher_words``, in the direct run and inside the transient unit) and, for a stored profile,
``metnos-sandbox-exec --profile PROFILE.json`` (the role's launcher: ``main(["--profile", PATH])``).
Stdlib only and no import of the rest of the core: ``launcher_words`` ships this module's own source as
``python -I -S -c``, run by the interpreter the sandbox uses, as the user it runs as.
"""
from __future__ import absolute_import, annotations, division, print_function

import fcntl
import json
import os
import signal
import stat
import sys
from typing import Any, Dict, List, Optional, Sequence

FD_BASE = 100                  # far above what a launcher holds open (0-2, a status pipe)
MAX_DESCRIPTORS = 512          # FD_BASE + 511 stays below the usual soft RLIMIT_NOFILE of 1024
BIND_FD = ("--ro-bind-fd", "--bind-fd")
CODE = "bind_source_moved"
MAX_PROFILE_BYTES = 4 * 1024 * 1024
_TYPES = {stat.S_IFDIR: "dir", stat.S_IFREG: "file"}
Descriptor = Dict[str, Any]


class Moved(Exception):
    """The object at a descriptor bind's path is not the one judged (or cannot be opened safely)."""


def kind_of(mode: int) -> str:
    return _TYPES.get(stat.S_IFMT(mode), "other")


def identity(path: str, fd: int, info: os.stat_result, dest: Optional[str] = None) -> Descriptor:
    """What the renderer records of a source it binds by descriptor ``fd`` (``dest``: where, when that is not
    its path: the filtering proxy's socket, bound where the system bus is expected)."""
    out: Descriptor = {"fd": fd, "path": path, "dev": info.st_dev, "ino": info.st_ino, "type": kind_of(info.st_mode)}
    if dest is not None and dest != path:
        out["dest"] = dest
    return out


def open_judged(want: Descriptor) -> int:
    """An O_PATH descriptor of ``want['path']`` reached from / one component at a time without
    following any symbolic link, proven to be the object judged. Raises Moved."""
    path = want.get("path")
    if not isinstance(path, str) or not path.startswith("/") or path == "/" or "\0" in path:
        raise Moved("descriptor %r: not an absolute path" % (want.get("fd"),))
    parts = path.strip("/").split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise Moved("%s is not a normalised path" % path)
    flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
    current = os.open("/", flags | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, flags | os.O_DIRECTORY, dir_fd=current)
            except OSError as exc:
                raise Moved("%s: component %s is no longer a folder (%s)" % (path, part, exc.strerror)) from None
            os.close(current)
            current = nxt
        try:
            last = os.open(parts[-1], flags, dir_fd=current)
        except OSError as exc:
            raise Moved("%s cannot be opened (%s)" % (path, exc.strerror)) from None
    finally:
        os.close(current)
    info = os.fstat(last)
    if (info.st_dev, info.st_ino, kind_of(info.st_mode)) != (want.get("dev"), want.get("ino"), want.get("type")):
        os.close(last)
        raise Moved("%s is not the object judged when the profile was rendered (device %s inode %s %s, judged "
                    "device %s inode %s %s)" % (path, info.st_dev, info.st_ino, kind_of(info.st_mode),
                                                want.get("dev"), want.get("ino"), want.get("type")))
    return last


def _named(words: Sequence[str], want: Descriptor) -> bool:
    """The argv binds exactly this descriptor number at exactly its judged path (or its declared ``dest``)."""
    number, path = str(want.get("fd")), want.get("dest", want.get("path"))
    return any(w in BIND_FD and words[i + 1:i + 3] == [number, path] for i, w in enumerate(words[:-2]))


def install(words: Sequence[str], descriptors: Sequence[Descriptor]) -> List[int]:
    """Open every declared descriptor the argv ``words`` binds (by its number, at its judged path) and put
    each on its number (inheritable). Returns the numbers; raises Moved (nothing is left open then)."""
    words = list(words)
    done: List[int] = []
    try:
        if len(descriptors) > MAX_DESCRIPTORS:
            raise Moved("%d descriptors (at most %d)" % (len(descriptors), MAX_DESCRIPTORS))
        for want in descriptors:
            number = want.get("fd")
            if not isinstance(number, int) or isinstance(number, bool) or not FD_BASE <= number < FD_BASE + \
                    MAX_DESCRIPTORS:
                raise Moved("descriptor %r is not one a profile declares" % (number,))
            if not _named(words, want):
                continue          # not bound by this argv: not opened (a number it binds unopened fails bwrap)
            if _is_open(number):
                raise Moved("descriptor %d is already open in this process" % number)
            fd = open_judged(want)
            os.dup2(fd, number, inheritable=True)
            os.close(fd)
            done.append(number)
    except Moved:
        for number in done:
            os.close(number)
        raise
    return done


def _is_open(number: int) -> bool:
    try:
        fcntl.fcntl(number, fcntl.F_GETFD)
    except OSError:
        return False
    return True


def _source() -> str:
    """This module's own source (it runs alone as the launcher)."""
    loader = globals().get("__loader__")
    get = getattr(loader, "get_source", None)
    text = get(__name__) if callable(get) else None
    if not isinstance(text, str):
        with open(__file__, "r") as handle:
            text = handle.read()
    return text


def launcher_words(words: Sequence[str], python: str, descriptors: Optional[Sequence[Descriptor]]) -> List[str]:
    """``words`` (a bwrap argv) as they must be executed: unchanged without descriptors, else behind the
    launcher, which opens them race-free and then becomes bwrap (same process: exec)."""
    if not descriptors:
        return list(words)
    return [python, "-I", "-S", "-c", _source(), json.dumps(list(descriptors), sort_keys=True), "--"] + list(words)


def _read_profile(path: str) -> Dict[str, Any]:
    """A stored <executor>.json: a regular file (no symbolic link), bounded, JSON."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_PROFILE_BYTES:
            raise Moved("%s is not a regular file of at most %d bytes" % (path, MAX_PROFILE_BYTES))
        data = os.read(fd, MAX_PROFILE_BYTES + 1)
    finally:
        os.close(fd)
    doc = json.loads(data.decode("utf-8"))
    if not isinstance(doc, dict) or doc.get("decision") != "wrapped" or not isinstance(doc.get("argv"), list):
        raise Moved("%s is not a wrapped profile" % path)
    return doc


def run(words: Sequence[str], descriptors: Sequence[Descriptor]) -> None:
    """Install the descriptors and become bwrap (never returns unless it raises Moved or OSError)."""
    install(words, descriptors)
    argv = [str(w) for w in words]
    if "/" in argv[0]:
        os.execv(argv[0], argv)
    os.execvp(argv[0], argv)


TERMINAL_SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP)


def leave_terminal() -> None:
    """Go on in a session of its own, without a controlling terminal, before becoming bwrap. A sandbox that
    keeps the terminal of the shell that started it can push input into it (ioctl TIOCSTI: a command that
    shell runs once bwrap exits, CVE-2017-5226); the spec's argv has no --new-session (R-BASE-6), so the
    launcher does what that flag does. A process-group leader (a shell's job) cannot start a session: it
    forks, the child goes on in a new session, and the parent waits, passes on the signals a terminal sends,
    and exits as the child did (128 + the signal when one ended it)."""
    try:
        os.setsid()
        return
    except OSError:
        pass
    child = os.fork()
    if child == 0:
        os.setsid()
        return
    for number in TERMINAL_SIGNALS:
        signal.signal(number, lambda got, _frame: os.kill(child, got))
    _pid, status = os.waitpid(child, 0)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def main(args: Sequence[str]) -> int:
    """``--profile PATH`` (a stored <executor>.json, run by an admin: leave_terminal() first) or
    ``DESCRIPTORS_JSON -- ARGV...`` (the probe's launcher, started by its reaper in a session of its own)."""
    try:
        if len(args) == 2 and args[0] == "--profile":
            doc = _read_profile(args[1])
            leave_terminal()
            run(doc["argv"], doc.get("descriptors") or [])
        elif len(args) > 2 and args[1] == "--":
            run(args[2:], json.loads(args[0]))
        else:
            sys.stderr.write("usage: metnos-sandbox-exec --profile PROFILE.json\n")
            return 2
    except (Moved, OSError, ValueError) as exc:
        sys.stderr.write("metnos-sandbox-exec: %s: %s\n" % (CODE, exc))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
