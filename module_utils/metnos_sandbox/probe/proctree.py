# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Everything the probe's bwrap starts, accounted for (issue 20).

The probe runs bwrap so that every process it (or a look-alike in its place) starts is the probe's
to find, whatever it does to hide:

* **direct**: bwrap is the child of a small intermediate process that is a *child subreaper*
  (``prctl(PR_SET_CHILD_SUBREAPER)``, reaper.py): a process that double-forks, calls ``setsid``,
  closes its descriptors and changes its argv[0] is still re-parented to it, never to init; the tree
  is every process whose chain of parents reaches the reaper, and every orphan the reaper reaps is
  written down while it is a zombie (its comm, uid, parent) before it is gone;
* **systemd**: the transient unit's cgroup (``cgroup.procs`` of the unit's directory and below, in
  whatever hierarchy systemd keeps its units: cgroup v2, or v1's ``name=systemd``), which no process
  of the unit can leave without root.

The ``Ledger`` holds what was seen of that tree at each moment of a run: **before** bwrap runs (a
unit's cgroup holds only the launcher), **during** (polls while bwrap sets up and the payload runs),
**checked** (when the payload has reported and its evidence is read), **after** (once bwrap has
exited, before anything is killed). ``judge`` turns it into findings, deny by default: a process that
is neither what the probe started (the reaper, the bwrap launcher), nor bwrap's sandboxed child and
the payload, nor a process of bwrap's own setup (its executable is a verified bwrap, seen only before
the payload reported), is a finding with its details (pid, executable, namespaces, command line);
one that ran **the payload's code** (its comm is the run's marker - the payload sets it as its first
act - or its arguments are the payload's after argv[0]) is the stronger finding. The payload also
never exits on its own unless the probe released it with a one-time token it gives only to the
process it has verified (payload.payload_text): a copy started outside the sandbox is never released, so it
stays in the tree, visible, until the probe kills it.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import _socket  # the C module alone: socket.py imports enum and selectors and builds four enums (docs/benchmarks.md)
import os
import struct
import typing as t

from ..base.diagnostics import Diagnostic, make
from ..base.records import Json, Record
from ..host import procfs

Ident = t.Tuple[int, int]
"""A file's (st_dev, st_ino): what a look-alike cannot give another file."""

BEFORE, DURING, CHECKED, AFTER = "before", "during", "checked", "after"
PHASES = (BEFORE, DURING, CHECKED, AFTER)
MAX_PROCESSES = 256         # a tree larger than this is reported as such, not walked further
MAX_OBSERVATIONS = 4        # per process: its first sightings (a fork, then an exec, ...)
CMDLINE_EXCERPT = 160


def marker(token: str) -> str:
    """The comm (15 bytes at most) every process running the payload's code gives itself first."""
    return ("mp-" + token)[:15]


# --------------------------------------------------------------------------- one process

def read_stat(pid: procfs.Pid, proc: str = "/proc") -> Json:
    """comm, state, ppid and starttime (clock ticks since boot) from /proc/PID/stat; {} when gone."""
    try:
        text = procfs.read_text(os.path.join(proc, str(pid), "stat"), limit=4096)
    except (IOError, OSError):
        return {}
    parsed = _stat_fields(text)
    if parsed is None:
        return {}
    comm, fields = parsed
    try:
        return {"comm": comm, "state": fields[0], "ppid": int(fields[1]), "start": int(fields[19])}
    except ValueError:
        return {}


def _stat_fields(text: str) -> t.Optional[t.Tuple[str, t.List[str]]]:
    """(comm, the fields after it: state, ppid, ...; the 21st holds the rest) of a /proc/PID/stat text, None
    when malformed (comm may hold spaces and parentheses: it ends at the last ")")."""
    head, sep, tail = text.rpartition(")")
    fields = tail.split(None, 20)
    if not sep or len(fields) < 20 or "(" not in head:
        return None
    return head.split("(", 1)[1], fields


