# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the sandbox holds, judged from outside (issue 41): every descriptor of the payload by where it leads, its
session and controlling terminal, and what lies on the sandbox's root itself. Checks of evidence.evaluate(), on
the outside witness's readings (witness.py, host/holdings.py); deny by default.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import typing as t

from ..base.records import Json
from ..host.procfs import is_error
from .payload import Reference


class Scene(t.Protocol):
    """What these checks read of evidence's scene of one run."""
    spec: Json
    obs: Json
    host: Json
    outside: Json
    payload: Json
    pid: t.Optional[int]
    ref: Reference
    declared: t.List[str]
    binds: t.Dict[str, str]

    def add(self, name: str, rule: str, expected: t.Any, observed: t.Any, ok: t.Any) -> None:
        ...


def unread(sc: Scene, value: t.Any, kind: type, what: str) -> t.List[str]:
    """Why a reading of the payload process proves nothing ([] when it is a ``kind``)."""
    if sc.pid is None or value is None:
        return ["not proven: the payload process was not found outside"]
    if not isinstance(value, kind):
        return ["not proven: %s gave %s" % (what, value)]
    return []


# The only character devices a descriptor of the payload may lead to: the memory-class nodes bwrap's --dev makes
# (device numbers fixed by the kernel, Documentation/admin-guide/devices.txt). /dev/tty (5:0) is the opener's
# controlling terminal: a terminal, like the consoles, virtual consoles (vcs), ptys and serial lines below.
MEM_NODES = {"1:3": "null", "1:5": "zero", "1:7": "full", "1:8": "random", "1:9": "urandom"}
_TERMINAL_MAJORS = frozenset([2, 3, 4, 5, 7, 136, 137, 138, 139, 140, 141, 142, 143, 166, 188, 204, 229])
_DEVICE_NAMES = {"1:1": "mem", "1:2": "kmem", "1:4": "port", "1:11": "kmsg", "10:200": "net/tun", "5:0": "tty",
                 "5:1": "console", "5:2": "ptmx (a pty master)"}
_NS_LINK = ("cgroup:[", "ipc:[", "mnt:[", "net:[", "pid:[", "pid_for_children:[", "time:[", "time_for_children:[",
            "user:[", "uts:[")
# kind of descriptor -> the code it is reported with (base/codes_probe.py)
DESCRIPTOR_CODES = {"outside": "probe_descriptor_outside", "terminal": "probe_descriptor_terminal",
                    "device": "probe_descriptor_device", "block": "probe_descriptor_block",
                    "namespace": "probe_descriptor_namespace", "pidfd": "probe_descriptor_pidfd",
                    "watch": "probe_descriptor_watch", "file": "probe_descriptor_file",
                    "unseen": "probe_descriptor_unseen"}


def _holders_text(pids: t.Sequence[int], comm: t.Mapping[str, t.Any]) -> str:
    return ", ".join("pid %d (%s)" % (p, comm.get(str(p)) or "?") for p in pids[:4])


