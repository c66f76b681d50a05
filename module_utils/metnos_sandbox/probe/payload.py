# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe's payload and what it must see: the in-sandbox witness (PAYLOAD, stdlib only, run by the
bwrap under test), the expectations a rendered profile sets for it, and the argv the probe starts
(payload_command, the descriptor launcher, argv_deviations).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import os
import typing as t

from ..base import json_lite as JL
from ..base import libc_lite as LL
from ..base.paths import under
from ..base.records import Record
from ..host import bwrap_options as BO
from ..host import procfs as PF
from ..profile import descriptors as DS
from ..profile import result as RS

Json = t.Dict[str, t.Any]
User = t.Dict[str, t.Any]
"""A user to run as: name, uid, gid (groups, home, dynamic)."""


class Stream(Record):
    """split_stream(): the launcher's pid, bwrap's merged status records, the payload's record."""
    launcher: t.Optional[int]
    status: Json
    obs: t.Optional[Json]


class Reference(Record):
    """_reference(): the namespaces the payload is judged against, where they were read, and the kinds in
    which the bwrap that was started has left them."""
    ns: t.Dict[str, str]
    source: str
    moved: t.List[str]
    depth: t.Optional[int] = None
    """How deep the parent context's PID namespace is (the length of its NSpid in this /proc), if known."""


class SystemdReport(Record):
    """_strip_systemd_run(): the command's own stderr, and systemd-run's report (result, main)."""
    stderr: str
    info: t.Dict[str, str]


# Runs inside the sandbox on the runtime's interpreter (Python 3.6+, stdlib only). It reports
# one JSON line on stdout, then waits on stdin until the outside has read its evidence. JSON by base/json_lite.py,
# prctl(2) and statfs(2) by base/libc_lite.py: each package import would cost more than the rest of the script.
PAYLOAD = JL.PRELUDE + LL.PRELUDE + r"""
import errno, os, sys
try:                                    # the C module alone: socket.py imports enum, selectors (~5 ms of CPU)
    import _socket as socket
except ImportError:
    import socket
spec = loads(sys.argv[1])
libc.prctl(15, ("mp-" + spec["token"])[:15].encode(), 0, 0, 0)   # PR_SET_NAME: this code ran here
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
    buf = string_buffer(512)
    if libc.statfs(path.encode("utf-8"), buf) == 0:
        if os.uname()[4].startswith("s390"):
            out["type"] = c_uint.from_buffer(buf).value
        else:
            out["type"] = c_long.from_buffer(buf).value & 0xffffffff
    else:
        out["type"] = err(get_errno())
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
    sig = c_int(0)
    libc.prctl(2, byref(sig), 0, 0, 0)   # PR_GET_PDEATHSIG
    obs["pdeathsig"] = sig.value
except Exception as exc:
    obs["pdeathsig"] = "error:%s" % exc
sys.stdout.write(dumps(obs) + "\n")
sys.stdout.flush()
try:
    go = sys.stdin.readline().strip()
except Exception:
    go = ""
import time
try:                                    # the interpreter's own sha256 (hashlib loads OpenSSL: ~3 ms)
    from _sha256 import sha256
except ImportError:
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256
if spec.get("go") and sha256(go.encode()).hexdigest() != spec["go"]:
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


def expected_absent(profile: RS.Profile, candidates: t.Sequence[str], depth: int = 2, limit: int = 60) -> t.List[str]:
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


def expectations(profile: RS.Profile, extra_absent: t.Sequence[str] = ()) -> Json:
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
        "token": os.urandom(6).hex(),
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
        # what the profile itself puts on the sandbox's root: every destination (binds, symlinks, --dir, --file
        # ...) and, implied, the directories above it
        "created": sorted(set(m["dest"] for m in mounts)),
    }


def _descriptor_launcher(words: t.List[str], python: str, spec: Json) -> t.List[str]:
    """The one hook of descriptor binds (descriptors.py): bwrap's argv behind the launcher that opens the
    profile's descriptors race-free, proves each is the object judged, then becomes bwrap (same pid)."""
    return DS.launcher_words(words, python, spec.get("descriptors"))


def _option_units(words: t.Sequence[str]) -> t.List[str]:
    units: t.List[str] = []
    i = 0
    while i < len(words):
        n = BO.ARITY.get(words[i], 0)
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
