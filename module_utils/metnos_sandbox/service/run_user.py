# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who the service runs as and what its PATH finds: the unit's user (static or DynamicUser=), PATH
lookup with that user's permissions (which_as), and the PATH's own diagnostics.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import grp
import os
import pwd
import stat
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..base import diagnostics, envflags
from ..base.paths import lookup, under
from ..host import bwrap, procfs

User = Dict[str, Any]           # resolve_service_user(): name, uid, gid, groups, home, dynamic
Params = Mapping[str, Any]      # a unit's address: unit, scope, user, mode, root (see gather())


def truthy(value: object) -> bool:
    return str(value).strip().lower() in ("1", "yes", "y", "true", "t", "on")


# --------------------------------------------------------------------------- users and PATH

# The uids systemd allocates dynamic users from (nss-systemd resolves them by name while a unit runs: such a
# name is not a static user).
DYNAMIC_UIDS = (61184, 65519)
# The uid and gid an allocated dynamic user is judged as before it runs: the last of that range (systemd picks one
# by hashing the unit's name, usually lower): unprivileged, in no group of the host, owning nothing.
DYNAMIC_STAND_IN = DYNAMIC_UIDS[1]


def resolve_service_user(settings: Mapping[str, Any]) -> User:
    """User= of the unit -> {name, uid, gid, groups, home, dynamic}, the credentials systemd gives the process:
    gid is Group= (else the user's own), groups what initgroups(user, gid) gives (none when gid is root's) plus
    SupplementaryGroups= (systemd's get_supplementary_groups). With DynamicUser=yes a dynamic user is
    allocated unless User= names a user that already exists statically, which systemd then uses
    (systemd.exec(5), DynamicUser=; the other settings DynamicUser= implies still apply: ``dynamic_user``
    says so); an allocated one owns nothing and is in no group of the host but its own and
    SupplementaryGroups=, judged as DYNAMIC_STAND_IN (its uid is known only once it runs)."""
    name = settings.get("User")
    extra = group_ids(settings.get("SupplementaryGroups"))
    if truthy(settings.get("DynamicUser", "no")):
        static = _static_user(name, settings.get("Group"), extra) if name else None
        if static is not None and not DYNAMIC_UIDS[0] <= static["uid"] <= DYNAMIC_UIDS[1]:
            return dict(static, dynamic_user="static")
        return {"name": "(dynamic)", "uid": DYNAMIC_STAND_IN, "gid": DYNAMIC_STAND_IN,
                "groups": [DYNAMIC_STAND_IN] + extra, "home": "/", "dynamic": True, "dynamic_user": "allocated"}
    found = _static_user(name or "root", settings.get("Group"), extra)
    if found is None:
        return {"name": name, "uid": None, "gid": None, "groups": [], "home": None, "dynamic": False,
                "missing": True}
    return found


def group_ids(value: Any) -> List[int]:
    """SupplementaryGroups= (one or more assignments, each a space-separated list of names or numbers) as gids;
    a group that does not exist is left out (systemd then refuses to start the unit)."""
    out: List[int] = []
    for text in (value if isinstance(value, list) else [value] if value else []):
        for word in str(text).split():
            gid = _gid(word)
            if gid is not None and gid not in out:
                out.append(gid)
    return out


def _gid(word: str) -> Optional[int]:
    try:
        return int(word) if word.isdigit() else grp.getgrnam(word).gr_gid
    except (KeyError, ValueError, OverflowError):
        return None


def _static_user(name: str, group: Optional[str], extra: Sequence[int] = ()) -> Optional[User]:
    """The existing account ``name`` (a name or a uid) with the gid and groups systemd gives it, or None."""
    try:
        entry = pwd.getpwuid(int(name)) if str(name).isdigit() else pwd.getpwnam(name)
    except (KeyError, ValueError, OverflowError):
        return None
    gid = (_gid(str(group)) if group else None)
    gid = entry.pw_gid if gid is None else gid
    groups = _initgroups(entry.pw_name, gid) if gid != 0 else [gid]
    groups += [g for g in extra if g not in groups]
    return {"name": entry.pw_name, "uid": entry.pw_uid, "gid": gid, "groups": groups,
            "home": entry.pw_dir, "dynamic": False}


def _initgroups(name: str, gid: int) -> List[int]:
    """What initgroups(name, gid) gives: gid, then every group that lists ``name`` as a member."""
    try:
        found = os.getgrouplist(name, gid)
    except OSError:
        found = [gid] + [g.gr_gid for g in grp.getgrall() if name in g.gr_mem]
    return [gid] + [g for g in found if g != gid]