def _channel(sc: Scene, fd: str, link: str, holders: Json) -> t.Optional[t.Tuple[str, str]]:
    """(kind, why) the pipe or socket ``link`` (at descriptor ``fd``) leads outside the sandbox or to no end the
    probe can find ("unseen"), None when it does not:
    every other holder must be the sandbox's (bwrap's child and below, bwrap) or the probe's own collector; the
    stdio slots must be the probe's own pipes; a socket must be one of the sandbox's own network namespace. A pipe
    of the probe's own leads to the probe: it holds the other end, and no one else can (the same end held by
    another process is no channel to the sandbox)."""
    if fd in ("0", "1", "2") and link in (holders.get("own_pipes") or []):
        return None
    held = (holders.get("held") or {}).get(link) or []
    inside = set(holders.get("sandbox") or []) | set([sc.outside.get("launcher"), sc.pid])
    collectors = set(sc.outside.get("collectors") or [])
    outsiders = [p for p in held if p not in inside and p not in collectors]
    comm = holders.get("comm") or {}
    if outsiders:
        said = _holders_text(outsiders, comm)
        return "outside", "%s -> %s, also held by %s outside the sandbox" % (fd, link, said)
    if fd in ("0", "1", "2"):
        return "outside", "%s -> %s: the payload's std%s is not the probe's own pipe%s" % (
            fd, link, ("in", "out", "err")[int(fd)], " (held by %s)" % _holders_text(held, comm) if held else "")
    if link.startswith("pipe:["):
        why = _pipe_other_end(sc, fd, link, holders, inside | collectors)
        return ("unseen", why) if why else None
    if link.startswith("socket:["):
        own = holders.get("own_sockets")
        mine, ref = (sc.payload.get("ns") or {}).get("net"), sc.ref.ns.get("net")
        if not isinstance(own, list):
            return "outside", "%s -> %s: not proven (the sandbox's sockets could not be read: %s)" % (fd, link, own)
        peer = (holders.get("peers") or {}).get(link)
        there = ((holders.get("held") or {}).get(peer) or []) if peer else []
        if peer and not there:
            return "unseen", "%s -> %s: its peer %s is held by no process of the sandbox or the probe (none seen " \
                "holding it: it is kept in flight in a socket's queue or held out of sight, a channel to whoever " \
                "takes it)" % (fd, link, peer)
        if link not in own:
            return "outside", "%s -> %s: a socket of another network namespace (made outside the sandbox)%s" % (
                fd, link, ", connected to %s held by %s" % (peer, _holders_text(there, comm)) if there else
                ", connected to %s" % peer if peer else "")
        if peer and not set(there) & (inside | collectors):
            return "outside", "%s -> %s: its peer %s is held by %s, outside the sandbox" % (
                fd, link, peer, _holders_text(there, comm))
        if mine == ref:
            return "outside", "%s -> %s: a socket of the parent context's network namespace (shared: where it " \
                "leads is not proven)" % (fd, link)
    return None


def _pipe_other_end(sc: Scene, fd: str, link: str, holders: Json, inside: t.Set[t.Any]) -> t.Optional[str]:
    """Why the other end of the pipe ``link`` is not proven to be the sandbox's, None when it is: a process
    inside the sandbox holds the end of the other direction (found in every process's and thread's table). An
    end no process holds (kept in flight in a socket's queue, sent with SCM_RIGHTS and never received), one held
    where the tables read do not show it, or one in a table that could not be read: unknown, a failure."""
    sides = (holders.get("ends") or {}).get(link) or {}
    mine = [side for side in ("read", "write") if sc.pid in (sides.get(side) or [])]
    if len(mine) != 1:
        return None if len(mine) == 2 else "%s -> %s: not proven (which end of the pipe the payload holds was " \
            "not read)" % (fd, link)
    other = "write" if mine == ["read"] else "read"
    if any(p in inside for p in sides.get(other) or []):
        return None
    unread = holders.get("unreadable") or 0
    return "%s -> %s: the payload holds the %s end; no process of the sandbox or the probe holds the %s end " \
        "(none seen holding it%s: it is kept in flight in a socket's queue or held out of sight, a channel to " \
        "whoever takes it)" % (fd, link, mine[0], other,
                               ", %d descriptor tables unread" % unread if unread else "")


