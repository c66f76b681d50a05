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
  read). Namespaces are compared with bwrap's own (its parent context).
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
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import os
import time
import uuid

from . import bwrap as B
from . import diagnostics as D
from . import procfs as PF

# Runs inside the sandbox on the runtime's interpreter (Python 3.6+, stdlib only). It reports
# one JSON line on stdout, then waits on stdin until the outside has read its evidence.
PAYLOAD = r"""
import ctypes, errno, json, os, socket, sys
spec = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
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
    sys.stdin.readline()
except Exception:
    pass
"""

SENSITIVE = ("/root", "/home", "/opt", "/srv", "/mnt", "/media", "/var", "/run")
PROC_SUPER_MAGIC = 0x9FA0
TMPFS_MAGIC = 0x01021994
SIGKILL = 9
# What bwrap's --dev creates (bubblewrap.c: devnodes, stdio links, shm, pts, ptmx, core; console
# when it has a tty). Anything else in /dev came from somewhere else.
DEV_ENTRIES = ("console", "core", "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin",
               "stdout", "tty", "urandom", "zero")
DEV_MOUNTS = ("console", "full", "null", "pts", "random", "shm", "tty", "urandom", "zero")
UNSHARE_FLAGS = ("user", "ipc", "uts", "net", "pid", "cgroup")


def host_namespaces(proc="/proc"):
    """The probe's own namespace links (the host's, when the probe runs on the host)."""
    return PF.namespaces("self", proc=proc)[0]


def _under(path, root):
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def expected_absent(profile, candidates, depth=2, limit=60):
    """Host paths that must not be visible: candidates not inside a mount. For a candidate
    that is an ancestor of a mount (it exists as an empty skeleton), check its other children."""
    binds = [m["dest"] for m in profile["mounts"] if m["kind"] in ("ro", "rw", "symlink", "tmpfs", "proc", "dev")]
    out = []

    def visit(path, level):
        if len(out) >= limit or not os.path.lexists(path):
            return
        if any(_under(path, b) for b in binds):
            return
        if any(_under(b, path) for b in binds):
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


def expectations(profile, extra_absent=()):
    """The checks a profile promises, as the spec the payload receives. Writes nothing on the host."""
    mounts = profile["mounts"]
    argv = list(profile.get("argv") or [])
    sep = argv.index("--") if "--" in argv else len(argv)
    opts = argv[:sep]
    unshare = ["user", "mnt"] + [k for k in UNSHARE_FLAGS[1:] if "--unshare-" + k in opts]

    def dests(kind):
        return [m["dest"] for m in mounts if m["kind"] == kind]

    rules = dict((m["dest"], (m.get("provenance") or [{}])[0].get("rule") or "R-CAP-FS") for m in mounts)
    return {
        "token": uuid.uuid4().hex[:12],
        "unshare": unshare,
        "ns": list(PF.NS_KINDS),
        "ro": dests("ro"), "rw": dests("rw"), "tmpfs": dests("tmpfs"), "dev": dests("dev"), "proc": dests("proc"),
        "absent": expected_absent(profile, list(SENSITIVE) + list(extra_absent)),
        "net_unshared": "--unshare-net" in opts,
        "die_with_parent": "--die-with-parent" in opts,
        "rules": rules,
    }


def payload_command(python, spec=None):
    """The payload's exact argv (the outside finds the payload process by it)."""
    cmd = [python, "-c", PAYLOAD]
    return cmd + [json.dumps(spec, sort_keys=True)] if spec is not None else cmd


def replace_command(argv, command):
    """argv with everything after the first '--' replaced by command."""
    sep = argv.index("--")
    return argv[:sep + 1] + list(command)


# --------------------------------------------------------------------------- the outside witness

def host_view(proc="/proc"):
    """The probe's own namespaces and mount table, read before the run."""
    mounts = PF.read_mounts("self", proc)
    return {"ns": host_namespaces(proc), "mounts": mounts if isinstance(mounts, list) else []}


