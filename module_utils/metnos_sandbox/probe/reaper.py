# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The direct context's runner: bwrap as the child of a child subreaper (issue 20).

``run_reaped`` forks a small intermediate process (``_reap``: a copy of the probe's process that closes
every descriptor but the run's, so no second interpreter is started) that makes itself a child
subreaper and then starts bwrap - as the given user, with the run's pipes - so that every descendant
of bwrap, however it detaches, stays in a tree whose root the probe knows; the probe's own process (an
Ansible module's) is not changed. The reaper keeps none of the run's pipes (bwrap's end of them is
bwrap's alone) and reports on a control pipe of its own: its pid and whether it became a subreaper,
bwrap's pid, then each process it reaps - bwrap, and every orphan re-parented to it, written down while
it is a zombie (comm, parent, uid, NSpid, cgroup) - and, once it has no child left, that the tree is
empty.

``Reaped`` is what ``bwrap_run.pump`` watches for this run: "started" is bwrap (not the reaper), a kill is
of the whole tree (SIGKILL to every descendant of the reaper, again until none is left: ``setsid``
escapes a process-group kill, not this), and the ledger (proctree.Ledger) is fed every poll. Once bwrap
has exited, the run does not wait for a payload that cannot report any more: when the tree holds nothing
but bwrap's own processes (a bwrap that died at once can leave its child stuck), it ends at once, a setup
failure with bwrap's stderr - not a timeout.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import ctypes
import fcntl
import functools
import json
import os
import signal
import subprocess
import time
import typing as t

from ..base.records import Json, Record
from ..host import bwrap, bwrap_run, procfs
from . import proctree


def _zombie(pid: int) -> Json:
    """What the reaper writes down of a child that has exited, while it is still a zombie (the readers of
    proctree and procfs: each file on its own, bytes that are not UTF-8 replaced, so that a name a process set
    to anything leaves its parent, uid, NSpid and cgroup written down)."""
    out: Json = {}
    st = proctree.read_stat(pid)
    if st:
        out["comm"], out["ppid"] = st["comm"], st["ppid"]
    status = procfs.read_status(pid)
    if "uid" in status:
        out["uid"] = status["uid"][0] if status["uid"] else None
    if "nspid" in status:
        out["nspid"] = status["nspid"]
    cgroups = procfs.read_cgroups(pid)
    if cgroups:
        out["cgroup"] = cgroups[0]
    return out


class BwrapExec(Record):
    """What the reaper's child executes: ``argv`` (bwrap's, its status fd a number), as ``uid``/``gid`` (-1: this
    process's), inheriting the descriptors in ``keep``, with ``env`` in ``cwd``."""
    argv: t.Sequence[str]
    uid: int
    gid: int
    keep: t.Sequence[int]
    env: t.Mapping[str, str]
    cwd: str


class Watching(Record):
    """How the probe follows a reaped run: ``watch`` (bwrap_run.pump's callback on what the run writes), the
    ``ledger`` its tree is written down in, ``bwrap_ids`` (the (dev, inode) of the bwrap binaries trusted to be
    in the tree) and ``attach(proc)``, given the reaper (``Forked``) before anything is read."""
    watch: t.Optional[bwrap_run.Watch] = None
    ledger: t.Optional[proctree.Ledger] = None
    bwrap_ids: t.Optional[t.Set[proctree.Ident]] = None
    attach: t.Optional[t.Callable[[t.Any], None]] = None


def _close_all_but(keep: t.Set[int]) -> None:
    """Every descriptor of this process closed but ``keep`` (the forked reaper holds nothing of the probe's)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, int(os.sysconf("SC_OPEN_MAX"))))
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _exec_bwrap(libc: t.Any, ctl: int, bwrap_exec: BwrapExec) -> None:
    """The reaper's child: the run's user taken (no groups; not dumpable until the exec, which holds a copy of the
    probe's memory), the kept descriptors inherited, then bwrap executed (execvp's lookup, as the user: a name
    found on no PATH entry is not found). Never returns."""
    argv, uid, gid, env = bwrap_exec.argv, bwrap_exec.uid, bwrap_exec.gid, bwrap_exec.env
    try:
        os.close(ctl)
        if uid >= 0:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            libc.prctl(4, 0, 0, 0, 0)                # PR_SET_DUMPABLE 0 (also the kernel's default after setresuid)
        for fd in bwrap_exec.keep:
            os.set_inheritable(fd, True)
        exe = argv[0] if "/" in argv[0] else bwrap.which(argv[0], env.get("PATH", "/usr/bin:/bin"), bwrap_exec.cwd)
        if exe is None:
            raise FileNotFoundError(2, "No such file or directory")
        os.execve(exe, list(argv), dict(env))
    except OSError as exc:
        _say_failed(argv, exc.strerror)
    except Exception as exc:        # pylint: disable=broad-exception-caught  # e.g. a NUL in argv or env
        _say_failed(argv, repr(exc))
    os._exit(127)


def _say_failed(argv: t.Sequence[str], why: t.Optional[str]) -> None:
    """bwrap could not be started: why, on the run's stderr (what the probe reports as a setup failure)."""
    try:
        os.write(2, ("bwrap: execvp %s: %s\n" % (argv[0] if argv else "", why)).encode("utf-8", "replace"))
    except OSError:
        pass


@functools.lru_cache(maxsize=None)
def _libc() -> t.Any:
    """prctl(2) and the rest of the process's C library (ctypes), loaded before any fork (so the reaper loads
    nothing once it has entered the run's working directory)."""
    return ctypes.CDLL(None, use_errno=True)


def _reap(libc: t.Any, ctl: int, bwrap_exec: BwrapExec, probe: int) -> None:
    """The forked reaper's whole life, after its descriptors were set: a child subreaper that dies with the probe,
    bwrap started as its child, then every child it reaps written down on ``ctl`` until none is left."""
    def say(obj: Json) -> None:
        try:
            os.write(ctl, (json.dumps(obj) + "\n").encode())
        except OSError:
            pass
    became = libc.prctl(36, 1, 0, 0, 0) == 0        # PR_SET_CHILD_SUBREAPER
    libc.prctl(1, 9, 0, 0, 0)                        # PR_SET_PDEATHSIG, SIGKILL: no reaper without the probe
    if os.getppid() != probe:
        return                                       # the probe died before that was set: nothing to start
    say({"reaper": os.getpid(), "subreaper": became})
    child = os.fork()
    if child == 0:
        _exec_bwrap(libc, ctl, bwrap_exec)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    for fd in bwrap_exec.keep:
        os.close(fd)
    say({"started": child})
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if info is None:
            continue
        rec: Json = {"reaped": info.si_pid, "code": info.si_code, "status": info.si_status}
        if info.si_pid != child:
            rec.update(_zombie(info.si_pid))
        os.waitpid(info.si_pid, 0)
        say(rec)
    say({"empty": True})


class Forked(object):
    """The reaper, forked from the probe's process: what pump() and run_reaped use of a Popen (pid, the pipes,
    poll, wait, returncode)."""

    def __init__(self, pid: int, stdin: t.Optional[t.IO[bytes]], stdout: t.IO[bytes], stderr: t.IO[bytes]) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: t.Optional[int] = None

    def poll(self) -> t.Optional[int]:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = 0         # as Popen.poll: reaped elsewhere
                return self.returncode
            if pid == self.pid:
                self.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        return self.returncode

    def wait(self, timeout: t.Optional[float] = None) -> int:
        end = None if timeout is None else time.time() + timeout
        delay = 0.0005
        while True:
            code = self.poll()
            if code is not None:
                return code
            left = None if end is None else end - time.time()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(["reaper"], timeout or 0.0)
            time.sleep(delay if left is None else min(delay, left))
            delay = min(delay * 2, 0.05)


def _fork_reaper(bwrap_exec: BwrapExec, ctl_w: int, piped_stdin: bool) -> Forked:
    """The reaper forked from this process, in a session of its own, with the run's pipes as 0-2 and nothing else
    but ``ctl_w`` and the kept descriptors: no second interpreter to start (docs/benchmarks.md). Raises OSError as
    Popen does when its ``cwd`` cannot be entered or a pipe cannot be made."""
    argv, cwd = bwrap_exec.argv, bwrap_exec.cwd
    os.stat(cwd)
    made: t.List[int] = []
    try:
        if piped_stdin:
            made.extend(os.pipe())
        else:
            made.extend((os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC), -1))
        made.extend(os.pipe())
        made.extend(os.pipe())
        in_r, in_w, out_r, out_w, err_r, err_w = made
        bwrap_exec = bwrap_exec._replace(env=dict(bwrap_exec.env))
        libc = _libc()
        probe = os.getpid()
        pid = os.fork()
    except OSError:
        for fd in made:
            if fd >= 0:
                os.close(fd)
        raise
    if pid == 0:        # pragma: no cover  (the child; its effects are what tests/unit/test_proctree.py checks)
        code = 127
        try:
            os.setsid()
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 3) for fd in (in_r, out_w, err_w)]    # none of them is 0-2 now
            for std, fd in enumerate(high):
                os.dup2(fd, std)
            _close_all_but({0, 1, 2, ctl_w} | set(bwrap_exec.keep))
            os.chdir(cwd)
            _reap(libc, ctl_w, bwrap_exec, probe)
            code = 0
        except OSError as exc:
            _say_failed(argv, exc.strerror)
        except Exception as exc:    # pylint: disable=broad-exception-caught  # never back into the probe's code
            _say_failed(argv, repr(exc))
        finally:
            os._exit(code)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    return Forked(pid, os.fdopen(in_w, "wb") if piped_stdin else None, os.fdopen(out_r, "rb"), os.fdopen(err_r, "rb"))