def _descriptor_finding(sc: Scene, fd: str, info: Json, holders: t.Optional[Json]) -> t.Optional[t.Tuple[str, str]]:
    """(kind, what it is and where it leads) of one descriptor of the payload that must not be there, None for
    one that may: deny by default (only the probe's own pipes, channels within the sandbox and the memory-class
    nodes of --dev)."""
    link, kind, rdev = str(info.get("link")), info.get("type"), info.get("rdev")
    if is_error(link) or is_error(kind):
        return "file", "%s: not proven (%s)" % (fd, link if is_error(link) else kind)
    if kind in ("fifo", "sock") and link.startswith(("pipe:[", "socket:[")):
        if holders is None:
            return "outside", "%s -> %s: not proven (who else holds it was not read)" % (fd, link)
        return _channel(sc, fd, link, holders)
    if kind == "fifo":
        return "outside", "%s -> %s (a named pipe of the host)" % (fd, link)
    if kind == "chr":
        if rdev in MEM_NODES:
            return None
        head = str(rdev).split(":", maxsplit=1)[0]
        major = int(head) if head.isdigit() else -1
        name = _DEVICE_NAMES.get(str(rdev)) or ("pts/%s" % str(rdev).split(":")[1] if 136 <= major <= 143 else None)
        more = "".join(", %s %s" % (k.replace("_", " "), info[k]) for k in ("iff", "tty_index") if info.get(k))
        what = "%s -> %s (character device %s%s%s)" % (fd, link, rdev, ": " + name if name else "", more)
        return ("terminal" if major in _TERMINAL_MAJORS else "device"), what
    if kind == "blk":
        return "block", "%s -> %s (block device %s)" % (fd, link, rdev)
    if link.startswith(_NS_LINK):
        return "namespace", "%s -> %s (a namespace)" % (fd, link)
    if link == "anon_inode:[pidfd]":
        return "pidfd", "%s -> %s (a process of the host)" % (fd, link)
    if link.startswith("anon_inode:") or kind == "anon":
        return "watch", "%s -> %s" % (fd, link)
    return "file", "%s -> %s (%s)" % (fd, link, kind)


def check_descriptors(sc: Scene) -> None:
    """9b. Every descriptor the payload holds, read from outside (/proc/PID/fd and fdinfo), judged by where it
    leads: a pipe or socket only when every other holder is in the sandbox or the probe's collector (and the
    stdio slots are the probe's own pipes), a character device only when it is a memory-class node of --dev;
    a terminal, another device, a block device, a namespace, a pidfd, an event/watch descriptor or a file or
    directory from outside (openat reaches the host past every mount): never."""
    fds = sc.payload.get("fds")
    problems = unread(sc, fds, dict, "listing its descriptors")
    findings: t.List[t.List[str]] = []
    if not problems and isinstance(fds, dict):
        holders = sc.payload.get("fd_holders")
        for fd, info in sorted(fds.items(), key=lambda i: int(i[0]) if i[0].isdigit() else -1):
            got = _descriptor_finding(sc, fd, info, holders if isinstance(holders, dict) else None)
            if got:
                findings.append(list(got))
        for slot in ("0", "1", "2"):
            if slot not in fds:
                findings.append(["outside", "%s: closed, the probe gave the payload its own pipe there" % slot])
        files = [w for k, w in findings if k == "file"]
        if files:
            problems.append("descriptors from outside: %s" % ", ".join(files[:6]))
        problems.extend(w for k, w in findings if k != "file")
    sc.add("no_leaked_descriptors", "R-SCOPE-1", "only the probe's own pipes (its stdio), channels within the "
           "sandbox and --dev's memory nodes (null, zero, full, random, urandom) are open",
           {"fds": dict(list(fds.items())[:12]) if isinstance(fds, dict) else fds, "problems": problems[:12],
            "kinds": findings[:12]}, not problems)


def check_terminal(sc: Scene) -> None:
    """9d. The payload's session has no controlling terminal (host /proc/PID/stat: session, tty_nr), as the
    service under systemd has none: with one, any process of the session opens /dev/tty and pushes input to
    the terminal's reader (TIOCSTI, unless dev.tty.legacy_tiocsti=0) or reads and writes it."""
    session = sc.payload.get("session")
    problems = unread(sc, session, dict, "reading its session")
    if not problems and isinstance(session, dict) and "tty_nr" not in session:
        problems.append("not proven: /proc/%s/stat could not be read" % sc.pid)
    elif not problems and isinstance(session, dict) and session["tty_nr"]:
        problems.append("the payload (session %s, process group %s) has a controlling terminal (character device "
                        "%s): it opens /dev/tty without any descriptor left to it, reads and writes the terminal "
                        "and pushes input to the terminal's shell with TIOCSTI: %s" % (
                            session.get("session"), session.get("pgrp"), session.get("tty"),
                            _tiocsti(sc.host.get("legacy_tiocsti"))))
    sc.add("no_controlling_terminal", "R-SCOPE-1", "no controlling terminal (a service under systemd has none)",
           dict(session or {}, problems=problems) if isinstance(session, dict)
           else {"session": session, "problems": problems},
           not problems)


