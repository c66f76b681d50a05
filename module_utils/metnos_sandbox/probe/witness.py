# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The outside witness: while the payload waits on its stdin, the probe reads the payload's namespaces,
mounts and interfaces from the host's /proc (observe_outside, Watcher) and parses the run's stream
(records, split_stream).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import os
import typing as t

from ..base.records import Json
from ..host import holdings, procfs
from . import attributes, keyrings, proc_covers, proctree
from .payload import Stream, host_namespaces


# --------------------------------------------------------------------------- the outside witness
def host_view(proc: str = "/proc") -> Json:
    """The probe's own namespaces and mount table, read before the run. Run directly, this *is* the
    parent context of bwrap (the probe starts bwrap without changing namespaces)."""
    mounts = procfs.read_mounts("self", proc)
    status = procfs.read_status("self", proc)
    return {"ns": host_namespaces(proc), "mounts": mounts if isinstance(mounts, list) else [],
            "privileges": procfs.privileges(status), "nspid": status.get("nspid") or [],
            "attributes": holdings.process_attributes("self", proc), "keyrings": keyrings.own(),
            "securebits": attributes.own_securebits(),
            "from": "the probe (pid %d) that started bwrap" % os.getpid(), "legacy_tiocsti": _legacy_tiocsti(proc)}


def _legacy_tiocsti(proc: str) -> t.Optional[str]:
    """The kernel's dev.tty.legacy_tiocsti ("0"/"1"), None when this kernel has no such setting (before 6.2)."""
    try:
        return procfs.read_text(os.path.join(proc, "sys", "dev", "tty", "legacy_tiocsti"), limit=16).strip()
    except FileNotFoundError:
        return None
    except (IOError, OSError) as exc:
        return procfs.errname(exc)


def observe_context(pid: int, proc: str = "/proc") -> Json:
    """The parent context of bwrap in a transient unit: the namespaces and mount table of the unit's
    process (pid), read from outside while it waits, before it executes bwrap."""
    ns, how = procfs.namespaces(pid, proc=proc)
    mounts = procfs.read_mounts(pid, proc)
    status = procfs.read_status(pid, proc)
    return {"ns": ns, "mounts": mounts if isinstance(mounts, list) else [], "read_by": how,
            "privileges": procfs.privileges(status), "nspid": status.get("nspid") or [],
            "attributes": holdings.process_attributes(pid, proc),
            "from": "the unit's process (pid %s) before it ran bwrap" % pid}


def observe_outside(launcher: t.Optional[int], child_pid: t.Optional[int], payload_argv: t.Sequence[str],
                    proc: str = "/proc") -> Json:
    """Read, from the host's /proc, what the kernel says about the payload process and about bwrap.

    ``launcher``: the pid of the bwrap that was started (its own process: the parent context);
    ``child_pid``: what bwrap's json-status says its sandboxed child is (None if it said nothing).
    """
    out: Json = {"launcher": launcher, "child_pid": child_pid, "child_ppid": None}
    want = procfs.cmdline_bytes(payload_argv)
    pids: t.List[int] = []
    if isinstance(child_pid, int) and child_pid > 0:
        out["child_ppid"] = procfs.read_status(child_pid, proc).get("ppid")
        if procfs.read_cmdline(child_pid, proc) == want:
            pids = [child_pid]
    if not pids:
        pids = procfs.find_processes(payload_argv, proc)
    out["payload_pids"] = pids
    out["payload_pid"] = pids[0] if len(pids) == 1 else None
    if out["payload_pid"] is not None:
        out["payload"] = _observe_payload(out["payload_pid"], child_pid, proc)
        out["payload"].update(_where_descriptors_lead(out["payload"], out["payload_pid"], child_pid, proc,
                                                      launcher if isinstance(launcher, int) else None))
    if isinstance(launcher, int) and launcher > 0:
        links, how = procfs.read_links(launcher, ["ns/" + k for k in procfs.NS_KINDS] + ["exe"], proc)
        ident = proctree.exe_ident(launcher, proc)
        out["parent"] = {"pid": launcher, "ns": dict((k, links["ns/" + k]) for k in procfs.NS_KINDS),
                         "exe": links["exe"], "exe_id": list(ident) if ident else None, "read_by": how,
                         "mounts": procfs.read_mounts(launcher, proc)}
    return out


