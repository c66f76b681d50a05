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

import ctypes
import errno
import fcntl
import hashlib
import json
import os
import pwd
import shlex
import signal
import stat
import sys
from typing import Any, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

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


def drop_terminal_descriptors() -> None:
    """Put /dev/null over each of fds 0-2 that is a terminal. A session of its own is not enough: these
    descriptors still reach the caller's terminal, and a process the sandbox leaves behind (no --unshare-pid)
    would read there what root types after the launcher returned."""
    for number in (0, 1, 2):
        if os.isatty(number):
            null = os.open(os.devnull, os.O_RDWR | os.O_NOCTTY)
            os.dup2(null, number, inheritable=True)
            os.close(null)


# ---- metnos-sandbox-exec --profile: a stored profile, run the only safe way ----
# Every refusal of the launcher is one of these codes (base/codes_launcher.py registers them with their
# remediation; its first step is printed after the message). Exit 1 for a refusal, 2 for a usage error.
MISSING = "launcher_profile_missing"
UNREADABLE = "launcher_profile_unreadable"
NOT_JSON = "launcher_profile_not_json"
INVALID = "launcher_profile_invalid"
UNSAFE = "profile_folder_unsafe"
HALF = "profile_pair_mismatch"
ROOT = "launcher_root_refused"
CHANNEL = "launcher_channel_appeared"
KEYRING = "launcher_keyring_kept"
CHANGED = "launcher_channel_search_changed"
FIXES = {MISSING: "ls -l {quoted}",
         UNREADABLE: "ls -l {quoted}",
         NOT_JSON: "ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles",
         INVALID: "ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles",
         UNSAFE: "chown root:root {quoted} && chmod go-w {quoted}",
         HALF: "ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles",
         ROOT: "ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles -e metnos_sandbox_run_as=<user>",
         CHANNEL: "ls -l {quoted}",
         KEYRING: "grep Seccomp /proc/self/status",
         CHANGED: "ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles",
         CODE: "ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles"}
MAX_CHANNEL_WALK = 20000       # entries looked at over every granted folder, as the render's channel search
MAX_WALK_DEPTH = 200           # folders open at once in tree (one descriptor each), below RLIMIT_NOFILE
WALK_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
STOPPED = {"entries": "more than %d entries below the granted folders (stopped at %%s)" % MAX_CHANNEL_WALK,
           "deep": "%%s is nested more than %d folders deep" % MAX_WALK_DEPTH, "unreadable": "%s cannot be listed",
           "changed": "%s changed while searched (it vanished or was swapped)"}
CHANNEL_TYPES = (stat.S_IFSOCK, stat.S_IFIFO, stat.S_IFCHR, stat.S_IFBLK)
# What reaches the sandbox of the caller's environment (nothing else does: bwrap starts with this alone, and a
# profile that needs more says so with --setenv in its argv). Values longer than MAX_ENV_VALUE are dropped.
ENV_NAMES = ("PATH", "LANG", "LANGUAGE")
ENV_PREFIXES = ("LC_", "METNOS_")
MAX_ENV_VALUE = 4096
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
HELP = """usage: metnos-sandbox-exec --profile /etc/metnos/sandbox/profiles/<executor>.json
       metnos-sandbox-exec --version | --help

Runs a stored profile (written by the sandbox_profile module: <executor>.json and its <executor>.args) in bwrap:
  - the profile, its .args and every folder on their way from / are root's and writable by nobody else (each
    opened without following a symbolic link); the .json and the .args carry the same argv digest;
  - started by root, it drops to the service user the profile records (run_as: no supplementary groups, no
    capabilities, verified) before anything else; a profile without one is refused;
  - started by root, the dropped process joins a session keyring of its own (proven by its serial), so the
    executor never holds root's keyring (launcher_keyring_kept);
  - the sources bound by descriptor are opened race-free and proven to be the objects judged at render time;
  - the granted folders hold no socket, FIFO or device node the render did not see there (channels);
  - bwrap starts in a session of its own, no terminal on fds 0-2 (/dev/null instead), with every other
    descriptor closed and a clean environment: only
    PATH, LANG, LANGUAGE, LC_* and METNOS_* of the caller (anything else only by --setenv in the profile).
Exit status: bwrap's; 1 when the profile is refused (the message starts with its code), 2 for a usage error.
Codes: launcher_profile_missing, launcher_profile_unreadable, launcher_profile_not_json, launcher_profile_invalid,
profile_folder_unsafe, profile_pair_mismatch, launcher_root_refused, launcher_keyring_kept,
launcher_channel_appeared, launcher_channel_search_changed, bind_source_moved
(docs/diagnostics.md).
"""


