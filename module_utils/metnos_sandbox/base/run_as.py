# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a program as another user, dropped (issue 49, item 2): what root runs of someone else's.

``setpriv --reuid UID --regid GID --init-groups --inh-caps=-all --bounding-set=-all --no-new-privs`` (with
``--clear-groups`` in place of ``--init-groups`` when the uid has no passwd entry), a clean environment (PATH
fixed, LANG/LC_ALL C, nothing of the caller's), no stdin, the working folder ``/``, the program in a session of
its own killed whole (its process group) at the deadline and when it exits (nothing it left behind survives),
its output read up to a bound and handed back as bytes: hostile data, never interpreted here.

The API (stable; the enforce branch uses it too):

- ``primary_gid(uid) -> int``: the user's primary group (the uid when it has no passwd entry).
- ``command(argv, uid, gid) -> List[str]``: the setpriv argv that runs ``argv`` as uid/gid.
- ``run(argv, uid, gid, timeout=30.0, limit=LIMIT, env=None) -> Ran``: run it; ``env`` adds variables to the
  clean environment (names checked, values as given).
- ``Ran``: ``rc`` (the exit status; 124 at the deadline, 127 when it could not start), ``stdout``, ``stderr``
  (bytes, at most ``limit`` each), ``timed_out``, ``truncated`` (more output was given than kept), and
  ``text(data)`` to read bytes as text (UTF-8, bad bytes replaced).
- ``call(uid, gid, func, arg, groups=(), timeout=CALL_SECONDS) -> bytes``: the other way to drop, for root's own
  code (a function, which no exec can carry) run on what the user may see or write: a forked child that takes
  exactly uid/gid and ``groups`` (setgroups, setresgid, setresuid: a uid change from 0 clears every capability,
  and the child execs nothing, so the bounding set and no_new_privs that setpriv sets for a program have nothing
  to guard), checks that the drop held, runs ``func(arg)`` and writes its bytes; killed at the deadline. b"" when
  it could not report. host/procfs.py's run_as and call_as are this.
- Both give the dropped program a session keyring of its own (attack2 finding 1): keyrings are not namespaced and
  survive setuid, setpriv, execve and bwrap, so a program would otherwise hold root's session keyring (from
  pam_keyinit, a root unit) as possessor and read every key in it. ``run`` joins a fresh anonymous keyring in the
  child before setpriv, ``call`` after the drop; each proves the serial of its session keyring changed, else
  ``run`` gives rc 127 with ``session_keyring_kept`` on stderr and ``call`` gives b"". Under a seccomp filter
  keyctl is first asked in a child (``keyring_plan``): a filter that answers EPERM/ENOSYS proves no keyring is
  reachable; one that kills keyctl, or anything else, is refused (unknown is a failure).

Pure Python, no Ansible imports, Python 3.8+.
"""
from __future__ import absolute_import, annotations, division, print_function

import ctypes
import errno
import os
import pwd
import re
import selectors
import signal
import subprocess
import time
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar

from .records import Record

T = TypeVar("T")

SETPRIV = "/usr/bin/setpriv"
CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CLEAN_ENV = {"PATH": CLEAN_PATH, "LANG": "C", "LC_ALL": "C", "LANGUAGE": "C"}
LIMIT = 1 << 20            # bytes kept of each stream
CALL_SECONDS = 60.0        # a forked call's deadline (a user's FUSE folder may never answer)
CHUNK = 65536
GRACE = 1.0              # seconds the pipes are read after the program exits
ENV_NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]{0,127}\Z")


class Ran(Record):
    """What one run as another user gave back."""
    rc: int
    stdout: bytes
    stderr: bytes
    timed_out: bool
    truncated: bool


# keyctl(2) by machine (the C library has no wrapper without libkeyutils), as probe/payload_script.KEYCTL_NR
KEYCTL_NR = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "s390x": 280, "ppc64le": 271, "ppc64": 271,
             "i686": 288, "i386": 288, "armv7l": 311}
GET_KEYRING_ID, JOIN_SESSION_KEYRING, SESSION_KEYRING = 0, 1, -3
KEYRING_KEPT = "session_keyring_kept"
JOIN, UNREACHABLE = "join", "unreachable"
REFUSED_ERRNOS = (errno.EPERM, errno.ENOSYS, errno.EACCES)


def _keyctl(operation: int, argument: int) -> Tuple[int, int]:
    """keyctl(operation, argument, 0): (its answer, errno)."""
    number = KEYCTL_NR.get(os.uname()[4])
    if number is None:
        return -1, errno.ENOSYS
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    ctypes.set_errno(0)
    got = libc.syscall(number, operation, ctypes.c_void_p(None) if operation == JOIN_SESSION_KEYRING
                       else ctypes.c_int(argument), 0)
    return int(got), ctypes.get_errno()


def join_session_keyring() -> Optional[str]:
    """Join a new anonymous session keyring in this process and prove it: None when the session keyring's serial
    is now the joined one and not the one held before, else why not."""
    before, _err = _keyctl(GET_KEYRING_ID, SESSION_KEYRING)
    joined, err = _keyctl(JOIN_SESSION_KEYRING, 0)
    if joined < 0:
        return "keyctl(KEYCTL_JOIN_SESSION_KEYRING) failed: %s" % errno.errorcode.get(err, str(err))
    after, err = _keyctl(GET_KEYRING_ID, SESSION_KEYRING)
    if after != joined or after == before:
        return "the session keyring is still %d after joining %d (held before: %d)" % (after, joined, before)
    return None


def _seccomp() -> Optional[int]:
    """The Seccomp mode of this process (/proc/self/status): 0 none, 1 strict, 2 filter; None when unread."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("Seccomp:"):
                    return int(line.split(None, 2)[1])
    except (OSError, IndexError, ValueError):
        return None
    return None


