# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Command channels: the sockets, FIFOs and device nodes a grant would expose, denied by default.

A socket, a FIFO or a device node is a channel to a host process or to the kernel, and a read-only bind
does not close it (connect(2) and write(2) work through one). Each is refused, named directly or found
below a granted folder, unless the admin allows that exact path with a reason (host.allow_channels). The
known channels (the system and user buses, journald and syslog, systemd's own sockets, container engines,
ssh and gpg agents) have their own codes (KNOWN); any other is channel_refused.

A granted folder is searched as bwrap binds it: recursively (a mount below it comes along, and os.scandir
sees the top mount at each point, as the bind does), symbolic links not followed (inside the sandbox a
link resolves in the new root, where only what is bound exists). The search is bounded by a budget of
entries per render; a folder too large to search, or unreadable, is refused (channel_walk_bound), never
passed as clean.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import fnmatch
import os
import stat
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

from ..base import diagnostics, paths, tree_walk
from ..base.records import Record

MAX_WALK_ENTRIES = 20000          # entries looked at per render, over every granted folder
# ... and over the base trees searched like a grant (python package roots, the python prefix, the runtime): their
# own bound, so that a large virtual environment is searched rather than refused (measured: a real venv with ansible,
# mypy, ruff and pytest holds 12,714 entries, listed in 0.2 s from d_type alone; a stat only for what is neither a
# folder, a file nor a link). Still bounded: a base tree past it is refused (channel_walk_bound), never passed.
MAX_BASE_WALK_ENTRIES = 100000
SYSTEM_BUS = "/run/dbus/system_bus_socket"
# The known channels, first match wins, matched (fnmatch: '*' crosses '/') on the resolved path and on the
# name; the rest is channel_refused.
KNOWN = (
    ("channel_system_bus", (SYSTEM_BUS, "/var/run/dbus/system_bus_socket"), ()),
    ("channel_user_bus", ("/run/user/*/bus", "/run/user/*/dbus-1/*"), ()),
    ("channel_journal", ("/run/systemd/journal/*", "/dev/log"), ()),
    ("channel_container_engine", ("/run/podman/*", "/run/docker.sock", "/var/run/docker.sock", "/run/docker/*",
                                  "/run/containerd/*", "/run/crio/*", "/run/buildkit/*", "/run/user/*/podman/*",
                                  "/run/user/*/docker.sock"),
     ("docker.sock", "podman.sock", "containerd.sock", "crio.sock", "buildkitd.sock")),
    ("channel_agent", ("/run/user/*/gnupg/*", "*/.gnupg/*", "/run/user/*/keyring/*", "*/ssh-*/agent.*"),
     ("S.gpg-agent*", "ssh-agent*", "gpg-agent*", "agent.[0-9]*")),
    ("channel_systemd", ("/run/systemd/*",), ()),
)
TYPES = {"socket": "a socket", "FIFO": "a FIFO", "device": "a device node"}
# Pseudo-filesystems searched as plain trees (their device nodes are found as channels); every other one is
# refused below (PLAIN_FSTYPES).
SEARCHED_PSEUDO = frozenset(("devtmpfs", "devpts"))
# Filesystems that are plain directory trees (files, folders, links: what a socket or FIFO in them is, the walk
# sees). Any other type bound with a grant is not judged clean (issue 50, deny by default): a POSIX
# message-queue filesystem is a channel (channel_message_queue), every other one - proc, sysfs, cgroup, a FUSE
# daemon's, an unknown or unread type - is refused as unjudged (channel_filesystem_unjudged).
PLAIN_FSTYPES = frozenset((
    "ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "overlay", "zfs", "f2fs", "vfat", "msdos", "exfat",
    "ntfs", "ntfs3", "squashfs", "iso9660", "udf", "erofs", "jfs", "reiserfs", "nilfs2", "hfsplus", "nfs", "nfs4",
    "cifs", "smb3", "9p", "virtiofs", "bcachefs"))
MESSAGE_QUEUES = "mqueue"


def kind_of(mode: int) -> Optional[str]:
    """'socket', 'FIFO' or 'device' for a file mode; None for a file, a folder or a link."""
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    return "device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else None


def code_of(path: str) -> str:
    """The code of a channel at ``path`` (resolved): a known channel's own, else channel_refused."""
    name = os.path.basename(path)
    for code, patterns, names in KNOWN:
        if any(fnmatch.fnmatchcase(path, p) for p in patterns) or any(fnmatch.fnmatchcase(name, n) for n in names):
            return code
    return "channel_refused"


def refusal(path: str, kind: str, what: str, folder: Optional[str] = None) -> diagnostics.Diagnostic:
    """The refusal of one channel, named by a grant (``folder`` None) or found below a granted ``folder``."""
    fill: Dict[str, Any] = {"what": diagnostics.excerpt(what, 300), "kind": TYPES.get(kind, kind)}
    if folder is not None:
        fill["folder"] = folder
    return diagnostics.make(code_of(path), wording="named" if folder is None else "below", fill=fill,
                            path=diagnostics.excerpt(path, 600))


class Found(Record):
    path: str
    kind: str


class Walk(Record):
    """What a bounded search of a granted folder found: the channels, and why it stopped early (``stop``:
    'entries', 'deep', 'unreadable' or 'changed', at ``where``, with the ``error``)."""
    found: List[Found]
    stop: Optional[str] = None
    where: str = ""
    error: str = ""