def _can(st: os.stat_result, user: Mapping[str, Any], bit_user: int, bit_group: int, bit_other: int) -> bool:
    if user.get("uid") == 0:
        return True if bit_user != stat.S_IXUSR else bool(st.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    if st.st_uid == user.get("uid"):
        return bool(st.st_mode & bit_user)
    if st.st_gid in user.get("groups", []):
        return bool(st.st_mode & bit_group)
    return bool(st.st_mode & bit_other)


def which_as(name: str, path_text: Optional[str], user: Mapping[str, Any], cwd: str = "/") -> Optional[str]:
    """Resolve ``name`` through ``path_text`` as the service's user: the first candidate, in execvp's order
    (bwrap.path_candidates), that the user may execute (first_executable_as)."""
    candidates = [candidate for candidate, _st in bwrap.path_candidates(name, path_text, cwd)]
    index = first_executable_as(candidates, user)
    return candidates[index] if index >= 0 else None


def first_executable_as(paths: Sequence[str], user: Mapping[str, Any]) -> int:
    """The index of the first of ``paths`` that ``user`` may execute, -1 for none. Asked of the kernel - by a
    child with the user's uid, gid and groups where this process can take them (root), or by this process when
    it is that user - with access(2) X_OK, as the runtime's shutil.which asks it as the service: search
    permission on every directory on the way (links included), ACLs, a noexec mount, the file's own bits.
    Otherwise the mode bits along each path decide (ACLs and mount options unseen)."""
    if not paths:
        return -1
    uid, gid = user.get("uid"), user.get("gid")
    if uid is not None and gid is not None:
        if uid == os.geteuid() == os.getuid() and (uid == 0 or gid == os.getegid()):
            return _first_executable(paths)
        if os.geteuid() == 0:
            index = procfs.call_as(int(uid), int(gid), _first_executable, list(paths),
                                   groups=[int(g) for g in user.get("groups") or [gid]])
            if isinstance(index, int):
                return index
    for index, path in enumerate(paths):
        try:
            st = os.stat(path)
        except OSError:
            continue
        if _searchable(os.path.dirname(path), user) and _can(st, user, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH):
            return index
    return -1


def _first_executable(paths: Sequence[str]) -> int:
    """In the asking process: the index of the first regular file of ``paths`` it may execute, or -1."""
    for index, path in enumerate(paths):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return index
    return -1


def _searchable(directory: str, user: Mapping[str, Any]) -> bool:
    """Whether the mode bits let ``user`` search every directory the kernel passes through to reach
    ``directory`` (paths.lookup: links' directories included) and the directory itself. (which_as asks the
    kernel itself where it can; this is its answer without root.)"""
    found = lookup(directory)
    if found.resolved is None:
        return False
    for current in found.dirs + (found.resolved,):
        try:
            st = os.stat(current)
        except OSError:
            return False
        if not _can(st, user, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH) and user.get("uid") != 0:
            return False
    return True


def dir_problem(directory: str) -> Optional[str]:
    """Why a PATH directory lets someone other than root plant binaries, or None. Judged as the kernel resolves
    it (paths.lookup): the directory reached, whose entries execvp runs; then every directory a name is looked
    up in on the way, nearest first - the directories as written and those holding each link followed and
    its target (whoever may change one of them decides where the entry leads; a sticky one may be shared).
    An entry that does not exist is judged where it would be created: whoever may write that directory,
    sticky or not, can create it and plant a bwrap in it."""
    found = lookup(directory)
    if found.resolved is not None:
        problem = _owner_problem(found.resolved, directory, leaf=True)
        if problem:
            return problem
    creating = os.path.dirname(found.missing) if found.missing else None
    for current in reversed(found.dirs):
        if current == creating:
            problem = _owner_problem(current, directory, leaf=True)
            if problem:
                return "%s does not exist, and %s: whoever may write there can create it" % (found.missing, problem)
            continue
        problem = _owner_problem(current, directory, leaf=False)
        if problem:
            return problem
    return None


def write_problem(path: str) -> Optional[str]:
    """Why someone other than root can write ``path`` (a folder or a file) or change where it leads, or None:
    judged as a PATH entry is (the entry, the folders on its way, links followed; a missing one where it would be
    created)."""
    return dir_problem(path)


def _owner_problem(current: str, entry: str, leaf: bool) -> Optional[str]:
    """Why ``current`` (a directory reached while resolving the PATH entry ``entry``) is not root's alone, or
    None; a sticky directory is accepted unless it is the ``leaf`` (the entry's own, or where a missing entry
    would be created). Named as seen from the entry: the entry itself or one of its parents as written, else
    where the entry leads, else on the way there."""
    try:
        st = os.lstat(current)
    except OSError:
        return None
    if current == entry or under(entry, current):
        where = ""
    elif leaf:
        where = " (where %s leads)" % entry
    else:
        where = " (on the way to %s)" % entry
    if st.st_uid != 0:
        return "%s is owned by uid %d%s" % (current, st.st_uid, where)
    mode = stat.S_IMODE(st.st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH) and not (mode & stat.S_ISVTX and not leaf):
        return "%s is writable by group or others (mode %04o)%s" % (current, mode, where)
    return None


def path_diagnostics(path_text: str, resolved: Optional[str], unit: str,
                     cwd: str = "/") -> List[diagnostics.Diagnostic]:
    """Empty/relative entries, and directories up to (and including) the one bwrap resolves in that
    someone other than root can write to (binary shadowing)."""
    out = []
    bwrap_dir = os.path.dirname(resolved) if resolved else None
    offending = ["entry %d %r: %s" % (i["index"], i["entry"], i["reason"]) for i in bwrap.unsafe_entries(path_text)]
    for entry in bwrap.split_path(path_text):
        if not entry.startswith("/"):
            continue
        entry = bwrap.entry_directory(entry)
        problem = dir_problem(entry)
        if problem:
            planted = os.path.join(entry, "bwrap")
            offending.append("%s (%s%s)" % (
                problem, "the service resolves bwrap here" if entry == bwrap_dir else "before the bwrap directory",
                "; it holds a bwrap: %s" % planted if os.path.lexists(planted) and entry != bwrap_dir else ""))
        if entry == bwrap_dir:
            break
    if resolved:
        try:
            info = bwrap.file_facts(resolved)
        except OSError:
            info = {"ownership_problems": []}
        offending.extend("%s" % p for p in info["ownership_problems"] if p not in " ".join(offending))
    if offending:
        out.append(diagnostics.make("service_path_unsafe", unit=unit, path=path_text, problems="; ".join(offending),
                                    offending=offending))
    return out


KEYS = (envflags.ENV_VAR, "PATH")     # the variables the toolkit reads of a service's environment