class Refused(Exception):
    """A stored profile the launcher will not run: its code, and the message naming the path."""

    def __init__(self, code: str, message: str, path: str = "") -> None:
        Exception.__init__(self, message)
        self.code = code
        self.path = path


def args_digest(argv: Sequence[str]) -> str:
    """The digest the .json records of its argv, equal to the sha256 of the .args file's bytes."""
    return hashlib.sha256(("\n".join(argv) + "\n").encode("utf-8")).hexdigest()


def _owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return "uid %d" % uid


def safe_owner(info: os.stat_result, on_the_way: bool) -> bool:
    """Root's, and no one else can change what it holds: no group or other write bit, except on a folder
    ``on_the_way`` to the profile folder that is sticky (like /var/tmp: another user can add entries there but
    cannot rename or remove root's)."""
    if info.st_uid != 0:
        return False
    return not info.st_mode & 0o022 or (on_the_way and stat.S_ISDIR(info.st_mode) and bool(info.st_mode & stat.S_ISVTX))


def root_only(info: os.stat_result, path: str, what: str, on_the_way: bool = False) -> None:
    """``path`` (fstat ``info``) is root's and no one else can write it (safe_owner), else Refused(UNSAFE)."""
    if not safe_owner(info, on_the_way):
        raise Refused(UNSAFE, "%s %s is owned by %s, mode %04o: a stored profile runs only from folders root owns "
                      "and nobody else can write" % (what, path, _owner_name(info.st_uid),
                                                     stat.S_IMODE(info.st_mode)), path)


