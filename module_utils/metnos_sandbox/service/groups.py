# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service's groups judged as a channel (issue 50 item 4): bwrap keeps the caller's supplementary groups, so
every executor holds every group the service's process holds. A group in SupplementaryGroups=, one the group
database gives the user (initgroups), or one the running process holds (/proc/<MainPID>/status Groups:, the
kernel's view, the authority while it runs) is listed; each file or folder that such a group makes readable or
writable (the group owns it with the group bit, others lack that bit) inside the base binds every sandbox gets
(the system paths, BASE_ROOTS) or in any folder a stored profile grants (profile/store.py stored_grants: the
profiles in the profile folder, their R-CAP-* binds) is a finding. One bounded walk over them all, links not
followed; a walk stopped at its bound says so (never passed as clean).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import collections
import grp
import os
import stat
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..base import diagnostics, tree_walk
from ..base.records import Record
from . import run_user

MAX_WALK_ENTRIES = 250000          # entries stat'ed over every base root, per service
MAX_REPORTED = 32                  # files reported (the rest are counted)
MAX_STATUS_BYTES = 65536
# The system paths every sandbox binds read-only (profile/host_layout.py SYSTEM_PATHS, /sys aside: kernel state).
BASE_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc", "/var/lib/python3")


class Held(Record):
    """One supplementary group of the service's process: its gid, name and where it comes from."""
    gid: int
    name: str
    sources: List[str]


class GroupFile(Record):
    path: str
    gid: int
    access: str                    # "readable" or "writable"


def live_groups(pid: Any, proc: str = "/proc") -> Optional[List[int]]:
    """The supplementary groups of the running process ``pid`` (the kernel's Groups: line), None if unreadable."""
    try:
        with open(os.path.join(proc, str(int(pid)), "status"), "rb") as handle:
            data = handle.read(MAX_STATUS_BYTES)
    except (OSError, ValueError):
        return None
    for line in data.split(b"\n"):
        if line.startswith(b"Groups:"):
            return [int(word) for word in line[7:].split() if word.isdigit()]
    return None


def _name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except (KeyError, OverflowError):
        return str(gid)


def held_groups(user: Mapping[str, Any], settings: Mapping[str, Any],
                live: Optional[Mapping[str, Any]]) -> List[Held]:
    """The supplementary groups (every group but the primary one), each with its sources: SupplementaryGroups=,
    the group database (the user's memberships), the live process (PID)."""
    primary = user.get("gid")
    unit = run_user.group_ids(settings.get("SupplementaryGroups"))
    sources: Dict[int, List[str]] = collections.OrderedDict()
    for gid in unit:
        sources.setdefault(gid, []).append("SupplementaryGroups=")
    for gid in user.get("groups") or []:
        if gid not in unit:
            sources.setdefault(gid, []).append("group database")
    if live is not None and live.get("pid"):
        for gid in live_groups(live["pid"]) or []:
            sources.setdefault(gid, []).append("live process, PID %s" % live["pid"])
    return [Held(gid, _name(gid), found) for gid, found in sources.items() if gid != primary]


class Walk(Record):
    found: List[GroupFile]
    stopped_at: str = ""


def group_files(gids: Sequence[int], roots: Sequence[str] = BASE_ROOTS, limit: int = MAX_WALK_ENTRIES) -> Walk:
    """Below each of ``roots``, by descriptor (tree_walk.tree: never through a symbolic link, one lstat per
    entry): what one of ``gids`` makes readable or writable that others cannot read or write. A folder root
    cannot list is passed (no sandbox lists it either), and so is one swapped or an entry vanished meanwhile."""
    wanted = frozenset(gids)
    found: List[GroupFile] = []
    budget = [limit]
    for root in roots:
        if not os.path.isdir(root) or os.path.islink(root):
            continue
        try:
            for path, st in tree_walk.tree(root, budget, passing=True):
                if st.st_gid in wanted and not stat.S_ISLNK(st.st_mode):
                    if st.st_mode & stat.S_IWGRP and not st.st_mode & stat.S_IWOTH:
                        found.append(GroupFile(path, st.st_gid, "writable"))
                    elif st.st_mode & stat.S_IRGRP and not st.st_mode & stat.S_IROTH:
                        found.append(GroupFile(path, st.st_gid, "readable"))
        except tree_walk.Stopped as exc:     # the bound, the depth, or the root itself swapped
            if exc.why != "unreadable":
                return Walk(found, exc.folder)
    return Walk(found)


def group_diagnostics(unit: str, user: Mapping[str, Any], settings: Mapping[str, Any],
                      live: Optional[Mapping[str, Any]],
                      grants: Sequence[str] = ()) -> Tuple[List[Held], List[diagnostics.Diagnostic]]:
    """The supplementary groups (service_supplementary_group, one per group) and the files they open in the base
    binds and in ``grants`` (the granted folders: store.stored_grants), service_group_file, one per file, an error; a
    walk stopped at its bound: a warning."""
    held = held_groups(user, settings, live)
    diags: List[diagnostics.Diagnostic] = []
    for group in held:
        variant = "unit" if "SupplementaryGroups=" in group.sources else "database" \
            if "group database" in group.sources else "live"
        diags.append(diagnostics.make("service_supplementary_group", variant=variant, unit=unit,
                                      group=group.name, user=str(user.get("name")),
                                      fill={"sources": ", ".join(group.sources)}))
    if not held:
        return held, diags
    names = dict((group.gid, group.name) for group in held)
    walked = group_files(sorted(names), BASE_ROOTS + tuple(g for g in grants if not any(
        g == root or g.startswith(root + "/") for root in BASE_ROOTS)))
    for item in walked.found[:MAX_REPORTED]:
        diags.append(diagnostics.make("service_group_file", wording=item.access, unit=unit,
                                      path=diagnostics.excerpt(item.path, 600),
                                      group=names[item.gid], user=str(user.get("name"))))
    if len(walked.found) > MAX_REPORTED and diags:
        diags[-1] = diagnostics.amend(diags[-1], "more_diagnostics", count=len(walked.found) - MAX_REPORTED)
    if walked.stopped_at:
        diags.append(diagnostics.make("service_group_file", wording="bound", severity=diagnostics.WARNING, unit=unit,
                                      path=diagnostics.excerpt(walked.stopped_at, 600),
                                      group=", ".join(sorted(names.values())), user=str(user.get("name")),
                                      fill={"limit": MAX_WALK_ENTRIES}))
    return held, diags