def observe_outside(launcher, child_pid, payload_argv, proc="/proc"):
    """Read, from the host's /proc, what the kernel says about the payload process and about bwrap.

    ``launcher``: the pid of the bwrap that was started (its own process: the parent context);
    ``child_pid``: what bwrap's json-status says its sandboxed child is (None if it said nothing).
    """
    out = {"launcher": launcher, "child_pid": child_pid, "child_ppid": None}
    want = PF.cmdline_bytes(payload_argv)
    pids = []
    if isinstance(child_pid, int) and child_pid > 0:
        out["child_ppid"] = PF.read_status(child_pid, proc).get("ppid")
        if PF.read_cmdline(child_pid, proc) == want:
            pids = [child_pid]
    if not pids:
        pids = PF.find_processes(payload_argv, proc)
    out["payload_pids"] = pids
    out["payload_pid"] = pids[0] if len(pids) == 1 else None
    if out["payload_pid"] is not None:
        pid = out["payload_pid"]
        st = PF.read_status(pid, proc)
        ns, how = PF.namespaces(pid, proc=proc)
        out["payload"] = {"ppid": st.get("ppid"), "nspid": st.get("nspid") or [], "uid": (st.get("uid") or [None])[0],
                          "ns": ns, "read_by": how, "mounts": PF.read_mounts(pid, proc),
                          "interfaces": PF.interfaces(pid, proc)}
    if isinstance(launcher, int) and launcher > 0:
        links, how = PF.read_links(launcher, ["ns/" + k for k in PF.NS_KINDS] + ["exe"], proc)
        out["parent"] = {"pid": launcher, "ns": dict((k, links["ns/" + k]) for k in PF.NS_KINDS),
                         "exe": links["exe"], "read_by": how, "mounts": PF.read_mounts(launcher, proc)}
    return out


class _Watcher(object):
    """The outside half of the handshake: once the payload has reported, read its evidence (while
    it waits on stdin), then let it go."""

    def __init__(self, token, payload_argv, proc="/proc"):
        self.token = token
        self.payload_argv = payload_argv
        self.proc = proc
        self.outside = None
        self.launcher = None

    def _done(self, objects, status, launcher):
        if not any(o.get("metnos_probe") == self.token for o in objects):
            return False
        child = status.get("child-pid")
        self.launcher = launcher
        try:
            self.outside = observe_outside(launcher, child if isinstance(child, int) and not isinstance(child, bool)
                                           else None, self.payload_argv, self.proc)
        except Exception as exc:   # never leave the payload waiting; nothing read is nothing proven
            self.outside = {"launcher": launcher, "child_pid": child, "error": "%s: %s" % (type(exc).__name__, exc)}
        return True

    def direct(self, data, pid):
        _launcher, status, _obs = split_stream(records(data.get("status", b"")), self.token)
        return self._done(records(data["stdout"]), status, pid)

    def systemd(self, data, _pid):
        objects = records(data["stdout"])
        launcher, status, _obs = split_stream(objects, self.token)
        return self._done(objects, status, launcher)


def records(data):
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


def split_stream(objects, token):
    """(launcher pid, merged bwrap status, payload record) from one stream of JSON objects."""
    launcher, status, obs = None, {}, None
    for obj in objects:
        if obj.get("metnos_probe") == token:
            obs = obs or obj
        elif "launcher-pid" in obj and launcher is None:
            launcher = obj["launcher-pid"] if isinstance(obj["launcher-pid"], int) else None
        elif "metnos_probe" not in obj:
            status.update(obj)
    return launcher, status, obs


# --------------------------------------------------------------------------- evaluation

def _err(value):
    return value is None or PF.is_error(value)


def _known_devices(outside, host):
    devs = PF.devices(host.get("mounts") or [])
    parent_mounts = (outside.get("parent") or {}).get("mounts")
    if isinstance(parent_mounts, list):
        devs |= PF.devices(parent_mounts)
    return devs


