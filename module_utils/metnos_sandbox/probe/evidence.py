# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The evaluation: both witnesses (inside: the payload's report; outside: the host's /proc) judged check by
check against the profile's expectations (evaluate); a permission error is never proof.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import typing as t

from ..base.paths import under
from ..base.records import Json
from ..host import procfs
from . import attributes, held, keyrings, proc_covers
from .payload import DEV_ENTRIES, DEV_NODES, PROC_SUPER_MAGIC, SIGKILL, TMPFS_MAGIC, Reference


# --------------------------------------------------------------------------- evaluation
def _err(value: object) -> bool:
    return value is None or procfs.is_error(value)


def reference(outside: Json, host: Json) -> Reference:
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
        return Reference(host.get("ns") or {},
                         "the probe (neither the parent context nor bwrap's links are "
                         "readable: %s)" % (", ".join("%s=%s" % (k, v) for k, v in sorted(pns.items())
                                                      if _err(v))
                                            or "bwrap not known"), [])
    moved = [k for k in procfs.NS_KINDS if ref is not pns and not _err(pns.get(k)) and not _err(ref.get(k))
             and pns.get(k) != ref.get(k)]
    return Reference(ref, ref_from, moved, depth)


def _known_devices(outside: Json, host: Json) -> t.Set[str]:
    devs = procfs.devices(host.get("mounts") or [])
    for key in ("parent", "context"):
        more = (outside.get(key) or {}).get("mounts")
        if isinstance(more, list):
            devs |= procfs.devices(more)
    return devs


def _context_mounts(outside: Json, host: Json) -> t.Optional[t.List[procfs.Mount]]:
    """The mount table binds are taken from: the parent context's (see reference)."""
    context = outside.get("context") or {}
    if context:
        return context.get("mounts") or (outside.get("parent") or {}).get("mounts") or None
    return host.get("mounts") or None