def _tiocsti(value: t.Any) -> str:
    if value == "0":
        return "dev.tty.legacy_tiocsti = 0 on this host (TIOCSTI needs CAP_SYS_ADMIN; reading and writing remain)"
    if value == "1":
        return "dev.tty.legacy_tiocsti = 1 on this host (TIOCSTI is allowed)"
    return "dev.tty.legacy_tiocsti is absent on this kernel (before Linux 6.2: TIOCSTI is always allowed)" \
        if value is None else "dev.tty.legacy_tiocsti could not be read (%s)" % value


def _changed_files(found: t.Mapping[str, t.Any], files: t.Mapping[str, t.Any]) -> t.List[str]:
    """A file the profile copies onto the root (--file FD DEST) that is not a regular file of the size it declares
    (its content swapped, or another type); a declared file without a size is not proven."""
    out: t.List[str] = []
    for dest, size in sorted(files.items()):
        rel = os.path.normpath(dest).strip("/")
        entry = found.get(rel)
        if not isinstance(size, int) or isinstance(size, bool):
            out.append("/%s: not proven (the profile declares no size for the file it copies there)" % rel)
        elif entry is None:
            out.append("/%s: the profile copies a file of %d bytes there, none is on the root" % (rel, size))
        elif entry[1] != "f":
            out.append("/%s: the profile copies a file of %d bytes there, the root holds a %s" % (
                rel, size, _KIND_WORDS.get(entry[1], "other object")))
        elif len(entry) < 3 or entry[2] != size:
            out.append("/%s: a file of %s bytes, the profile declares %d (its content swapped)" % (
                rel, entry[2] if len(entry) > 2 else "(unread)", size))
    return out


def _swapped_files(found: t.Mapping[str, t.Any], files: t.Mapping[str, t.Any],
                   digests: t.Mapping[str, t.Any]) -> t.List[str]:
    """A file the profile copies onto the root, of its declared size, whose content is not the content the profile
    gives bwrap there (its sha256, read from outside through /proc/PID/root: a swap of the same size); a declared
    file without a digest, or whose digest could not be read, is not proven. (Another size or type:
    _changed_files.)"""
    out: t.List[str] = []
    for dest, size in sorted(files.items()):
        rel = os.path.normpath(dest).strip("/")
        entry = found.get(rel)
        if entry is None or entry[1] != "f" or len(entry) < 3 or entry[2] != size:
            continue
        want = digests.get(dest)
        got = entry[3] if len(entry) > 3 else "error:unread"
        if not isinstance(want, str) or len(want) != 64:
            out.append("/%s: not proven (the profile declares no sha256 for the file it copies there)" % rel)
        elif not isinstance(got, str) or is_error(got):
            out.append("/%s: not proven (its content could not be hashed from outside: %s)" % (rel, got))
        elif got != want.lower():
            out.append("/%s: a file of the declared %s bytes with sha256 %s, the profile gives bwrap content with "
                       "sha256 %s (its content swapped)" % (rel, size, got, want.lower()))
    return out


