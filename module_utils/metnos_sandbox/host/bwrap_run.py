# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run bwrap for real and read what it reports: run_bwrap (its status pipe, its own session, a user to run
as), pump (every pipe read until closed or timed out, leftovers of its process group killed) and the
--json-status-fd stream parsed.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import os
import selectors
import subprocess
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .bwrap import kill_group

if TYPE_CHECKING:
    from .bwrap import Child

# pump()'s watcher: (the bytes read so far by stream name, the pid) -> True once it has seen enough.
Watch = Callable[[Dict[str, bytes], int], bool]


def parse_json_objects(data: Union[bytes, str, None]) -> List[Dict[str, Any]]:
    """A stream of JSON objects (as --json-status-fd writes them) -> list of dicts."""
    out = []
    decoder = json.JSONDecoder()
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else (data or "")
    index = 0
    while index < len(text):
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        if index >= len(text):
            break
        try:
            obj, index = decoder.raw_decode(text, index)
        except ValueError:
            break
        if isinstance(obj, dict):
            out.append(obj)
    return out


def parse_json_status(data: Union[bytes, str, None]) -> Dict[str, Any]:
    """Parse --json-status-fd output into one dict."""
    merged = {}
    for obj in parse_json_objects(data):
        merged.update(obj)
    return merged


# --------------------------------------------------------------------------- running

# Once the started process has exited (and the payload's handshake, if any, is done), how long its pipes may
# stay open before whatever still holds them is taken for a leftover of its process group and killed, and how
# long what is left in them is then read. Everything the started process wrote is in the pipes when it exits:
# a leftover (a decoy or daemon a look-alike started, a payload's background child) adds nothing to the answer.
LINGER = 1.0
DRAIN = 2.0
# After SIGKILL, how long the started process may take to die (a process in uninterruptible sleep, e.g. on a
# hung NFS mount, dies only when its I/O ends: the probe does not wait for that).
REAP = 10.0
_POLL = 0.2


class Started(object):
    """What pump() watches: the process that was started. By default ``proc`` itself, killed as a process
    group; a runner that starts bwrap under another process (reaper.Reaped) says which pid is bwrap's, when it
    has exited, how the whole tree is killed, and whether anything left in it could still report."""

    drain = DRAIN
    """How long what is left in the pipes is read once the leftovers were killed."""

    def __init__(self, proc: Child) -> None:
        self.proc = proc

    @property
    def pid(self) -> int:
        return self.proc.pid

    def leftovers(self) -> bool:
        """Whether, the started process gone and its pipes still open, something of its is left to kill: here,
        whatever holds the pipes is (a process of its group)."""
        return True

    def update(self, data: Mapping[str, bytes]) -> None:
        """Called after each read with everything read so far."""

    def exited(self) -> bool:
        return exited(self.proc)

    def reportable(self) -> bool:
        """Whether, the started process gone and the handshake not done, something could still report (a
        payload a look-alike left running): wait for it. Not known here: yes."""
        return True

    def on_exit(self) -> None:
        """Called once, when the started process is first seen exited."""

    def kill(self) -> None:
        kill_group(self.proc)


