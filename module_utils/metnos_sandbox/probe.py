# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real wrapped probe: run a rendered profile for real and prove that what the profile
promises holds (R-DIAG-3). It must be able to fail, and it never takes a refusal for a proof.

Two independent witnesses for every check:

* **outside** (the kernel's view from the probe's side, procfs.py): bwrap's ``--json-status-fd``
  names the sandboxed child; the probe finds the payload process, checks that it *is* that
  child (exact command line, parent is the bwrap that was started), and reads its namespace
  inodes, its mount table and its interfaces from the host's ``/proc`` while the payload
  waits (a handshake on the payload's stdin: it reports, then blocks until the outside has
  read). Namespaces are compared with bwrap's parent context, read before bwrap could act (run
  directly: the probe's own; in a transient unit: the unit's process, read while it waits to exec
  bwrap); a bwrap that has left that context since is itself a finding. The pids a unit reports (the
  launcher's, bwrap's child-pid) are of the unit's PID namespace - its own with PrivatePIDs=yes - and
  are translated to the probe's by the unit's cgroup (procfs.unit_pid) before anything is read; the
  payload's own pid is compared at the parent context's level of its NSpid.
* **inside** (the payload, ``PAYLOAD``): ``statfs``/``statvfs``/``stat`` of each mount point,
  ``lstat`` of each hidden path, a real write for each writable grant, ``if_nameindex``,
  ``prctl(PR_GET_PDEATHSIG)``; its ``/proc/self/ns`` links count only once ``/proc`` is proven
  to be a procfs whose ``/proc/self`` is the payload.

A permission error proves nothing: EACCES/EPERM is reported as "not proven" and fails the check.

``expectations(profile, ...)`` derives the checks from the *intended* profile; ``run`` (direct)
and ``run_systemd`` (transient unit) execute an argv - normally that profile's, possibly a
weakened one in tests - with the payload as the command; ``evaluate`` turns both witnesses into
checks and ``_verdict`` into diagnostics with one code per outcome: ``probe_not_isolated`` (the
payload ran but not sandboxed), ``probe_check_failed``, ``probe_setup_failed`` (bwrap failed
before the payload ran), ``probe_payload_failed`` (the payload could not report), ``probe_timeout``.