def evaluate(spec, obs, outside, host):
    """Both witnesses -> checks [{name, rule, expected, observed, ok}].

    ``obs``: the payload's record; ``outside``: observe_outside(); ``host``: host_view()."""
    checks = []

    def add(name, rule, expected, observed, ok):
        checks.append({"name": name, "rule": rule, "expected": expected, "observed": observed, "ok": bool(ok)})

    outside = outside or {}
    payload = outside.get("payload") or {}
    mounts = payload.get("mounts") if isinstance(payload.get("mounts"), list) else None
    known = _known_devices(outside, host)
    pid = outside.get("payload_pid")

    # 1. The process that reported is bwrap's sandboxed child (else nothing below is about a sandbox).
    child, launcher, pids = outside.get("child_pid"), outside.get("launcher"), outside.get("payload_pids") or []
    why = []
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
    add("bwrap_child_is_payload", "R-DIAG-3",
        "bwrap's child-pid is the payload (or its PID-1 init), a child of the bwrap that was started",
        {"child_pid": child, "child_parent": outside.get("child_ppid"), "bwrap_pid": launcher, "payload_pids": pids,
         "problems": why}, not why)

    # 2. /proc inside is a procfs whose /proc/self is the payload: only then do its links count.
    proc_ok = False
    for dest in spec.get("proc", []):
        inside = (obs.get("proc") or {}).get(dest) or {}
        mount = PF.mount_at(mounts, dest) if mounts is not None else None
        nspid = payload.get("nspid") or []
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
        proc_ok = not problems and dest == "/proc"
        add("proc_is_own_procfs" if dest == "/proc" else "procfs:%s" % dest, spec["rules"].get(dest, "R-BASE-2"),
            "a procfs in which /proc/self is the payload (inside and outside agree)",
            {"inside": {"type": _hex(inside.get("type")), "dev": inside.get("dev"), "self": obs.get("proc_self")},
             "outside": mount and {"fstype": mount["fstype"], "dev": mount["dev"]}, "problems": problems}, not problems)

    # 3. Namespaces: outside, the payload's inodes vs bwrap's own; inside, the payload's links agree.
    parent = outside.get("parent") or {}
    pns = parent.get("ns") or {}
    ref, ref_from = pns, "bwrap (pid %s)" % parent.get("pid")
    if not pns or any(_err(pns.get(k)) for k in ("user", "mnt", "net", "pid")):
        ref, ref_from = host.get("ns") or {}, "the probe (bwrap's own links unreadable: %s)" % (
            ", ".join("%s=%s" % (k, v) for k, v in sorted(pns.items()) if _err(v)) or "bwrap not known")
    mine = payload.get("ns") or {}

    def ns_evidence(kind):
        inside = (obs.get("ns") or {}).get(kind) if proc_ok else "void: /proc not proven"
        return {"outside": mine.get(kind), "parent": ref.get(kind), "parent_from": ref_from, "inside": inside,
                "read_by": payload.get("read_by")}

    def ns_problems(kind, want_private):
        ev = ns_evidence(kind)
        if pid is None:
            return ev, ["not proven: the payload process was not found outside"]
        if _err(ev["outside"]) or _err(ev["parent"]):
            return ev, ["not proven: %s" % (ev["outside"] if _err(ev["outside"]) else ev["parent"])]
        out = []
        if want_private and ev["outside"] == ev["parent"]:
            out.append("shared with %s" % ref_from)
        if not want_private and ev["outside"] != ev["parent"]:
            out.append("differs from %s" % ref_from)
        if proc_ok and ev["inside"] != ev["outside"]:
            out.append("witnesses disagree: inside %s, outside %s" % (ev["inside"], ev["outside"]))
        return ev, out

    for kind in spec.get("unshare", []):
        if kind == "pid":
            continue
        ev, problems = ns_problems(kind, True)
        rule = {"net": "R-BASE-7", "mnt": "R-BASE-1"}.get(kind, "R-BASE-6")
        if kind == "net":
            ev["interfaces_inside"] = obs.get("interfaces")
            ev["interfaces_outside"] = payload.get("interfaces")
            if obs.get("interfaces") != ["lo"] or payload.get("interfaces") != ["lo"]:
                problems.append("interfaces inside %s, outside %s (expected only lo)"
                                % (obs.get("interfaces"), payload.get("interfaces")))
        add("%s_namespace_private" % kind, rule, "differs from bwrap's own (its parent context)",
            dict(ev, problems=problems), not problems)
    if not spec.get("net_unshared"):
        ev, problems = ns_problems("net", False)
        add("host_network", "R-NET-1", "the same network namespace as bwrap's parent", dict(ev, problems=problems),
            not problems)
    ev, problems = ns_problems("pid", False)
    if pid is not None and obs.get("pid") != pid:
        problems.append("the payload is pid %s outside but sees itself as pid %s" % (pid, obs.get("pid")))
    add("no_pid_namespace", "R-BASE-8", "the PID namespace of bwrap's parent (no PID namespace)",
        dict(ev, problems=problems), not problems)

    # 4. Fresh tmpfs (and bwrap's minimal /dev): type, a device no host mount has, contents.
    declared = [d for key in ("ro", "rw", "tmpfs", "dev", "proc") for d in spec.get(key, [])]
    for dest in spec.get("tmpfs", []) + spec.get("dev", []):
        is_dev = dest in spec.get("dev", [])
        inside = (obs.get("tmpfs") or {}).get(dest) or {}
        mount = PF.mount_at(mounts, dest) if mounts is not None else None
        problems = []
        if inside.get("type") != TMPFS_MAGIC:
            problems.append("statfs type %s, not tmpfs" % _hex(inside.get("type")))
        if mounts is None:
            problems.append("not proven: the payload's mount table was not read")
        elif mount is None or mount["fstype"] != "tmpfs":
            problems.append("outside: %s" % ("no mount at %s" % dest if mount is None
                                             else "%s is %s from %s" % (dest, mount["fstype"], mount["source"])))
        else:
            if mount["dev"] != inside.get("dev"):
                problems.append("outside device %s, inside %s" % (mount["dev"], inside.get("dev")))
            if mount["dev"] in known:
                problems.append("device %s is mounted outside the sandbox too" % mount["dev"])
        entries = inside.get("entries")
        if is_dev:
            allowed = set(DEV_ENTRIES)
            extra_mounts = sorted(m["mountpoint"] for m in PF.mounts_under(mounts or [], dest)
                                  if os.path.relpath(m["mountpoint"], dest) not in DEV_MOUNTS)
            if extra_mounts:
                problems.append("mounts bwrap's --dev does not make: %s" % ", ".join(extra_mounts[:8]))
        else:
            allowed = set(os.path.relpath(d, dest).split("/")[0] for d in declared if d != dest and _under(d, dest))
        if not isinstance(entries, list):
            problems.append("not proven: listing %s gave %s" % (dest, entries))
        elif set(entries) - allowed:
            problems.append("not empty: %s" % ", ".join(sorted(set(entries) - allowed)[:8]))
        add(("minimal_dev:%s" if is_dev else "fresh_tmpfs:%s") % dest,
            spec["rules"].get(dest, "R-BASE-3" if not is_dev else "R-BASE-2"),
            "a new tmpfs (device unknown outside)%s" % (" with only bwrap's device nodes" if is_dev else ", empty"),
            {"inside": {"type": _hex(inside.get("type")), "dev": inside.get("dev"),
                        "entries": entries if not isinstance(entries, list) else entries[:12]},
             "outside": mount and {"fstype": mount["fstype"], "dev": mount["dev"], "source": mount["source"]},
             "problems": problems}, not problems)

    # 5. Read-only binds: the kernel's mount flags, inside (statvfs) and outside (mount table).
    not_ro = [d for key in ("rw", "tmpfs", "dev", "proc") for d in spec.get(key, [])]
    for dest in spec.get("ro", []):
        inside = (obs.get("ro") or {}).get(dest) or {}
        problems = []
        if inside.get("flags") != "ro":
            problems.append("inside: %s" % ("mounted read-write" if inside.get("flags") == "rw"
                                             else "not proven (%s)" % inside.get("flags")))
        mount = None
        if mounts is not None:
            mount = PF.mount_at(mounts, dest)
            if mount is None:
                problems.append("outside: no mount at %s" % dest)
            elif not PF.read_only(mount):
                problems.append("outside: %s is mounted %s" % (dest, ",".join(mount["opts"][:3])))
            below = [m["mountpoint"] for m in PF.mounts_under(mounts, dest)
                     if not PF.read_only(m) and not any(_under(m["mountpoint"], d) for d in not_ro)]
            if below:
                problems.append("outside: writable mounts below: %s" % ", ".join(below[:5]))
        add("read_only:%s" % dest, spec["rules"].get(dest, "R-BASE-1"), "a read-only mount (ST_RDONLY / ro)",
            {"inside": inside.get("flags"), "outside": mount and ",".join(mount["opts"]), "problems": problems},
            not problems)

    # 6. Writable grants: a real write.
    for dest in spec.get("rw", []):
        result = (obs.get("rw") or {}).get(dest)
        mount = PF.mount_at(mounts, dest) if mounts is not None else None
        add("writable:%s" % dest, spec["rules"].get(dest, "R-CAP-FS"), "writable (a real write succeeded)",
            {"inside": result, "outside": mount and ",".join(mount["opts"])}, result == "writable")

    # 7. Hidden paths: ENOENT inside, nothing mounted there, covered by the sandbox's own root.
    for path in spec.get("absent", []):
        seen = (obs.get("absent") or {}).get(path)
        problems = []
        if seen == "present":
            problems.append("visible inside")
        elif seen != "absent":
            problems.append("not proven: lstat gave %s" % seen)
        if mounts is None:
            problems.append("not proven: the payload's mount table was not read")
        else:
            at = [m["mountpoint"] for m in mounts if _under(m["mountpoint"], path)]
            cover = PF.covering_mount(mounts, path)
            if at:
                problems.append("outside: mounted at %s" % ", ".join(at[:5]))
            elif cover is None or cover["fstype"] != "tmpfs" or cover["dev"] in known:
                problems.append("outside: %s lies on %s" % (path, "nothing" if cover is None else "%s %s (%s)" % (
                    cover["fstype"], cover["source"], cover["mountpoint"])))
        add("hidden:%s" % path, "R-SEC-1", "absent (ENOENT) on the sandbox's own root", {"inside": seen,
            "problems": problems}, not problems)

    # 8. Parent-death signal (bwrap --die-with-parent sets SIGKILL).
    if spec.get("die_with_parent", True):
        add("parent_death_signal", "R-BASE-6", SIGKILL, obs.get("pdeathsig"), obs.get("pdeathsig") == SIGKILL)
    return checks