def _observe_payload(pid: int, child_pid: t.Optional[int], proc: str) -> Json:
    """The payload process (pid), from the host's /proc: ids, namespaces (and who else holds them), mount
    table, interfaces, privileges, open descriptors, mapped files."""
    st = procfs.read_status(pid, proc)
    ns, how = procfs.namespaces(pid, proc=proc)
    # who else is in the payload's namespaces (a "private" namespace holds the sandbox only)
    targets = dict((k, v) for k, v in ns.items() if k != "pid" and not procfs.is_error(v))
    held, unreadable = procfs.sharers(targets, [pid] + ([child_pid] if isinstance(child_pid, int) else []), proc)
    # ... or keeps it alive for later (a bind of its nsfs inode, as "ip netns add" makes): host's table
    for kind, points in procfs.nsfs_binds(targets, proc).items():
        held.setdefault(kind, []).extend("a bind of it at %s" % p for p in points)
    return {"ppid": st.get("ppid"), "nspid": st.get("nspid") or [], "uid": (st.get("uid") or [None])[0],
            "ns": ns, "read_by": how, "mounts": procfs.read_mounts(pid, proc),
            "interfaces": procfs.interfaces(pid, proc), "privileges": procfs.privileges(st),
            "sharers": held, "sharers_unreadable": unreadable,
            "fds": procfs.open_files(pid, proc), "mapped": procfs.mapped_files(pid, proc),
            "attributes": holdings.process_attributes(pid, proc)}


def _bwrap_chain(pid: int, launcher: t.Optional[int], proc: str) -> t.List[int]:
    """The processes from the payload's parent up to the bwrap that was started (bwrap's own: its monitor, a
    setup process between them); [] when the chain does not reach it."""
    chain: t.List[int] = []
    here = pid
    for _step in range(8):
        parent = (proctree.read_stat(here, proc) or {}).get("ppid")
        if not isinstance(parent, int) or parent <= 1:
            return []
        chain.append(parent)
        if parent == launcher:
            return chain
        here = parent
    return []


def _where_descriptors_lead(payload: Json, pid: int, child_pid: t.Optional[int], proc: str,
                            launcher: t.Optional[int] = None) -> Json:
    """Where the payload's pipes and sockets lead, from outside. The probe's own pipes (the payload's stdio: the
    probe holds their other ends, and only it can) are found in the probe's own descriptor table; for every other
    pipe or socket, every process of the host holding it (one pass over /proc/*/fd), the sandbox's own processes
    (bwrap's child and everything below it, and bwrap's processes between the payload and the bwrap that was
    started) and, for sockets, the sockets of the payload's own network namespace. Plus the payload's session,
    process group and controlling terminal, and what lies on its root file system itself."""
    out: Json = {"session": holdings.read_session(pid, proc), "root_entries": holdings.root_entries(pid, proc)}
    fds = payload.get("fds")
    links = sorted(set(i.get("link") for i in fds.values() if str(i.get("link")).startswith(("pipe:[", "socket:[")))
                   ) if isinstance(fds, dict) else []
    own = set(holdings.own_pipes(proc)) & set(links)
    out["fd_holders"] = {"own_pipes": sorted(own), "held": {}, "comm": {}, "unreadable": 0, "sandbox": []}
    # the probe's own pipes are taken as its own only in the stdio slots; anywhere else they are judged by holders
    others = sorted(set(i.get("link") for n, i in fds.items() if i.get("link") in links and (
        i.get("link") not in own or n not in ("0", "1", "2")))) if isinstance(fds, dict) else []
    if not others:
        return out
    # a unix socket made outside (in the probe's network namespace): its peer, asked of the kernel
    peers = dict((link, holdings.unix_peer(link)) for link in others if link.startswith("socket:["))
    peers = dict((k, v) for k, v in peers.items() if v)
    found = holdings.fd_holders(others + sorted(set(peers.values())), proc)
    held = found.held
    inside = set([pid] + ([child_pid] if isinstance(child_pid, int) else []))
    for top in list(inside):
        inside.update(proctree.descendants(top, proc, exhaustive=False))
    inside.update(_bwrap_chain(pid, launcher, proc))
    out["fd_holders"].update({"held": dict((k, sorted(v)[:16]) for k, v in held.items()),
                              "comm": dict((str(p), (proctree.read_stat(p, proc) or {}).get("comm")) for p in sorted(
                                  set(p for v in held.values() for p in v) - inside)[:16]),
                              "unreadable": found.unreadable, "sandbox": sorted(inside)[:64], "peers": peers,
                              "ends": dict((k, dict((side, sorted(v)[:16]) for side, v in sides.items()))
                                           for k, sides in found.ends.items())})
    if any(link.startswith("socket:[") for link in others):
        out["fd_holders"]["own_sockets"] = holdings.net_socket_inodes(pid, proc)
    return out