def keyring_plan() -> str:
    """What a dropped descendant of this process does about the session keyring it inherits: JOIN (keyctl can
    be called here), UNREACHABLE (a seccomp filter answers keyctl EPERM/ENOSYS: no keyring can be reached by any
    descendant, proven in a child), or the text of why neither is known (a filter that kills keyctl, seccomp
    unread). keyctl is never called in this process under a filter: it could kill it."""
    mode = _seccomp()
    if mode == 0:
        return JOIN
    if mode != 2:
        return "the seccomp mode of this process is %s" % ("unread" if mode is None else mode)
    child = os.fork()
    if child == 0:          # pragma: no cover - runs in the forked child: only system calls, then _exit
        code = 4
        try:
            joined, err = _keyctl(JOIN_SESSION_KEYRING, 0)
            if joined >= 0:
                code = 0
            elif err in REFUSED_ERRNOS and _keyctl(GET_KEYRING_ID, SESSION_KEYRING)[1] in REFUSED_ERRNOS:
                code = 3
        finally:
            os._exit(code)
    _pid, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        return "keyctl kills a process under this seccomp filter (signal %d): set SystemCallErrorNumber=EPERM" \
            % os.WTERMSIG(status)
    answer = os.WEXITSTATUS(status)
    return JOIN if answer == 0 else UNREACHABLE if answer == 3 else "keyctl answered neither a keyring nor EPERM"


def _fresh_keyring(plan: str) -> None:
    """In a child before it runs the user's code: a session keyring of its own, or raise."""
    if plan == UNREACHABLE:
        return
    problem = join_session_keyring() if plan == JOIN else plan
    if problem:
        raise OSError(errno.EPERM, "%s: %s" % (KEYRING_KEPT, problem))


def text(data: bytes) -> str:
    """Output read as text: UTF-8, every bad byte replaced."""
    return data.decode("utf-8", "replace")


def command(argv: Sequence[str], uid: int, gid: int) -> List[str]:
    """The setpriv argv that runs ``argv`` as ``uid``:``gid`` with no capability, its groups from the passwd
    entry (none when it has no entry)."""
    try:
        pwd.getpwuid(uid)
        groups = "--init-groups"
    except KeyError:
        groups = "--clear-groups"
    return [SETPRIV, "--reuid", str(uid), "--regid", str(gid), groups, "--inh-caps=-all", "--bounding-set=-all",
            "--no-new-privs", "--"] + list(argv)


def primary_gid(uid: int) -> int:
    """The user's primary group from its passwd entry; the uid itself when it has none."""
    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        return uid