def _walk(folder: str) -> int:
    """An O_PATH descriptor of ``folder`` reached from / without following a link, every folder on the way
    root's alone. Raises Refused."""
    fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    done = "/"
    parts = [p for p in folder.split("/") if p]
    try:
        root_only(os.fstat(fd), "/", "the folder", bool(parts))
        for index, part in enumerate(parts):
            done = os.path.join(done, part)
            try:
                nxt = os.open(part, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno == 2:
                    raise Refused(MISSING, "the profile folder %s does not exist" % done, done) from None
                kind = "a symbolic link" if os.path.islink(done) else exc.strerror
                raise Refused(UNSAFE, "the profile folder %s is not a folder opened without following a link (%s)"
                              % (done, kind), done) from None
            os.close(fd)
            fd = nxt
            root_only(os.fstat(fd), done, "the folder", index < len(parts) - 1)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_at(folder_fd: int, path: str) -> bytes:
    """The bytes of ``path`` (a name in the folder ``folder_fd``): a regular file, root's alone, bounded, opened
    without following a link and without blocking (a FIFO fails at once). Raises Refused."""
    try:
        fd = os.open(os.path.basename(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=folder_fd)
    except OSError as exc:
        if exc.errno == 2:
            raise Refused(MISSING, "%s does not exist" % path, path) from None
        raise Refused(UNREADABLE, "%s cannot be opened (%s)" % (path, exc.strerror), path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_PROFILE_BYTES:
            raise Refused(UNREADABLE, "%s is not a regular file of at most %d bytes" % (path, MAX_PROFILE_BYTES),
                          path)
        root_only(info, path, "the file")
        data = b""
        while len(data) <= MAX_PROFILE_BYTES:
            chunk = os.read(fd, MAX_PROFILE_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError as exc:
        raise Refused(UNREADABLE, "%s cannot be read (%s)" % (path, exc.strerror), path) from None
    finally:
        os.close(fd)
    if len(data) > MAX_PROFILE_BYTES:
        raise Refused(UNREADABLE, "%s grew past %d bytes while read" % (path, MAX_PROFILE_BYTES), path)
    return data


def _checked(doc: Any, path: str) -> Dict[str, Any]:
    """The stored profile ``doc`` if it is one the launcher can run, else Refused(INVALID)."""
    def bad(why: str) -> Refused:
        return Refused(INVALID, "%s is not a stored profile the launcher runs: %s" % (path, why), path)
    if not isinstance(doc, dict):
        raise bad("not a JSON object")
    if doc.get("decision") != "wrapped":
        raise bad("its decision is %s, not wrapped" % json.dumps(doc.get("decision"))[:80])
    argv = doc.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(w, str) for w in argv):
        raise bad("argv is not a list of strings")
    if not argv[0].startswith("/"):
        raise bad("argv[0] %s is not an absolute path" % json.dumps(argv[0])[:200])
    if not isinstance(doc.get("descriptors") or [], list) or not isinstance(doc.get("args_sha256"), str):
        raise bad("descriptors or args_sha256 missing or of the wrong type (render it again)")
    run_as = doc.get("run_as")
    if run_as is not None and not (isinstance(run_as, dict) and isinstance(run_as.get("user"), str) and all(
            isinstance(run_as.get(k), int) and not isinstance(run_as.get(k), bool) and run_as[k] >= 0
            for k in ("uid", "gid"))):
        raise bad("run_as is not {user, uid, gid}")
    return doc


def read_stored(path: str) -> Dict[str, Any]:
    """The stored profile ``path`` (<executor>.json) and its .args, read as root may read them: every folder from
    / root's alone, both files root's, regular, bounded, the .args the bytes the .json's digest names."""
    if not isinstance(path, str) or not path.startswith("/") or "\0" in path or any(
            p in (".", "..") for p in path.split("/")):
        raise Refused(MISSING, "%s is not an absolute path of a stored <executor>.json" % json.dumps(path)[:300],
                      str(path))
    if not path.endswith(".json"):
        raise Refused(INVALID, "%s is not a stored profile the launcher runs: name its <executor>.json (the .args "
                      "beside it is read with it)" % path, path)
    folder_fd = _walk(os.path.dirname(path))
    try:
        text = _read_at(folder_fd, path)
        args_path = path[:-len(".json")] + ".args"
        args = _read_at(folder_fd, args_path)
    finally:
        os.close(folder_fd)
    try:
        doc = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(NOT_JSON, "%s is not JSON text (%s)" % (path, str(exc)[:200]), path) from None
    doc = _checked(doc, path)
    digest = hashlib.sha256(args).hexdigest()
    if doc["args_sha256"] != args_digest(doc["argv"]) or digest != doc["args_sha256"]:
        raise Refused(HALF, "%s and %s are not one profile (the .json records argv sha256 %s, its own argv has %s, "
                      "the .args file %s): a write was interrupted or one file was changed" % (
                          path, args_path, doc["args_sha256"][:80], args_digest(doc["argv"]), digest), path)
    return doc


def _capabilities() -> Dict[str, int]:
    """CapInh/CapPrm/CapEff/CapBnd/CapAmb of this process (/proc/self/status), as numbers."""
    out = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("Cap"):
                name, _sep, value = line.partition(":")
                out[name] = int(value.strip(), 16)
    return out


def drop_to(run_as: Optional[Dict[str, Any]], path: str) -> Tuple[int, int]:
    """Started by root: become the profile's service user for good (no supplementary group, no capability),
    and prove it. Raises Refused(ROOT) when the profile records no such user or the drop does not hold."""
    if not run_as:
        raise Refused(ROOT, "%s records no service user (run_as), and the launcher never runs an executor as root"
                      % path, path)
    uid, gid, name = run_as["uid"], run_as["gid"], run_as["user"]
    if uid == 0 or gid == 0:
        raise Refused(ROOT, "%s records run_as %s (uid %d, gid %d): executors never run as root" % (
            path, name, uid, gid), path)
    try:
        now = pwd.getpwnam(name)
    except KeyError:
        now = None
    if now is None or (now.pw_uid, now.pw_gid) != (uid, gid):
        raise Refused(ROOT, "%s records run_as %s as uid %d gid %d, this host says %s" % (
            path, name, uid, gid, "no such user" if now is None else "uid %d gid %d" % (now.pw_uid, now.pw_gid)),
            path)
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as exc:
        raise Refused(ROOT, "cannot become %s (uid %d): %s" % (name, uid, exc.strerror), path) from None
    try:
        caps = _capabilities()
    except (OSError, ValueError) as exc:
        raise Refused(ROOT, "cannot read the capabilities left after the drop to %s: %s" % (name, exc), path) from None
    held = dict((k, v) for k, v in caps.items() if k in ("CapInh", "CapPrm", "CapEff", "CapAmb") and v)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups() or held \
            or _regains_root():
        raise Refused(ROOT, "the drop to %s did not hold (uids %s, gids %s, groups %s, capabilities %s)" % (
            name, os.getresuid(), os.getresgid(), os.getgroups(), held), path)
    problem = own_session_keyring()
    if problem:
        raise Refused(KEYRING, "the executor would keep the caller's session keyring (root's keys): %s" % problem,
                      path)
    return uid, gid


# keyctl(2) by machine, as base/run_as.py (this file imports nothing of the core)
KEYCTL_NR = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "s390x": 280, "ppc64le": 271, "ppc64": 271,
             "i686": 288, "i386": 288, "armv7l": 311}


def _keyctl(operation: int, argument: int) -> Tuple[int, int]:
    """keyctl(operation, argument, 0) (0: GET_KEYRING_ID, 1: JOIN_SESSION_KEYRING with NULL): answer, errno."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    ctypes.set_errno(0)
    got = libc.syscall(KEYCTL_NR.get(os.uname()[4], -1), operation,
                       ctypes.c_void_p(None) if operation == 1 else ctypes.c_int(argument), 0)
    return int(got), ctypes.get_errno()


def own_session_keyring() -> Optional[str]:
    """After the drop, before any exec: a new anonymous session keyring, proven by its serial (keyrings are not
    namespaced and survive execve and bwrap: the executor would hold root's as possessor). Under a seccomp filter
    keyctl is first asked in a child (it could kill this process): EPERM/ENOSYS there for both calls proves no
    keyring is reachable. None when done or proven; else why not (a filter that kills keyctl: refused)."""
    refused = (errno.EPERM, errno.ENOSYS, errno.EACCES)
    with open("/proc/self/status") as handle:
        mode = [line.split()[1:2] for line in handle if line.startswith("Seccomp:")]
    if mode != [["0"]]:
        child = os.fork()
        if child == 0:          # pragma: no cover - the forked child: system calls, then _exit
            code = 4
            try:
                joined, err = _keyctl(1, 0)
                code = 0 if joined >= 0 else 3 if err in refused and _keyctl(0, -3)[1] in refused else 4
            finally:
                os._exit(code)
        status = os.waitpid(child, 0)[1]
        if os.WIFSIGNALED(status) or os.WEXITSTATUS(status) != 0:
            return None if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3 else (
                "keyctl kills or fails under this process's seccomp filter (Seccomp %s, child status %d)"
                % (mode, status))
    before = _keyctl(0, -3)[0]
    joined, err = _keyctl(1, 0)
    after = _keyctl(0, -3)[0]
    if joined < 0 or after != joined or after == before:
        return "keyctl(KEYCTL_JOIN_SESSION_KEYRING) gave %d (%s), the session keyring is %d, was %d" % (
            joined, errno.errorcode.get(err, str(err)), after, before)
    return None


def _regains_root() -> bool:
    try:
        os.setuid(0)
    except OSError:
        return False
    return True


def clean_environment(environ: Dict[str, str]) -> Dict[str, str]:
    """The allow-list of the caller's environment that bwrap (and so the executor) gets: ENV_NAMES and the
    ENV_PREFIXES, bounded; PATH is DEFAULT_PATH when the caller has none."""
    out = dict((k, v) for k, v in environ.items() if (k in ENV_NAMES or k.startswith(ENV_PREFIXES))
               and len(v) <= MAX_ENV_VALUE and k.replace("_", "").isalnum() and k.isupper())
    out.setdefault("PATH", DEFAULT_PATH)
    return out


def close_all_but(keep: Sequence[int]) -> None:
    """Close every descriptor of this process except stdin/stdout/stderr and ``keep`` (what bwrap is handed)."""
    kept = sorted(set([0, 1, 2] + list(keep)))
    try:
        numbers = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        numbers = list(range(3, os.sysconf("SC_OPEN_MAX")))
    for number in numbers:
        if number not in kept:
            try:
                os.close(number)
            except OSError:
                pass


def granted_folders(mounts: Any) -> List[str]:
    """The folders a profile's capabilities grant (mounts whose every reason is an R-CAP-* rule), sorted."""
    out = set()
    for mount in mounts if isinstance(mounts, list) else []:
        rules = [p.get("rule") for p in mount.get("provenance") or [] if isinstance(p, dict)] if isinstance(
            mount, dict) else []
        source = mount.get("src") if isinstance(mount, dict) else None
        if rules and all(str(r).startswith("R-CAP-") for r in rules) and mount.get("kind") in ("ro", "rw") \
                and isinstance(source, str) and source.startswith("/"):
            out.add(source)
    return sorted(out)


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


def channels_below(folders: Sequence[str]) -> List[str]:
    """Every socket, FIFO and device node below ``folders`` (tree: by descriptor, links not followed), sorted;
    Stopped (a ValueError) when more than MAX_CHANNEL_WALK entries would have to be looked at, or a folder cannot
    be read, or one changed while searched. A folder that is not one (absent, a link) is not searched."""
    found: List[str] = []
    budget = [MAX_CHANNEL_WALK]
    for top in folders:
        if os.path.isdir(top) and not os.path.islink(top):
            found.extend(path for path, info in tree(top, budget, special_only=True)
                         if stat.S_IFMT(info.st_mode) in CHANNEL_TYPES)
    return sorted(found)


def recheck_channels(doc: Dict[str, Any], path: str) -> None:
    """Refuse (CHANNEL) a profile whose granted folders now hold a channel its render did not record there."""
    recorded = doc.get("channels")
    if not isinstance(recorded, list):
        raise Refused(INVALID, "%s records no channels (render it again)" % path, path)
    try:
        now = channels_below(granted_folders(doc.get("mounts")))
    except ValueError as exc:
        if isinstance(exc, Stopped) and exc.why == "changed":
            raise Refused(CHANGED, "%s: render again" % exc, exc.folder) from None
        raise Refused(CHANNEL, "the granted folders cannot be searched for channels: %s" % exc, path) from None
    new = [c for c in now if c not in recorded]
    if new:
        raise Refused(CHANNEL, "%s appeared in a granted folder after %s was rendered (a socket, FIFO or device "
                      "node is a channel to a host process)%s" % (new[0], path, " and %d more" % (len(new) - 1)
                                                                  if len(new) > 1 else ""), new[0])


def launch(path: str) -> None:
    """``metnos-sandbox-exec --profile PATH``: read, drop, leave the terminal (fds 0-2 too), open the
    descriptors, close the rest, and become bwrap with a clean environment. Returns only by raising."""
    doc = read_stored(path)
    if os.geteuid() == 0 or os.getuid() == 0:
        drop_to(doc.get("run_as"), path)
    recheck_channels(doc, path)           # as the user the executor runs as: what it could reach
    leave_terminal()
    drop_terminal_descriptors()
    words = [str(w) for w in doc["argv"]]
    opened = install(words, doc.get("descriptors") or [])
    environment = clean_environment(dict(os.environ))
    close_all_but(opened)
    try:
        os.execve(words[0], words, environment)
    except OSError as exc:
        raise Refused(INVALID, "%s: cannot run %s (%s)" % (path, words[0], exc.strerror), path) from None


def refusal_text(code: str, message: str, path: str) -> str:
    fix = FIXES.get(code, "").replace("{quoted}", shlex.quote(path) if path else "<path>")
    return "metnos-sandbox-exec: %s: %s\n%s" % (code, message, "  fix: %s\n" % fix if fix else "")


def main(args: Sequence[str]) -> int:
    """``--profile PATH`` (a stored <executor>.json, run by an admin or the runtime: launch) or
    ``DESCRIPTORS_JSON -- ARGV...`` (the probe's launcher, started by its reaper in a session of its own)."""
    try:
        if list(args) in (["--help"], ["-h"]):
            sys.stdout.write(HELP)
            return 0
        if len(args) == 2 and args[0] == "--profile":
            launch(args[1])
        elif len(args) > 2 and args[1] == "--":
            run(args[2:], json.loads(args[0]))
        else:
            sys.stderr.write(HELP.split("\n\n", maxsplit=1)[0] + "\n")
            return 2
    except Refused as exc:
        sys.stderr.write(refusal_text(exc.code, str(exc), exc.path))
        return 1
    except (Moved, OSError, ValueError) as exc:
        sys.stderr.write(refusal_text(CODE, str(exc), ""))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