Nothing waits without a bound (bwrap.pump): the run ends when bwrap has exited - processes it leaves
holding its pipes (a look-alike's decoy, a background child) are killed a moment later, never waited
for - or at the timeout. Whether the payload ran is decided by its record plus the outside reading,
not by how the run ended: a timeout after both (a look-alike that never exits) still judges them,
and reports the timeout too.

Argv words: the verdict never trusts them. ``sandbox_probe`` always runs the rendered argv; ``run``
and ``run_systemd`` accept any argv (tests feed weakened ones) and judge only the evidence. When the
argv run is not the profile's (``spec["argv_options"]``), the verdict names what it added and removed,
option by option (``argv_deviations``), and every failure message ends with them, so a failed check
can be traced to its words; a pass with deviations says the evidence found those words harmless (a
new session, a host name, one more namespace), not that they were absent.

Beside the checks (issue 20): the bwrap the service runs is verified against the package database or an
accepted sha256 (bwrap_trust; probe_bwrap_* codes) and the launcher must execute a verified file (check
bwrap_exe_verified); everything its tree held is judged (reaper.py runs it, proctree.py judges it:
probe_tree_not_empty, probe_process_unaccounted, probe_payload_outside); /proc must carry bwrap's read-only
covers for the caller (proc_covers.py, check proc_covers). The payload marks itself (comm) and exits only once
the probe releases it with a one-time token (``with_release``), so a copy started elsewhere stays to be seen.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import os
import time
import typing as t
import uuid

from . import bwrap as B
from . import bwrap_trust as BT
from . import diagnostics as D
from . import proc_covers as PC
from . import procfs as PF
from . import proctree as PT
from . import reaper as RP
from . import systemd_exit as SX
from .paths import under

Json = t.Dict[str, t.Any]
User = t.Dict[str, t.Any]
"""A user to run as: name, uid, gid (groups, home, dynamic)."""


class Stream(t.NamedTuple):
    """split_stream(): the launcher's pid, bwrap's merged status records, the payload's record."""
    launcher: t.Optional[int]
    status: Json
    obs: t.Optional[Json]


class Reference(t.NamedTuple):
    """_reference(): the namespaces the payload is judged against, where they were read, and the kinds in
    which the bwrap that was started has left them."""
    ns: t.Dict[str, str]
    source: str
    moved: t.List[str]
    depth: t.Optional[int] = None
    """How deep the parent context's PID namespace is (the length of its NSpid in this /proc), if known."""


class SystemdReport(t.NamedTuple):
    """_strip_systemd_run(): the command's own stderr, and systemd-run's report (result, main)."""
    stderr: str
    info: t.Dict[str, str]


# Runs inside the sandbox on the runtime's interpreter (Python 3.6+, stdlib only). It reports
# one JSON line on stdout, then waits on stdin until the outside has read its evidence.
PAYLOAD = r"""
import ctypes, errno, json, os, socket, sys
spec = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(15, ctypes.c_char_p(("mp-" + spec["token"])[:15].encode()), 0, 0, 0)   # PR_SET_NAME: this code ran here
def beacon(name):
    # in the probe's network namespace the probe holds this process while it reads who it is
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect("\0" + name)
        s.recv(1)
        s.close()
        return "reached"
    except OSError as exc:
        return err(exc.errno or 0)
def err(num):
    return "error:" + errno.errorcode.get(num, str(num))
def fs(path):
    out = {}
    buf = ctypes.create_string_buffer(512)
    if libc.statfs(path.encode("utf-8"), buf) == 0:
        if os.uname()[4].startswith("s390"):
            out["type"] = ctypes.c_uint.from_buffer(buf).value
        else:
            out["type"] = ctypes.c_long.from_buffer(buf).value & 0xffffffff
    else:
        out["type"] = err(ctypes.get_errno())
    try:
        st = os.stat(path)
        out["dev"] = "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
        out["flags"] = "ro" if os.statvfs(path).f_flag & os.ST_RDONLY else "rw"
    except OSError as exc:
        out["dev"] = out["flags"] = err(exc.errno)
    return out
def listing(path):
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return err(exc.errno)
def try_write(path):
    try:
        if os.path.isdir(path):
            target = os.path.join(path, ".metnos-probe-" + spec["token"])
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
            os.unlink(target)
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
        return "writable"
    except OSError as exc:
        return err(exc.errno)
def presence(path):
    try:
        os.lstat(path)
        return "present"
    except OSError as exc:
        return "absent" if exc.errno in (errno.ENOENT, errno.ENOTDIR) else err(exc.errno)
obs = {"metnos_probe": spec["token"], "pid": os.getpid(), "uid": os.getuid(), "ns": {}}
if spec.get("beacon"):
    obs["beacon"] = beacon(spec["beacon"])
try:
    obs["proc_self"] = os.readlink("/proc/self")
except OSError as exc:
    obs["proc_self"] = err(exc.errno)
obs["proc"] = dict((p, fs(p)) for p in spec["proc"])
for ns in spec["ns"]:
    try:
        obs["ns"][ns] = os.readlink("/proc/self/ns/" + ns)
    except OSError as exc:
        obs["ns"][ns] = err(exc.errno)
try:
    obs["interfaces"] = sorted(name for _i, name in socket.if_nameindex())
except OSError as exc:
    obs["interfaces"] = err(exc.errno)
obs["ro"] = dict((p, fs(p)) for p in spec["ro"])
obs["rw"] = dict((p, try_write(p)) for p in spec["rw"])
obs["absent"] = dict((p, presence(p)) for p in spec["absent"])
obs["tmpfs"] = dict((p, dict(fs(p), entries=listing(p))) for p in spec["tmpfs"] + spec["dev"])
try:
    sig = ctypes.c_int(0)
    libc.prctl(2, ctypes.byref(sig), 0, 0, 0)   # PR_GET_PDEATHSIG
    obs["pdeathsig"] = sig.value
except Exception as exc:
    obs["pdeathsig"] = "error:%s" % exc
sys.stdout.write(json.dumps(obs) + "\n")
sys.stdout.flush()
try:
    go = sys.stdin.readline().strip()
except Exception:
    go = ""
import hashlib, time
if spec.get("go") and hashlib.sha256(go.encode()).hexdigest() != spec["go"]:
    time.sleep(spec.get("linger") or 0)     # not released by the probe: a copy outside stays visible to it
"""

SENSITIVE = ("/root", "/home", "/opt", "/srv", "/mnt", "/media", "/var", "/run")
PROC_SUPER_MAGIC = 0x9FA0
TMPFS_MAGIC = 0x01021994
SIGKILL = 9
# What bwrap's --dev creates (bubblewrap.c: devnodes, stdio links, shm, pts, ptmx, core; console
# when its stdout is a terminal, never for the probe). Anything else in /dev came from somewhere else.
DEV_ENTRIES = ("console", "core", "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin",
               "stdout", "tty", "urandom", "zero")
# The mounts it makes there: a bind of the parent context's /dev/<node> for each device node (and a
# new devpts on pts). /dev/shm is a plain directory, not a mount.
DEV_NODES = ("full", "null", "random", "tty", "urandom", "zero")
UNSHARE_FLAGS = ("user", "ipc", "uts", "net", "pid", "cgroup")


def host_namespaces(proc: str = "/proc") -> t.Dict[str, str]:
    """The probe's own namespace links (the host's, when the probe runs on the host)."""
    return PF.namespaces("self", proc=proc)[0]


def expected_absent(profile: Json, candidates: t.Sequence[str], depth: int = 2, limit: int = 60) -> t.List[str]:
    """Host paths that must not be visible: candidates not inside a mount. For a candidate
    that is an ancestor of a mount (it exists as an empty skeleton), check its other children."""
    binds = [m["dest"] for m in profile["mounts"] if m["kind"] in ("ro", "rw", "symlink", "tmpfs", "proc", "dev")]
    out: t.List[str] = []

    def visit(path: str, level: int) -> None:
        if len(out) >= limit or not os.path.lexists(path):
            return
        if any(under(path, b) for b in binds):
            return
        if any(under(b, path) for b in binds):
            if level >= depth:
                return
            try:
                children = sorted(os.listdir(path))
            except OSError:
                return
            for child in children:
                visit(os.path.join(path, child), level + 1)
            return
        out.append(path)

    for cand in candidates:
        visit(os.path.normpath(cand), 0)
    return out


def expectations(profile: Json, extra_absent: t.Sequence[str] = ()) -> Json:
    """The checks a profile promises, as the spec the payload receives. Writes nothing on the host."""
    mounts = profile["mounts"]
    argv = list(profile.get("argv") or [])
    sep = argv.index("--") if "--" in argv else len(argv)
    opts = argv[:sep]
    unshare = ["user", "mnt"] + [k for k in UNSHARE_FLAGS[1:] if "--unshare-" + k in opts]

    def dests(kind: str) -> t.List[str]:
        return [m["dest"] for m in mounts if m["kind"] == kind]

    rules = dict((m["dest"], (m.get("provenance") or [{}])[0].get("rule") or "R-CAP-FS") for m in mounts)
    return {
        "token": uuid.uuid4().hex[:12],
        "unshare": unshare,
        "ns": list(PF.NS_KINDS),
        "ro": dests("ro"), "rw": dests("rw"), "tmpfs": dests("tmpfs"), "dev": dests("dev"), "proc": dests("proc"),
        "binds": dict((m["dest"], os.path.realpath(m.get("src") or m["dest"])) for m in mounts
                      if m["kind"] in ("ro", "rw")),
        "absent": expected_absent(profile, list(SENSITIVE) + list(extra_absent)),
        "net_unshared": "--unshare-net" in opts,
        "die_with_parent": "--die-with-parent" in opts,
        "rules": rules,
        "argv_options": opts[1:],
        "descriptors": list(profile.get("descriptors") or []),
    }


def _descriptor_launcher(words: t.List[str], python: str, spec: Json) -> t.List[str]:
    """The one hook of descriptor binds (descriptors.py): bwrap's argv behind the launcher that opens the
    profile's descriptors race-free, proves each is the object judged, then becomes bwrap (same pid)."""
    from . import descriptors as DS
    return DS.launcher_words(words, python, spec.get("descriptors"))


# bwrap's options and how many words follow each (0.4 ... 0.12); anything else is one unknown word.
_BWRAP_ARITY = dict(
    [(o, 0) for o in ("--unshare-all", "--share-net", "--unshare-user", "--unshare-user-try", "--unshare-ipc",
                      "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup", "--unshare-cgroup-try",
                      "--disable-userns", "--assert-userns-disabled", "--clearenv", "--new-session",
                      "--die-with-parent", "--as-pid-1", "--level-prefix")] +
    [(o, 1) for o in ("--args", "--argv0", "--userns", "--userns2", "--pidns", "--uid", "--gid", "--hostname",
                      "--chdir", "--unsetenv", "--lock-file", "--sync-fd", "--remount-ro", "--exec-label",
                      "--file-label", "--proc", "--dev", "--tmpfs", "--mqueue", "--dir", "--seccomp",
                      "--add-seccomp-fd", "--block-fd", "--userns-block-fd", "--info-fd", "--json-status-fd",
                      "--cap-add", "--cap-drop", "--perms", "--size", "--overlay-src", "--tmp-overlay",
                      "--ro-overlay")] +
    [(o, 2) for o in ("--setenv", "--bind", "--bind-try", "--dev-bind", "--dev-bind-try", "--ro-bind",
                      "--ro-bind-try", "--bind-fd", "--ro-bind-fd", "--file", "--bind-data", "--ro-bind-data",
                      "--symlink", "--chmod")] + [("--overlay", 3)])


def _option_units(words: t.Sequence[str]) -> t.List[str]:
    units: t.List[str] = []
    i = 0
    while i < len(words):
        n = _BWRAP_ARITY.get(words[i], 0)
        units.append(" ".join(words[i:i + 1 + n]))
        i += 1 + n
    return units


def argv_deviations(expected: t.Sequence[str], actual: t.Sequence[str]) -> t.Optional[t.Dict[str, t.List[str]]]:
    """What an argv's options add to and remove from the profile's, option by option (an option with
    its arguments is one unit). The probe judges the kernel's evidence, never these words; they are
    reported so that a failed check can be traced to the words that caused it - and so that a pass with
    deviations says which words the evidence found harmless."""
    want, got = _option_units(list(expected)), _option_units(list(actual))
    added: t.List[str] = list(got)
    removed: t.List[str] = []
    for unit in want:
        if unit in added:
            added.remove(unit)
        else:
            removed.append(unit)
    return {"added": added, "removed": removed} if added or removed else None


def payload_command(python: str, spec: t.Optional[Json] = None) -> t.List[str]:
    """The payload's exact argv (the outside finds the payload process by it)."""
    cmd = [python, "-I", "-S", "-c", PAYLOAD]   # isolated: no PYTHON* variables, no site, no cwd on sys.path
    return cmd + [json.dumps(spec, sort_keys=True)] if spec is not None else cmd


# --------------------------------------------------------------------------- the outside witness

def host_view(proc: str = "/proc") -> Json:
    """The probe's own namespaces and mount table, read before the run. Run directly, this *is* the
    parent context of bwrap (the probe starts bwrap without changing namespaces)."""
    mounts = PF.read_mounts("self", proc)
    status = PF.read_status("self", proc)
    return {"ns": host_namespaces(proc), "mounts": mounts if isinstance(mounts, list) else [],
            "privileges": PF.privileges(status), "nspid": status.get("nspid") or [],
            "from": "the probe (pid %d) that started bwrap" % os.getpid()}


def observe_context(pid: int, proc: str = "/proc") -> Json:
    """The parent context of bwrap in a transient unit: the namespaces and mount table of the unit's
    process (pid), read from outside while it waits, before it executes bwrap."""
    ns, how = PF.namespaces(pid, proc=proc)
    mounts = PF.read_mounts(pid, proc)
    status = PF.read_status(pid, proc)
    return {"ns": ns, "mounts": mounts if isinstance(mounts, list) else [], "read_by": how,
            "privileges": PF.privileges(status), "nspid": status.get("nspid") or [],
            "from": "the unit's process (pid %s) before it ran bwrap" % pid}


def observe_outside(launcher: t.Optional[int], child_pid: t.Optional[int], payload_argv: t.Sequence[str],
                    proc: str = "/proc") -> Json:
    """Read, from the host's /proc, what the kernel says about the payload process and about bwrap.

    ``launcher``: the pid of the bwrap that was started (its own process: the parent context);
    ``child_pid``: what bwrap's json-status says its sandboxed child is (None if it said nothing).
    """
    out: Json = {"launcher": launcher, "child_pid": child_pid, "child_ppid": None}
    want = PF.cmdline_bytes(payload_argv)
    pids: t.List[int] = []
    if isinstance(child_pid, int) and child_pid > 0:
        out["child_ppid"] = PF.read_status(child_pid, proc).get("ppid")
        if PF.read_cmdline(child_pid, proc) == want:
            pids = [child_pid]
    if not pids:
        pids = PF.find_processes(payload_argv, proc)
    out["payload_pids"] = pids
    out["payload_pid"] = pids[0] if len(pids) == 1 else None
    if out["payload_pid"] is not None:
        out["payload"] = _observe_payload(out["payload_pid"], child_pid, proc)
    if isinstance(launcher, int) and launcher > 0:
        links, how = PF.read_links(launcher, ["ns/" + k for k in PF.NS_KINDS] + ["exe"], proc)
        ident = PT.exe_ident(launcher, proc)
        out["parent"] = {"pid": launcher, "ns": dict((k, links["ns/" + k]) for k in PF.NS_KINDS),
                         "exe": links["exe"], "exe_id": list(ident) if ident else None, "read_by": how,
                         "mounts": PF.read_mounts(launcher, proc)}
    return out


def _observe_payload(pid: int, child_pid: t.Optional[int], proc: str) -> Json:
    """The payload process (pid), from the host's /proc: ids, namespaces (and who else holds them), mount
    table, interfaces, privileges, open descriptors, mapped files."""
    st = PF.read_status(pid, proc)
    ns, how = PF.namespaces(pid, proc=proc)
    # who else is in the payload's namespaces (a "private" namespace holds the sandbox only)
    targets = dict((k, v) for k, v in ns.items() if k != "pid" and not PF.is_error(v))
    held, unreadable = PF.sharers(targets, [pid] + ([child_pid] if isinstance(child_pid, int) else []), proc)
    # ... or keeps it alive for later (a bind of its nsfs inode, as "ip netns add" makes): host's table
    for kind, points in PF.nsfs_binds(targets, proc).items():
        held.setdefault(kind, []).extend("a bind of it at %s" % p for p in points)
    return {"ppid": st.get("ppid"), "nspid": st.get("nspid") or [], "uid": (st.get("uid") or [None])[0],
            "ns": ns, "read_by": how, "mounts": PF.read_mounts(pid, proc),
            "interfaces": PF.interfaces(pid, proc), "privileges": PF.privileges(st),
            "sharers": held, "sharers_unreadable": unreadable,
            "fds": PF.open_files(pid, proc), "mapped": PF.mapped_files(pid, proc)}


class _Watcher(object):
    """The outside half of the handshake: once the payload has reported, read its evidence (while
    it waits on stdin), then let it go."""

    def __init__(self, token: str, payload_argv: t.Sequence[str], proc: str = "/proc",
                 stdin: t.Optional[t.IO[bytes]] = None, unit: t.Optional[str] = None, go: str = "",
                 ledger: t.Optional[PT.Ledger] = None) -> None:
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
        if self.ledger is not None:
            self.ledger.phase = PT.CHECKED
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
            own = PF.own_credentials(launcher, self.proc)
            self.context["covers"] = PC.expected(own[0], own[1], "/proc/%d/root" % launcher) if own else None
        except Exception as exc:
            self.context = {"error": "%s: %s" % (type(exc).__name__, exc)}
        if self.ledger is not None:
            dirs = PT.unit_cgroup_dirs(launcher, self.proc)
            self.ledger.cgroup = dirs[0] if dirs else None
            self.ledger.set_before(PT.cgroup_pids(dirs[0]) if dirs else None, [launcher])
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
            self.level = len(PF.read_status(self.launcher, self.proc).get("nspid") or [0]) - 1
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
        return PF.unit_pid(pid, self.unit, level, self.proc)


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


# --------------------------------------------------------------------------- evaluation

def _err(value: object) -> bool:
    return value is None or PF.is_error(value)


def _reference(outside: Json, host: Json) -> Reference:
    """The namespaces the payload is judged against: bwrap's parent context as read before bwrap could
    act (run directly: the probe's own; in a unit: the unit's process before it executed bwrap). Only
    when that was unreadable, bwrap's own links, then the probe's. Also the kinds in which the bwrap
    that was started is no longer in that context (a real bwrap never leaves it)."""
    context = outside.get("context") or {}
    parent = outside.get("parent") or {}
    pns = parent.get("ns") or {}
    essential = ("user", "mnt", "net", "pid")
    depth = None
    if context.get("ns") and not any(_err(context["ns"].get(k)) for k in essential):
        ref, ref_from = context["ns"], context.get("from") or "the unit's process before it ran bwrap"
        depth = len(context.get("nspid") or []) or None
    elif not context and host.get("ns") and not any(_err(host["ns"].get(k)) for k in essential):
        ref, ref_from = host["ns"], host.get("from") or "the probe that started bwrap"
        depth = len(host.get("nspid") or []) or None
    elif pns and not any(_err(pns.get(k)) for k in essential):
        ref, ref_from = pns, "bwrap (pid %s) (the parent context was unreadable)" % parent.get("pid")
    else:
        return Reference(host.get("ns") or {}, "the probe (neither the parent context nor bwrap's links are "
                         "readable: %s)" % (", ".join("%s=%s" % (k, v) for k, v in sorted(pns.items()) if _err(v))
                                            or "bwrap not known"), [])
    moved = [k for k in PF.NS_KINDS if ref is not pns and not _err(pns.get(k)) and not _err(ref.get(k))
             and pns.get(k) != ref.get(k)]
    return Reference(ref, ref_from, moved, depth)


def _known_devices(outside: Json, host: Json) -> t.Set[str]:
    devs = PF.devices(host.get("mounts") or [])
    for key in ("parent", "context"):
        more = (outside.get(key) or {}).get("mounts")
        if isinstance(more, list):
            devs |= PF.devices(more)
    return devs


def _context_mounts(outside: Json, host: Json) -> t.Optional[t.List[PF.Mount]]:
    """The mount table binds are taken from: the parent context's (see _reference)."""
    context = outside.get("context") or {}
    if context:
        return context.get("mounts") or (outside.get("parent") or {}).get("mounts") or None
    return host.get("mounts") or None


def _foreign(mounts: t.Sequence[PF.Mount], dest: str, tree: t.Mapping[str, t.Collection[t.Any]],
             skip: t.Sequence[str] = (), context: t.Optional[t.Sequence[PF.Mount]] = None,
             src: t.Optional[str] = None) -> t.List[str]:
    """Visible mounts at or below ``dest`` whose (device, root) is not what ``tree`` (bind_tree of the
    source) holds at that relative path - nor, with ``context``, a bind of the same path of ``src``
    (the same files) - as "mountpoint (fstype device root)"; mounts at or below ``skip`` are another
    check's business."""
    out = []
    for m in mounts:
        if not under(m["mountpoint"], dest) or any(under(m["mountpoint"], d) for d in skip):
            continue
        rel = os.path.relpath(m["mountpoint"], dest)
        if (m["dev"], m["root"]) in tree.get(rel, ()):
            continue
        if context and src and (m["dev"], m["root"]) == PF.source_of(context, os.path.normpath(os.path.join(src, rel))):
            continue
        out.append("%s (%s %s %s)" % (m["mountpoint"], m["fstype"], m["dev"], m["root"]))
    return sorted(out)


class _Scene(object):
    """What every check of one run reads: the spec, both witnesses and what is derived from them once
    (the payload's mount table and its visible part, the parent context's mounts and namespaces, the
    devices known outside); the checks are appended to ``checks`` in order."""

    def __init__(self, spec: Json, obs: Json, outside: t.Optional[Json], host: Json) -> None:
        self.spec, self.obs, self.host = spec, obs, host
        self.outside: Json = outside or {}
        self.payload: Json = self.outside.get("payload") or {}
        mounts = self.payload.get("mounts")
        self.mounts: t.Optional[t.List[PF.Mount]] = mounts if isinstance(mounts, list) else None
        self.visible = PF.visible_mounts(self.mounts) if self.mounts is not None else None
        self.ctx_mounts = _context_mounts(self.outside, host)
        self.known = _known_devices(self.outside, host)
        self.binds: t.Dict[str, str] = spec.get("binds") or {}
        self.declared: t.List[str] = [d for key in ("ro", "rw", "tmpfs", "dev", "proc") for d in spec.get(key, [])]
        self.pid: t.Optional[int] = self.outside.get("payload_pid")
        self.ref = _reference(self.outside, host)
        self.proc_ok = False
        self.checks: t.List[Json] = []

    def add(self, name: str, rule: str, expected: t.Any, observed: t.Any, ok: t.Any) -> None:
        self.checks.append({"name": name, "rule": rule, "expected": expected, "observed": observed, "ok": bool(ok)})

    def inner(self, dest: str) -> t.List[str]:
        """Declared destinations strictly below ``dest`` (another check's business)."""
        return [d for d in self.declared if d != dest and under(d, dest)]

    def mount_at(self, dest: str) -> t.Optional[PF.Mount]:
        return PF.mount_at(self.mounts, dest) if self.mounts is not None else None


def evaluate(spec: Json, obs: Json, outside: t.Optional[Json], host: Json) -> t.List[Json]:
    """Both witnesses -> checks [{name, rule, expected, observed, ok}].

    ``obs``: the payload's record; ``outside``: observe_outside(); ``host``: host_view()."""
    scene = _Scene(spec, obs, outside, host)
    for step in _CHECKS:
        step(scene)
    return scene.checks


def _check_identity(sc: _Scene) -> None:
    """1. The process that reported is bwrap's sandboxed child (else nothing below is about a sandbox)."""
    outside, payload, pid = sc.outside, sc.payload, sc.pid
    child, launcher, pids = outside.get("child_pid"), outside.get("launcher"), outside.get("payload_pids") or []
    why = []
    if sc.ref.moved:
        why.append("the bwrap that was started (pid %s) is no longer in its parent context's namespaces (%s): "
                   "with the profile's options bwrap stays there; it moves to join a namespace given to it "
                   "(--userns), or a wrapper moved to hide what it shares" % (launcher, ", ".join(sc.ref.moved)))
    if outside.get("error"):
        why.append("the outside evidence could not be read (%s)" % outside["error"])
    if not isinstance(child, int):
        why.append("bwrap wrote no child-pid record")
    if len(pids) != 1:
        why.append("%d processes run the payload" % len(pids))
    elif isinstance(child, int) and pid != child and payload.get("ppid") != child:
        why.append("the payload (pid %s) is neither bwrap's child-pid %s nor its child" % (pid, child))
    if isinstance(child, int) and outside.get("child_ppid") != launcher:
        why.append("child-pid %s has parent %s, not the bwrap that was started (%s)"
                   % (child, outside.get("child_ppid"), launcher))
    sc.add("bwrap_child_is_payload", "R-DIAG-3",
           "bwrap's child-pid is the payload (or its PID-1 init), a child of the bwrap that was started",
           {"child_pid": child, "child_parent": outside.get("child_ppid"), "bwrap_pid": launcher,
            "payload_pids": pids, "problems": why}, not why)


def _check_proc(sc: _Scene) -> None:
    """2. /proc inside is a procfs whose /proc/self is the payload: only then do its links count."""
    obs = sc.obs
    for dest in sc.spec.get("proc", []):
        inside = (obs.get("proc") or {}).get(dest) or {}
        mount = sc.mount_at(dest)
        nspid = sc.payload.get("nspid") or []
        problems = []
        if inside.get("type") != PROC_SUPER_MAGIC:
            problems.append("statfs type %s, not procfs" % _hex(inside.get("type")))
        if obs.get("proc_self") != str(obs.get("pid")):
            problems.append("/proc/self is %r, the payload is pid %s" % (obs.get("proc_self"), obs.get("pid")))
        if mount is None or mount["fstype"] != "proc":
            problems.append("outside: %s" % ("no mount at %s" % dest if mount is None
                                             else "%s is %s" % (dest, mount["fstype"])))
        elif mount["dev"] != inside.get("dev"):
            problems.append("outside: device %s, inside %s" % (mount["dev"], inside.get("dev")))
        if not nspid or nspid[-1] != obs.get("pid"):
            problems.append("outside: the payload's pid in its own namespace is %s, it says %s"
                            % (nspid[-1] if nspid else "unknown", obs.get("pid")))
        if mount is not None and mount["fstype"] == "proc" and sc.ctx_mounts:
            other = _proc_foreign(sc, dest, mount)
            if other:
                problems.append("outside: mounts below %s that are not procfs's own: %s" % (dest, ", ".join(
                    other[:5])))
        sc.proc_ok = not problems and dest == "/proc"
        sc.add("proc_is_own_procfs" if dest == "/proc" else "procfs:%s" % dest,
               sc.spec["rules"].get(dest, "R-BASE-2"),
               "a procfs in which /proc/self is the payload (inside and outside agree)",
               {"inside": {"type": _hex(inside.get("type")), "dev": inside.get("dev"), "self": obs.get("proc_self")},
                "outside": mount and {"fstype": mount["fstype"], "dev": mount["dev"]}, "problems": problems},
               not problems)


def _proc_foreign(sc: _Scene, dest: str, mount: PF.Mount) -> t.List[str]:
    """Mounts below a procfs that are neither what the parent context has mounted below its /proc nor one of
    the names bwrap may cover read-only with a bind of the procfs itself (proc_covers.COVER_NAMES: whether
    each cover is there as it should be is proc_covers' check)."""
    if sc.visible is None or not sc.ctx_mounts:
        raise AssertionError("procfs mounts judged without the payload's view or the parent context")
    tree = PF.bind_tree(sc.ctx_mounts, "/proc")
    for name in PC.COVER_NAMES:
        tree[name] = tree.get(name, set()) | set([(mount["dev"], os.path.normpath(os.path.join(mount["root"], name)))])
    tree["."] = set([(mount["dev"], mount["root"])])
    return _foreign(sc.visible, dest, tree, sc.inner(dest), sc.ctx_mounts, "/proc")


def _check_proc_covers(sc: _Scene) -> None:
    """2b. /proc as bwrap makes it: the read-only covers bwrap adds for the caller (proc_covers), asked before the
    run in bwrap's parent context and proven from outside in the payload's mount table."""
    for dest in sc.spec.get("proc", []):
        mount = sc.mount_at(dest)
        exp = (sc.outside.get("context") or {}).get("covers") if sc.outside.get("context") else sc.host.get("covers")
        if sc.visible is None or mount is None or mount["fstype"] != "proc":
            problems = ["not proven: no procfs at %s in the payload's mount table" % dest]
        else:
            problems = PC.judge(sc.visible, dest, mount, exp, sc.ctx_mounts)
        sc.add("proc_covers" if dest == "/proc" else "proc_covers:%s" % dest, sc.spec["rules"].get(dest, "R-BASE-2"),
               "the read-only covers bwrap adds for the caller (%s), and no other mount at those names" % (
                   ", ".join((exp or {}).get("covers") or []) or "none for this caller"),
               {"asked": (exp or {}).get("asked"), "problems": problems}, not problems)


def _check_bwrap_exe(sc: _Scene) -> None:
    """1b. The process that started (bwrap's pid) executes a verified bwrap: its executable's device and inode,
    read from outside through /proc/PID/exe, are those of a file bwrap_trust verified (packaged or accepted by
    sha256). A unit that shows another file at the path (BindReadOnlyPaths=, RootDirectory=), a wrapper that
    stays the launcher, a file swapped after it was verified: not the bwrap that was verified."""
    parent = sc.outside.get("parent") or {}
    got = parent.get("exe_id")
    trusted = [list(i) for i in sc.host.get("trusted_bwrap") or []]
    problems = []
    if not trusted:
        problems.append("no bwrap was verified (not packaged, modified, or not accepted): nothing to compare with")
    if not isinstance(got, list):
        problems.append("not proven: the executable of the started process (pid %s) could not be read" %
                        sc.outside.get("launcher"))
    elif trusted and got not in trusted:
        problems.append("pid %s executes %s (device %s, inode %s), not a verified bwrap" % (
            sc.outside.get("launcher"), parent.get("exe"), got[0], got[1]))
    sc.add("bwrap_exe_verified", "R-DIAG-2", "the started process executes a verified bwrap (device and inode)",
           {"exe": parent.get("exe"), "exe_id": got, "trusted": trusted, "problems": problems}, not problems)


def _ns_evidence(sc: _Scene, kind: str) -> Json:
    mine = sc.payload.get("ns") or {}
    inside = (sc.obs.get("ns") or {}).get(kind) if sc.proc_ok else "void: /proc not proven"
    return {"outside": mine.get(kind), "parent": sc.ref.ns.get(kind), "parent_from": sc.ref.source, "inside": inside,
            "read_by": sc.payload.get("read_by")}


def _ns_problems(sc: _Scene, kind: str, want_private: bool) -> t.Tuple[Json, t.List[str]]:
    """(evidence, problems) of one namespace, judged against the parent context (sc.ref)."""
    ev = _ns_evidence(sc, kind)
    if sc.pid is None:
        return ev, ["not proven: the payload process was not found outside"]
    if _err(ev["outside"]) or _err(ev["parent"]):
        return ev, ["not proven: %s" % (ev["outside"] if _err(ev["outside"]) else ev["parent"])]
    out = []
    held = (sc.payload.get("sharers") or {}).get(kind)
    if want_private and ev["outside"] == ev["parent"]:
        out.append("shared with %s" % sc.ref.source)
    elif want_private and held:
        out.append("also held by %s outside the sandbox" % ", ".join(
            "pid %d" % p if isinstance(p, int) else str(p) for p in held[:5]))
    if not want_private and ev["outside"] != ev["parent"]:
        out.append("differs from %s" % sc.ref.source)
    if sc.proc_ok and ev["inside"] != ev["outside"]:
        out.append("witnesses disagree: inside %s, outside %s" % (ev["inside"], ev["outside"]))
    return ev, out


def _check_namespaces(sc: _Scene) -> None:
    """3. Namespaces: outside, the payload's inodes vs the parent context's; inside, the payload's links agree."""
    obs, payload = sc.obs, sc.payload
    for kind in sc.spec.get("unshare", []):
        if kind == "pid":
            continue
        ev, problems = _ns_problems(sc, kind, True)
        rule = {"net": "R-BASE-7", "mnt": "R-BASE-1"}.get(kind, "R-BASE-6")
        if kind == "net":
            ev["interfaces_inside"] = obs.get("interfaces")
            ev["interfaces_outside"] = payload.get("interfaces")
            if obs.get("interfaces") != ["lo"] or payload.get("interfaces") != ["lo"]:
                problems.append("interfaces inside %s, outside %s (expected only lo)"
                                % (obs.get("interfaces"), payload.get("interfaces")))
        sc.add("%s_namespace_private" % kind, rule, "differs from bwrap's parent context",
               dict(ev, problems=problems), not problems)
    if not sc.spec.get("net_unshared"):
        ev, problems = _ns_problems(sc, "net", False)
        sc.add("host_network", "R-NET-1", "the same network namespace as bwrap's parent", dict(ev, problems=problems),
               not problems)
    ev, problems = _ns_problems(sc, "pid", False)
    seen = _pid_in_context(sc)
    if seen is not None and obs.get("pid") != seen:
        problems.append("the payload is pid %s outside but sees itself as pid %s" % (seen, obs.get("pid")))
    sc.add("no_pid_namespace", "R-BASE-8", "the PID namespace of bwrap's parent (no PID namespace)",
           dict(ev, problems=problems), not problems)


def _pid_in_context(sc: _Scene) -> t.Optional[int]:
    """The payload's pid in the PID namespace of bwrap's parent context: the one it sees for itself when bwrap
    made no PID namespace. Not always the host's: a unit with PrivatePIDs=yes has a namespace of its own."""
    nspid = sc.payload.get("nspid") or []
    depth = sc.ref.depth
    if sc.pid is not None and depth is not None and len(nspid) >= depth:
        return t.cast(int, nspid[depth - 1])
    return sc.pid


def _check_tmpfs(sc: _Scene) -> None:
    """4. Fresh tmpfs (and bwrap's minimal /dev): type, a device no host mount has, contents."""
    for dest in sc.spec.get("tmpfs", []) + sc.spec.get("dev", []):
        is_dev = dest in sc.spec.get("dev", [])
        inside = (sc.obs.get("tmpfs") or {}).get(dest) or {}
        mount = sc.mount_at(dest)
        problems = _tmpfs_mount_problems(sc, dest, inside, mount)
        entries = inside.get("entries")
        if is_dev:
            allowed = set(DEV_ENTRIES)
            problems += _dev_mount_problems(sc, dest, mount)
        else:
            allowed = set(os.path.relpath(d, dest).split("/")[0] for d in sc.inner(dest))
        if not isinstance(entries, list):
            problems.append("not proven: listing %s gave %s" % (dest, entries))
        elif set(entries) - allowed:
            problems.append("not empty: %s" % ", ".join(sorted(set(entries) - allowed)[:8]))
        sc.add(("minimal_dev:%s" if is_dev else "fresh_tmpfs:%s") % dest,
               sc.spec["rules"].get(dest, "R-BASE-3" if not is_dev else "R-BASE-2"),
               "a new tmpfs (device unknown outside)%s" % (" with only bwrap's device nodes" if is_dev else ", empty"),
               {"inside": {"type": _hex(inside.get("type")), "dev": inside.get("dev"),
                           "entries": entries if not isinstance(entries, list) else entries[:12]},
                "outside": mount and {"fstype": mount["fstype"], "dev": mount["dev"], "source": mount["source"]},
                "problems": problems}, not problems)


def _tmpfs_mount_problems(sc: _Scene, dest: str, inside: Json, mount: t.Optional[PF.Mount]) -> t.List[str]:
    problems = []
    if inside.get("type") != TMPFS_MAGIC:
        problems.append("statfs type %s, not tmpfs" % _hex(inside.get("type")))
    if sc.mounts is None:
        problems.append("not proven: the payload's mount table was not read")
    elif mount is None or mount["fstype"] != "tmpfs":
        problems.append("outside: %s" % ("no mount at %s" % dest if mount is None
                                         else "%s is %s from %s" % (dest, mount["fstype"], mount["source"])))
    else:
        if mount["dev"] != inside.get("dev"):
            problems.append("outside device %s, inside %s" % (mount["dev"], inside.get("dev")))
        if mount["dev"] in sc.known:
            problems.append("device %s is mounted outside the sandbox too" % mount["dev"])
    return problems


def _dev_mount_problems(sc: _Scene, dest: str, mount: t.Optional[PF.Mount]) -> t.List[str]:
    """The mounts in a --dev that bwrap does not make (a bind of the parent's /dev/<node>, a new devpts)."""
    if sc.visible is None or not sc.ctx_mounts:
        return ["not proven: the parent context's mount table was not read"] if sc.mounts is not None else []
    ctx_mounts = sc.ctx_mounts
    tree = dict((name, set([PF.source_of(ctx_mounts, "/dev/" + name)])) for name in DEV_NODES)
    tree["pts"] = set((m["dev"], "/") for m in PF.mounts_under(sc.visible, dest)
                      if m["mountpoint"] == dest.rstrip("/") + "/pts" and m["fstype"] == "devpts"
                      and m["dev"] not in sc.known)
    tree["."] = set([(mount["dev"], mount["root"])]) if mount else set()
    extra_mounts = _foreign(sc.visible, dest, tree, sc.inner(dest))
    if extra_mounts:
        return ["mounts bwrap's --dev does not make (a bind of the parent's /dev/<node>, a new "
                "devpts): %s" % ", ".join(extra_mounts[:8])]
    return []


def _check_bind_sources(sc: _Scene) -> None:
    """5a. Binds: what is mounted at and below each bind is the parent context's source tree (device
    and root of every mount), not another host path mounted in its place or below it."""
    for dest in sc.spec.get("ro", []) + sc.spec.get("rw", []):
        src = sc.binds.get(dest, dest)
        problems = []
        if sc.visible is None:
            problems.append("not proven: the payload's mount table was not read")
        elif not sc.ctx_mounts:
            problems.append("not proven: the parent context's mount table was not read")
        elif PF.mount_at(sc.visible, dest) is not None:    # no mount at all: read_only/writable say so
            other = _foreign(sc.visible, dest, PF.bind_tree(sc.ctx_mounts, src), sc.inner(dest), sc.ctx_mounts, src)
            if other:
                problems.append("outside: not the host's %s: %s" % (src, ", ".join(other[:5])))
        sc.add("bind_source:%s" % dest, sc.spec["rules"].get(dest, "R-CAP-FS"),
               "the parent context's %s tree (device and root of each mount)" % src, {"problems": problems},
               not problems)


def _check_undeclared_mounts(sc: _Scene) -> None:
    """5b. Nothing is mounted outside the declared destinations (hidden paths have their own check), and
    the root is bwrap's own new tmpfs."""
    problems: t.List[str] = []
    extra = []
    if sc.visible is None:
        problems.append("not proven: the payload's mount table was not read")
    else:
        places = sc.declared + list(sc.spec.get("absent", []))
        for m in sc.visible:
            if m["mountpoint"] == "/":
                if m["fstype"] != "tmpfs" or m["dev"] in sc.known:
                    problems.append("the root is %s %s %s, not a new tmpfs" % (m["fstype"], m["dev"], m["root"]))
            elif not any(under(m["mountpoint"], d) for d in places):
                extra.append("%s (%s %s %s)" % (m["mountpoint"], m["fstype"], m["dev"], m["root"]))
        if extra:
            problems.append("mounted but not declared: %s" % ", ".join(sorted(extra)[:8]))
    sc.add("no_undeclared_mounts", "R-SCOPE-1", "mounts only at the profile's destinations, on bwrap's own root",
           {"problems": problems}, not problems)


def _check_read_only(sc: _Scene) -> None:
    """5. Read-only binds: the kernel's mount flags, inside (statvfs) and outside (mount table)."""
    not_ro = [d for key in ("rw", "tmpfs", "dev", "proc") for d in sc.spec.get(key, [])]
    for dest in sc.spec.get("ro", []):
        inside = (sc.obs.get("ro") or {}).get(dest) or {}
        problems = []
        if inside.get("flags") != "ro":
            problems.append("inside: %s" % ("mounted read-write" if inside.get("flags") == "rw"
                                            else "not proven (%s)" % inside.get("flags")))
        mount = None
        if sc.mounts is not None:
            mount = PF.mount_at(sc.mounts, dest)
            if mount is None:
                problems.append("outside: no mount at %s" % dest)
            elif not PF.read_only(mount):
                problems.append("outside: %s is mounted %s" % (dest, ",".join(mount["opts"][:3])))
            below = [m["mountpoint"] for m in PF.mounts_under(sc.mounts, dest)
                     if not PF.read_only(m) and not any(under(m["mountpoint"], d) for d in not_ro)]
            if below:
                problems.append("outside: writable mounts below: %s" % ", ".join(below[:5]))
        sc.add("read_only:%s" % dest, sc.spec["rules"].get(dest, "R-BASE-1"), "a read-only mount (ST_RDONLY / ro)",
               {"inside": inside.get("flags"), "outside": mount and ",".join(mount["opts"]), "problems": problems},
               not problems)


def _check_writable(sc: _Scene) -> None:
    """6. Writable grants: a real write."""
    for dest in sc.spec.get("rw", []):
        result = (sc.obs.get("rw") or {}).get(dest)
        mount = sc.mount_at(dest)
        sc.add("writable:%s" % dest, sc.spec["rules"].get(dest, "R-CAP-FS"), "writable (a real write succeeded)",
               {"inside": result, "outside": mount and ",".join(mount["opts"])}, result == "writable")


def _check_hidden(sc: _Scene) -> None:
    """7. Hidden paths: ENOENT inside, nothing mounted there, covered by the sandbox's own root."""
    for path in sc.spec.get("absent", []):
        seen = (sc.obs.get("absent") or {}).get(path)
        problems = []
        if seen == "present":
            problems.append("visible inside")
        elif seen != "absent":
            problems.append("not proven: lstat gave %s" % seen)
        if sc.mounts is None:
            problems.append("not proven: the payload's mount table was not read")
        else:
            at = [m["mountpoint"] for m in sc.mounts if under(m["mountpoint"], path)]
            cover = PF.covering_mount(sc.mounts, path)
            if at:
                problems.append("outside: mounted at %s" % ", ".join(at[:5]))
            elif cover is None or cover["fstype"] != "tmpfs" or cover["dev"] in sc.known:
                problems.append("outside: %s lies on %s" % (path, "nothing" if cover is None else "%s %s (%s)" % (
                    cover["fstype"], cover["source"], cover["mountpoint"])))
        sc.add("hidden:%s" % path, "R-SEC-1", "absent (ENOENT) on the sandbox's own root", {"inside": seen,
               "problems": problems}, not problems)


def _check_parent_death(sc: _Scene) -> None:
    """8. Parent-death signal (bwrap --die-with-parent sets SIGKILL)."""
    if sc.spec.get("die_with_parent", True):
        sc.add("parent_death_signal", "R-BASE-6", SIGKILL, sc.obs.get("pdeathsig"), sc.obs.get("pdeathsig") == SIGKILL)


def _check_capabilities(sc: _Scene) -> None:
    """9. Privileges, from outside (/proc/PID/status): bwrap drops every capability of a non-root user
    and sets no_new_privs; run by uid 0 it keeps the bounding set, never ambient/inheritable ones
    (those come from --cap-add). Capabilities in the sandbox's user namespace let the payload
    remount the read-only binds read-write."""
    payload = sc.payload
    priv = payload.get("privileges") or {}
    problems = []
    if sc.pid is None or not priv:
        problems.append("not proven: the payload process was not found outside")
    else:
        sets = dict((k, priv.get(k)) for k in ("capinh", "capprm", "capeff", "capbnd", "capamb"))
        must_be_empty = sets if payload.get("uid") != 0 else dict((k, sets[k]) for k in ("capinh", "capamb"))
        held = ["Cap%s=%s" % (k[3:].capitalize(), "%x" % v if isinstance(v, int) else v)
                for k, v in sorted(must_be_empty.items()) if v != 0]
        if held:
            problems.append("capabilities held: %s (uid %s outside)" % (", ".join(held), payload.get("uid")))
        if priv.get("nonewprivs") != 1:
            problems.append("no_new_privs is %s, bwrap always sets it" % priv.get("nonewprivs"))
    sc.add("no_capabilities", "R-BASE-6", "no capability a non-root user could use (uid 0: none added), no_new_privs",
           dict(priv, uid=payload.get("uid"), problems=problems), not problems)


def _unread(sc: _Scene, value: t.Any, kind: type, what: str) -> t.List[str]:
    """Why a reading of the payload process proves nothing ([] when it is a ``kind``)."""
    if sc.pid is None or value is None:
        return ["not proven: the payload process was not found outside"]
    if not isinstance(value, kind):
        return ["not proven: %s gave %s" % (what, value)]
    return []


def _check_descriptors(sc: _Scene) -> None:
    """9b. Nothing handed in from outside through an open descriptor: a directory, file or socket
    descriptor reaches the host past every mount (openat, connect). The payload opens none itself
    before it reports; its stdio are the probe's pipes (or /dev/null)."""
    fds = sc.payload.get("fds")
    problems = _unread(sc, fds, dict, "listing its descriptors")
    if not problems and isinstance(fds, dict):
        bad = ["%s -> %s (%s)" % (fd, info.get("link"), info.get("type")) for fd, info in sorted(
            fds.items(), key=lambda i: int(i[0]) if i[0].isdigit() else -1) if info.get("type") not in ("fifo", "chr")]
        if bad:
            problems.append("descriptors from outside: %s" % ", ".join(bad[:6]))
    sc.add("no_leaked_descriptors", "R-SCOPE-1", "only pipes and character devices (its stdio) are open",
           {"fds": dict(list(fds.items())[:12]) if isinstance(fds, dict) else fds, "problems": problems}, not problems)


def _check_payload_code(sc: _Scene) -> None:
    """9c. The payload's code - its interpreter and every library it mapped - comes from the declared
    binds (the devices of the mounts at and below them), never from the sandbox's own tmpfs
    (a library planted with --file/--bind-data and LD_PRELOAD) or anywhere else."""
    mapped = sc.payload.get("mapped")
    problems = _unread(sc, mapped, list, "reading its mappings")
    if not problems and sc.visible is None:
        problems.append("not proven: the payload's mount table was not read")
    elif not problems and isinstance(mapped, list) and sc.visible is not None:
        binds = sc.spec.get("ro", []) + sc.spec.get("rw", [])
        sources = set(m["dev"] for m in sc.visible if any(under(m["mountpoint"], d) for d in binds))
        foreign = ["%s (device %s)" % (path, dev) for dev, _ino, path in mapped if dev not in sources]
        if foreign:
            problems.append("mapped from elsewhere: %s" % ", ".join(foreign[:5]))
    sc.add("payload_code_from_binds", "R-BASE-4", "the interpreter and its libraries come from the declared binds",
           {"mapped": len(mapped) if isinstance(mapped, list) else mapped, "problems": problems}, not problems)


def _check_seccomp(sc: _Scene) -> None:
    """10. No custom seccomp filter (R-BASE-8): the payload has exactly the filters of bwrap's parent
    context (a unit's SystemCallFilter=); a filter can hide syscalls or answer them for the payload."""
    priv = sc.payload.get("privileges") or {}
    mine_priv = (sc.outside.get("context") or {}).get("privileges") or sc.host.get("privileges") or {}
    problems = []
    if sc.pid is None or not priv:
        problems.append("not proven: the payload process was not found outside")
    elif isinstance(priv.get("seccomp_filters"), int) and isinstance(mine_priv.get("seccomp_filters"), int):
        if priv["seccomp_filters"] != mine_priv["seccomp_filters"]:
            problems.append("%d seccomp filter(s), the parent context has %d" % (priv["seccomp_filters"],
                                                                                 mine_priv["seccomp_filters"]))
    elif priv.get("seccomp") != mine_priv.get("seccomp"):
        problems.append("seccomp mode %s, the parent context has %s" % (priv.get("seccomp"), mine_priv.get("seccomp")))
    sc.add("no_custom_seccomp", "R-BASE-8", "the seccomp filters of bwrap's parent context, none added",
           {"payload": priv.get("seccomp_filters"), "parent": mine_priv.get("seccomp_filters"), "problems": problems},
           not problems)


# The checks, in the order they are reported.
_CHECKS: t.Tuple[t.Callable[[_Scene], None], ...] = (
    _check_identity, _check_bwrap_exe, _check_proc, _check_proc_covers, _check_namespaces, _check_tmpfs,
    _check_bind_sources, _check_undeclared_mounts,
    _check_read_only, _check_writable, _check_hidden, _check_parent_death, _check_capabilities, _check_descriptors,
    _check_payload_code, _check_seccomp)


def _hex(value: t.Any) -> t.Any:
    return "0x%x" % value if isinstance(value, int) else value


# --------------------------------------------------------------------------- running

def with_release(spec: Json, timeout: float) -> t.Tuple[Json, str]:
    """The spec the payload gets for one run, and the one-time token that releases it: the payload holds only
    the token's sha256, and the probe writes the token to its stdin only once the outside has verified it
    (a payload never released - a copy started outside - stays in the tree for up to ``linger`` seconds)."""
    import hashlib
    go = uuid.uuid4().hex
    return dict(spec, go=hashlib.sha256(go.encode()).hexdigest(), linger=max(1, min(int(timeout), 120))), go


def run(argv: t.Sequence[str], spec: Json, python: str, user: t.Optional[User] = None,
        env: t.Optional[t.Dict[str, str]] = None, timeout: float = 30.0, cwd: str = "/",
        trust: t.Optional[Json] = None, accept_sha256: t.Sequence[str] = ()) -> Json:
    """Run argv (a bwrap profile) with the payload as its command, bwrap under the probe's child subreaper
    (reaper.py). ``trust``: bwrap_trust.for_run() of argv[0] (verified here when not given, with the sha256s in
    ``accept_sha256`` accepted). Returns a verdict dict."""
    argv = list(argv)
    sep = argv.index("--")
    beacon = PT.Beacon(spec["token"])
    spec, go = with_release(dict(spec, beacon=beacon.name), timeout)
    payload = payload_command(python, spec)
    full = argv[:sep] + ["--json-status-fd", "{status_fd}", "--"] + payload
    trust = trust if trust is not None else BT.for_run(argv[0], accepted=accept_sha256,
                                                       path_text=(env or os.environ).get("PATH"))
    host = host_view()
    host["trusted_bwrap"] = trust.get("ids")
    host["covers"] = PC.expected(*((user["uid"], user["gid"]) if user else (os.getuid(), os.getgid())))
    ledger = PT.Ledger()
    ledger.server = beacon
    watcher = _Watcher(spec["token"], payload, go=go, ledger=ledger)
    try:
        result = RP.run_reaped(_descriptor_launcher(full, python, spec), user=user, env=env, timeout=timeout,
                               cwd=cwd, watch=watcher.direct, ledger=ledger, bwrap_ids=BT.started_ids(trust),
                               attach=watcher.attach)
    finally:
        peers = beacon.close()
    result["tree"]["beacon"] = peers
    _launcher, _status, obs = split_stream(records(result["stdout"]), spec["token"])
    result["json_status"] = split_stream(records(result.get("status_raw", "")), spec["token"])[1]
    shown = [a if a != "{status_fd}" else "FD" for a in full[:len(full) - 2]] + ["<payload>", "<spec>"]
    return _verdict(shown, result, obs, watcher.outside, spec, host, user, timeout, run_opts=argv[1:sep],
                    trust=trust, payload=payload)


def _verdict(shown: t.List[str], result: Json, obs: t.Optional[Json], outside: t.Optional[Json], spec: Json,
             host: Json, user: t.Optional[User], timeout: float, tool: t.Optional[str] = None,
             run_opts: t.Optional[t.List[str]] = None, trust: t.Optional[Json] = None,
             payload: t.Optional[t.Sequence[str]] = None) -> Json:
    """The run judged: the checks of both witnesses (_judge_run), then the bwrap that ran (bwrap_trust) and
    everything its tree held (proctree.judge), each a finding of its own."""
    verdict = _judge_run(shown, result, obs, outside, spec, host, user, timeout, tool, run_opts)
    more = BT.diagnostics(trust) + _tree_findings(result, obs, outside or {}, spec, host, trust, payload)
    if trust is not None:
        verdict["bwrap_trust"] = BT.view(trust)
    verdict["diagnostics"].extend(more)
    if any(d["severity"] == D.ERROR for d in more):
        verdict["passed"] = False
    return verdict


def _tree_findings(result: Json, obs: t.Optional[Json], outside: Json, spec: Json, host: Json,
                   trust: t.Optional[Json], payload: t.Optional[t.Sequence[str]]) -> t.List[Json]:
    """What the run's tree held that is neither what the probe started nor bwrap and its payload (proctree)."""
    tree = result.get("tree")
    ids = BT.started_ids(trust)
    exe = (outside.get("parent") or {}).get("exe_id")
    if isinstance(exe, list) and len(exe) == 2:
        ids.add((int(exe[0]), int(exe[1])))
    said = (result.get("json_status") or {}).get("child-pid")    # bwrap's child, when the outside never read it
    pids = set(p for p in (result.get("pid"), outside.get("launcher"), outside.get("child_pid"),
                           outside.get("payload_pid"), ((tree or {}).get("reaper") or {}).get("pid"),
                           said if not outside else None) if isinstance(p, int) and not isinstance(p, bool))
    ref = _reference(outside, host) if outside else Reference(host.get("ns") or {}, "", [])
    exp = PT.Expected(pids, ids, PT.marker(spec["token"]), list(payload or []),
                      (outside.get("payload") or {}).get("ns") or {}, obs is not None, ref.ns)
    return PT.diagnostics(tree if isinstance(tree, dict) else None, exp)


def _judge_run(shown: t.List[str], result: Json, obs: t.Optional[Json], outside: t.Optional[Json], spec: Json,
               host: Json, user: t.Optional[User], timeout: float, tool: t.Optional[str] = None,
               run_opts: t.Optional[t.List[str]] = None) -> Json:
    tool = tool or shown[0]
    status = result.get("json_status") or {}
    verdict: Json = {"argv": shown, "rc": result["rc"], "timed_out": result["timed_out"],
                     "setup_failed": obs is None and "exit-code" not in status and not result["timed_out"],
                     "stderr": result["stderr"].strip()[-2000:], "duration": result["duration"], "checks": [],
                     "diagnostics": [], "passed": False}
    deviations = None
    if run_opts is not None and spec.get("argv_options") is not None:
        deviations = argv_deviations(spec["argv_options"], run_opts)
        if deviations:
            verdict["argv_deviations"] = deviations
    traced = "" if not deviations else " (the argv run is not the profile's: %s)" % "; ".join(
        "%s %s" % (k, ", ".join(deviations[k])) for k in ("added", "removed") if deviations[k])
    if outside:
        verdict["evidence"] = _evidence(outside, host, result)
    who = (user or {}).get("name", "current user")
    if result["timed_out"] and not _timed_out(verdict, obs, outside, timeout):
        return verdict
    if obs is None and verdict["setup_failed"] and result.get("unit_failure"):
        verdict["unit_failure"] = result["unit_failure"]       # systemd's failure or the unit's signal, not bwrap's
        verdict["diagnostics"].append(SX.diagnostic(result["unit_failure"], who))
        return verdict
    if obs is None:
        verdict["diagnostics"].append(_setup_failed(verdict, result, status, who, tool) if verdict["setup_failed"]
                                      else D.make("probe_payload_failed", wording="silent", fill={
                                                  "who": who, "exit": status.get("exit-code", result["rc"]),
                                                  "stderr": verdict["stderr"][-300:] or "no output"},
                                                  exit_code=status.get("exit-code")))
        return verdict
    verdict["observed_uid"] = obs.get("uid")
    verdict["checks"] = checks = evaluate(spec, obs, outside, host)
    verdict["diagnostics"].extend(_judge(checks, tool, who, traced))
    verdict["passed"] = not [c for c in checks if not c["ok"]] and not result["timed_out"]
    return verdict


def _evidence(outside: Json, host: Json, result: Json) -> Json:
    return {"bwrap_pid": outside.get("launcher"), "child_pid": outside.get("child_pid"),
            "payload_pid": outside.get("payload_pid"),
            "bwrap_exe": (outside.get("parent") or {}).get("exe"),
            "read_by": (outside.get("payload") or {}).get("read_by"),
            "left_behind": bool(result.get("left_behind")),
            "parent_context": (outside.get("context") or {}).get("from") or host.get("from")}


def _timed_out(verdict: Json, obs: t.Optional[Json], outside: t.Optional[Json], timeout: float) -> bool:
    """Report the timeout; whether the run is still judged: the payload reported and the outside read its
    evidence before the timer ran out (e.g. a look-alike that never exits after running it unsandboxed) -
    a timeout must not hide that evidence."""
    judged = obs is not None and bool(outside)
    verdict["diagnostics"].append(D.make("probe_timeout", wording="judged" if judged else "killed",
                                         timeout=timeout))
    return judged


def _setup_failed(verdict: Json, result: Json, status: Json, who: str, tool: str) -> Json:
    cls = B.classify(result["stderr"], result["rc"])
    verdict["classification"] = cls
    text = cls["cause_text"] + (" (bwrap said: %s)" % cls["stderr_line"] if cls.get("stderr_line") else "")
    if not status and not cls.get("stderr_line") and result["rc"] == 0:
        text = ("%s exited with status 0 without running the payload and without writing any "
                "--json-status-fd record: it does not behave like bwrap" % tool)
    return D.make("probe_setup_failed", user=who, cause=cls["cause"], cause_text=text,
                  cause_remediation=cls["remediation"], variant="classified", points_at=cls.get("points_at"))


def _judge(checks: t.List[Json], tool: str, who: str, traced: str) -> t.List[Json]:
    """The diagnostics of the failed checks. Not isolated: every namespace the profile unshares is shared,
    or the process that reported cannot be tied to bwrap's child *and* something else is wrong. A false
    child-pid alone is a failed check."""
    failed = [c for c in checks if not c["ok"]]
    ns_checks = [c for c in checks if c["name"].endswith("_namespace_private")]
    identity = [c for c in checks if c["name"] == "bwrap_child_is_payload"]
    # what the launcher executes is not a property of the sandbox: it never makes a false child-pid "not isolated"
    others = [c for c in failed if c["name"] not in ("bwrap_child_is_payload", "bwrap_exe_verified")]
    unisolated = bool(ns_checks and not any(c["ok"] for c in ns_checks)) or bool(
        identity and not identity[0]["ok"] and others)
    if unisolated:
        return [D.make("probe_not_isolated", user=who, wording="unisolated", fill={
            "tool": tool, "failed": "; ".join(_say(c) for c in failed), "traced": traced},
            checks=[c["name"] for c in failed])]
    return [D.make("probe_check_failed", wording="failed", fill={"said": _say(check), "traced": traced},
                   check=check["name"],
                   check_rule=check["rule"])
            for check in failed]


def _say(check: Json) -> str:
    observed = check["observed"]
    if isinstance(observed, dict) and observed.get("problems"):
        observed = "; ".join(observed["problems"])
    return "%s (%s): expected %s, observed %s" % (check["name"], check["rule"], check["expected"], observed)


# --------------------------------------------------------------------------- in the service's context

PROBE_MANIFEST = {"name": "sandbox_probe", "origin": "metnos-sandbox-ops", "revision": 1, "capabilities": []}


def systemd_run_argv(unit_name: str, user: User, settings: t.Optional[Json], env: t.Mapping[str, str],
                     timeout: float, own: t.Sequence[str] = ("/bin/sh",)) -> t.List[str]:
    """systemd-run around a command: a transient unit carrying the service's execution context.

    ``settings`` is a unit_context result (every directive of the unit minus its documented
    deny list, as ``assignments``) or {} for none. ``user`` applies only when the context names
    no User=/DynamicUser=; ``env`` adds --setenv values (none when the unit's own Environment=
    directives are carried). ``own``: the programs the unit runs in the service's place (the launcher),
    executable even where the unit restricts execution (unit_context.own_exec_paths).
    """
    from . import unit_context as UC
    argv = ["systemd-run", "--wait", "--pipe", "--collect", "--service-type=exec", "--unit=" + unit_name,
            "-p", "KillMode=mixed", "-p", "RuntimeMaxSec=%d" % max(1, int(timeout))]
    assignments = (settings or {}).get("assignments") or []
    keys = set(a[0] for a in assignments)
    if not keys & {"User", "DynamicUser"}:
        if user.get("dynamic"):
            argv += ["-p", "DynamicUser=yes"]
        elif user.get("name") not in (None, "root"):
            argv += ["-p", "User=%s" % user["name"]]
    argv += UC.property_args(assignments) + UC.own_exec_paths(assignments, own)
    for key in sorted(env):
        argv += ["--setenv=%s=%s" % (key, env[key])]
    return argv


_SYSTEMD_RUN_LINES = ("Running as unit", "Finished with result:", "Main processes terminated with:",
                      "Service runtime:", "CPU time consumed:", "Memory peak:", "Press ^]")


def _strip_systemd_run(stderr: str) -> SystemdReport:
    """Separate systemd-run's own report lines from the command's stderr."""
    keep: t.List[str] = []
    info: t.Dict[str, str] = {}
    for line in stderr.splitlines():
        if line.startswith(_SYSTEMD_RUN_LINES):
            if line.startswith("Finished with result:"):
                info["result"] = line.split(":", 1)[1].strip()
            if line.startswith("Main processes terminated with:"):
                info["main"] = line.split(":", 1)[1].strip()
            continue
        keep.append(line)
    return SystemdReport("\n".join(keep), info)


# The transient unit's command: say who will be bwrap (the shell's pid is bwrap's after exec), wait for
# one line on stdin (the probe reads the unit's namespaces and mounts - bwrap's parent context - from
# outside meanwhile: nothing bwrap does afterwards can move that reference), then exec bwrap with its
# status fd on the unit's stdout (systemd-run --pipe hands us that stdout). sh's read takes one byte at
# a time from a pipe, so the rest of stdin stays for the payload's handshake.
# systemd expands "$$" in a command line to "$", hence "$$$$" for the shell's "$$".
STOP_TIMEOUT = 3
LAUNCHER = 'printf \'{"launcher-pid": %s}\\n\' "$$$$"; read -r metnos_go; exec "$@" 3>&1'


def run_systemd(argv: t.List[str], spec: Json, python: str, user: User, settings: t.Optional[Json],
                env: t.Mapping[str, str], timeout: float, runner_unit: str, trust: t.Optional[Json] = None,
                accept_sha256: t.Sequence[str] = ()) -> Json:
    """Like run(), inside a transient systemd unit. The status fd is redirected to stdout, the
    handshake goes through the unit's stdin (systemd-run --pipe passes our pipes to the unit); the tree is
    the unit's cgroup (reaper.UnitRun)."""
    import subprocess
    sep = argv.index("--")
    beacon = PT.Beacon(spec["token"])
    spec, go = with_release(dict(spec, beacon=beacon.name), timeout)
    trust = trust if trust is not None else BT.for_run(argv[0], accepted=accept_sha256,
                                                       path_text=env.get("PATH") or "/usr/bin:/bin")
    payload = payload_command(python, spec)
    inner = argv[:sep] + ["--json-status-fd", "3", "--"] + payload
    # A bounded stop: under cgroup v1 (containers) systemd can miss that a unit whose processes used a
    # PID namespace is empty and sit in "deactivating" for the default 90 s after bwrap has exited.
    full = systemd_run_argv(runner_unit, user, settings, env, timeout) + ["-p", "TimeoutStopSec=%d" % STOP_TIMEOUT] + \
        ["/bin/sh", "-c", LAUNCHER, "sh"] + _descriptor_launcher(inner, python, spec)
    host = host_view()
    host["trusted_bwrap"] = trust.get("ids")
    ledger = PT.Ledger()
    ledger.server = beacon
    start = time.time()
    try:
        # run_command cannot feed the payload's stdin handshake while it reads the output.
        proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
            full, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=dict(os.environ, SYSTEMD_COLORS="0", LC_ALL="C"), start_new_session=True)
    except OSError as exc:
        beacon.close()
        result = {"rc": 127, "stderr": "systemd-run: %s" % exc.strerror, "json_status": {}, "timed_out": False,
                  "duration": 0.0, "tree": ledger.report()}
        return _verdict(full[:len(full) - 1] + ["<spec>"], result, None, None, spec, host, user, timeout, trust=trust,
                        payload=payload)
    watcher = _Watcher(spec["token"], payload, stdin=proc.stdin, unit=runner_unit + ".service", go=go, ledger=ledger)
    started = RP.UnitRun(proc, ledger, BT.started_ids(trust), runner_unit + ".service", lambda: watcher.launcher)
    report: Json = {}
    if proc.stdout is None or proc.stderr is None:
        raise AssertionError("systemd-run was started without its output pipes")
    try:
        data, timed_out = B.pump(proc, {"stdout": proc.stdout.fileno(), "stderr": proc.stderr.fileno()},
                                 timeout + 15, watcher.systemd, report, started=started)
    finally:
        proc.stdout.close()
        proc.stderr.close()
        ledger.beacon = beacon.close()
    rc = proc.returncode
    if timed_out or report.get("left_behind"):
        subprocess.run(["systemctl", "kill", "--signal=SIGKILL", runner_unit],  # pylint: disable=ansible-bad-function
                       capture_output=True, check=False)
        subprocess.run(["systemctl", "stop", runner_unit], capture_output=True,  # pylint: disable=ansible-bad-function
                       check=False)
    if timed_out:
        rc = None
    subprocess.run(["systemctl", "reset-failed", runner_unit], capture_output=True,  # pylint: disable=ansible-bad-function
                   check=False)
    stderr, info = _strip_systemd_run(data["stderr"].decode("utf-8", "replace"))
    launcher, status, obs = split_stream(records(data["stdout"]), spec["token"])
    main = info.get("main", "")
    timed_out = timed_out or _runtime_exceeded(info, status)
    if SX.signal_number(main) == SX.SIGSYS:
        rc = 128 + SX.SIGSYS
    result = {"rc": rc, "stderr": stderr, "json_status": status, "timed_out": timed_out,
              "left_behind": bool(report.get("left_behind")), "duration": round(time.time() - start, 3),
              "systemd_result": info, "tree": _unit_tree(ledger, watcher.launcher, info, status),
              "pid": watcher.launcher, "unit_failure": SX.unit_failure(main, launcher is not None, runner_unit)}
    verdict = _verdict(full[:len(full) - 1] + ["<spec>"], result, obs, watcher.outside, spec, host, user, timeout,
                       tool=argv[0], run_opts=argv[1:sep], trust=trust, payload=payload)
    verdict["systemd_result"] = info
    return verdict