class Watcher(object):
    """The outside half of the handshake: once the payload has reported, read its evidence (while
    it waits on stdin), then let it go."""

    def __init__(self, token: str, payload_argv: t.Sequence[str], proc: str = "/proc",
                 stdin: t.Optional[t.IO[bytes]] = None, unit: t.Optional[str] = None, go: str = "",
                 ledger: t.Optional[proctree.Ledger] = None) -> None:
        self.token = token
        self.go = go                # the one-time token that releases the payload, given only once it is verified
        self.ledger = ledger        # the run's tree (proctree.Ledger): read again when the payload has reported
        self.unit = unit            # systemd: the transient unit (its pids may be of a PID namespace of its own)
        self.level: t.Optional[int] = None  # ... then the index of that namespace in its processes' NSpid
        self.payload_argv = payload_argv
        self.proc = proc
        self.outside: t.Optional[Json] = None
        self.launcher: t.Optional[int] = None
        self.stdin = stdin          # systemd: the launcher waits for one line before it runs bwrap
        self.context: t.Optional[Json] = None
        # the probe's own side of the payload's pipes: the probe, and in a unit systemd-run and the service
        # manager that passed them on (set by the runner)
        self.collectors: t.List[int] = [os.getpid()]

    def _done(self, objects: t.List[Json], status: Json, launcher: t.Optional[int]) -> bool:
        if not any(o.get("metnos_probe") == self.token for o in objects):
            return False
        child = status.get("child-pid")
        self.launcher = launcher
        try:
            self.outside = observe_outside(launcher, child if isinstance(child, int) and not isinstance(child, bool)
                                           else None, self.payload_argv, self.proc)
        except Exception as exc:   # never leave the payload waiting; nothing read is nothing proven
            self.outside = {"launcher": launcher, "child_pid": child, "error": "%s: %s" % (type(exc).__name__, exc)}
        if self.context is not None:
            self.outside["context"] = self.context
        said = [o for o in objects if o.get("metnos_probe") == self.token][0].get("keyrings")
        if self.unit:
            # the unit's invocation_id key, proven systemd's from outside (keyrings.invocation_evidence)
            try:
                self.outside["invocation"] = keyrings.invocation_evidence(said, self.unit)
            except Exception as exc:   # nothing read is nothing proven
                self.outside["invocation"] = {"error": "%s: %s" % (type(exc).__name__, exc)}
        # other units' invocation_id keys /proc/keys shows a root payload, proven from outside (both contexts)
        try:
            self.outside["visible"] = keyrings.visible_evidence(said, self.unit)
        except Exception as exc:       # nothing read is nothing proven
            self.outside["visible"] = {"error": "%s: %s" % (type(exc).__name__, exc)}
        self.outside["collectors"] = list(self.collectors)
        if self.ledger is not None:
            self.ledger.phase = proctree.CHECKED
            if self.ledger.poller is not None:
                self.ledger.poller()
        self._send((self.go + "\n").encode())
        return True

    def attach(self, proc: t.Any) -> None:
        """Direct: the started process's stdin, the handshake's channel (only bwrap's tree holds its other end)."""
        self.stdin = proc.stdin

    def _send(self, data: bytes) -> None:
        try:
            if self.stdin is not None:
                self.stdin.write(data)
                self.stdin.flush()
        except (OSError, ValueError):
            pass

    def _release_launcher(self, launcher: int) -> None:
        """Read the unit's process (the parent context) and its cgroup (nothing else may be there yet) while
        it waits, then let it run bwrap."""
        try:
            self.context = observe_context(launcher, self.proc)
            own = procfs.own_credentials(launcher, self.proc)
            self.context["covers"] = proc_covers.expected(own[0], own[1], "/proc/%d/root" % launcher) if own else None
        except Exception as exc:
            self.context = {"error": "%s: %s" % (type(exc).__name__, exc)}
        if self.ledger is not None:
            dirs = proctree.unit_cgroup_dirs(launcher, self.proc)
            self.ledger.cgroup = dirs[0] if dirs else None
            self.ledger.set_before(proctree.cgroup_pids(dirs[0]) if dirs else None, [launcher])
        self._send(b"\n")

    def direct(self, data: t.Dict[str, bytes], pid: int) -> bool:
        _launcher, status, _obs = split_stream(records(data.get("status", b"")), self.token)
        return self._done(records(data["stdout"]), status, pid)

    def systemd(self, data: t.Dict[str, bytes], _pid: int) -> bool:
        """The unit's launcher and bwrap's child-pid name pids of the unit's PID namespace: translated to this
        /proc's before anything is read (PrivatePIDs=yes gives the unit a namespace of its own)."""
        objects = records(data["stdout"])
        said, status, _obs = split_stream(objects, self.token)
        if self.context is None and self.stdin is not None and isinstance(said, int) and said > 0:
            # not found in the unit (its cgroup unreadable): the number as said, as if the namespace were shared
            self.launcher = self._host_pid(said, None) or said
            self.level = len(procfs.read_status(self.launcher, self.proc).get("nspid") or [0]) - 1
            self._release_launcher(self.launcher)
        if not any(o.get("metnos_probe") == self.token for o in objects):
            return False
        child = status.get("child-pid")
        if isinstance(child, int) and not isinstance(child, bool) and self.level is not None:
            status = dict(status, **{"child-pid": self._host_pid(child, self.level) or child})
        return self._done(objects, status, self.launcher)

    def _host_pid(self, pid: int, level: t.Optional[int]) -> t.Optional[int]:
        if not self.unit:
            return pid
        return procfs.unit_pid(pid, self.unit, level, self.proc)


def records(data: t.Union[bytes, str]) -> t.List[Json]:
    """The JSON objects of a stream, one per complete line (bwrap's status records, the launcher's and
    the payload's lines); anything else on the stream - partial lines, noise - is skipped."""
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    out = []
    for line in data.split(b"\n")[:-1]:
        line = line.strip()
        if line.startswith(b"{"):
            try:
                obj = json.loads(line.decode("utf-8", "replace"))
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out


def split_stream(objects: t.Iterable[Json], token: str) -> Stream:
    """Stream(launcher pid, merged bwrap status, payload record) from one stream of JSON objects."""
    launcher: t.Optional[int] = None
    status: Json = {}
    obs: t.Optional[Json] = None
    for obj in objects:
        if obj.get("metnos_probe") == token:
            obs = obs or obj
        elif "launcher-pid" in obj and launcher is None:
            launcher = obj["launcher-pid"] if isinstance(obj["launcher-pid"], int) else None
        elif "metnos_probe" not in obj:
            status.update(obj)
    return Stream(launcher, status, obs)