def _hex(value):
    return "0x%x" % value if isinstance(value, int) else value


# --------------------------------------------------------------------------- running

def run(argv, spec, python, user=None, env=None, timeout=30.0, cwd="/"):
    """Run argv (a bwrap profile) with the payload as its command. Returns a verdict dict."""
    argv = list(argv)
    sep = argv.index("--")
    payload = payload_command(python, spec)
    full = argv[:sep] + ["--json-status-fd", "{status_fd}", "--"] + payload
    host = host_view()
    watcher = _Watcher(spec["token"], payload)
    result = B.run_bwrap(full, user=user, env=env, timeout=timeout, cwd=cwd, watch=watcher.direct)
    _launcher, _status, obs = split_stream(records(result["stdout"]), spec["token"])
    result["json_status"] = split_stream(records(result.get("status_raw", "")), spec["token"])[1]
    shown = [a if a != "{status_fd}" else "FD" for a in full[:len(full) - 2]] + ["<payload>", "<spec>"]
    return _verdict(shown, result, obs, watcher.outside, spec, host, user, timeout)


def _verdict(shown, result, obs, outside, spec, host, user, timeout, tool=None):
    tool = tool or shown[0]
    status = result.get("json_status") or {}
    verdict = {"argv": shown, "rc": result["rc"], "timed_out": result["timed_out"],
               "setup_failed": obs is None and "exit-code" not in status and not result["timed_out"],
               "stderr": result["stderr"].strip()[-2000:], "duration": result["duration"], "checks": [],
               "diagnostics": [], "passed": False}
    if outside:
        verdict["evidence"] = {"bwrap_pid": outside.get("launcher"), "child_pid": outside.get("child_pid"),
                               "payload_pid": outside.get("payload_pid"),
                               "bwrap_exe": (outside.get("parent") or {}).get("exe"),
                               "read_by": (outside.get("payload") or {}).get("read_by")}
    who = (user or {}).get("name", "current user")
    if result["timed_out"]:
        verdict["diagnostics"].append(D.make("probe_timeout", message="the probe did not finish within %ss; its "
                                             "whole process group was killed" % timeout, timeout=timeout))
        return verdict
    if obs is None and verdict["setup_failed"]:
        cls = B.classify(result["stderr"], result["rc"])
        verdict["classification"] = cls
        text = cls["cause_text"] + (" (bwrap said: %s)" % cls["stderr_line"] if cls.get("stderr_line") else "")
        if not status and not cls.get("stderr_line") and result["rc"] == 0:
            text = ("%s exited with status 0 without running the payload and without writing any "
                    "--json-status-fd record: it does not behave like bwrap" % tool)
        verdict["diagnostics"].append(D.make("probe_setup_failed", user=who, cause=cls["cause"], cause_text=text,
                                             cause_remediation=cls["remediation"], variant="classified",
                                             points_at=cls.get("points_at")))
        return verdict
    if obs is None:
        verdict["diagnostics"].append(D.make(
            "probe_payload_failed", message="bwrap ran the payload (as %s) but it did not report: it exited %s; %s"
            % (who, status.get("exit-code", result["rc"]), verdict["stderr"][-300:] or "no output"),
            exit_code=status.get("exit-code")))
        return verdict
    verdict["observed_uid"] = obs.get("uid")
    verdict["checks"] = checks = evaluate(spec, obs, outside, host)
    failed = [c for c in checks if not c["ok"]]
    ns_checks = [c for c in checks if c["name"].endswith("_namespace_private")]
    identity = [c for c in checks if c["name"] == "bwrap_child_is_payload"]
    # Not isolated: every namespace the profile unshares is shared, or the process that reported cannot
    # be tied to bwrap's child *and* something else is wrong. A false child-pid alone is a failed check.
    others = [c for c in failed if c["name"] != "bwrap_child_is_payload"]
    unisolated = bool(ns_checks and not any(c["ok"] for c in ns_checks)) or bool(
        identity and not identity[0]["ok"] and others)
    if unisolated:
        verdict["diagnostics"].append(D.make(
            "probe_not_isolated", user=who,
            message="%s ran the payload (as %s) without isolation: %s." % (
                tool, who, "; ".join(_say(c) for c in failed)),
            checks=[c["name"] for c in failed]))
    else:
        for check in failed:
            verdict["diagnostics"].append(D.make("probe_check_failed", message=_say(check), check=check["name"],
                                                 check_rule=check["rule"]))
    verdict["passed"] = not failed
    return verdict