def _unit_tree(ledger: PT.Ledger, launcher: t.Optional[int], info: t.Mapping[str, str], status: Json) -> Json:
    """The unit's tree as evidence: the ledger, not proven when the unit's cgroup was never found; systemd's own
    report is kept but not judged (a stop that timed out after bwrap's exit-code can be leftovers, or, under
    cgroup v1 after a PID namespace, systemd missing that the unit is empty: the cgroup itself was read)."""
    tree = ledger.report()
    if ledger.cgroup is None and launcher is not None:
        tree["unreadable"] = True
    tree["systemd_stop_timed_out"] = info.get("result") == "timeout" and "exit-code" in status
    return tree


def _runtime_exceeded(info: t.Mapping[str, str], status: Json) -> bool:
    """Whether systemd-run's report means RuntimeMaxSec= was hit: result "timeout" with the main process
    killed (by systemd) before bwrap's exit-code. The same result after the exit-code, or after a main
    process that exited on its own, is only the stop timing out on processes left in the unit (a look-alike's
    leftovers; under cgroup v1 systemd may also miss that the emptied unit is empty until the stop timeout)."""
    return (info.get("result") == "timeout" and "exit-code" not in status
            and not info.get("main", "").startswith("code=exited"))


def bwrap_binary_findings(bwrap_path: t.Optional[str], runner: t.Any = B.default_runner,
                          trust: t.Optional[Json] = None) -> t.List[Json]:
    """The bwrap the probe runs, judged as a binary: not root-owned or writable by others, setuid. Always
    reported, with or without a unit (the service-environment checks only exist when there is one). Whether
    it is the packaged one is the probe's own finding (bwrap_trust: probe_bwrap_*), not bwrap_facts' warning."""
    from . import facts as FA
    if not bwrap_path or not os.path.isabs(bwrap_path):
        return []
    try:
        package = ((trust or {}).get("bwrap") or {}).get("package") if trust else B.package_facts(bwrap_path,
                                                                                                  runner=runner)
        info = dict(B.file_facts(bwrap_path), package=package or {})
    except OSError:
        return []
    # Same messages as bwrap_facts, so that the audit (which reports both) shows each finding once.
    return [d for d in FA.binary_diagnostics(info) if d["code"] not in ("bwrap_not_packaged", "bwrap_package_modified")]