# How long a poll of the tree may be apart, and how many kill passes a tree gets (each one kills what the
# last left, children forked meanwhile included).
POLL = 0.1
KILL_PASSES = 20


def control_records(data: bytes) -> t.List[Json]:
    """The reaper's records, one JSON object per complete line."""
    out = []
    for line in data.split(b"\n")[:-1]:
        try:
            obj = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def kill_tree(root: int, proc: str = "/proc", include_root: bool = False) -> int:
    """SIGKILL every descendant of ``root`` until none is left (bounded): the number of kills sent."""
    sent = 0
    for _attempt in range(KILL_PASSES):
        pids = proctree.descendants(root, proc)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                sent += 1
            except OSError:
                pass
        time.sleep(0.02)
    if include_root:
        try:
            os.kill(root, signal.SIGKILL)
        except OSError:
            pass
    return sent


class Reaped(bwrap_run.Started):
    """bwrap under the reaper, for bwrap_run.pump: its pid, whether it has exited, the tree polled into the
    ledger, and the tree killed."""

    def __init__(self, proc: bwrap.Child, ledger: proctree.Ledger, bwrap_ids: t.Set[proctree.Ident]) -> None:
        bwrap_run.Started.__init__(self, proc)
        self.ledger = ledger
        self.bwrap_ids = bwrap_ids
        self.records: t.List[Json] = []
        self.bwrap: t.Optional[int] = None
        self.reaper: t.Optional[int] = None
        self.bwrap_status: t.Optional[Json] = None
        self.empty_seen = False
        self.polled = 0.0
        ledger.poller = self.poll

    @property
    def pid(self) -> int:
        return self.bwrap if self.bwrap is not None else self.proc.pid

    def update(self, data: t.Mapping[str, bytes]) -> None:
        self.records = control_records(data.get("control", b""))
        for rec in self.records:
            if "reaper" in rec:
                self.reaper = rec["reaper"] if isinstance(rec["reaper"], int) else None
                self.ledger.reaper = {"pid": self.reaper, "subreaper": rec.get("subreaper") is True}
            elif "started" in rec and isinstance(rec["started"], int):
                self.bwrap = rec["started"]
            elif "reaped" in rec and rec["reaped"] == self.bwrap:
                self.bwrap_status = rec
            elif "empty" in rec:
                self.empty_seen = True
        self.ledger.reaped = [r for r in self.records if "reaped" in r and r["reaped"] != self.bwrap]
        if self.ledger.server is not None:
            self.ledger.server.serve()
        now = time.time()
        if now - self.polled >= POLL:
            self.poll(exhaustive=False)     # the periodic poll: the tree's lists of children (proctree)
            self.polled = now

    def poll(self, phase: t.Optional[str] = None, exhaustive: bool = True) -> t.List[Json]:
        root = self.reaper or self.proc.pid
        return self.ledger.observe(proctree.descendants(root, self.ledger.proc, exhaustive=exhaustive), phase)

    def exited(self) -> bool:
        return self.bwrap_status is not None or (self.bwrap is None and bwrap_run.exited(self.proc))

    def reportable(self) -> bool:
        """Whether something left in the tree could still report: a process that is not bwrap's own."""
        if self.empty_seen:
            return False
        now = self.poll()
        return any(proctree.ident(o) not in self.bwrap_ids for o in now)

    def on_exit(self) -> None:
        self.ledger.phase = proctree.AFTER
        self.poll()

    def kill(self) -> None:
        if self.empty_seen and self.proc.poll() is not None:
            return      # the reaper saw its tree empty and exited: nothing descends from its pid any more (a
        # scan would read every process of the host, and could find the children of a process that took the pid)
        kill_tree(self.reaper or self.proc.pid, self.ledger.proc)
        if self.reaper is None:
            bwrap.kill_group(self.proc)
            if self.proc.returncode is None:
                try:            # a kill before the reaper's setsid(): no group yet; the pid is our unreaped child's
                    os.kill(self.proc.pid, signal.SIGKILL)
                except OSError:
                    pass


