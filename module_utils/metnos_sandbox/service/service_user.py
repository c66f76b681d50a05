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
from typing import Any, Dict, List, Mapping, Optional

from ..base import diagnostics as D
from ..base import envflags
from ..base import paths as PA
from ..host import bwrap as B

User = Dict[str, Any]           # resolve_service_user(): name, uid, gid, groups, home, dynamic
Params = Mapping[str, Any]      # a unit's address: unit, scope, user, mode, root (see gather())


def _truthy(value: object) -> bool:
    return str(value).strip().lower() in ("1", "yes", "y", "true", "t", "on")


# --------------------------------------------------------------------------- users and PATH

# The uids systemd allocates dynamic users from (nss-systemd resolves them by name while a unit runs: such a
# name is not a static user).
DYNAMIC_UIDS = (61184, 65519)


def resolve_service_user(settings: Mapping[str, Any]) -> User:
    """User= of the unit -> {name, uid, gid, groups, home, dynamic}, as systemd applies it: with
    DynamicUser=yes a dynamic user is allocated unless User= names a user that already exists
    statically, which systemd then uses (systemd.exec(5), DynamicUser=; the other settings DynamicUser=
    implies still apply: ``dynamic_user`` says so)."""
    name = settings.get("User")
    if _truthy(settings.get("DynamicUser", "no")):
        static = _static_user(name, settings.get("Group")) if name else None
        if static is not None and not DYNAMIC_UIDS[0] <= static["uid"] <= DYNAMIC_UIDS[1]:
            return dict(static, dynamic_user="static")
        entry = pwd.getpwnam("nobody")
        return {"name": "(dynamic)", "uid": entry.pw_uid, "gid": entry.pw_gid, "groups": [entry.pw_gid],
                "home": "/", "dynamic": True, "dynamic_user": "allocated"}
    found = _static_user(name or "root", settings.get("Group"))
    if found is None:
        return {"name": name, "uid": None, "gid": None, "groups": [], "home": None, "dynamic": False,
                "missing": True}
    return found


def _static_user(name: str, group: Optional[str]) -> Optional[User]:
    """The existing account ``name`` (a name or a uid) with its groups (Group= first), or None."""
    try:
        entry = pwd.getpwuid(int(name)) if str(name).isdigit() else pwd.getpwnam(name)
    except (KeyError, ValueError):
        return None
    groups = [entry.pw_gid] + [g.gr_gid for g in grp.getgrall() if entry.pw_name in g.gr_mem]
    if group:
        try:
            gid = grp.getgrnam(group).gr_gid if not str(group).isdigit() else int(group)
            groups.insert(0, gid)
        except KeyError:
            pass
    return {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid, "groups": groups,
            "home": entry.pw_dir, "dynamic": False}


def _can(st: os.stat_result, user: Mapping[str, Any], bit_user: int, bit_group: int, bit_other: int) -> bool:
    if user.get("uid") == 0:
        return True if bit_user != stat.S_IXUSR else bool(st.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    if st.st_uid == user.get("uid"):
        return bool(st.st_mode & bit_user)
    if st.st_gid in user.get("groups", []):
        return bool(st.st_mode & bit_group)
    return bool(st.st_mode & bit_other)


def which_as(name: str, path_text: Optional[str], user: Mapping[str, Any], cwd: str = "/") -> Optional[str]:
    """Resolve ``name`` through ``path_text`` with ``user``'s permissions (search and execute bits)."""
    for candidate, st in B.path_candidates(name, path_text, cwd):
        if _searchable(os.path.dirname(candidate), user) and _can(st, user, stat.S_IXUSR, stat.S_IXGRP,
                                                                  stat.S_IXOTH):
            return candidate
    return None


def _searchable(directory: str, user: Mapping[str, Any]) -> bool:
    """Whether the mode bits let ``user`` search every directory the kernel passes through to reach
    ``directory`` (paths.lookup: links' directories included) and the directory itself. (which_as asks the
    kernel itself where it can; this is its answer without root.)"""
    found = PA.lookup(directory)
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


def _dir_problem(directory: str) -> Optional[str]:
    """Why a PATH directory lets someone other than root plant binaries, or None. Judged as the kernel resolves
    it (paths.lookup): the directory reached, whose entries execvp runs; then every directory a name is looked
    up in on the way, nearest first - the directories as written and those holding each link followed and
    its target (whoever may change one of them decides where the entry leads; a sticky one may be shared).
    An entry that does not exist is judged where it would be created: whoever may write that directory,
    sticky or not, can create it and plant a bwrap in it."""
    found = PA.lookup(directory)
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


def _owner_problem(current: str, entry: str, leaf: bool) -> Optional[str]:
    """Why ``current`` (a directory reached while resolving the PATH entry ``entry``) is not root's alone, or
    None; a sticky directory is accepted unless it is the ``leaf`` (the entry's own, or where a missing entry
    would be created). Named as seen from the entry: the entry itself or one of its parents as written, else
    where the entry leads, else on the way there."""
    try:
        st = os.lstat(current)
    except OSError:
        return None
    if current == entry or PA.under(entry, current):
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


def path_diagnostics(path_text: str, resolved: Optional[str], unit: str, cwd: str = "/") -> List[D.Diagnostic]:
    """Empty/relative entries, and directories up to (and including) the one bwrap resolves in that
    someone other than root can write to (binary shadowing)."""
    out = []
    bwrap_dir = os.path.dirname(resolved) if resolved else None
    offending = ["entry %d %r: %s" % (i["index"], i["entry"], i["reason"]) for i in B.unsafe_entries(path_text)]
    for entry in B.split_path(path_text):
        if not entry.startswith("/"):
            continue
        entry = B.entry_directory(entry)
        problem = _dir_problem(entry)
        if problem:
            planted = os.path.join(entry, "bwrap")
            offending.append("%s (%s%s)" % (
                problem, "the service resolves bwrap here" if entry == bwrap_dir else "before the bwrap directory",
                "; it holds a bwrap: %s" % planted if os.path.lexists(planted) and entry != bwrap_dir else ""))
        if entry == bwrap_dir:
            break
    if resolved:
        try:
            info = B.file_facts(resolved)
        except OSError:
            info = {"ownership_problems": []}
        offending.extend("%s" % p for p in info["ownership_problems"] if p not in " ".join(offending))
    if offending:
        out.append(D.make("service_path_unsafe", unit=unit, path=path_text, problems="; ".join(offending),
                          offending=offending))
    return out


KEYS = (envflags.ENV_VAR, "PATH")     # the variables the toolkit reads of a service's environment