class _Service(t.NamedTuple):
    """Who and where the probe runs, as the service would: its environment, user and runtime status, and
    the service_env result (None without a unit, or when the unit is not there)."""
    svc: t.Optional[Json]
    svc_env: t.Optional[t.Dict[str, str]]
    """The environment service_env found for the unit (None: no unit, or a masked one)."""
    env: t.Dict[str, str]
    user: User
    status: Json


def _user_entry(name: str) -> User:
    import pwd
    entry = pwd.getpwnam(name)
    return {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid, "groups": [entry.pw_gid]}


class Handed(t.NamedTuple):
    """The service inspection a caller already made (the audit: None when the unit is missing), so that the
    probe does not read the unit again."""
    inspection: t.Any


def _service(params: Json, runner: t.Any, out: Json, handed: t.Optional[Handed] = None) -> _Service:
    """The service's environment, user and runtime status (the admin's, as nobody, without a unit)."""
    from . import envflags
    from . import service_env as S
    found = None
    unit = params.get("unit")
    if unit:
        found = handed.inspection if handed is not None else S.inspect(
            {"unit": unit, "scope": params.get("scope") or "system", "user": params.get("user"), "mode": "auto"},
            runner)
        if found is None:
            out["diagnostics"].append(D.unit_not_found(unit, then="the probe ran in the admin context instead"))
    svc = found.result if found is not None else None
    svc_env = found.env if found is not None else None
    if svc is not None and svc_env is not None:
        env = dict(svc_env)
        user, status = svc["user"], svc["status"]
        out["service"] = dict(svc)
        out["status_view"] = svc.get("status_view")
        if params.get("probe_user"):
            user = _user_entry(params["probe_user"])
    else:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if envflags.ENV_VAR in os.environ:
            env[envflags.ENV_VAR] = os.environ[envflags.ENV_VAR]
        user = _user_entry(params.get("probe_user") or "nobody")
        status = envflags.status(B.which("bwrap", env["PATH"]), env)
        out["status_view"] = "runtime status() in the admin's environment (no service unit)"
    out["status"] = status
    return _Service(svc, svc_env, env, user, status)