def environment(extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The clean environment and ``extra`` (a name that is not a plain variable name is refused)."""
    env = dict(CLEAN_ENV)
    for name, value in (extra or {}).items():
        if not ENV_NAME.match(name) or "\0" in value:
            raise ValueError("not a plain environment variable: %r" % name)
        env[name] = value
    return env


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def run(argv: Sequence[str], uid: int, gid: int, timeout: float = 30.0, limit: int = LIMIT,
        env: Optional[Mapping[str, str]] = None) -> Ran:
    """Run ``argv`` as ``uid``:``gid`` (see the module's docstring); never raises for a program that cannot
    start (rc 127; ``session_keyring_kept`` on stderr when it could not be given a keyring of its own) or does
    not end (rc 124, its group killed)."""
    plan = keyring_plan()
    if plan not in (JOIN, UNREACHABLE):
        return Ran(127, b"", ("%s: %s" % (KEYRING_KEPT, plan)).encode("utf-8", "replace"), False, False)
    try:
        proc = subprocess.Popen(command(argv, uid, gid), stdin=subprocess.DEVNULL,  # pylint: disable=ansible-bad-function
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(env), cwd="/",
                                start_new_session=True, close_fds=True,
                                preexec_fn=lambda: _fresh_keyring(plan))  # pylint: disable=subprocess-popen-preexec-fn
    except subprocess.SubprocessError:       # raised in the child before setpriv: only _fresh_keyring does
        return Ran(127, b"", ("%s: the program's own session keyring could not be joined and proven"
                              % KEYRING_KEPT).encode("utf-8"), False, False)
    except OSError as exc:
        return Ran(127, b"", str(exc).encode("utf-8", "replace"), False, False)
    kept = {"stdout": bytearray(), "stderr": bytearray()}
    truncated = timed_out = False
    deadline = time.monotonic() + timeout
    exited: Optional[float] = None
    with selectors.DefaultSelector() as selector:
        for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            if pipe is not None:
                selector.register(pipe, selectors.EVENT_READ, name)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _events in selector.select(min(left, 1.0)):
                chunk = os.read(key.fd, CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                room = limit - len(kept[key.data])
                kept[key.data] += chunk[:max(room, 0)]
                truncated = truncated or len(chunk) > room
            if exited is None and proc.poll() is not None:
                exited = time.monotonic()
                _kill(proc.pid)       # what it left in its group holds no pipe open for long
            elif exited is not None and time.monotonic() - exited > GRACE:
                break                 # a descendant that left the group still holds a pipe: not waited for
    _kill(proc.pid)
    rc = proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    return Ran(124 if timed_out else rc, bytes(kept["stdout"]), bytes(kept["stderr"]), timed_out, truncated)


def _dropped(uid: int, gid: int, groups: Sequence[int]) -> bool:
    """Whether this process has exactly uid/gid and ``groups`` and cannot take root back."""
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        return False
    if sorted(set(os.getgroups()) - {gid}) != sorted(set(groups) - {gid}):
        return False
    try:
        os.setuid(0)
    except OSError:
        return True
    return uid == 0


def call(uid: int, gid: int, func: Callable[[T], bytes], arg: T, groups: Sequence[int] = (),
         timeout: float = CALL_SECONDS) -> bytes:
    """func(arg) in a forked child that has exactly uid/gid and the supplementary ``groups`` (none by default),
    see the module's docstring: the bytes it returned, or b"" when it could not report (the drop did not hold,
    it failed before writing, or the deadline passed: then it is killed). ``func`` bounds what it returns."""
    plan = keyring_plan()
    if plan not in (JOIN, UNREACHABLE):
        return b""
    rfd, wfd = os.pipe()
    child = os.fork()
    if child == 0:          # pragma: no cover - runs in the forked child
        code = 0
        try:
            os.close(rfd)
            os.setgroups(list(groups))
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            if not _dropped(uid, gid, groups):
                os._exit(1)
            _fresh_keyring(plan)
            data = func(arg)
            while data:
                data = data[os.write(wfd, data):]
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(wfd)
    chunks: List[bytes] = []
    deadline = time.monotonic() + timeout
    complete = False
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(rfd, selectors.EVENT_READ)
            while not complete:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    break
                chunk = os.read(rfd, 65536)
                chunks.append(chunk)
                complete = not chunk
    finally:
        os.close(rfd)
        if not complete:
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:
                pass
        os.waitpid(child, 0)
    return b"".join(chunks) if complete else b""