def pump(proc: Child, streams: Mapping[str, int], timeout: float,
         watch: Optional[Watch] = None, report: Optional[Dict[str, Any]] = None,
         started: Optional[Started] = None) -> Tuple[Dict[str, bytes], bool]:
    """Read ``streams`` ({name: readable fd}) of ``proc`` until they all close or ``timeout`` passes.

    ``watch(data, pid)`` (``data``: {name: bytes so far}; ``pid``: the started process's) is called after each read;
    once it returns true it is not called again and ``proc.stdin`` (if a pipe) is closed: that is the handshake a
    payload waiting on its stdin uses ("the outside has finished reading, go on").

    Reading also stops ``LINGER`` seconds after the started process has exited with the handshake done (or
    without a ``watch``): whatever still holds the pipes then is a leftover, it is killed (``started.kill()``:
    proc's process group by default) and what is already in the pipes is read for at most ``DRAIN`` seconds;
    ``report["left_behind"]`` says so. Until the payload has reported, the probe waits for it while something
    could still report (``started.reportable()``; a look-alike may leave its command running): at most until the
    timeout. Returns (data, timed_out); on timeout everything is killed. Never raises for I/O, never waits
    without a bound.
    """
    started = started or Started(proc)
    run = _Pumping(started, timeout, watch is not None, report)
    data: Dict[str, bytes] = dict((name, b"") for name in streams)
    sel = selectors.DefaultSelector()
    for name, fd in streams.items():
        sel.register(fd, selectors.EVENT_READ, name)
    try:
        while sel.get_map():
            now = time.time()
            step = run.step(now)
            if step == "stop":
                break
            if step == "again":
                continue
            for key, _mask in sel.select(max(0.0, min(run.deadline - now, _POLL))):
                try:
                    chunk = os.read(key.fd, 65536)
                except OSError:
                    chunk = b""
                if chunk:
                    data[key.data] += chunk
                else:
                    sel.unregister(key.fd)
            started.update(data)
            if watch is not None and run.watching and not run.timed_out and watch(data, started.pid):
                run.watching = False
                _close_stdin(proc)
    finally:
        sel.close()
    _close_stdin(proc)
    if not run.timed_out:
        try:
            proc.wait(timeout=max(0.1, run.deadline - time.time()))
        except subprocess.TimeoutExpired:
            run.timed_out = True
            started.kill()
            kill_group(proc)
    try:
        proc.wait(timeout=REAP)
    except subprocess.TimeoutExpired:
        pass                                   # unkillable for now (uninterruptible sleep): rc stays None
    return data, run.timed_out


class _Pumping(object):
    """One pump()'s clock: the deadline, the handshake, the started process's exit, the kills."""

    def __init__(self, started: Started, timeout: float, watching: bool,
                 report: Optional[Dict[str, Any]]) -> None:
        self.started = started
        self.report = report
        self.deadline = time.time() + timeout
        self.watching = watching
        self.timed_out = False
        self.exited_at: Optional[float] = None     # when the started process was first seen exited
        self.settled_at: Optional[float] = None    # when it had exited and the handshake was done (the later)
        self.draining = False                      # leftovers killed: reading what is left

    def step(self, now: float) -> str:
        """Before each read: "stop" reading, look "again" (something was just killed), or "read"."""
        if now >= self.deadline:
            if self.timed_out or self.draining:
                return "stop"                      # killed, and something still holds a pipe: give up
            self.timed_out = True
            self.started.kill()
            self.deadline = now + 5.0              # then read on until the killed tree has closed its pipes
            return "again"
        if self.exited_at is None and not self.timed_out and self.started.exited():
            self.exited_at = now
            self.started.on_exit()
        if self.settled_at is None and self.exited_at is not None and (
                not self.watching or (now - self.exited_at >= LINGER and not self.started.reportable())):
            # handshake done, or nothing left that could still report: a dead bwrap is a setup failure now
            self.settled_at = now if not self.watching else now - LINGER
        if self.settled_at is not None and not self.draining and now - self.settled_at >= LINGER:
            if not self.started.leftovers():
                return "read"                      # nothing of its is left: what holds the pipes ends on its own
            self.draining = True
            self.started.kill()                    # proc is not reaped yet: its group id cannot have been reused
            if self.report is not None:
                self.report["left_behind"] = True
            self.deadline = min(self.deadline, now + self.started.drain)
            return "again"
        return "read"