def _say(check):
    observed = check["observed"]
    if isinstance(observed, dict) and observed.get("problems"):
        observed = "; ".join(observed["problems"])
    return "%s (%s): expected %s, observed %s" % (check["name"], check["rule"], check["expected"], observed)


# --------------------------------------------------------------------------- in the service's context

PROBE_MANIFEST = {"name": "sandbox_probe", "origin": "metnos-sandbox-ops", "revision": 1, "capabilities": []}


def systemd_run_argv(unit_name, user, settings, env, timeout):
    """systemd-run around a command: a transient unit carrying the service's execution context.

    ``settings`` is a unit_context result (every directive of the unit minus its documented
    deny list, as ``assignments``) or {} for none. ``user`` applies only when the context names
    no User=/DynamicUser=; ``env`` adds --setenv values (none when the unit's own Environment=
    directives are carried).
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
    argv += UC.property_args(assignments)
    for key in sorted(env):
        argv += ["--setenv=%s=%s" % (key, env[key])]
    return argv


_SYSTEMD_RUN_LINES = ("Running as unit", "Finished with result:", "Main processes terminated with:",
                      "Service runtime:", "CPU time consumed:", "Memory peak:", "Press ^]")


def _strip_systemd_run(stderr):
    """Separate systemd-run's own report lines from the command's stderr."""
    keep, info = [], {}
    for line in stderr.splitlines():
        if line.startswith(_SYSTEMD_RUN_LINES):
            if line.startswith("Finished with result:"):
                info["result"] = line.split(":", 1)[1].strip()
            if line.startswith("Main processes terminated with:"):
                info["main"] = line.split(":", 1)[1].strip()
            continue
        keep.append(line)
    return "\n".join(keep), info


# The transient unit's command: say who will be bwrap (the shell's pid is bwrap's after exec), then
# exec bwrap with its status fd on the unit's stdout (systemd-run --pipe hands us that stdout).
# systemd expands "$$" in a command line to "$", hence "$$$$" for the shell's "$$".
STOP_TIMEOUT = 3
LAUNCHER = 'printf \'{"launcher-pid": %s}\\n\' "$$$$"; exec "$@" 3>&1'


def run_systemd(argv, spec, python, user, settings, env, timeout, runner_unit):
    """Like run(), inside a transient systemd unit. The status fd is redirected to stdout, the
    handshake goes through the unit's stdin (systemd-run --pipe passes our pipes to the unit)."""
    import subprocess
    sep = argv.index("--")
    payload = payload_command(python, spec)
    inner = argv[:sep] + ["--json-status-fd", "3", "--"] + payload
    # A bounded stop: under cgroup v1 (containers) systemd can miss that a unit whose processes used a
    # PID namespace is empty and sit in "deactivating" for the default 90 s after bwrap has exited.
    full = systemd_run_argv(runner_unit, user, settings, env, timeout) + ["-p", "TimeoutStopSec=%d" % STOP_TIMEOUT] + \
        ["/bin/sh", "-c", LAUNCHER, "sh"] + inner
    host = host_view()
    watcher = _Watcher(spec["token"], payload)
    start = time.time()
    try:
        proc = subprocess.Popen(full, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(os.environ, SYSTEMD_COLORS="0", LC_ALL="C"), start_new_session=True)
    except OSError as exc:
        result = {"rc": 127, "stderr": "systemd-run: %s" % exc.strerror, "json_status": {}, "timed_out": False,
                  "duration": 0.0}
        return _verdict(full[:len(full) - 1] + ["<spec>"], result, None, None, spec, host, user, timeout)
    try:
        data, timed_out = B.pump(proc, {"stdout": proc.stdout.fileno(), "stderr": proc.stderr.fileno()},
                                 timeout + 15, watcher.systemd)
    finally:
        proc.stdout.close()
        proc.stderr.close()
    rc = proc.returncode
    if timed_out:
        subprocess.run(["systemctl", "kill", "--signal=SIGKILL", runner_unit], capture_output=True)
        subprocess.run(["systemctl", "stop", runner_unit], capture_output=True)
        rc = None
    subprocess.run(["systemctl", "reset-failed", runner_unit], capture_output=True)
    stderr, info = _strip_systemd_run(data["stderr"].decode("utf-8", "replace"))
    _launcher, status, obs = split_stream(records(data["stdout"]), spec["token"])
    if info.get("result") == "timeout" and "exit-code" not in status:
        timed_out = True        # RuntimeMaxSec= hit; after bwrap's exit-code it was only the stop timeout
    main = info.get("main", "")
    if "status=SYS" in main or "status=31" in main:
        rc = 128 + 31
    result = {"rc": rc, "stderr": stderr, "json_status": status, "timed_out": timed_out,
              "duration": round(time.time() - start, 3), "systemd_result": info}
    verdict = _verdict(full[:len(full) - 1] + ["<spec>"], result, obs, watcher.outside, spec, host, user, timeout,
                       tool=argv[0])
    verdict["systemd_result"] = info
    return verdict