def _fail_closed(out: Json, service: _Service) -> Json:
    """Fail closed exactly like the runtime: no bwrap is started (R-FAIL-1)."""
    from . import envflags
    svc, env = service.svc, service.env
    out["context"] = "not started: the runtime would fail closed"
    out["diagnostics"].extend(svc["diagnostics"] if svc is not None and service.svc_env is not None else
                              envflags.diagnose(service.status, env, env.get("PATH"), where="probe environment"))
    if not any(d["code"] == "executor_os_sandbox_unavailable" for d in out["diagnostics"]):
        out["diagnostics"].append(D.make("executor_os_sandbox_unavailable"))
    out["diagnostics"] = D.sort(out["diagnostics"])
    return out


def _render(params: Json, status: Json) -> t.Tuple[str, Json]:
    """The interpreter the payload runs on, and the profile the probe runs (rendered as the runtime would,
    with the interpreter's package roots and installation discovered like every other face)."""
    from . import profile as P
    host_over = dict(params.get("host") or {})
    python = params.get("python") or host_over.get("python_executable") or "/usr/bin/python3"
    if not os.path.exists(python):
        python = "/usr/bin/python3"
    host_over.setdefault("python_executable", python)
    # asked of the interpreter outside any sandbox: bounded like every run of the probe (a hanging one is killed)
    ask = B.bounded_runner(min(10.0, float(params.get("timeout") or 60)))
    host = P.HostContext(P.with_python_roots(host_over, ask))       # P.ContextError names the bad key
    source = PROBE_MANIFEST if params.get("manifest") is None else params["manifest"]
    return python, P.render_safe(source, host, params.get("invocation") or {}, status)