def exited(proc: Child) -> bool:
    """Whether proc has exited, without reaping it: until proc.wait() its pid - the id of its process
    group - stays taken, so killing that group later cannot hit another one."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _close_stdin(proc: Child) -> None:
    if proc.stdin is not None and not proc.stdin.closed:
        try:
            proc.stdin.close()
        except OSError:
            pass


def run_bwrap(argv: Sequence[str], user: Optional[Mapping[str, Any]] = None, env: Optional[Mapping[str, str]] = None,
              timeout: float = 30.0, cwd: str = "/", status_fd: bool = True,
              watch: Optional[Watch] = None) -> Dict[str, Any]:
    """Run a bwrap argv for real, optionally as another user.

    ``argv`` must contain the literal placeholder ``{status_fd}`` after
    ``--json-status-fd`` when ``status_fd`` is true; it is replaced by the fd of
    a pipe. ``watch`` (see ``pump``) sees {"stdout", "stderr", "status"} as they arrive;
    stdin stays an open pipe until it returns true. Returns a dict: rc, stdout, stderr,
    json_status, status_raw, setup_failed, timed_out, left_behind (processes of its group still held
    its pipes after it had exited: killed), duration, pid (bwrap's own). The whole process group is
    killed on timeout.
    """
    read_fd: Optional[int] = None
    write_fd: Optional[int] = None
    if status_fd:
        read_fd, write_fd = os.pipe()
        argv = [str(write_fd) if a == "{status_fd}" else a for a in argv]
    start = time.time()
    try:
        proc = _spawn(argv, user, env, cwd, write_fd, piped_stdin=watch is not None)
    except OSError as exc:
        for fd in (read_fd, write_fd):
            if fd is not None:
                os.close(fd)
        return {"rc": 127, "stdout": "", "stderr": "bwrap: execvp %s: %s" % (argv[0], exc.strerror),
                "json_status": {}, "status_raw": "", "setup_failed": True, "timed_out": False,
                "left_behind": False, "duration": 0.0, "pid": None}
    if write_fd is not None:
        os.close(write_fd)
    report: Dict[str, Any] = {}
    data, timed_out = _collect(proc, read_fd, timeout, watch, report)
    status = parse_json_status(data.get("status", b""))
    return {
        "rc": proc.returncode,
        "stdout": data["stdout"].decode("utf-8", "replace"),
        "stderr": data["stderr"].decode("utf-8", "replace"),
        "json_status": status,
        "status_raw": data.get("status", b"").decode("utf-8", "replace"),
        # bwrap writes exit-code only once the payload ran; without it, setup failed.
        "setup_failed": status_fd and "exit-code" not in status and not timed_out,
        "timed_out": timed_out,
        "left_behind": bool(report.get("left_behind")),
        "duration": round(time.time() - start, 3),
        "pid": proc.pid,
    }


def _spawn(argv: Sequence[str], user: Optional[Mapping[str, Any]], env: Optional[Mapping[str, str]], cwd: str,
           write_fd: Optional[int], piped_stdin: bool) -> subprocess.Popen[bytes]:
    """bwrap started in its own session (so that its process group can be killed), as ``user``."""
    kwargs: Dict[str, Any] = {}
    if user is not None:
        kwargs["user"] = user["uid"]
        kwargs["group"] = user["gid"]
        kwargs["extra_groups"] = []
    # run_command cannot keep bwrap's status pipe open, start a session or read while it runs.
    return subprocess.Popen(  # pylint: disable=ansible-bad-function
        argv, stdin=subprocess.PIPE if piped_stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=env, cwd=cwd, pass_fds=(write_fd,) if write_fd is not None else (),
        start_new_session=True, **kwargs)


def _collect(proc: subprocess.Popen[bytes], read_fd: Optional[int], timeout: float, watch: Optional[Watch],
             report: Dict[str, Any]) -> Tuple[Dict[str, bytes], bool]:
    """pump() over bwrap's stdout, stderr and (``read_fd``) status pipe; every pipe is closed after."""
    stdout, stderr = proc.stdout, proc.stderr
    if stdout is None or stderr is None:      # both are pipes (_spawn)
        raise AssertionError("bwrap was started without its output pipes")
    streams = {"stdout": stdout.fileno(), "stderr": stderr.fileno()}
    if read_fd is not None:
        streams["status"] = read_fd
    try:
        return pump(proc, streams, timeout, watch, report)
    finally:
        stdout.close()
        stderr.close()
        if read_fd is not None:
            os.close(read_fd)