def walk(root: str, budget: List[int], skip: FrozenSet[str] = frozenset()) -> Walk:
    """Below ``root`` (a resolved folder), by descriptor (tree_walk.tree: never through a symbolic link, a folder
    swapped while searched stops it, "changed"; only what is neither a folder, a file nor a link is lstat'ed:
    special_only); ``budget``: the entries this render may still look at (shared by every walk of the render,
    decremented); ``skip``: mount points not entered (odd_filesystems: refused on their own)."""
    found: List[Found] = []
    if root in skip:
        return Walk(found)
    try:
        for path, info in tree_walk.tree(root, budget, skip, special_only=True):
            kind = kind_of(info.st_mode)
            if kind is not None:
                found.append(Found(path, kind))
    except tree_walk.Stopped as exc:
        return Walk(found, exc.why, exc.folder, exc.error or ("" if exc.why != "unreadable" else "unknown"))
    return Walk(found)


def unplain(types: Mapping[str, str]) -> List[Tuple[str, str]]:
    """(mount point, type) of every mount of ``types`` (the mount table's: mount point -> type) that is not a plain
    tree (PLAIN_FSTYPES) nor searched as one (SEARCHED_PSEUDO); once per render, odd_filesystems' ``odd``."""
    return [(point, fstype) for point, fstype in types.items()
            if fstype not in PLAIN_FSTYPES and fstype not in SEARCHED_PSEUDO]


def odd_filesystems(types: Mapping[str, str], folder: str,
                    odd: Optional[List[Tuple[str, str]]] = None) -> List[Tuple[str, str]]:
    """(mount point, type) of every filesystem bound with ``folder`` (a resolved folder: bwrap binds it with the
    mounts below it) that is not a plain tree: the one holding ``folder`` (its nearest mount point at or above
    it) and each mounted below it. ``odd``: unplain(types), when the caller has it. An empty table (no /proc: a
    preview) knows no mount and finds none."""
    odd = unplain(types) if odd is None else odd
    found = [(point, fstype) for point, fstype in odd if point != folder and paths.under(point, folder)]
    for holder in (folder,) + paths.ancestors(folder):
        if holder in types:
            fstype = types[holder]
            if fstype not in PLAIN_FSTYPES and fstype not in SEARCHED_PSEUDO:
                found.append((holder, fstype))
            break
    return sorted(found)


def filesystem_refusal(point: str, fstype: str, what: str, folder: str) -> diagnostics.Diagnostic:
    """The refusal of a filesystem that is not a plain tree, bound with the granted ``folder``."""
    fill = {"what": diagnostics.excerpt(what, 300), "folder": folder,
            "fstype": diagnostics.excerpt(fstype or "an unknown type", 80)}
    return diagnostics.make("channel_message_queue" if fstype == MESSAGE_QUEUES else "channel_filesystem_unjudged",
                            fill=fill, path=diagnostics.excerpt(point, 600))


def bound_refusal(what: str, walked: Walk, limit: int) -> diagnostics.Diagnostic:
    fill = {"what": diagnostics.excerpt(what, 300), "error": walked.error,
            "limit": tree_walk.MAX_WALK_DEPTH if walked.stop == "deep" else limit}
    if walked.stop == "changed":       # a swap or a vanished entry: the search cannot be trusted
        return diagnostics.make("channel_walk_changed", fill=fill, folder=diagnostics.excerpt(walked.where, 600))
    return diagnostics.make("channel_walk_bound", wording=walked.stop, fill=fill,
                            folder=diagnostics.excerpt(walked.where, 600))


# ---- the filtered system bus (xdg-dbus-proxy, the way Flatpak filters a sandbox's bus) ----
SYSTEMD = "org.freedesktop.systemd1"
# What systemd:read / system:read mean on the bus: the manager's Get*/List* methods and the properties of
# systemd's objects; every other call (Start*, Stop*, Kill*, Reload*, Set*, other names, the bus driver's
# BecomeMonitor) is refused by the proxy (xdg-dbus-proxy's rules name fully-qualified methods only).
READ_METHODS = ("GetUnit", "GetUnitByPID", "GetUnitByInvocationID", "GetUnitByControlGroup", "GetUnitProcesses",
                "GetJob", "GetJobAfter", "GetJobBefore", "GetUnitFileState", "GetUnitFileLinks", "GetDefaultTarget",
                "GetDynamicUsers", "ListUnits", "ListUnitsFiltered", "ListUnitsByPatterns", "ListUnitsByNames",
                "ListJobs", "ListUnitFiles", "ListUnitFilesByPatterns")
READ_PROPERTIES = ("org.freedesktop.DBus.Properties.Get", "org.freedesktop.DBus.Properties.GetAll")


def proxy_words(bus: str, listen: str) -> List[str]:
    """xdg-dbus-proxy's arguments: the bus's address, the socket it listens on, the read-only policy."""
    rules = ["--call=%s=%s.Manager.%s@/org/freedesktop/systemd1" % (SYSTEMD, SYSTEMD, m) for m in READ_METHODS]
    rules += ["--call=%s=%s@%s" % (SYSTEMD, method, path) for method in READ_PROPERTIES
              for path in ("/org/freedesktop/systemd1", "/org/freedesktop/systemd1/*")]
    return [bus, listen, "--filter"] + rules