def _changed(entries: t.List[t.Any], symlinks: t.Mapping[str, t.Any], parents: t.Set[str],
             files: t.Mapping[str, t.Any]) -> t.List[str]:
    """What lies on the root where the profile makes something else (issue 51): a declared symlink that is not a
    symlink with the declared target (a file copied under its name, another target, absent or covered by a
    mount), a declared file not of its declared size, a directory above a destination that is not a directory."""
    found = dict((str(e[0]), e) for e in entries if not is_error(e[0]))
    out = _changed_files(found, files)
    for dest, target in sorted(symlinks.items()):
        rel = os.path.normpath(dest).strip("/")
        entry = found.get(rel)
        if entry is None:
            out.append("/%s: the profile makes a symlink to %s, none is on the root (absent, or a mount covers it)"
                       % (rel, target))
        elif entry[1] != "l":
            out.append("/%s: the profile makes a symlink to %s, the root holds a %s%s" % (
                rel, target, _KIND_WORDS.get(entry[1], "other object"),
                " of %s bytes" % entry[2] if entry[1] == "f" and len(entry) > 2 else ""))
        elif len(entry) < 3 or entry[2] != target:
            out.append("/%s: a symlink to %s, the profile makes one to %s" % (
                rel, entry[2] if len(entry) > 2 else "(unread)", target))
    placed = [os.path.normpath(d).strip("/") for d in list(symlinks) + list(files)]
    for rel in sorted(parents):
        entry = found.get(rel)
        if entry is not None and entry[1] != "d" and rel not in placed:
            out.append("/%s: a directory above what the profile places, the root holds a %s" % (
                rel, _KIND_WORDS.get(entry[1], "other object")))
    return out


_KIND_WORDS = {"d": "directory", "l": "symlink", "f": "file", "o": "special file"}


def check_root_content(sc: Scene) -> None:
    """5c. Everything on the sandbox's root file system itself (not under a mount), listed from outside through
    /proc/PID/root, is what the profile creates there: its destinations and the directories above them, each of
    the type the profile makes (a declared symlink a symlink with the declared target). A file copied onto the
    root (--file FD PATH, --bind-data) without a mount is undeclared content, under a declared name too."""
    entries = sc.payload.get("root_entries")
    problems = unread(sc, entries, list, "listing its root")
    extra: t.List[str] = []
    swapped: t.List[str] = []
    if not problems and isinstance(entries, list):
        created = sc.spec.get("created")
        places = set(created if isinstance(created, list) else sc.declared + list(sc.binds))
        allowed: t.Set[str] = set()
        parents: t.Set[str] = set()
        for dest in places:
            parts = os.path.normpath(dest).strip("/").split("/")
            allowed.update("/".join(parts[:i + 1]) for i in range(len(parts)))
            parents.update("/".join(parts[:i + 1]) for i in range(len(parts) - 1))
        for entry in entries:
            rel, kind = entry[0], entry[1]
            if is_error(rel) or is_error(kind):
                problems.append("not proven: %s %s" % ("/" + str(rel) if not is_error(rel) else "the root",
                                                       kind or rel))
            elif rel not in allowed:
                extra.append("/%s (%s)" % (rel, _KIND_WORDS.get(kind, "other")))
        if len(entries) > 200:
            problems.append("not proven: more than 200 entries on the sandbox's root")
        if extra:
            problems.append("on the sandbox's root but not created by the profile: %s" % ", ".join(extra[:8]))
        symlinks = sc.spec.get("symlinks")
        files = sc.spec.get("files")
        changed = _changed(entries, symlinks if isinstance(symlinks, dict) else {}, parents,
                           files if isinstance(files, dict) else {})
        if changed:
            problems.append("on the sandbox's root, not what the profile makes there: %s" % "; ".join(changed[:8]))
        extra.extend(changed)
        digests = sc.spec.get("file_digests")
        swapped = _swapped_files(dict((str(e[0]), e) for e in entries if not is_error(e[0])),
                                 files if isinstance(files, dict) else {}, digests if isinstance(digests, dict) else {})
    sc.add("root_content_declared", "R-SCOPE-1", "only what the profile creates lies on the sandbox's own root, "
           "each of the type it makes (its symlinks with their targets, its files of their sizes and sha256s)",
           {"entries": len(entries) if isinstance(entries, list) else entries, "undeclared": extra[:12],
            "problems": problems, "swapped": swapped[:8]}, not problems and not swapped)
