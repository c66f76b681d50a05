# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Evidence about a process read from the host's /proc, from outside the sandbox it runs in.

What a sandboxed program says about itself is only as good as the /proc the sandbox mounted
for it; these readers look at the same process from the probe's side: namespace inodes
(``/proc/PID/ns/*``), its mount table (``/proc/PID/mountinfo``), its interfaces
(``/proc/PID/net/dev``), parent and pids in every PID namespace (``/proc/PID/status``).

Namespace and ``exe`` links need ptrace read access (proc(5), PTRACE_MODE_READ_FSCREDS).
Root inside a container usually lacks CAP_SYS_PTRACE and gets EACCES for another user's
process; ``read_links`` then retries in a forked reader that takes exactly the target's uid
and gid (the kernel lets a process read links of a same-credential process, and of the user
namespaces that same uid created). Whatever still cannot be read comes back as
``"error:EACCES"`` and is reported as not proven by the caller, never guessed.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import errno
import json
import os
import stat
import typing as t

from ..base.paths import under
from ..base.records import Record
from ..base.run_as import call
from . import mountinfo

NS_KINDS = ("user", "mnt", "ipc", "uts", "net", "pid", "cgroup")
DENIED = (errno.EACCES, errno.EPERM)
DENIED_TEXT = ("error:EACCES", "error:EPERM")

Mount = t.Dict[str, t.Any]
"""One parse_mountinfo() row: id, parent, dev, root, mountpoint, fstype, source (str), opts, superopts (lists)."""
Pid = t.Union[int, str]
"""A pid, or "self"."""
T = t.TypeVar("T")


class Links(Record):
    """read_links()/namespaces(): {name: link target or "error:…"}, and who read them."""
    values: t.Dict[str, str]
    how: str


class Sharers(Record):
    """sharers(): {kind: [pid or "a bind of it at PATH", …]}, and how many processes could not be read."""
    held: t.Dict[str, t.List[t.Union[int, str]]]
    unreadable: int


class ReadAs(Record):
    """read_file_as(): the bytes read, or None and why not."""
    data: t.Optional[bytes]
    error: t.Optional[str]


def errname(exc: EnvironmentError) -> str:
    return "error:" + errno.errorcode.get(exc.errno or 0, str(exc.errno))


def is_error(value: object) -> bool:
    return isinstance(value, str) and value.startswith("error:")


def read_text(path: str, limit: int = 4 << 20) -> str:
    with open(path, "rb") as handle:
        return handle.read(limit).decode("utf-8", "replace")


# --------------------------------------------------------------------------- mount tables

def parse_mountinfo(text: t.Optional[str]) -> t.List[Mount]:
    """/proc/PID/mountinfo -> [{id, parent, dev, root, mountpoint, opts, fstype, source, superopts}] (the lines
    read by host/mountinfo.py, the one parser; the fields as text)."""
    out = []
    for line in mountinfo.parse((text or "").encode("utf-8", "surrogateescape")):
        out.append({"id": _text(line.id), "parent": _text(line.parent), "dev": _text(line.dev),
                    "root": _text(line.root), "mountpoint": _text(line.point), "opts": mountinfo.options(line.opts),
                    "fstype": _text(line.fstype), "source": _text(line.source),
                    "superopts": mountinfo.options(line.superopts)})
    return out


def _text(field: bytes) -> str:
    return field.decode("utf-8", "replace")


def mount_at(mounts: t.Sequence[Mount], path: t.Optional[str]) -> t.Optional[Mount]:
    """The topmost mount whose mount point is exactly ``path`` (None when nothing is mounted there)."""
    here = [m for m in mounts if m["mountpoint"] == path]
    top = [m for m in here if not any(o["parent"] == m["id"] for o in here if o is not m)]
    found = top or here
    return found[-1] if found else None


def covering_mount(mounts: t.Sequence[Mount], path: str) -> t.Optional[Mount]:
    """The topmost mount that holds ``path``: the one at the longest mount point above it."""
    best: t.Optional[str] = None
    for m in mounts:
        if under(path, m["mountpoint"]) and (best is None or len(m["mountpoint"]) >= len(best)):
            best = m["mountpoint"]
    return mount_at(mounts, best) if best is not None else None


def mounts_under(mounts: t.Sequence[Mount], path: str) -> t.List[Mount]:
    """Mounts strictly below ``path``."""
    return [m for m in mounts if m["mountpoint"] != path and under(m["mountpoint"], path)]


def visible_mounts(mounts: t.Sequence[Mount]) -> t.List[Mount]:
    """The mounts a path walk in that namespace can reach: the top of each stack of mounts at one mount
    point, minus mounts hidden under a later mount at an ancestor path (their parent is not the mount
    a walk reaches there). Mounts below a hidden one are hidden too."""
    ids = set(m["id"] for m in mounts)
    kids: t.Dict[str, t.List[Mount]] = {}
    for m in mounts:
        kids.setdefault(m["parent"], []).append(m)
    out: t.List[Mount] = []
    todo = [m for m in mounts if m["parent"] not in ids or m["parent"] == m["id"]]
    seen: t.Set[str] = set()
    while todo:
        m = todo.pop()
        if m["id"] in seen:
            continue
        seen.add(m["id"])
        mine = [c for c in kids.get(m["id"], []) if c["id"] != m["id"]]
        over = [c for c in mine if c["mountpoint"] == m["mountpoint"]]
        if over:                    # m is covered by another mount at the same place
            todo.extend(over)
            continue
        out.append(m)
        for c in mine:
            if not any(o is not c and o["mountpoint"] != c["mountpoint"] and under(c["mountpoint"], o["mountpoint"])
                       for o in mine):
                todo.append(c)
    return out


def source_of(mounts: t.Sequence[Mount], path: str) -> t.Optional[t.Tuple[str, str]]:
    """(device, root) that a bind of ``path`` taken in this mount table carries: the covering mount's
    device and its root joined with the rest of the path; None when nothing covers it."""
    m = covering_mount(mounts, path)
    if m is None:
        return None
    rel = os.path.relpath(path, m["mountpoint"])
    return str(m["dev"]), (str(m["root"]) if rel == "." else os.path.normpath(os.path.join(m["root"], rel)))


def bind_tree(mounts: t.Sequence[Mount], path: str) -> t.Dict[str, t.Set[t.Optional[t.Tuple[str, str]]]]:
    """What a recursive bind of ``path`` shows, as {path relative to it: {(device, root)}}: '.' for
    the bind itself, then every mount below ``path`` in this table."""
    out: t.Dict[str, t.Set[t.Optional[t.Tuple[str, str]]]] = {".": set([source_of(mounts, path)])}
    for m in mounts_under(mounts, path):
        out.setdefault(os.path.relpath(m["mountpoint"], path), set()).add((m["dev"], m["root"]))
    return out


def read_only(mount: Mount) -> bool:
    """A mount is read-only when its own flags or its superblock say ro."""
    return "ro" in mount["opts"] or "ro" in mount["superopts"]


def devices(mounts: t.Iterable[Mount]) -> t.Set[str]:
    return set(m["dev"] for m in mounts)


def read_mounts(pid: Pid, proc: str = "/proc") -> t.Union[t.List[Mount], str]:
    """Parsed mount table of PID's mount namespace, seen from PID's root; or an error string.
    (mountinfo is world-readable: no ptrace access is needed.)"""
    try:
        return parse_mountinfo(read_text(os.path.join(proc, str(pid), "mountinfo")))
    except (IOError, OSError) as exc:
        return errname(exc)


# --------------------------------------------------------------------------- processes

CAP_FIELDS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


def read_status(pid: Pid, proc: str = "/proc") -> t.Dict[str, t.Any]:
    """PPid, Uid, Gid (real, effective, saved, fs), NSpid, the capability sets (as ints, keys
    capinh...capamb), NoNewPrivs, Seccomp (mode) and Seccomp_filters (Linux >= 5.9) of PID; {} when
    gone. (status is world-readable: no ptrace access is needed.)"""
    try:
        text = read_text(os.path.join(proc, str(pid), "status"))
    except (IOError, OSError):
        return {}
    out: t.Dict[str, t.Any] = {}
    for line in text.splitlines():
        key, _sep, value = line.partition(":")
        if key in ("PPid", "Uid", "Gid", "NSpid"):
            nums = [int(v) for v in value.split() if v.lstrip("-").isdigit()]
            out[key.lower()] = nums[0] if key == "PPid" and nums else nums
        elif key in CAP_FIELDS:
            try:
                out[key.lower()] = int(value.strip(), 16)
            except ValueError:
                pass
        elif key in ("NoNewPrivs", "Seccomp", "Seccomp_filters") and value.strip().isdigit():
            out[key.lower()] = int(value.strip())
    return out


def privileges(status: t.Mapping[str, t.Any]) -> t.Dict[str, t.Any]:
    """The capability sets, no_new_privs and seccomp fields of a read_status() result."""
    return dict((k, status.get(k)) for k in [f.lower() for f in CAP_FIELDS] + ["nonewprivs", "seccomp",
                                                                               "seccomp_filters"])


def read_cmdline(pid: Pid, proc: str = "/proc") -> t.Optional[bytes]:
    try:
        with open(os.path.join(proc, str(pid), "cmdline"), "rb") as handle:
            return handle.read(1 << 20)
    except (IOError, OSError):
        return None


def cmdline_bytes(argv: t.Sequence[str]) -> bytes:
    return b"".join(a.encode("utf-8") + b"\0" for a in argv)


def find_processes(argv: t.Sequence[str], proc: str = "/proc") -> t.List[int]:
    """Pids whose command line is exactly ``argv`` (one pass over /proc)."""
    want = cmdline_bytes(argv)
    out: t.List[int] = []
    try:
        names = os.listdir(proc)
    except OSError:
        return out
    for name in names:
        if name.isdigit() and read_cmdline(name, proc) == want:
            out.append(int(name))
    return sorted(out)


def interfaces(pid: Pid, proc: str = "/proc") -> t.Union[t.List[str], str]:
    """Interface names of PID's network namespace (/proc/PID/net/dev), sorted; or an error string."""
    try:
        text = read_text(os.path.join(proc, str(pid), "net", "dev"))
    except (IOError, OSError) as exc:
        return errname(exc)
    return sorted(line.split(":", 1)[0].strip() for line in text.splitlines()[2:] if ":" in line)


def read_cgroups(pid: Pid, proc: str = "/proc") -> t.List[str]:
    """The cgroup paths of PID (/proc/PID/cgroup, one per hierarchy; world-readable); [] when gone."""
    try:
        text = read_text(os.path.join(proc, str(pid), "cgroup"), limit=1 << 16)
    except (IOError, OSError):
        return []
    return [line.split(":", 2)[2] for line in text.splitlines() if line.count(":") >= 2]


def _in_unit(pid: Pid, unit: str, proc: str) -> bool:
    return any(path == "/" + unit or path.endswith("/" + unit) for path in read_cgroups(pid, proc))


def unit_pid(number: int, unit: str, level: t.Optional[int] = None, proc: str = "/proc") -> t.Optional[int]:
    """The pid, in this /proc's PID namespace, of the process of systemd unit ``unit`` (e.g. "x.service",
    matched by its cgroup) that is ``number`` in a namespace of its own: a unit with PrivatePIDs=yes reports
    pids of its own PID namespace (its first process is 1). ``level``: the index in the process's NSpid of
    the namespace ``number`` belongs to (None: the process's own, the last). None when no process, or more
    than one, of the unit matches."""
    def matches(pid: Pid) -> bool:
        nspid = read_status(pid, proc).get("nspid") or []
        index = len(nspid) - 1 if level is None else level
        return 0 <= index < len(nspid) and nspid[index] == number and _in_unit(pid, unit, proc)

    if number > 0 and matches(number):         # the unit shares this PID namespace: the same number
        return number
    try:
        found = [int(n) for n in os.listdir(proc) if n.isdigit() and matches(n)]
    except OSError:
        return None
    return found[0] if len(found) == 1 else None


# --------------------------------------------------------------------------- as the process's own user

def own_credentials(pid: Pid, proc: str = "/proc") -> t.Optional[t.Tuple[int, int]]:
    """(uid, gid) when PID's real, effective and saved ids are one uid and one gid: the credentials a reader
    takes to be let in where root is refused (no CAP_SYS_PTRACE); None otherwise or when PID is gone."""
    st = read_status(pid, proc)
    uids, gids = st.get("uid") or [], st.get("gid") or []
    if uids and gids and len(set(uids[:3])) == 1 and len(set(gids[:3])) == 1:
        return uids[0], gids[0]
    return None


def run_as(uid: int, gid: int, func: t.Callable[[T], bytes], arg: T, groups: t.Sequence[int] = ()) -> bytes:
    """func(arg) in a forked child that has exactly uid/gid and the supplementary ``groups`` (none by default):
    the bytes it returned, or b"" when it could not report (it failed before writing, or its deadline passed).
    ``func`` bounds what it returns. The core's one drop for a function: base/run_as.py call."""
    return call(uid, gid, func, arg, groups)


def call_as(uid: int, gid: int, func: t.Callable[[T], t.Any], arg: T, groups: t.Sequence[int] = ()) -> t.Any:
    """func(arg) (a JSON-serialisable result) as uid/gid and ``groups`` (see run_as); {} when it could not
    report."""
    data = run_as(uid, gid, lambda a: json.dumps(func(a)).encode("utf-8"), arg, groups)
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError:
        return {}


def _read_tagged(arg: t.Tuple[str, int]) -> bytes:
    path, limit = arg
    try:
        with open(path, "rb") as handle:
            return b"0" + handle.read(limit + 1)
    except (IOError, OSError) as exc:
        return b"1" + (exc.strerror or str(exc)).encode("utf-8", "replace")


def read_file_as(path: str, uid: int, gid: t.Optional[int], limit: int) -> ReadAs:
    """Read at most ``limit`` bytes of ``path`` as uid/gid (see run_as): (bytes, None) or (None, why not).
    An unknown gid (a status without Gid:) is a helper that cannot drop to it: it does not report."""
    data = run_as(uid, gid, _read_tagged, (path, limit)) if gid is not None else b""
    if not data:
        return ReadAs(None, "the helper running as uid %d could not report" % uid)
    if data[:1] == b"1":
        return ReadAs(None, data[1:].decode("utf-8", "replace"))
    return ReadAs(data[1:limit + 1], None)


# --------------------------------------------------------------------------- ptrace-protected links

def _readlinks(paths: t.Iterable[str]) -> t.Dict[str, str]:
    out = {}
    for path in paths:
        try:
            out[path] = os.readlink(path)
        except OSError as exc:
            out[path] = errname(exc)
    return out


def read_links(pid: Pid, names: t.Sequence[str], proc: str = "/proc") -> Links:
    """{name: link target or "error:…"} for /proc/PID/<name> (e.g. "ns/net", "exe").

    Returns Links(values, how): ``how`` says who read them ("probe" or "uid U gid G" for the
    same-credential fallback used when the probe itself was refused)."""
    paths = dict((name, os.path.join(proc, str(pid), name)) for name in names)
    got = _readlinks(paths.values())
    denied = [p for p, v in got.items() if v in DENIED_TEXT]
    how = "probe (uid %d)" % os.geteuid()
    own = own_credentials(pid, proc) if denied and os.geteuid() == 0 else None
    if own is not None:
        retry = call_as(own[0], own[1], _readlinks, denied)
        for path in denied:
            if path in retry:
                got[path] = retry[path]
        how = "same credentials as the process (uid %d gid %d)" % own
    return Links(dict((name, got[path]) for name, path in paths.items()), how)


def namespaces(pid: Pid, kinds: t.Sequence[str] = NS_KINDS, proc: str = "/proc") -> Links:
    """Links({kind: "net:[4026…]" or "error:…"}, how) for PID."""
    values, how = read_links(pid, ["ns/" + k for k in kinds], proc)
    return Links(dict((k, values["ns/" + k]) for k in kinds), how)


def sharers(targets: t.Mapping[str, str], exclude: t.Sequence[int] = (), proc: str = "/proc",
            limit: int = 5) -> Sharers:
    """Other processes in the namespaces ``targets`` ({kind: "net:[…]"}): Sharers({kind: [pid, …]} (at most
    ``limit`` each), unreadable count). One pass over /proc; links the probe may not read are retried
    with the credentials of the target's owner when that is the uid/gid of ``exclude[0]`` (a decoy
    holding the namespace usually runs as the same user); the rest are counted, not guessed."""
    found: t.Dict[str, t.List[t.Union[int, str]]] = dict((k, []) for k in targets)
    denied = []
    try:
        names = [n for n in os.listdir(proc) if n.isdigit() and int(n) not in exclude]
    except OSError:
        return Sharers(found, 0)
    root = os.path.join(proc, "")       # the same paths as os.path.join(proc, name, "ns", kind), joined once
    for name in names:
        for kind, value in targets.items():
            if len(found[kind]) >= limit:
                continue
            try:
                link = os.readlink(root + name + "/ns/" + kind)
            except OSError as exc:
                if exc.errno in DENIED:
                    denied.append(name)
                    break
                continue
            if link == value:
                found[kind].append(int(name))
    if not (denied and exclude and os.geteuid() == 0):
        return Sharers(found, len(denied))
    own = read_status(exclude[0], proc)
    uid, gid = (own.get("uid") or [None])[0], (own.get("gid") or [None])[0]
    same = [n for n in denied if (read_status(n, proc).get("uid") or [None])[0] == uid]
    if same and uid is not None and gid is not None:
        paths = [os.path.join(proc, n, "ns", k) for n in same for k in targets]
        links = call_as(uid, gid, _readlinks, paths)
        for name in same:
            for kind, value in targets.items():
                if len(found[kind]) < limit and links.get(os.path.join(proc, name, "ns", kind)) == value:
                    found[kind].append(int(name))
    return Sharers(found, len(denied) - len(same))


def nsfs_binds(targets: t.Mapping[str, str], proc: str = "/proc") -> t.Dict[str, t.List[str]]:
    """Where the namespaces ``targets`` ({kind: "net:[…]"}) are kept alive by a bind of their nsfs inode (as
    "ip netns add" makes) in the reader's own mount table: {kind: [mount point, …]}."""
    here = read_mounts("self", proc)
    out: t.Dict[str, t.List[str]] = {}
    for m in here if isinstance(here, list) else []:
        for kind, value in targets.items():
            if m["fstype"] == "nsfs" and m["root"] == value:
                out.setdefault(kind, []).append(m["mountpoint"])
    return out


def _fd_table(fd_dir: str) -> t.Union[t.Dict[str, t.Dict[str, str]], str]:
    """{fd: {"link": …, "type": fifo|chr|dir|reg|sock|blk|lnk|anon|error:…}} of one /proc/PID/fd."""
    kinds = ((stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "chr"), (stat.S_ISDIR, "dir"), (stat.S_ISREG, "reg"),
             (stat.S_ISSOCK, "sock"), (stat.S_ISBLK, "blk"), (stat.S_ISLNK, "lnk"))
    try:
        names = sorted(os.listdir(fd_dir), key=lambda n: int(n) if n.isdigit() else -1)
    except OSError as exc:
        return errname(exc)
    out = {}
    for name in names[:256]:
        path = os.path.join(fd_dir, name)
        try:
            link = os.readlink(path)
        except OSError as exc:
            link = errname(exc)
        entry = {"link": link}
        try:
            st = os.stat(path)
            kind = [k for test, k in kinds if test(st.st_mode)]
            what = kind[0] if kind else ("anon" if link.startswith("anon_inode:") else "other")
            if what in ("chr", "blk"):
                entry["rdev"] = "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
                entry.update(_fdinfo(os.path.join(os.path.dirname(fd_dir), "fdinfo", name)))
        except OSError as exc:
            what = errname(exc)
        entry["type"] = what
        out[name] = entry
    return out


# fdinfo lines that say where a device descriptor leads: the interface a tun/tap descriptor is attached to,
# the terminal a pty master controls (never a file's contents)
_FDINFO_KEYS = {"iff": "iff", "tty-index": "tty_index"}


def _fdinfo(path: str) -> t.Dict[str, str]:
    try:
        text = read_text(path, limit=4096)
    except (IOError, OSError):
        return {}
    out = {}
    for line in text.splitlines():
        key, _sep, value = line.partition(":")
        if key.strip() in _FDINFO_KEYS:
            out[_FDINFO_KEYS[key.strip()]] = value.strip()[:64]
    return out


def as_owner_if_denied(pid: Pid, proc: str, denied: bool, func: t.Callable[[str], t.Any], arg: str,
                       got: t.Any) -> t.Any:
    """``got``, or - when it was refused and the probe is root - func(arg) read with PID's own uid and gid."""
    own = own_credentials(pid, proc) if denied and os.geteuid() == 0 else None
    if own is None:
        return got
    return call_as(own[0], own[1], func, arg) or got


def open_files(pid: Pid, proc: str = "/proc") -> t.Union[t.Dict[str, t.Dict[str, str]], str]:
    """PID's open file descriptors ({fd: {link, type}}) or an error string. Listing them needs ptrace
    read access: refused as root (no CAP_SYS_PTRACE), they are read with PID's own uid and gid."""
    fd_dir = os.path.join(proc, str(pid), "fd")
    got = _fd_table(fd_dir)
    denied = got in DENIED_TEXT or (isinstance(got, dict) and any(
        v["link"] in DENIED_TEXT for v in got.values()))
    return t.cast("t.Union[t.Dict[str, t.Dict[str, str]], str]",
                  as_owner_if_denied(pid, proc, denied, _fd_table, fd_dir, got))


def _map_table(path: str) -> t.Union[t.List[t.List[t.Any]], str]:
    """The file-backed mappings of one /proc/PID/maps: sorted unique [device "M:m", inode, path]."""
    try:
        text = read_text(path)
    except (IOError, OSError) as exc:
        return errname(exc)
    out = set()
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6 or fields[4] == "0" or fields[5].startswith("["):
            continue
        major, _sep, minor = fields[3].partition(":")
        try:
            dev = "%d:%d" % (int(major, 16), int(minor, 16))
        except ValueError:
            continue
        out.add((dev, int(fields[4]), fields[5]))
    return [list(m) for m in sorted(out)][:200]


def mapped_files(pid: Pid, proc: str = "/proc") -> t.Union[t.List[t.List[t.Any]], str]:
    """The files PID has mapped (its executable and libraries): [[device, inode, path], …] or an error
    string; read with PID's own uid and gid where root may not (maps needs ptrace read access)."""
    path = os.path.join(proc, str(pid), "maps")
    got = _map_table(path)
    return t.cast("t.Union[t.List[t.List[t.Any]], str]",
                  as_owner_if_denied(pid, proc, got in DENIED_TEXT, _map_table, path, got))