def _unit_context(params: Json, runner: t.Any, user: User) -> Json:
    """The unit's whole execution context, minus the documented deny list (unit_context.py); unreadable,
    only its user is applied and the reduced confidence says why."""
    from . import service_env as S
    try:
        return S.execution_context({"unit": params["unit"], "scope": params.get("scope") or "system",
                                    "user": params.get("user")}, runner,
                                   probe_user=user if params.get("probe_user") else None)
    except S.SystemctlError as exc:     # run anyway, as the user, and say how much less it proves
        return {"assignments": [], "carried": [], "excluded": [], "not_carried": [], "carried_as": [],
                "differences": [], "verified": False, "confidence": "reduced",
                "reasons": ["the unit's execution context could not be read (%s): only its user is applied" % exc]}


def _run_in_context(params: Json, runner: t.Any, service: _Service, prof: Json, spec: Json, python: str,
                    out: Json, trust: t.Optional[Json] = None) -> Json:
    """Run the profile in a transient unit carrying the service's context, or directly as its user."""
    svc, user, unit = service.svc, service.user, params.get("unit")
    context = params.get("context") or "auto"
    timeout = float(params.get("timeout") or 60)
    if not (context == "systemd" or (context == "auto" and svc is not None and svc.get("mode") == "systemd")):
        run_user = None if user.get("uid") in (None, os.geteuid()) else user
        verdict = run(prof["argv"], spec, python, user=run_user, env=service.env, timeout=timeout, trust=trust)
        if service.svc_env is not None:
            out["context"] = ("direct as %s with the service's environment (weaker: the unit's systemd "
                              "restrictions are not applied)" % user.get("name"))
            out["confidence"] = "reduced"
        else:
            out["context"] = "direct as %s in the admin's environment (no service unit%s)" % (
                user.get("name"), " %s" % unit if unit else "")
        return verdict
    unit_name = "metnos-probe-%s" % uuid.uuid4().hex[:10]
    settings: Json = {}
    run_env = service.env
    if service.svc_env is not None:
        # Its own Environment= directives travel with the context, so no --setenv.
        settings, run_env = _unit_context(params, runner, user), {}
        out["unit_context"] = dict((k, settings[k]) for k in ("carried", "excluded", "not_carried", "carried_as",
                                                              "differences", "verified", "confidence", "reasons"))
        out["confidence"] = settings["confidence"]
    out["context"] = ("systemd transient unit %s as %s with the execution context of %s" %
                      (unit_name, user.get("name"), unit) if settings else
                      "systemd transient unit %s as %s (no service unit)" % (unit_name, user.get("name")))
    verdict = run_systemd(prof["argv"], spec, python, user, settings, run_env, timeout, unit_name, trust=trust)
    if settings and not verdict["passed"] and not verdict["timed_out"] and params.get("blame", True):
        from . import blame as BL  # why it failed in the service's context: by experiment (issue 21)
        out["blame"] = BL.diagnose(prof["argv"], spec, python, user, settings, timeout, verdict, BL.bounds(params),
                                   trust=trust)
    return verdict