def run_reaped(argv: t.Sequence[str], user: t.Optional[t.Mapping[str, t.Any]] = None,
               env: t.Optional[t.Mapping[str, str]] = None, timeout: float = 30.0, cwd: str = "/",
               keep_fds: t.Sequence[int] = (), watching: t.Optional[Watching] = None) -> Json:
    """Like bwrap_run.run_bwrap (``{status_fd}`` in argv becomes a pipe), with bwrap under the reaper. Extra
    descriptors bwrap must inherit (``keep_fds``, e.g. for --ro-bind-fd) are passed through the reaper,
    which closes its own copies. ``watching``: how the probe follows the run (its attach() gets the reaper
    before anything is read: the handshake writes to its stdin, which only bwrap's tree holds). Returns
    run_bwrap's dict plus "tree" (the ledger's report) and "pid" (bwrap's)."""
    watching = watching if watching is not None else Watching()
    watch, attach = watching.watch, watching.attach
    ledger = watching.ledger if watching.ledger is not None else proctree.Ledger()
    read_fd, write_fd = os.pipe()
    ctl_r, ctl_w = os.pipe()
    argv = [str(write_fd) if a == "{status_fd}" else a for a in argv]
    uid, gid = (int(user["uid"]), int(user["gid"])) if user is not None else (-1, -1)
    bwrap_exec = BwrapExec(argv=argv, uid=uid, gid=gid, keep=[write_fd] + list(keep_fds),
                           env=env if env is not None else os.environ, cwd=cwd)
    start = time.time()
    try:
        proc = _fork_reaper(bwrap_exec, ctl_w, watch is not None)
    except OSError as exc:
        for fd in (read_fd, write_fd, ctl_r, ctl_w):
            os.close(fd)
        return {"rc": 127, "stdout": "", "stderr": "bwrap: execvp %s: %s" % (argv[0], exc.strerror),
                "json_status": {}, "status_raw": "", "setup_failed": True, "timed_out": False,
                "left_behind": False, "duration": 0.0, "pid": None, "tree": ledger.report()}
    os.close(write_fd)
    os.close(ctl_w)
    started = Reaped(proc, ledger, set(watching.bwrap_ids or ()))
    report: Json = {}
    streams = {"stdout": proc.stdout.fileno(), "stderr": proc.stderr.fileno(), "status": read_fd,
               "control": ctl_r}
    try:
        if attach is not None:
            attach(proc)
        data, timed_out = bwrap_run.pump(proc, streams, timeout, watch, report, started=started)
    finally:
        started.kill()
        if proc.returncode is None:
            try:
                proc.wait(timeout=1.0)      # killed: reaped here, not left a zombie
            except subprocess.TimeoutExpired:
                pass
        proc.stdout.close()
        proc.stderr.close()
        os.close(read_fd)
        os.close(ctl_r)
    if not started.empty_seen and started.reaper is not None and proc.returncode is not None and \
            proc.returncode != 0:
        ledger.reaper["lost"] = "the reaper exited with %s before its tree was empty" % proc.returncode
    status = bwrap_run.parse_json_status(data.get("status", b""))
    rc = _bwrap_rc(started.bwrap_status)
    return {"rc": rc if rc is not None else proc.returncode,
            "stdout": data["stdout"].decode("utf-8", "replace"), "stderr": data["stderr"].decode("utf-8", "replace"),
            "json_status": status, "status_raw": data.get("status", b"").decode("utf-8", "replace"),
            "setup_failed": "exit-code" not in status and not timed_out, "timed_out": timed_out,
            "left_behind": bool(report.get("left_behind")), "duration": round(time.time() - start, 3),
            "pid": started.bwrap, "tree": ledger.report()}


