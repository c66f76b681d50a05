# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The direct context's runner: bwrap as the child of a child subreaper (issue 20).

``run_reaped`` starts a small intermediate process (``REAPER``, the probe's own interpreter with
``-I -S``, stdlib only) that makes itself a child subreaper and then starts bwrap - as the given user,
with the run's pipes - so that every descendant of bwrap, however it detaches, stays in a tree whose
root the probe knows; the probe's own process (an Ansible module's) is not changed. The reaper keeps
none of the run's pipes (bwrap's end of them is bwrap's alone) and reports on a control pipe of its
own: its pid and whether it became a subreaper, bwrap's pid, then each process it reaps - bwrap, and
every orphan re-parented to it, written down while it is a zombie (comm, parent, uid, NSpid, cgroup) -
and, once it has no child left, that the tree is empty.

``Reaped`` is what ``bwrap_run.pump`` watches for this run: "started" is bwrap (not the reaper), a kill is
of the whole tree (SIGKILL to every descendant of the reaper, again until none is left: ``setsid``
escapes a process-group kill, not this), and the ledger (proctree.Ledger) is fed every poll. Once bwrap
has exited, the run does not wait for a payload that cannot report any more: when the tree holds nothing
but bwrap's own processes (a bwrap that died at once can leave its child stuck), it ends at once, a setup
failure with bwrap's stderr - not a timeout.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import os
import signal
import subprocess
import sys
import time
import typing as t

from ..base import json_lite as JL
from ..base import libc_lite as LL
from ..host import bwrap as B
from ..host import bwrap_run as BR
from . import proctree as PT

Json = t.Dict[str, t.Any]

# Runs as the probe's child: argv = control fd, uid, gid (-1: keep), comma-separated fds bwrap keeps, then
# bwrap's argv. Python 3.6+, stdlib only; JSON by base/json_lite.py (no json import: ~10 ms of CPU), prctl(2) by
# base/libc_lite.py (no ctypes import: ~2.5 ms).
REAPER = JL.PRELUDE + LL.PRELUDE + r"""
import os, sys
ctl, uid, gid = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
keep = [int(x) for x in sys.argv[4].split(",") if x]
argv = sys.argv[5:]
def say(obj):
    try:
        os.write(ctl, (dumps(obj) + "\n").encode())
    except OSError:
        pass
def zombie(pid):
    out = {}
    try:
        text = open("/proc/%d/stat" % pid).read()
        out["comm"] = text[text.index("(") + 1:text.rindex(")")]
        out["ppid"] = int(text[text.rindex(")") + 2:].split()[1])
        for line in open("/proc/%d/status" % pid):
            key, _s, value = line.partition(":")
            if key in ("Uid", "NSpid"):
                out[key.lower()] = [int(v) for v in value.split()]
        out["uid"] = out.get("uid", [None])[0]
        out["cgroup"] = open("/proc/%d/cgroup" % pid).read().splitlines()[0].split(":", 2)[2]
    except (OSError, ValueError, IndexError):
        pass
    return out
became = libc.prctl(36, 1, 0, 0, 0) == 0        # PR_SET_CHILD_SUBREAPER
libc.prctl(1, 9, 0, 0, 0)                        # PR_SET_PDEATHSIG, SIGKILL: no reaper without the probe
say({"reaper": os.getpid(), "subreaper": became})
child = os.fork()
if child == 0:
    try:
        os.close(ctl)
        if uid >= 0:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        for fd in keep:
            os.set_inheritable(fd, True)
        exe = argv[0]
        if "/" not in exe:          # execvp's lookup, as the user, without importing anything once the ids changed
            for entry in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
                here = os.path.join(entry or ".", exe)
                if os.path.isfile(here) and os.access(here, os.X_OK):
                    exe = here
                    break
        os.execv(exe, argv)
    except OSError as exc:
        os.write(2, ("bwrap: execvp %s: %s\n" % (argv[0], exc.strerror)).encode())
    os._exit(127)
null = os.open("/dev/null", os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
for fd in keep:
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
    rec = {"reaped": info.si_pid, "code": info.si_code, "status": info.si_status}
    if info.si_pid != child:
        rec.update(zombie(info.si_pid))
    os.waitpid(info.si_pid, 0)
    say(rec)
say({"empty": True})
"""

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
        pids = PT.descendants(root, proc)
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


class Reaped(BR.Started):
    """bwrap under the reaper, for bwrap_run.pump: its pid, whether it has exited, the tree polled into the
    ledger, and the tree killed."""

    def __init__(self, proc: "subprocess.Popen[bytes]", ledger: PT.Ledger, bwrap_ids: t.Set[PT.Ident]) -> None:
        BR.Started.__init__(self, proc)
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
        return self.ledger.observe(PT.descendants(root, self.ledger.proc, exhaustive=exhaustive), phase)

    def exited(self) -> bool:
        return self.bwrap_status is not None or (self.bwrap is None and BR._exited(self.proc))

    def reportable(self) -> bool:
        """Whether something left in the tree could still report: a process that is not bwrap's own."""
        if self.empty_seen:
            return False
        now = self.poll()
        return any(PT._ident(o) not in self.bwrap_ids for o in now)

    def on_exit(self) -> None:
        self.ledger.phase = PT.AFTER
        self.poll()

    def kill(self) -> None:
        if self.empty_seen and self.proc.poll() is not None:
            return      # the reaper saw its tree empty and exited: nothing descends from its pid any more (a
        # scan would read every process of the host, and could find the children of a process that took the pid)
        kill_tree(self.reaper or self.proc.pid, self.ledger.proc)
        if self.reaper is None:
            B.kill_group(self.proc)