def _diagnostics(params: Json, service: _Service, verdict: Json, findings: t.List[Json], out: Json) -> t.List[Json]:
    """The verdict's diagnostics, the bwrap binary's findings, root's warning, the unit directives blamed
    for a failed setup and what the transient unit could not carry."""
    svc, user, unit = service.svc, service.user, params.get("unit")
    diags = list(verdict["diagnostics"]) + findings
    caps = [c for c in verdict.get("checks") or [] if c["name"] == "no_capabilities"]
    if caps and isinstance(caps[0]["observed"], dict) and caps[0]["observed"].get("uid") == 0:
        diags.append(D.make("probe_payload_root", user=user.get("name") or "root"))
    found = _blamed_by_experiment(out, unit, svc)
    if found is not None and found.unit_killed:       # the runtime's interpreter dies first: not bwrap's failure
        diags = [d for d in diags if d["code"] != "probe_setup_failed"]
    diags.extend(found.diagnostics if found is not None else [])
    if found is not None and found.directives:
        out["blamed_directives"] = found.directives
    elif verdict.get("setup_failed") and svc is not None:
        blamed = [d for d in svc.get("diagnostics", []) if d["code"].startswith("unit_")]
        for d in blamed:
            diags.append(D.amend(d, "blamed_by_probe"))
        if blamed:
            out["blamed_directives"] = [d.get("details", {}).get("directive") for d in blamed]
    ctx = out.get("unit_context") or {}
    if ctx.get("reasons"):
        diags.append(D.make("probe_context_incomplete", unit=unit, reasons=ctx["reasons"],
                            wording="reasons", fill={"why": "; ".join(ctx["reasons"])}))
    return D.sort(diags)