def _bwrap_rc(rec: t.Optional[Json]) -> t.Optional[int]:
    """bwrap's exit status from the reaper's record (waitid: CLD_EXITED 1 -> status; killed -> -signal)."""
    if not rec or not isinstance(rec.get("status"), int):
        return None
    return int(rec["status"]) if rec.get("code") == 1 else -int(rec["status"])


class UnitRun(bwrap_run.Started):
    """A transient unit's run, for bwrap_run.pump: ``proc`` is systemd-run; bwrap is the unit's launcher once it
    has said its pid (``launcher()``: the host pid, or None); the tree is the unit's cgroup (the ledger's
    ``cgroup``, found when the launcher is released), polled into the ledger; a kill is of the whole unit."""

    def __init__(self, proc: bwrap.Child, ledger: proctree.Ledger, bwrap_ids: t.Set[proctree.Ident],
                 unit: str, launcher: t.Callable[[], t.Optional[int]]) -> None:
        bwrap_run.Started.__init__(self, proc)
        self.ledger = ledger
        self.bwrap_ids = bwrap_ids
        self.unit = unit
        self.launcher = launcher
        self.started_at: t.Optional[int] = None
        self.polled = 0.0
        self.killed = False
        ledger.poller = self.poll

    def poll(self) -> t.List[Json]:
        if self.ledger.cgroup is None:
            return []
        return self.ledger.observe(proctree.cgroup_pids(self.ledger.cgroup) or [])

    def update(self, data: t.Mapping[str, bytes]) -> None:
        if self.ledger.server is not None:
            self.ledger.server.serve()
        now = time.time()
        if now - self.polled >= POLL:
            self.poll()
            self.polled = now

    def exited(self) -> bool:
        if bwrap_run.exited(self.proc):
            return True
        pid = self.launcher()
        if pid is None or self.ledger.cgroup is None:
            return False
        st = proctree.read_stat(pid, self.ledger.proc)
        if self.started_at is None and st:
            self.started_at = st["start"]
        return not st or st["state"] in ("Z", "X") or st["start"] != self.started_at

    def on_exit(self) -> None:
        self.ledger.phase = proctree.AFTER
        self.poll()

    def reportable(self) -> bool:
        return any(proctree.ident(o) not in self.bwrap_ids for o in self.poll())

    # systemd-run's pipes stay open until systemd has stopped the unit (up to its stop timeout, probe.STOP_TIMEOUT,
    # under cgroup v1 once a PID namespace was used): only processes still in the unit's cgroup are leftovers.
    drain = 8.0

    def leftovers(self) -> bool:
        return bool(self.ledger.cgroup is not None and proctree.cgroup_pids(self.ledger.cgroup))

    def kill(self) -> None:
        """The unit's processes first (systemd-run then reports and exits on its own); systemd-run too when
        asked again."""
        if self.killed:
            bwrap.kill_group(self.proc)
            return
        self.killed = True
        subprocess.run(["systemctl", "kill", "--signal=SIGKILL", self.unit],  # pylint: disable=ansible-bad-function
                       capture_output=True, check=False)