def run_reaped(argv: t.Sequence[str], user: t.Optional[t.Mapping[str, t.Any]] = None,
               env: t.Optional[t.Mapping[str, str]] = None, timeout: float = 30.0, cwd: str = "/",
               watch: t.Optional[BR.Watch] = None, ledger: t.Optional[PT.Ledger] = None,
               bwrap_ids: t.Optional[t.Set[PT.Ident]] = None, attach: t.Optional[t.Callable[[t.Any], None]] = None,
               keep_fds: t.Sequence[int] = ()) -> Json:
    """Like bwrap_run.run_bwrap (``{status_fd}`` in argv becomes a pipe), with bwrap under the reaper. Extra
    descriptors bwrap must inherit (``keep_fds``, e.g. for --ro-bind-fd) are passed through the reaper,
    which closes its own copies. ``attach(proc)`` gets the reaper's Popen before anything is read (the
    handshake writes to its stdin, which only bwrap's tree holds). Returns run_bwrap's dict plus "tree"
    (the ledger's report) and "pid" (bwrap's)."""
    ledger = ledger if ledger is not None else PT.Ledger()
    read_fd, write_fd = os.pipe()
    ctl_r, ctl_w = os.pipe()
    argv = [str(write_fd) if a == "{status_fd}" else a for a in argv]
    keep = [write_fd] + list(keep_fds)
    uid, gid = (int(user["uid"]), int(user["gid"])) if user is not None else (-1, -1)
    cmd = [sys.executable or "/usr/bin/python3", "-I", "-S", "-c", REAPER, str(ctl_w), str(uid), str(gid),
           ",".join(str(fd) for fd in keep)] + list(argv)
    start = time.time()
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if watch is not None else subprocess.DEVNULL,  # pylint: disable=ansible-bad-function
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                                pass_fds=tuple(keep) + (ctl_w,), start_new_session=True)
    except OSError as exc:
        for fd in (read_fd, write_fd, ctl_r, ctl_w):
            os.close(fd)
        return {"rc": 127, "stdout": "", "stderr": "bwrap: execvp %s: %s" % (argv[0], exc.strerror),
                "json_status": {}, "status_raw": "", "setup_failed": True, "timed_out": False,
                "left_behind": False, "duration": 0.0, "pid": None, "tree": ledger.report()}
    os.close(write_fd)
    os.close(ctl_w)
    if attach is not None:
        attach(proc)
    started = Reaped(proc, ledger, set(bwrap_ids or ()))
    report: Json = {}
    if proc.stdout is None or proc.stderr is None:
        raise AssertionError("the reaper's Popen has no pipes")
    streams = {"stdout": proc.stdout.fileno(), "stderr": proc.stderr.fileno(), "status": read_fd,
               "control": ctl_r}
    try:
        data, timed_out = BR.pump(proc, streams, timeout, watch, report, started=started)
    finally:
        started.kill()
        proc.stdout.close()
        proc.stderr.close()
        os.close(read_fd)
        os.close(ctl_r)
    if not started.empty_seen and started.reaper is not None and proc.returncode is not None and \
            proc.returncode != 0:
        ledger.reaper["lost"] = "the reaper exited with %s before its tree was empty" % proc.returncode
    status = BR.parse_json_status(data.get("status", b""))
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


class UnitRun(BR.Started):
    """A transient unit's run, for bwrap_run.pump: ``proc`` is systemd-run; bwrap is the unit's launcher once it
    has said its pid (``launcher()``: the host pid, or None); the tree is the unit's cgroup (the ledger's
    ``cgroup``, found when the launcher is released), polled into the ledger; a kill is of the whole unit."""

    def __init__(self, proc: "subprocess.Popen[bytes]", ledger: PT.Ledger, bwrap_ids: t.Set[PT.Ident],
                 unit: str, launcher: t.Callable[[], t.Optional[int]]) -> None:
        BR.Started.__init__(self, proc)
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
        return self.ledger.observe(PT.cgroup_pids(self.ledger.cgroup) or [])

    def update(self, data: t.Mapping[str, bytes]) -> None:
        if self.ledger.server is not None:
            self.ledger.server.serve()
        now = time.time()
        if now - self.polled >= POLL:
            self.poll()
            self.polled = now

    def exited(self) -> bool:
        if BR._exited(self.proc):
            return True
        pid = self.launcher()
        if pid is None or self.ledger.cgroup is None:
            return False
        st = PT.read_stat(pid, self.ledger.proc)
        if self.started_at is None and st:
            self.started_at = st["start"]
        return not st or st["state"] in ("Z", "X") or st["start"] != self.started_at

    def on_exit(self) -> None:
        self.ledger.phase = PT.AFTER
        self.poll()

    def reportable(self) -> bool:
        return any(PT._ident(o) not in self.bwrap_ids for o in self.poll())

    # systemd-run's pipes stay open until systemd has stopped the unit (up to its stop timeout, probe.STOP_TIMEOUT,
    # under cgroup v1 once a PID namespace was used): only processes still in the unit's cgroup are leftovers.
    drain = 8.0

    def leftovers(self) -> bool:
        return bool(self.ledger.cgroup is not None and PT.cgroup_pids(self.ledger.cgroup))

    def kill(self) -> None:
        """The unit's processes first (systemd-run then reports and exits on its own); systemd-run too when
        asked again."""
        if self.killed:
            B.kill_group(self.proc)
            return
        self.killed = True
        subprocess.run(["systemctl", "kill", "--signal=SIGKILL", self.unit],  # pylint: disable=ansible-bad-function
                       capture_output=True, check=False)