def bwrap_binary_findings(bwrap_path, runner=B.default_runner):
    """The bwrap the probe runs, judged as a binary: not owned by a package, not root-owned or
    writable by others, setuid. Always reported, with or without a unit (the service-environment
    checks only exist when there is one)."""
    from . import facts as FA
    if not bwrap_path or not os.path.isabs(bwrap_path):
        return []
    try:
        info = dict(B.file_facts(bwrap_path), package=B.package_facts(bwrap_path, runner=runner))
    except OSError:
        return []
    # Same messages as bwrap_facts, so that the audit (which reports both) shows each finding once.
    return FA.binary_diagnostics(info)


def probe_service(params, runner):
    """The whole probe: service environment -> fail-closed check -> render -> run in context -> verdict.

    ``params``: unit (or None), scope, user, manifest (mapping/text or None), invocation, host,
    python, timeout, context (auto/systemd/direct), extra_absent.
    """
    import pwd

    from . import envflags
    from . import profile as P
    from . import service_env as S

    out = {"passed": False, "checks": [], "diagnostics": [], "context": None}
    svc = None
    unit = params.get("unit")
    if unit:
        svc = S.inspect({"unit": unit, "scope": params.get("scope") or "system", "user": params.get("user"),
                         "mode": "auto"}, runner)
        if svc is None:
            out["diagnostics"].append(D.unit_not_found(unit, then="the probe ran in the admin context instead"))
    if svc is not None and "_env" in svc:
        env = dict(svc["_env"])
        user = svc["user"]
        status = svc["status"]
        out["service"] = dict((k, v) for k, v in svc.items() if not k.startswith("_"))
        out["status_view"] = svc.get("status_view")
    else:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if envflags.ENV_VAR in os.environ:
            env[envflags.ENV_VAR] = os.environ[envflags.ENV_VAR]
        entry = pwd.getpwnam(params.get("probe_user") or "nobody")
        user = {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid, "groups": [entry.pw_gid]}
        status = envflags.status(B.which("bwrap", env["PATH"]), env)
        out["status_view"] = "runtime status() in the admin's environment (no service unit)"
    out["status"] = status
    if params.get("probe_user") and svc is not None and "_env" in svc:
        entry = pwd.getpwnam(params["probe_user"])
        user = {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid, "groups": [entry.pw_gid]}

    # Fail closed exactly like the runtime: no bwrap is started (R-FAIL-1).
    if not status["active"]:
        out["context"] = "not started: the runtime would fail closed"
        out["diagnostics"].extend(svc["diagnostics"] if svc is not None and "_env" in svc else
                                  envflags.diagnose(status, env, env.get("PATH"), where="probe environment"))
        if not any(d["code"] == "executor_os_sandbox_unavailable" for d in out["diagnostics"]):
            out["diagnostics"].append(D.make("executor_os_sandbox_unavailable"))
        out["diagnostics"] = D.sort(out["diagnostics"])
        return out

    host_over = dict(params.get("host") or {})
    python = params.get("python") or host_over.get("python_executable") or "/usr/bin/python3"
    if not os.path.exists(python):
        python = "/usr/bin/python3"
    host_over.setdefault("python_executable", python)
    host = P.HostContext(host_over)     # P.ContextError names the bad key
    source = PROBE_MANIFEST if params.get("manifest") is None else params["manifest"]
    prof = P.render_safe(source, host, params.get("invocation") or {}, status)
    out["profile"] = {"executor": prof["executor"], "decision": prof["decision"], "argv": prof["argv"]}
    if prof["decision"] != "wrapped":
        out["context"] = "not started: profile %s" % prof["decision"]
        out["diagnostics"] = D.sort(prof["diagnostics"])
        return out

    extra = list(params.get("extra_absent") or [])
    if user.get("home") and user.get("home") not in ("/", "/nonexistent"):
        extra.append(user["home"])
    spec = expectations(prof, extra_absent=extra)
    findings = bwrap_binary_findings(prof["argv"][0], runner)
    context = params.get("context") or "auto"
    use_systemd = context == "systemd" or (context == "auto" and svc is not None and svc.get("mode") == "systemd")
    timeout = float(params.get("timeout") or 60)
    if use_systemd:
        unit_name = "metnos-probe-%s" % uuid.uuid4().hex[:10]
        settings, run_env = {}, env
        if svc is not None and "_env" in svc:
            # The unit's whole execution context, minus the documented deny list (unit_context.py);
            # its own Environment= directives travel with it, so no --setenv.
            try:
                ctx = S.execution_context({"unit": unit, "scope": params.get("scope") or "system",
                                           "user": params.get("user")}, runner,
                                          probe_user=user if params.get("probe_user") else None)
            except S.SystemctlError as exc:     # run anyway, as the user, and say how much less it proves
                ctx = {"assignments": [], "carried": [], "excluded": [], "not_carried": [], "carried_as": [],
                       "differences": [], "verified": False, "confidence": "reduced",
                       "reasons": ["the unit's execution context could not be read (%s): only its user is "
                                   "applied" % exc]}
            settings, run_env = ctx, {}
            out["unit_context"] = dict((k, ctx[k]) for k in ("carried", "excluded", "not_carried", "carried_as",
                                                             "differences", "verified", "confidence", "reasons"))
            out["confidence"] = ctx["confidence"]
        verdict = run_systemd(prof["argv"], spec, python, user, settings, run_env, timeout, unit_name)
        out["context"] = ("systemd transient unit %s as %s with the execution context of %s" %
                          (unit_name, user.get("name"), unit) if settings else
                          "systemd transient unit %s as %s (no service unit)" % (unit_name, user.get("name")))
    else:
        run_user = None if user.get("uid") in (None, os.geteuid()) else user
        verdict = run(prof["argv"], spec, python, user=run_user, env=env, timeout=timeout)
        if svc is not None and "_env" in svc:
            out["context"] = ("direct as %s with the service's environment (weaker: the unit's systemd "
                              "restrictions are not applied)" % user.get("name"))
            out["confidence"] = "reduced"
        else:
            out["context"] = "direct as %s in the admin's environment (no service unit%s)" % (
                user.get("name"), " %s" % unit if unit else "")
    out.update(dict((k, v) for k, v in verdict.items() if k != "diagnostics"))
    diags = list(verdict["diagnostics"]) + findings
    if verdict.get("setup_failed") and svc is not None:
        blamed = [d for d in svc.get("diagnostics", []) if d["code"].startswith("unit_")]
        for d in blamed:
            d = dict(d, message=d["message"] + " The probe failed in this unit's context.")
            diags.append(d)
        if blamed:
            out["blamed_directives"] = [d.get("details", {}).get("directive") for d in blamed]
    ctx = out.get("unit_context") or {}
    if ctx.get("reasons"):
        diags.append(D.make("probe_context_incomplete", unit=unit, reasons=ctx["reasons"],
                            message="%s: the probe's transient unit does not carry the service's whole execution "
                                    "context, so a pass proves less: %s." % (unit, "; ".join(ctx["reasons"]))))
    out["diagnostics"] = D.sort(diags)
    out["passed"] = verdict["passed"]
    out["verdict_view"] = "probe: proven by a real wrapped invocation (%s)" % out["context"]
    return out