def _foreign(mounts: t.Sequence[procfs.Mount], dest: str, tree: t.Mapping[str, t.Collection[t.Any]],
             skip: t.Sequence[str] = (), context: t.Optional[t.Sequence[procfs.Mount]] = None,
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
        if context and src and (m["dev"], m["root"]) == procfs.source_of(context, os.path.normpath(os.path.join(src,
                                                                                                                rel))):
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
        self.mounts: t.Optional[t.List[procfs.Mount]] = mounts if isinstance(mounts, list) else None
        self.visible = procfs.visible_mounts(self.mounts) if self.mounts is not None else None
        self.ctx_mounts = _context_mounts(self.outside, host)
        self.known = _known_devices(self.outside, host)
        self.binds: t.Dict[str, str] = spec.get("binds") or {}
        self.declared: t.List[str] = [d for key in ("ro", "rw", "tmpfs", "dev", "proc") for d in spec.get(key, [])]
        self.pid: t.Optional[int] = self.outside.get("payload_pid")
        self.ref = reference(self.outside, host)
        self.proc_ok = False
        self.checks: t.List[Json] = []

    def add(self, name: str, rule: str, expected: t.Any, observed: t.Any, ok: t.Any) -> None:
        self.checks.append({"name": name, "rule": rule, "expected": expected, "observed": observed, "ok": bool(ok)})

    def inner(self, dest: str) -> t.List[str]:
        """Declared destinations strictly below ``dest`` (another check's business)."""
        return [d for d in self.declared if d != dest and under(d, dest)]

    def mount_at(self, dest: str) -> t.Optional[procfs.Mount]:
        return procfs.mount_at(self.mounts, dest) if self.mounts is not None else None


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


def _proc_foreign(sc: _Scene, dest: str, mount: procfs.Mount) -> t.List[str]:
    """Mounts below a procfs that are neither what the parent context has mounted below its /proc nor one of
    the names bwrap may cover read-only with a bind of the procfs itself (proc_covers.COVER_NAMES: whether
    each cover is there as it should be is proc_covers' check)."""
    if sc.visible is None or not sc.ctx_mounts:
        raise AssertionError("procfs mounts judged without the payload's view or the parent context")
    tree = procfs.bind_tree(sc.ctx_mounts, "/proc")
    for name in proc_covers.COVER_NAMES:
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
            problems = proc_covers.judge(sc.visible, dest, mount, exp, sc.ctx_mounts)
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
    if "pid" in sc.spec.get("unshare", []):      # a device's own PID namespace: device.py proves it (R-SCOPE-4)
        return
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


def _tmpfs_mount_problems(sc: _Scene, dest: str, inside: Json, mount: t.Optional[procfs.Mount]) -> t.List[str]:
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


def _dev_mount_problems(sc: _Scene, dest: str, mount: t.Optional[procfs.Mount]) -> t.List[str]:
    """The mounts in a --dev that bwrap does not make (a bind of the parent's /dev/<node>, a new devpts)."""
    if sc.visible is None or not sc.ctx_mounts:
        return ["not proven: the parent context's mount table was not read"] if sc.mounts is not None else []
    ctx_mounts = sc.ctx_mounts
    tree = dict((name, set([procfs.source_of(ctx_mounts, "/dev/" + name)])) for name in DEV_NODES)
    tree["pts"] = set((m["dev"], "/") for m in procfs.mounts_under(sc.visible, dest)
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
        elif procfs.mount_at(sc.visible, dest) is not None:    # no mount at all: read_only/writable say so
            other = _foreign(sc.visible, dest, procfs.bind_tree(sc.ctx_mounts, src), sc.inner(dest), sc.ctx_mounts, src)
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
    """5. Read-only binds: the kernel's mount flags, inside (statvfs) and outside (mount table): the mount each path
    reaches (the top of a stack at one mount point, mount_at / visible_mounts), never one hidden under another."""
    not_ro = [d for key in ("rw", "tmpfs", "dev", "proc") for d in sc.spec.get(key, [])]
    for dest in sc.spec.get("ro", []):
        inside = (sc.obs.get("ro") or {}).get(dest) or {}
        problems = []
        if inside.get("flags") != "ro":
            problems.append("inside: %s" % ("mounted read-write" if inside.get("flags") == "rw"
                                            else "not proven (%s)" % inside.get("flags")))
        mount = None
        if sc.mounts is not None:
            mount = procfs.mount_at(sc.mounts, dest)
            if mount is None:
                problems.append("outside: no mount at %s" % dest)
            elif not procfs.read_only(mount):
                problems.append("outside: %s is mounted %s" % (dest, ",".join(mount["opts"][:3])))
            # what a path reaches (the top of each stack): a writable mount hidden under another is no way in
            below = [m["mountpoint"] for m in procfs.mounts_under(sc.visible or [], dest)
                     if not procfs.read_only(m) and not any(under(m["mountpoint"], d) for d in not_ro)]
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
            cover = procfs.covering_mount(sc.mounts, path)
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
        sc.add("parent_death_signal", "R-BASE-6", SIGKILL, sc.obs.get("pdeathsig"),
               sc.obs.get("pdeathsig") == SIGKILL)


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


def _check_payload_code(sc: _Scene) -> None:
    """9c. The payload's code - its interpreter and every library it mapped - comes from the declared
    binds (the devices of the mounts at and below them), never from the sandbox's own tmpfs
    (a library planted with --file/--bind-data and LD_PRELOAD) or anywhere else."""
    mapped = sc.payload.get("mapped")
    problems = held.unread(sc, mapped, list, "reading its mappings")
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
    held.check_root_content, _check_read_only, _check_writable, _check_hidden, _check_parent_death,
    _check_capabilities, held.check_descriptors, held.check_terminal, _check_payload_code, _check_seccomp,
    attributes.check_attributes, keyrings.check_keyrings)


def _hex(value: t.Any) -> t.Any:
    return "0x%x" % value if isinstance(value, int) else value