def _stat_ident(path: str) -> t.Optional[t.List[int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


def exe_ident(pid: procfs.Pid, proc: str = "/proc") -> t.Optional[Ident]:
    """(st_dev, st_ino) of the file PID executes, read through /proc/PID/exe from outside (ptrace read
    access: refused as root without CAP_SYS_PTRACE, it is read with PID's own uid and gid); None when it
    cannot be read (gone, a zombie, refused)."""
    path = os.path.join(proc, str(pid), "exe")
    got = _stat_ident(path)
    if got is None and os.geteuid() == 0:
        own = procfs.own_credentials(pid, proc)
        if own is not None:
            got = procfs.call_as(own[0], own[1], _stat_ident, path) or None
    return (int(got[0]), int(got[1])) if isinstance(got, list) and len(got) == 2 else None


def _argv(pid: procfs.Pid, proc: str) -> t.List[str]:
    raw = procfs.read_cmdline(pid, proc) or b""
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0")[:-1]][:64] if raw else []


def describe(pid: int, proc: str = "/proc") -> Json:
    """What the kernel says about one process, from outside: pid, parent, comm, state, uid, the
    executable (its link and its device/inode), namespaces, the command line (excerpt, and argv) and its
    cgroup. {} when it is gone."""
    st = read_stat(pid, proc)
    if not st:
        return {}
    status = procfs.read_status(pid, proc)
    links, how = procfs.read_links(pid, ["exe"] + ["ns/" + k for k in procfs.NS_KINDS], proc)
    argv = _argv(pid, proc)
    ident = exe_ident(pid, proc)
    return {"pid": pid, "ppid": st["ppid"], "comm": st["comm"], "state": st["state"], "start": st["start"],
            "uid": (status.get("uid") or [None])[0], "exe": links["exe"], "exe_id": list(ident) if ident else None,
            "ns": dict((k, links["ns/" + k]) for k in procfs.NS_KINDS), "read_by": how, "argv": argv,
            "cmdline": " ".join(argv)[:CMDLINE_EXCERPT], "cgroup": (procfs.read_cgroups(pid, proc) or [""])[0]}


# --------------------------------------------------------------------------- the tree

def _ppid(path: str) -> t.Optional[int]:
    """The parent pid in the stat file ``path`` (read_stat's parse), None when gone or malformed. os.read and
    a latin-1 decoding, no text file object: a poll reads every process's stat file, several times a probe."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    parsed = _stat_fields(data.decode("latin-1"))
    try:
        return int(parsed[1][1]) if parsed is not None else None
    except ValueError:
        return None


def parents(proc: str = "/proc") -> t.Dict[int, int]:
    """{pid: parent pid} of every process in this /proc (one pass over /proc/*/stat)."""
    out: t.Dict[int, int] = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return out
    for name in names:
        if name.isdigit():
            ppid = _ppid("%s/%s/stat" % (proc, name))
            if ppid is not None:
                out[int(name)] = ppid
    return out


def _thread_children(pid: int, proc: str) -> t.Optional[t.List[int]]:
    """The children of every thread of ``pid``, from the kernel's own lists (/proc/PID/task/TID/children);
    [] when ``pid`` is gone; None when a list cannot be read (a kernel without CONFIG_PROC_CHILDREN, a refusal):
    the caller then asks every process for its parent instead."""
    base = "%s/%d/task" % (proc, pid)
    try:
        tids = os.listdir(base)
    except FileNotFoundError:
        return []
    except OSError:
        return None
    out: t.List[int] = []
    for tid in tids:
        try:
            fd = os.open("%s/%s/children" % (base, tid), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            if os.path.isdir("%s/%s" % (base, tid)):
                return None             # the thread is there, its list is not: no such lists here
            continue                    # the thread is gone
        except OSError:
            return None
        try:
            chunks = []
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError:
            return None
        finally:
            os.close(fd)
        try:
            out.extend(int(word) for word in b"".join(chunks).split())
        except ValueError:
            return None
    return out


def _walk(root: int, proc: str, limit: int) -> t.Optional[t.List[int]]:
    """descendants() from the kernel's lists of children, down from ``root``: the cost is the tree's, not the
    host's; None when a list cannot be read."""
    out: t.List[int] = []
    todo = [root]
    seen = set(todo)
    while todo and len(out) < limit:
        kids = _thread_children(todo.pop(), proc)
        if kids is None:
            return None
        for pid in kids:
            if pid not in seen:
                seen.add(pid)
                out.append(pid)
                todo.append(pid)
    return sorted(out[:limit])


def descendants(root: int, proc: str = "/proc", limit: int = MAX_PROCESSES, exhaustive: bool = True) -> t.List[int]:
    """Every process whose chain of parents reaches ``root`` (root itself excluded), at most ``limit``.

    ``exhaustive``: every process of this /proc asked for its parent (a process re-parented while the tree is
    read is found whichever parent it names); else the kernel's lists of children are walked down from
    ``root`` (the cost of the tree alone: the probe's periodic polls, where a process missed by one walk is
    found by the next, or written down by the reaper when it dies an orphan), the whole scan when a list
    cannot be read."""
    if not exhaustive:
        walked = _walk(root, proc, limit)
        if walked is not None:
            return walked
    kids: t.Dict[int, t.List[int]] = {}
    for pid, ppid in parents(proc).items():
        kids.setdefault(ppid, []).append(pid)
    out: t.List[int] = []
    todo = list(kids.get(root, []))
    while todo and len(out) < limit:
        pid = todo.pop()
        if pid in out or pid == root:
            continue
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return sorted(out)


def _cgroup_mounts(proc: str) -> t.List[procfs.Mount]:
    mounts = procfs.read_mounts("self", proc)
    return [m for m in mounts if m["fstype"] == "cgroup2" or (m["fstype"] == "cgroup" and "name=systemd" in
                                                              m["superopts"])] if isinstance(mounts, list) else []


def unit_cgroup_dirs(pid: int, proc: str = "/proc") -> t.List[str]:
    """The directories of PID's cgroup in the hierarchies systemd keeps its units in (cgroup v2 and v1's
    name=systemd), as mounted in the reader's mount table: the first that exists is the unit's."""
    out: t.List[str] = []
    try:
        text = procfs.read_text(os.path.join(proc, str(pid), "cgroup"), limit=1 << 16)
    except (IOError, OSError):
        return out
    mounts = _cgroup_mounts(proc)
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        kind = "cgroup2" if parts[0] == "0" and parts[1] == "" else ("cgroup" if "name=systemd" in parts[1] else None)
        for m in mounts:
            if kind is None or m["fstype"] != kind:
                continue
            root = m["root"].rstrip("/")
            path = parts[2]
            if root and not (path == root or path.startswith(root + "/")):
                continue
            where = os.path.normpath(m["mountpoint"] + "/" + path[len(root):])
            if os.path.isdir(where) and where not in out:
                out.append(where)
    return out


def cgroup_pids(directory: str, limit: int = MAX_PROCESSES) -> t.Optional[t.List[int]]:
    """The pids in ``directory``'s cgroup and every cgroup below it (cgroup.procs, in the reader's PID
    namespace); None when it cannot be read (the unit is gone, or no such hierarchy)."""
    out: t.List[int] = []
    try:
        walk = list(os.walk(directory))[:64]
    except OSError:
        return None
    if not walk:
        return None
    for here, _dirs, files in walk:
        if "cgroup.procs" not in files:
            continue
        try:
            text = procfs.read_text(os.path.join(here, "cgroup.procs"), limit=1 << 16)
        except (IOError, OSError):
            if here == directory:
                return None
            continue
        out.extend(int(n) for n in text.split() if n.isdigit())
    return sorted(set(out))[:limit]


# --------------------------------------------------------------------------- what was seen

class Ledger(object):
    """Every process of the run's tree seen, with what it looked like each time it changed (comm,
    command line, executable), and in which phases; plus the orphans the reaper wrote down and what
    the tree looked like before the run."""

    def __init__(self, proc: str = "/proc") -> None:
        self.proc = proc
        self.phase = DURING
        self.seen: t.Dict[int, t.List[Json]] = {}
        self.phases: t.Dict[int, t.Set[str]] = {}
        self.before: t.Optional[t.List[Json]] = None
        self.reaped: t.List[Json] = []
        self.reaper: Json = {}
        self.truncated = False
        self.unreadable = False
        self.poller: t.Optional[t.Callable[[], t.Any]] = None   # reads the tree now (set by the runner)
        self.cgroup: t.Optional[str] = None                   # systemd: the unit's cgroup directory
        self.beacon: t.List[Json] = []                        # who reached the run's Beacon
        self.server: t.Optional["Beacon"] = None              # ... served with every poll

    def observe(self, pids: t.Optional[t.Sequence[int]], phase: t.Optional[str] = None,
                skip: t.Sequence[int] = ()) -> t.List[Json]:
        """Record ``pids`` (None: the tree could not be read) in ``phase`` (default: the current one);
        returns what each looks like now."""
        phase = phase or self.phase
        if pids is None:
            self.unreadable = True
            return []
        if len(pids) >= MAX_PROCESSES:
            self.truncated = True
        now = []
        for pid in pids:
            if pid in skip:
                continue
            cur = self._look(pid)
            if cur:
                self.phases.setdefault(pid, set()).add(phase)
                now.append(cur)
        return now

    def _look(self, pid: int) -> t.Optional[Json]:
        history = self.seen.get(pid)
        st = read_stat(pid, self.proc)
        if not st:
            return history[-1] if history else None
        last = history[-1] if history else None
        if last is not None and last.get("start") == st["start"] and last.get("comm") == st["comm"] and \
                last.get("argv") == _argv(pid, self.proc):
            return last
        cur = describe(pid, self.proc)
        if not cur:
            return last
        if last is not None and last.get("start") != cur.get("start"):    # a new process under an old pid
            history = None
        history = (history or [])[:MAX_OBSERVATIONS - 1] + [cur]
        self.seen[pid] = history
        return cur

    def set_before(self, pids: t.Optional[t.Sequence[int]], started: t.Sequence[int]) -> None:
        """What the tree held before bwrap ran: anything but ``started`` (what the probe started) is kept."""
        if pids is None:
            self.before = [{"pid": None, "error": "the tree could not be read before the run"}]
            return
        self.before = [describe(p, self.proc) or {"pid": p} for p in pids if p not in started]
        self.observe([p for p in pids if p not in started], BEFORE)

    def alive(self, pids: t.Sequence[int]) -> t.List[int]:
        return [p for p in pids if read_stat(p, self.proc).get("state") not in (None, "Z", "X")]

    def report(self) -> Json:
        """The ledger as evidence (JSON): {"seen": [[pid, [observations], [phases]], ...], ...}."""
        return {"seen": [[pid, obs, sorted(self.phases.get(pid, ()))] for pid, obs in sorted(self.seen.items())],
                "before": self.before, "reaped": self.reaped, "reaper": self.reaper, "truncated": self.truncated,
                "unreadable": self.unreadable, "beacon": self.beacon}


# --------------------------------------------------------------------------- judging it

class Expected(Record):
    """What the tree may hold: the pids the probe started or identified (the reaper, the launcher/bwrap,
    bwrap's child-pid, the payload), the executables of a verified bwrap, the payload's marker and argv."""
    pids: t.Set[int]
    bwrap_ids: t.Set[Ident]
    marker: str
    payload_argv: t.List[str]
    payload_ns: t.Dict[str, str]
    reported: bool
    parent_ns: t.Dict[str, str] = {}
    """bwrap's parent context's namespaces: without a verified payload (the outside never read it), a copy of
    the payload's code is outside when it runs in that context's user and mount namespaces."""


def ident(obs: Json) -> t.Optional[Ident]:
    got = obs.get("exe_id")
    return (int(got[0]), int(got[1])) if isinstance(got, list) and len(got) == 2 else None


def runs_payload(obs: Json, exp: Expected) -> bool:
    """Whether this observation is of a process running the payload's code: it carries the run's marker
    (the payload's first act) or the payload's arguments after argv[0] (a copy not yet that far)."""
    argv = obs.get("argv") or []
    return obs.get("comm") == exp.marker or (len(argv) > 1 and argv[1:] == exp.payload_argv[1:])


def _is_bwrap(history: t.Sequence[Json], phases: t.Collection[str], exp: Expected) -> bool:
    """A process of bwrap's own: every sighting executes a verified bwrap, and it was seen only while bwrap
    set up (before the payload reported) - or the payload never reported (a bwrap that died and left its
    child stuck behind: part of its setup failure)."""
    if not history or not all(ident(o) in exp.bwrap_ids for o in history):
        return False
    return not exp.reported or not (set(phases) & {CHECKED, AFTER})


def _unsandboxed(obs: Json, exp: Expected) -> bool:
    ns = obs.get("ns") or {}
    return bool(exp.parent_ns) and all(ns.get(k) and ns.get(k) == exp.parent_ns.get(k) for k in ("user", "mnt"))


def _differs(obs: Json, exp: Expected) -> t.List[str]:
    ns = obs.get("ns") or {}
    return sorted(k for k, v in exp.payload_ns.items() if not procfs.is_error(v) and ns.get(k) and ns.get(k) != v)


def _finding(kind: str, history: t.Sequence[Json], phases: t.Collection[str], exp: Expected,
             wording: str) -> Json:
    shown = [o for o in history if runs_payload(o, exp)] or list(history)
    last = dict(shown[-1])
    last.pop("argv", None)
    last.pop("start", None)
    return {"kind": kind, "wording": wording, "process": last, "phases": sorted(phases),
            "outside": _differs(last, exp)}


def judge(report: Json, exp: Expected) -> t.List[Json]:
    """Findings of a Ledger.report(): [{"kind": before|payload_outside|unaccounted, "wording", "process",
    "phases", "outside"}], deny by default (see the module's docstring)."""
    out: t.List[Json] = []
    for item in report.get("before") or []:
        out.append({"kind": "before", "wording": "before", "process": item, "phases": [BEFORE], "outside": []})
    for pid, history, phases in report.get("seen") or []:
        if pid in exp.pids or BEFORE in phases:
            continue
        if any(runs_payload(o, exp) for o in history):
            if exp.payload_ns or any(_unsandboxed(o, exp) for o in history):
                out.append(_finding("payload_outside", history, phases, exp, "seen"))
        elif not _is_bwrap(history, phases, exp):
            out.append(_finding("unaccounted", history, phases, exp, "left" if AFTER in phases else "beside"))
    for peer in report.get("beacon") or []:
        if peer.get("pid") not in exp.pids:
            out.append({"kind": "payload_outside", "wording": "beacon", "process": dict(
                (k, v) for k, v in peer.items() if k not in ("argv", "start")), "phases": [],
                "outside": _differs(peer, exp)})
    seen = set(p for p, _h, _ph in report.get("seen") or [])
    for rec in report.get("reaped") or []:
        pid = rec.get("reaped")
        if pid in exp.pids or pid in seen:
            continue
        zombie = dict([(k, rec.get(k)) for k in ("comm", "uid", "ppid", "nspid", "cgroup")], pid=pid)
        kind = "payload_outside" if rec.get("comm") == exp.marker else "unaccounted"
        out.append({"kind": kind, "wording": "orphaned", "process": zombie, "phases": [], "outside": []})
    reaper = report.get("reaper") or {}
    if reaper and (reaper.get("lost") or reaper.get("subreaper") is False):
        out.append({"kind": "unaccounted", "wording": "reaper", "process": dict(reaper), "phases": [],
                    "outside": []})
    if report.get("truncated") or report.get("unreadable"):
        out.append({"kind": "unaccounted", "wording": "unreadable", "process": {}, "phases": [], "outside": []})
    return out


_CODE_OF_KIND = {"before": "probe_tree_not_empty", "payload_outside": "probe_payload_outside"}


def diagnostics(report: t.Optional[Json], exp: Expected, limit: int = 8) -> t.List[Diagnostic]:
    """judge()'s findings as diagnostics, one per process (at most ``limit``); no report at all is a tree that
    was not read (not proven)."""
    if report is None:
        return [make("probe_process_unaccounted", wording="unreadable", fill={"pid": "?",
                                                                              "details": "-"})]
    out = []
    for f in judge(report, exp)[:limit]:
        proc = f["process"]
        fill = {"pid": proc.get("pid", "?"), "details": details(proc), "outside": ", ".join(f["outside"]) or "-"}
        out.append(make(_CODE_OF_KIND.get(f["kind"], "probe_process_unaccounted"),
                        wording=f["wording"], fill=fill,
                        process=proc, phases=f["phases"]))
    return out


def details(proc: Json) -> str:
    """One process, in a sentence: comm, uid, parent, executable, network and mount namespaces, command line."""
    parts = ["%s %s" % (k, proc[k]) for k in ("comm", "uid", "ppid", "exe") if proc.get(k) is not None]
    if proc.get("ns"):
        parts.append("net %s, mnt %s" % (proc["ns"].get("net"), proc["ns"].get("mnt")))
    if proc.get("cmdline"):
        parts.append("cmdline %r" % proc["cmdline"][:80])
    return "; ".join(parts) or "no details (it is gone)"


class Beacon(object):
    """A listening abstract unix socket in the probe's own network namespace whose name only the payload's spec
    carries. The payload's first act is to reach it and wait for one byte: inside a sandbox with a network
    namespace of its own the name does not exist there (the payload goes on); a copy of the payload's code run in
    the probe's network namespace reaches it and is held until the probe - polling it with the tree (serve(),
    no thread) - has read who it is (SO_PEERCRED: its pid in the probe's PID namespace, then describe()). So a
    copy a look-alike runs and kills at once, never an orphan and never seen by a poll, is still written down,
    with its details. With a host-network profile the sandboxed payload reaches it too: only a peer that is not
    the verified payload is a finding."""

    LIMIT = 16

    def __init__(self, token: str, proc: str = "/proc") -> None:
        self.name = "metnos-probe-%s-%s" % (token, os.urandom(4).hex())
        self.proc = proc
        self.peers: t.List[Json] = []
        self.sock: t.Optional[_socket.socket] = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self.sock.bind("\0" + self.name)
        self.sock.listen(16)
        self.sock.setblocking(False)

    def serve(self) -> None:
        """Take every connection waiting: who it is, then let it go on."""
        while self.sock is not None:
            try:
                # accept4(2) with SOCK_CLOEXEC, what socket.py's accept() calls (typeshed does not list it)
                fd, _addr = self.sock._accept()  # type: ignore[attr-defined]
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, fd)
            try:
                conn.setblocking(True)
                pid, uid, _gid = struct.unpack("3i", conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12))
                if len(self.peers) < self.LIMIT:
                    self.peers.append(dict(describe(pid, self.proc) or {"pid": pid}, peer_uid=uid))
                conn.sendall(b"k")
            except OSError:
                pass
            finally:
                conn.close()

    def close(self) -> t.List[Json]:
        self.serve()
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        return list(self.peers)