def _blamed_by_experiment(out: Json, unit: t.Optional[str], svc: t.Optional[Json]) -> t.Any:
    """blame.findings() of the experiment's record (None when none ran)."""
    if not out.get("blame"):
        return None
    from . import blame as BL
    return BL.findings(out["blame"], unit or "", (svc or {}).get("diagnostics") or [])


def probe_service(params: Json, runner: t.Any, inspection: t.Optional[Handed] = None) -> Json:
    """The whole probe: service environment -> fail-closed check -> render -> run in context -> verdict.

    ``params``: unit (or None), scope, user, manifest (mapping/text or None), invocation, host,
    python, timeout, context (auto/systemd/direct), extra_absent, accept_bwrap_sha256 (the sha256 of
    self-built bwraps to trust besides the packaged one; options.py refuses anything but 64 hex digits).
    ``inspection``: the unit's service inspection the caller already made (the audit), not made again.
    """
    out: Json = {"passed": False, "checks": [], "diagnostics": [], "context": None}
    service = _service(params, runner, out, inspection)
    if not service.status["active"]:
        return _fail_closed(out, service)
    python, prof = _render(params, service.status)
    out["profile"] = {"executor": prof["executor"], "decision": prof["decision"], "argv": prof["argv"]}
    if prof["decision"] != "wrapped":
        out["context"] = "not started: profile %s" % prof["decision"]
        out["diagnostics"] = D.sort(prof["diagnostics"])
        return out
    extra = list(params.get("extra_absent") or [])
    if service.user.get("home") and service.user.get("home") not in ("/", "/nonexistent"):
        extra.append(service.user["home"])
    spec = expectations(prof, extra_absent=extra)
    accepted, _refused = BT.normalise_accepted(params.get("accept_bwrap_sha256") or [])
    trust = BT.for_run(prof["argv"][0], runner, accepted)
    findings = bwrap_binary_findings(prof["argv"][0], runner, trust)
    verdict = _run_in_context(params, runner, service, prof, spec, python, out, trust)
    out.update(dict((k, v) for k, v in verdict.items() if k != "diagnostics"))
    out["diagnostics"] = _diagnostics(params, service, verdict, findings, out)
    out["passed"] = verdict["passed"]
    out["verdict_view"] = "probe: proven by a real wrapped invocation (%s)" % out["context"]
    return out
