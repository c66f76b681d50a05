# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The environment a Metnos service really gets, and what follows from it (R-DIAG-3).

Two sources, same result shape: ``systemctl show`` when systemd runs (plus the live
``/proc/<MainPID>/environ`` when readable), or the unit files on disk (systemd_unit.py)
when it does not. Then the checks: METNOS_SANDBOX, bwrap through the service's PATH as the
service's user, unsafe PATH entries, a bwrap different from the admin's, unit restrictions
that break bwrap, missing EnvironmentFiles, pending daemon-reload.
"""
from __future__ import absolute_import, annotations, division, print_function

import grp
import os
import pwd
import stat
from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Set, Tuple

from ..base import diagnostics as D
from ..base import envflags
from ..host import bwrap as B
from ..host import facts as F
from ..host import procfs as PF
from . import systemd_unit as U
from . import unit_context as UC

User = Dict[str, Any]           # resolve_service_user(): name, uid, gid, groups, home, dynamic
Params = Mapping[str, Any]      # a unit's address: unit, scope, user, mode, root (see gather())

DROPIN_NAME = "zz-metnos-sandbox.conf"
NEEDED_SYSCALLS = ("mount", "pivot_root", "umount2", "unshare", "clone")
# Which of NEEDED_SYSCALLS each systemd syscall group contains (nested groups flattened;
# from `systemd-analyze syscall-filter`, systemd 252-257).
SYSCALL_GROUPS: Dict[str, Set[str]] = {
    "@mount": {"mount", "pivot_root", "umount2"},
    "@process": {"clone", "unshare"},
    "@system-service": {"clone", "unshare"},
    "@privileged": {"pivot_root"},
    "@known": set(NEEDED_SYSCALLS),
}
ALL_NAMESPACES = ("cgroup", "ipc", "net", "mnt", "pid", "user", "uts")
BWRAP_NAMESPACES = ("user", "mnt", "ipc", "uts", "net")
BWRAP_FAMILIES = ("AF_NETLINK",)        # loopback setup in --unshare-net (measured)


def _truthy(value: object) -> bool:
    return str(value).strip().lower() in ("1", "yes", "y", "true", "t", "on")


# --------------------------------------------------------------------------- restrictions

def allowed_namespaces(values: Optional[Iterable[str]]) -> Set[str]:
    """RestrictNamespaces= lines -> the set of namespace types the service may create.

    systemd's merge (config_parse_restrict_namespaces): a boolean replaces everything before it;
    the first list sets the allowed types (``~`` inverts); later lists add to them, ``~`` lists
    remove from them; an empty assignment resets.
    """
    allowed: Optional[Set[str]] = None  # systemd's NAMESPACE_FLAGS_INITIAL: nothing restricted yet
    for value in values or []:
        value = value.strip()
        low = value.lower()
        if value == "":
            allowed = None
        elif low in ("yes", "true", "1", "on", "y", "t"):
            allowed = set()
        elif low in ("no", "false", "0", "off", "n", "f"):
            allowed = set(ALL_NAMESPACES)
        else:
            invert = value.startswith("~")
            names = set((value[1:] if invert else value).split()) & set(ALL_NAMESPACES)
            if allowed is None:
                allowed = set(ALL_NAMESPACES) - names if invert else names
            else:
                allowed = allowed - names if invert else allowed | names
    return set(ALL_NAMESPACES) if allowed is None else allowed


def families_blocked(values: Optional[Iterable[str]], needed: Sequence[str] = BWRAP_FAMILIES) -> List[str]:
    """RestrictAddressFamilies= lines -> the families bwrap needs that they block.

    systemd's merge (config_parse_address_families): while the set is empty a line decides
    allow-list (plain) or deny-list (``~``) mode; later plain lines add in allow mode and remove
    in deny mode, ``~`` lines the reverse; ``none`` is an empty allow list; empty resets.
    """
    allow: Optional[bool] = None
    families: Set[str] = set()
    for value in values or []:
        value = value.strip()
        if value == "":
            allow, families = None, set()
            continue
        if value == "none":
            allow, families = True, set()
            continue
        invert = value.startswith("~")
        if not families:
            allow = not invert
        for name in (value[1:] if invert else value).split():
            if (not invert) == allow:
                families.add(name)
            else:
                families.discard(name)
    if allow is None:
        return []
    if allow:
        return [f for f in needed if f not in families]
    return [f for f in needed if f in families]


def syscalls_blocked(values: Optional[Iterable[str]]) -> List[str]:
    """SystemCallFilter= lines -> the needed syscalls it blocks (allow-list or deny-list semantics)."""
    allow_mode: Optional[bool] = None
    allowed: Set[str] = set()
    denied: Set[str] = set()
    for value in values or []:
        value = value.strip()
        if not value:
            allow_mode, allowed, denied = None, set(), set()
            continue
        negate = value.startswith("~")
        items = value[1:].split() if negate else value.split()
        names: Set[str] = set()
        for item in items:
            item = item.split(":")[0]           # name:errno
            names |= SYSCALL_GROUPS.get(item, {item} if item in NEEDED_SYSCALLS else set())
        if allow_mode is None:
            allow_mode = not negate
        if allow_mode:
            allowed = allowed - names if negate else allowed | names
        else:
            denied = denied - names if not negate else denied | names
    if allow_mode is None:
        return []
    if allow_mode:
        return [s for s in NEEDED_SYSCALLS if s not in allowed]
    return [s for s in NEEDED_SYSCALLS if s in denied]


# Every directive measured to break bwrap on a real unit (docs/unit-directives.md, generated from
# docs/unit-directives.json by scripts/gen-unit-directives-doc.py) -> the code that names it. A unit
# test keeps this table and the measured one consistent.
DIRECTIVE_CODES = {
    "RestrictNamespaces": "unit_blocks_namespaces",
    "SystemCallFilter": "unit_syscall_filter_blocks_bwrap",
    "ProcSubset": "unit_proc_subset_pid",
    "RestrictSUIDSGID": "unit_restrict_suidsgid",
    "DynamicUser": "unit_restrict_suidsgid",
    "RestrictAddressFamilies": "unit_address_families_block_netlink",
}
# Codes for directives that break bwrap only under a condition the trial host does not have.
CONDITIONAL_CODES = {
    "unit_no_new_privileges_setuid": ("NoNewPrivileges", "a setuid bwrap on a host without unprivileged user "
                                                         "namespaces (NoNewPrivileges ignores the setuid bit)"),
}


def _restriction(code: str, unit: str, directive: str, fill: Mapping[str, Any], relax: Optional[str],
                 severity: Optional[str] = None, relax_note: Optional[str] = None,
                 wording: str = "seen") -> D.Diagnostic:
    """A restriction diagnostic; ``relax`` is the smallest drop-in line that lets bwrap work (or
    None with ``relax_note`` saying why a drop-in cannot); ``fill`` and ``wording`` make the message from
    the code's registered templates."""
    diag: D.Diagnostic = D.make(code, unit=unit, directive=directive, fill=fill, wording=wording, severity=severity,
                                relax=relax, relax_note=relax_note or "No drop-in can relax it; change the unit.",
                                variant="dropin" if relax else "no_dropin")
    return diag


def restriction_diagnostics(settings: Mapping[str, Any], unit: str,
                            bwrap_info: Optional[Mapping[str, Any]] = None) -> List[D.Diagnostic]:
    """The unit's directives that break bwrap inside the service (measured: docs/unit-directives.md),
    each with the smallest drop-in line that lets bwrap work."""
    return _confinement_diagnostics(settings, unit) + _privilege_diagnostics(settings, unit, bwrap_info)


def _confinement_diagnostics(settings: Mapping[str, Any], unit: str) -> List[D.Diagnostic]:
    """Namespaces, system calls, address families and /proc the unit denies bwrap."""
    out = []
    ns = allowed_namespaces(settings.get("RestrictNamespaces"))
    missing = [n for n in BWRAP_NAMESPACES if n not in ns]
    if missing:
        out.append(_restriction(
            "unit_blocks_namespaces", unit, "RestrictNamespaces",
            {"values": " ".join(settings["RestrictNamespaces"]), "missing": ", ".join(missing)},
            "RestrictNamespaces=%s" % " ".join(missing)))
    blocked = syscalls_blocked(settings.get("SystemCallFilter"))
    if blocked:
        errno_action = str(settings.get("SystemCallErrorNumber") or "").strip()
        killed = errno_action in ("", "2147483646", "kill")
        out.append(_restriction(
            "unit_syscall_filter_blocks_bwrap", unit, "SystemCallFilter",
            {"blocked": ", ".join(blocked), "errno": errno_action},
            "SystemCallFilter=%s" % " ".join(blocked), wording="killed" if killed else "errno"))
    families = families_blocked(settings.get("RestrictAddressFamilies"))
    if families:
        out.append(_restriction(
            "unit_address_families_block_netlink", unit, "RestrictAddressFamilies",
            {"values": " ".join(settings["RestrictAddressFamilies"]), "families": ", ".join(families)},
            "RestrictAddressFamilies=%s" % " ".join(families)))
    if str(settings.get("ProcSubset", "")).strip() == "pid":
        out.append(_restriction(
            "unit_proc_subset_pid", unit, "ProcSubset", {}, "ProcSubset=all"))
    return out


def _privilege_diagnostics(settings: Mapping[str, Any], unit: str,
                           bwrap_info: Optional[Mapping[str, Any]]) -> List[D.Diagnostic]:
    """RestrictSUIDSGID=/DynamicUser= (openat2) and NoNewPrivileges against a setuid bwrap."""
    out = []
    info = bwrap_info or {}
    version = B.version_tuple(info.get("version"))
    explicit = _truthy(settings.get("RestrictSUIDSGID", "no"))
    dynamic = _truthy(settings.get("DynamicUser", "no"))
    if explicit or dynamic:
        why = "RestrictSUIDSGID=yes" if explicit else "DynamicUser=yes (implies RestrictSUIDSGID=yes)"
        severe = version >= (0, 12)
        out.append(_restriction(
            "unit_restrict_suidsgid", unit, "DynamicUser" if dynamic and not explicit else "RestrictSUIDSGID",
            {"why": why, "version": info.get("version") or "?"},
            None if dynamic else "RestrictSUIDSGID=no", severity=D.ERROR if severe else D.WARNING,
            wording="fails" if severe else "warns",
            relax_note="DynamicUser=yes forces RestrictSUIDSGID=yes: run the service with a static User= "
                       "(DynamicUser=no) to use bubblewrap >= 0.12" if dynamic else None))
    nnp = _truthy(settings.get("NoNewPrivileges", "no")) or explicit or dynamic or \
        bool(settings.get("SystemCallFilter")) or bool(settings.get("RestrictNamespaces"))
    if nnp and info.get("setuid"):
        out.append(D.make("unit_no_new_privileges_setuid", unit=unit, directive="NoNewPrivileges",
                          bwrap_path=info.get("path")))
    return out


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
    current = directory
    while True:
        try:
            st = os.stat(current)
        except OSError:
            return False
        if not _can(st, user, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH) and user.get("uid") != 0:
            return False
        if current == "/":
            return True
        current = os.path.dirname(current)


def _dir_problem(directory: str) -> Optional[str]:
    """Why a PATH directory lets someone other than root plant binaries, or None."""
    current = directory
    while True:
        try:
            st = os.stat(current)
        except OSError:
            return None
        if st.st_uid != 0:
            return "%s is owned by uid %d" % (current, st.st_uid)
        mode = stat.S_IMODE(st.st_mode)
        if mode & (stat.S_IWGRP | stat.S_IWOTH) and not (mode & stat.S_ISVTX and current != directory):
            return "%s is writable by group or others (mode %04o)" % (current, mode)
        if current == "/":
            return None
        current = os.path.dirname(current)


def path_diagnostics(path_text: str, resolved: Optional[str], unit: str, cwd: str = "/") -> List[D.Diagnostic]:
    """Empty/relative entries, and directories up to (and including) the one bwrap resolves in that
    someone other than root can write to (binary shadowing)."""
    out = []
    bwrap_dir = os.path.dirname(resolved) if resolved else None
    offending = ["entry %d %r: %s" % (i["index"], i["entry"], i["reason"]) for i in B.unsafe_entries(path_text)]
    for entry in B.split_path(path_text):
        if not entry.startswith("/"):
            continue
        entry = os.path.normpath(entry)
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


# --------------------------------------------------------------------------- evaluation

MAX_ENVIRON = 1 << 20
KEYS = (envflags.ENV_VAR, "PATH")


def _parse_environ(data: bytes) -> Dict[str, str]:
    env = {}
    for item in data.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def _proc_ids(proc: str, pid: Any) -> Tuple[Optional[int], Optional[int]]:
    """Real uid and gid of a process from /proc/PID/status (readable by anyone)."""
    uid = gid = None
    try:
        with open(os.path.join(proc, str(pid), "status")) as handle:
            for line in handle:
                if line.startswith("Uid:"):
                    uid = int(line.split()[1])
                elif line.startswith("Gid:"):
                    gid = int(line.split()[1])
    except (IOError, OSError, ValueError, IndexError):
        return None, None
    return uid, gid


def read_live_environ(pid: Any, proc: str = "/proc") -> Dict[str, Any]:
    """The environment of the running process ``pid``, read from the kernel, never guessed.

    Root reads it unless the kernel refuses (root without CAP_SYS_PTRACE, as in containers);
    then the process's own uid reads it (a forked helper that drops to that uid and gid).
    Returns {"pid", "env" (dict or None), "read_as", "error"}.
    """
    path = os.path.join(proc, str(pid), "environ")
    out: Dict[str, Any] = {"pid": int(pid), "env": None, "read_as": None, "error": None}
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_ENVIRON + 1)
        out.update(env=_parse_environ(data[:MAX_ENVIRON]), read_as="uid %d" % os.geteuid())
        return out
    except (IOError, OSError) as exc:
        first = "as uid %d: %s" % (os.geteuid(), exc.strerror or exc)
    uid, gid = _proc_ids(proc, pid)
    if uid is None:
        out["error"] = "%s; the process's uid is unknown (it may have exited)" % first
        return out
    if os.geteuid() != 0 or uid == os.geteuid():
        out["error"] = first
        return out
    owned, error = PF.read_file_as(path, uid, gid, MAX_ENVIRON)
    if owned is None:
        out["error"] = "%s; as the process's own uid %d: %s" % (first, uid, error)
        return out
    out.update(env=_parse_environ(owned), read_as="uid %d (the process's own; root was refused: %s)" % (uid, first))
    return out


def exec_effects(state: Mapping[str, Any], env: Mapping[str, str]) -> List[Dict[str, Any]]:
    """The start command lines and what each does to METNOS_SANDBOX/PATH: [{where, value, effect}]."""
    out = []
    for item in state.get("exec_start") or []:
        effect = U.exec_env_effect(item["value"], env, KEYS)
        touches = effect["clears"] or any(k in effect["sets"] or k in effect["unsets"] for k in KEYS)
        if touches or not effect["determinable"]:
            out.append({"where": item["where"], "value": item["value"], "effect": effect})
    return out


class Gathered(NamedTuple):
    """A unit's configuration as gather() reads it."""
    state: Dict[str, Any]           # systemd_unit's unit state: settings, fragment, dropins, exec_start, ...
    env: Dict[str, str]             # the environment its directives give (before the start command line)
    prov: Dict[str, str]            # where each variable of ``env`` comes from
    problems: List[Dict[str, Any]]  # EnvironmentFile= entries that cannot be read
    mode: str                       # "systemd" (systemctl show) or "disk" (the unit files)
    need_reload: bool               # systemd: the unit files changed since daemon-reload
    live: Optional[Dict[str, Any]]  # read_live_environ() of MainPID when the service runs, else None


class Evaluation(NamedTuple):
    """What evaluate() judges: one unit's gathered configuration, the admin's PATH (None: not compared)
    and ``bwrap_info_for(path)``, facts.bwrap_info() of the bwrap the service resolves."""
    unit: str
    gathered: Gathered
    admin_path: Optional[str] = None
    bwrap_info_for: Optional[Callable[[str], Dict[str, Any]]] = None


class _View(NamedTuple):
    """What evaluate() derives from an Evaluation before judging it."""
    user: User
    cwd: str
    effects: List[Dict[str, Any]]      # exec_effects()
    predicted: Dict[str, str]          # env with the start command line applied
    prov: Dict[str, str]               # provenance, with the start command line's changes
    resolved: Optional[str]            # bwrap through the directives' PATH, as the service's user
    pred_resolved: Optional[str]       # ... through the predicted PATH
    bwrap_info: Optional[Dict[str, Any]]
    config_quartet: Dict[str, Any]     # status() of the configuration (predicted)


def _resolve(path_text: str, user: Mapping[str, Any], cwd: str) -> Optional[str]:
    if user.get("uid") is not None:
        return which_as("bwrap", path_text, user, cwd=cwd)
    return B.which("bwrap", path_text, cwd=cwd)


def _derive(ev: Evaluation) -> _View:
    g = ev.gathered
    env = g.env
    user = resolve_service_user(g.state["settings"])
    cwd = g.state["settings"].get("WorkingDirectory") or "/"
    cwd = cwd.lstrip("-") if cwd not in ("~",) else (user.get("home") or "/")
    effects = exec_effects(g.state, env)
    predicted = dict(env)
    prov = dict(g.prov)
    for item in effects:
        if item["effect"]["determinable"]:
            predicted = U.apply_exec_effect(env, item["effect"])
            for key in KEYS:
                if predicted.get(key) != env.get(key):
                    prov[key] = "ExecStart= (%s) through %s" % (item["where"], item["effect"]["how"])
    path_text = env.get("PATH", "")
    resolved = _resolve(path_text, user, cwd)
    bwrap_info = ev.bwrap_info_for(resolved) if resolved and ev.bwrap_info_for else None
    pred_path = predicted.get("PATH", "")
    pred_resolved = _resolve(pred_path, user, cwd) if pred_path != path_text else resolved
    return _View(user, cwd, effects, predicted, prov, resolved, pred_resolved, bwrap_info,
                 envflags.status(pred_resolved, predicted))


def _execstart_diagnostics(ev: Evaluation, v: _View) -> List[D.Diagnostic]:
    unit, env = ev.unit, ev.gathered.env
    diags = []
    for item in v.effects:
        effect = item["effect"]
        line = "ExecStart=%s (%s)" % (item["value"], item["where"])
        if not effect["determinable"]:
            diags.append(D.make("service_execstart_env_unknown", unit=unit, where=item["where"], line=line,
                                how=effect["how"] or "a command", note=effect["note"]))
            continue
        after = U.apply_exec_effect(env, effect)
        disabled, _reason = envflags.classify_value(after.get(envflags.ENV_VAR))
        new_resolved = _resolve(after.get("PATH", ""), v.user, v.cwd) if after.get("PATH") != env.get("PATH") \
            else v.resolved
        misroutes = new_resolved != v.resolved
        severe = disabled or misroutes or (v.resolved and not new_resolved)
        heal, why = U.neutralised_exec(item["value"], KEYS)
        changes = ["%s=%r" % (k, val) for k, val in sorted(effect["sets"].items()) if k in KEYS]
        changes += ["unset %s" % k for k in effect["unsets"] if k in KEYS]
        if effect["clears"]:
            changes.append("clears the whole environment (env -i)")
        diags.append(D.make(
            "service_execstart_sets_env", unit=unit, severity=D.ERROR if severe else D.WARNING, where=item["where"],
            healable=heal is not None, wording="disables" if disabled else "misroutes" if misroutes else "changes",
            fill={"line": line, "changes": "; ".join(changes), "new_bwrap": new_resolved, "old_bwrap": v.resolved},
            variant="healable" if heal is not None else "unhealable", fix=heal or item["value"], why=why))
    return diags


def _live_origin(effects: Sequence[Mapping[str, Any]], need_reload: bool) -> str:
    """Why the running process's environment differs from the configuration's."""
    undeterminable = [e for e in effects if not e["effect"]["determinable"]]
    if undeterminable:
        return "the start command line (%s) sets it in a way this toolkit cannot follow" % undeterminable[0]["where"]
    if need_reload:
        return "the unit files changed since systemd loaded them (daemon-reload and restart pending)"
    return ("not the unit's configuration: the process started with another environment (the "
            "configuration or the manager's environment changed since it started, or a wrapper or the "
            "program sets it)")


def _live_diagnostics(ev: Evaluation, v: _View) -> List[D.Diagnostic]:
    """The running process against the configuration: the live process is the authority."""
    unit, live, predicted, resolved = ev.unit, ev.gathered.live, v.predicted, v.pred_resolved
    diags: List[D.Diagnostic] = []
    if live is None:
        return diags
    if live["env"] is None:
        diags.append(D.make("service_env_live_unreadable", unit=unit, pid=live["pid"], error=live["error"]))
        return diags
    env = live["env"]
    origin = _live_origin(v.effects, ev.gathered.need_reload)
    value = env.get(envflags.ENV_VAR)
    configured = predicted.get(envflags.ENV_VAR)
    live_disabled, _r = envflags.classify_value(value)
    conf_disabled, _r = envflags.classify_value(configured)
    live_resolved = _resolve(env.get("PATH", ""), v.user, v.cwd) if env.get("PATH") != predicted.get("PATH") \
        else resolved
    if live_disabled and not conf_disabled:
        diags.append(D.make("service_env_live_disables", unit=unit, pid=live["pid"], key=envflags.ENV_VAR,
                            wording="value", fill={"value": repr(value), "configured": repr(configured),
                                                   "origin_conf": v.prov.get(envflags.ENV_VAR, "unset"),
                                                   "origin": origin}))
    if resolved and not live_resolved:
        diags.append(D.make("service_env_live_disables", unit=unit, pid=live["pid"], key="PATH",
                            wording="path", fill={"value": repr(env.get("PATH")), "resolved": resolved,
                                                  "origin": origin}))
    elif live_resolved and resolved and os.path.realpath(live_resolved) != os.path.realpath(resolved):
        packaged = bool(B.package_facts(live_resolved))
        diags.append(D.make("service_env_live_misroutes", unit=unit, pid=live["pid"],
                            wording="packaged" if packaged else "unpackaged",
                            fill={"value": repr(env.get("PATH")), "live_bwrap": live_resolved, "resolved": resolved,
                                  "origin": origin}))
    for key in KEYS:
        if env.get(key) != predicted.get(key) and not any(d.get("details", {}).get("key") == key or (
                key == "PATH" and d["code"] == "service_env_live_misroutes") for d in diags):
            diags.append(D.make("service_env_live_differs", unit=unit,
                                wording="differs", fill={"key": key, "value": repr(env.get(key)),
                                                         "configured": repr(predicted.get(key))}))
    return diags


def _missing_bwrap(ev: Evaluation, v: _View) -> List[D.Diagnostic]:
    """bwrap does not resolve through the service's PATH."""
    unit, path_text = ev.unit, ev.gathered.env.get("PATH", "")
    diags = []
    if not v.resolved:
        diags.append(D.make("service_path_missing_bwrap", unit=unit, path=path_text, user=v.user["name"],
                            origin=v.prov.get("PATH")))
    return diags


def _path_diagnostics(ev: Evaluation, v: _View) -> List[D.Diagnostic]:
    return path_diagnostics(ev.gathered.env.get("PATH", ""), v.resolved, ev.unit, v.cwd)


def _bwrap_mismatch(ev: Evaluation, v: _View) -> List[D.Diagnostic]:
    """The service's bwrap is another binary than the admin's, or no package's."""
    unit, resolved = ev.unit, v.resolved
    diags = []
    admin = B.which("bwrap", ev.admin_path) if ev.admin_path is not None else None
    if resolved and admin and os.path.realpath(resolved) != os.path.realpath(admin):
        diags.append(D.make("service_bwrap_mismatch", unit=unit, variant="different", admin_bwrap=admin,
                            service_bwrap=resolved))
    elif resolved and not (v.bwrap_info["package"] if v.bwrap_info else B.package_facts(resolved)):
        diags.append(D.make("service_bwrap_mismatch", unit=unit, variant="unpackaged", service_bwrap=resolved))
    return diags


def _rejected_diagnostics(ev: Evaluation, v: _View) -> List[D.Diagnostic]:
    """METNOS_SANDBOX assignments in the unit files that systemd ignores."""
    unit = ev.unit
    diags = []
    for rejected in ev.gathered.state.get("rejected_assignments", []):
        if envflags.ENV_VAR in rejected.get("line", rejected["text"]):
            diags.append(D.make("sandbox_env_rejected_by_systemd", unit=unit,
                                wording="ignored", fill={"text": repr(rejected["text"]), "reason": rejected["reason"],
                                                         "effective": repr(v.predicted.get(envflags.ENV_VAR))},
                                where=rejected["where"]))
    return diags


def _file_diagnostics(ev: Evaluation, v: _View) -> List[D.Diagnostic]:
    """Unreadable EnvironmentFile= entries, a pending daemon-reload."""
    unit, g = ev.unit, ev.gathered
    diags = []
    for problem in g.problems:
        if "error" in problem:
            diags.append(D.make("environment_file_missing", unit=unit, path=problem["path"],
                                severity=D.WARNING if problem["optional"] else D.ERROR, where=problem["where"],
                                error=problem["error"], variant="optional" if problem["optional"] else "required"))
    if g.need_reload:
        diags.append(D.make("unit_needs_daemon_reload", unit=unit))
    return diags


def _runtime_status(ev: Evaluation, v: _View) -> Tuple[Dict[str, Any], str]:
    """The status() quartet and whose view it is: the live process when it can be read, else the
    configuration."""
    unit, live = ev.unit, ev.gathered.live
    quartet, view = v.config_quartet, "configuration of %s (service not running)" % unit
    if live is not None and live["env"] is not None:
        live_env = live["env"]
        quartet = envflags.status(_resolve(live_env.get("PATH", ""), v.user, v.cwd), live_env)
        view = "live process of %s (PID %s, /proc/%s/environ read as %s)" % (unit, live["pid"], live["pid"],
                                                                             live["read_as"])
    elif live is not None:
        view = "configuration of %s (the running PID %s could not be read: %s)" % (unit, live["pid"], live["error"])
    if v.effects and not (live is not None and live["env"] is not None):
        view += ", with the ExecStart= command line applied"
    return quartet, view


# The judges of one service, in the order their diagnostics are listed (D.sort keeps it within a severity).
_JUDGES: Tuple[Callable[[Evaluation, _View], List[D.Diagnostic]], ...] = (
    _execstart_diagnostics, _missing_bwrap, _rejected_diagnostics, _path_diagnostics, _bwrap_mismatch,
    _file_diagnostics, _live_diagnostics)


def evaluate(ev: Evaluation) -> Dict[str, Any]:
    """All diagnostics and facts for one service, from a composed environment.

    ``ev.gathered.env`` is what the unit's directives give; the start command line (ExecStart= env(1)
    or ``sh -c`` prefixes) is applied on top; ``ev.gathered.live`` (read_live_environ()) is the
    authority for the status() quartet when the service runs.
    """
    unit = ev.unit
    v = _derive(ev)
    diags = [d for d in envflags.diagnose(v.config_quartet, v.predicted, v.predicted.get("PATH", ""), unit=unit,
                                          where="effective environment of %s (%s)"
                                          % (unit, v.prov.get(envflags.ENV_VAR, "unset")))
             if d["code"] != "bwrap_missing"]
    for judge in _JUDGES:
        diags.extend(judge(ev, v))
    diags.extend(restriction_diagnostics(ev.gathered.state["settings"], unit, v.bwrap_info))
    quartet, view = _runtime_status(ev, v)
    if quartet["active"] != v.config_quartet["active"]:
        diags = [d for d in diags if d["code"] != "executor_os_sandbox_unavailable"]
        if not quartet["active"]:
            diags.append(D.make("executor_os_sandbox_unavailable", variant="running", view=view))
    return _result(ev, v, quartet, view, diags)


def _result(ev: Evaluation, v: _View, quartet: Dict[str, Any], view: str, diags: List[D.Diagnostic]) -> Dict[str, Any]:
    """evaluate()'s answer, as metnos_service_env returns it."""
    g, live = ev.gathered, ev.gathered.live
    state, settings = g.state, g.state["settings"]
    live_env = live["env"] if live is not None else None
    return {
        "unit": ev.unit, "mode": g.mode, "fragment": state.get("fragment"), "dropins": state.get("dropins"),
        "user": v.user, "environment": {"METNOS_SANDBOX": v.predicted.get(envflags.ENV_VAR),
                                        "PATH": v.predicted.get("PATH", "")},
        "provenance": {"METNOS_SANDBOX": v.prov.get(envflags.ENV_VAR, "unset"), "PATH": v.prov.get("PATH")},
        "environment_files": state.get("environment_files"), "restrictions": dict(
            (k, settings[k]) for k in U.RESTRICTION_KEYS if k in settings),
        "status": quartet, "status_view": "runtime status() as seen by the %s" % view,
        "bwrap_resolved": v.pred_resolved, "exec_start_effects": [
            {"where": e["where"], "how": e["effect"]["how"], "determinable": e["effect"]["determinable"],
             "sets": dict((k, val) for k, val in e["effect"]["sets"].items() if k in KEYS),
             "unsets": [k for k in e["effect"]["unsets"] if k in KEYS], "clears": e["effect"]["clears"]}
            for e in v.effects],
        "live_environment": {k: live_env.get(k) for k in KEYS} if live_env is not None else None,
        "live_read": ({"pid": live["pid"], "read_as": live["read_as"], "error": live["error"]}
                      if live is not None else None),
        "diagnostics": D.sort(diags),
    }


# --------------------------------------------------------------------------- enforce

ENV_FILE_SUFFIX = ".env"


def _bwrap_ok(candidate: str, user: Mapping[str, Any], package_of: Callable[[str], Any]) -> bool:
    """A bwrap the service may run: executable by the user, package-owned, root-owned up to /."""
    try:
        st = os.stat(candidate)
    except OSError:
        return False
    if not _can(st, user, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH) or not package_of(candidate):
        return False
    try:
        return not B.file_facts(candidate)["ownership_problems"]
    except OSError:
        return False


def heal_path(path_text: str, user: Mapping[str, Any], package_of: Optional[Callable[[str], Any]] = None,
              fallback: str = U.DEFAULT_SYSTEM_PATH) -> Tuple[str, List[str], Optional[str]]:
    """``path_text`` reordered so that bwrap resolves to a package-owned binary: that binary's
    directory moves just before the first entry that holds another bwrap the user can run, or that
    someone other than root can write to (where a bwrap could be planted). Other entries keep their
    order. Returns (new PATH, [changes], problem or None)."""
    package_of = package_of or B.package_facts
    entries = list(B.split_path(path_text))
    good = None
    for index, entry in enumerate(entries):
        if entry.startswith("/") and _bwrap_ok(os.path.join(entry, "bwrap"), user, package_of):
            good = index
            break
    if good is None:
        for entry in B.split_path(fallback):
            if _bwrap_ok(os.path.join(entry, "bwrap"), user, package_of):
                return entry + ":" + path_text if path_text else entry, [
                    "added %s (it holds the package-owned bwrap; the PATH had none)" % entry], None
        return path_text, [], "no package-owned bwrap is reachable through %s or %s" % (path_text, fallback)
    offenders = []
    for index, entry in enumerate(entries[:good]):
        if not entry.startswith("/"):
            continue
        candidate = os.path.join(entry, "bwrap")
        if os.path.exists(candidate) and which_as("bwrap", entry, user):
            offenders.append((index, "%s holds %s, which is not the package-owned bwrap" % (entry, candidate)))
        else:
            problem = _dir_problem(os.path.normpath(entry))
            if problem:
                offenders.append((index, "%s: %s (a bwrap could be planted there)" % (entry, problem)))
    if not offenders:
        return path_text, [], None
    first = offenders[0][0]
    moved = entries[good]
    new = entries[:first] + [moved] + [e for i, e in enumerate(entries[first:good], first)] + entries[good + 1:]
    return ":".join(new), ["moved %s before %s: %s" % (moved, entries[first], "; ".join(o[1] for o in offenders))], \
        None


def _env_file_value(value: str) -> str:
    return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`")


def enforce_plan(unit: str, state: Mapping[str, Any], env: Mapping[str, str], prov: Mapping[str, str],
                 user: Mapping[str, Any], sandbox_path: str, env_file_path: str, relax: bool = False,
                 bwrap_info: Optional[Mapping[str, Any]] = None,
                 package_of: Optional[Callable[[str], Any]] = None) -> Dict[str, Any]:
    """What enforce writes for the unit, computed from its configuration *without* our own files.

    Returns {"dropin", "env_file" (contents), "path" (the healed PATH), "healed", "relaxed",
    "not_healed", "not_relaxed"}; each list entry says what, from where, and the line written.
    """
    plan: Dict[str, Any] = {"healed": [], "relaxed": [], "not_healed": [], "not_relaxed": []}
    path = _plan_environment(plan, env, prov, user, sandbox_path, env_file_path, package_of)
    lines = ["# Managed by metnos-sandbox-ops (metnos.sandbox.metnos_service_env state=enforce). Local edits are",
             "# replaced; a backup of the previous file is kept beside it.", "[Service]",
             "# PATH for the sandbox: bwrap resolves to the package-owned binary.",
             "EnvironmentFile=%s" % env_file_path,
             "# METNOS_SANDBOX is unset for the unit, whatever sets it (Environment=, EnvironmentFile=, drop-ins",
             "# in /etc or /run, the manager's environment): UnsetEnvironment= applies after all of them.",
             "UnsetEnvironment=%s" % envflags.ENV_VAR]
    lines += _plan_exec_start(plan, state, env)
    lines += _plan_relax(plan, state, unit, relax, bwrap_info)
    return dict({"dropin": "\n".join(lines) + "\n",
                 "env_file": "# Managed by metnos-sandbox-ops: the service's PATH for the sandbox.\nPATH=%s\n"
                 % _env_file_value(path), "path": path}, **plan)


def _plan_environment(plan: Dict[str, Any], env: Mapping[str, str], prov: Mapping[str, str],
                      user: Mapping[str, Any], sandbox_path: str, env_file_path: str,
                      package_of: Optional[Callable[[str], Any]]) -> str:
    """The healed PATH (returned) and what healing PATH and unsetting METNOS_SANDBOX changes."""
    path, changes, problem = heal_path(sandbox_path, user, package_of)
    for change in changes:
        plan["healed"].append({"what": "PATH", "source": "sandbox_path", "action": change})
    if problem:
        plan["not_healed"].append({"what": "PATH", "reason": problem})
    if env.get("PATH") != path:
        plan["healed"].append({
            "what": "PATH=%s" % env.get("PATH"), "source": prov.get("PATH"),
            "action": "PATH=%s from %s (an EnvironmentFile= of the drop-in: it wins over every "
                      "Environment= and the EnvironmentFile= lines before it)" % (path, env_file_path)})
    value = env.get(envflags.ENV_VAR)
    disabled, _reason = envflags.classify_value(value)
    if value is not None:
        plan["healed"].append({"what": "%s=%r" % (envflags.ENV_VAR, value), "source": prov.get(envflags.ENV_VAR),
                               "disabling": disabled, "action": "UnsetEnvironment=%s (applies after every source)"
                               % envflags.ENV_VAR})
    return path


def _plan_exec_start(plan: Dict[str, Any], state: Mapping[str, Any], env: Mapping[str, str]) -> List[str]:
    """ExecStart= lines without env(1)'s assignments of METNOS_SANDBOX/PATH (none when no line has any)."""
    execs = state.get("exec_start") or []
    rewritten, touched = [], False
    for item in execs:
        effect = U.exec_env_effect(item["value"], env, KEYS)
        touches = effect["clears"] or any(k in effect["sets"] or k in effect["unsets"] for k in KEYS)
        if not touches:
            rewritten.append(item["value"])
            continue
        new, why = U.neutralised_exec(item["value"], KEYS)
        if new is None:
            plan["not_healed"].append({"what": "ExecStart=%s" % item["value"], "source": item["where"],
                                       "reason": "a drop-in cannot neutralise it: %s" % why})
            rewritten.append(item["value"])
            continue
        touched = True
        rewritten.append(new)
        plan["healed"].append({"what": "ExecStart=%s" % item["value"], "source": item["where"],
                               "action": "ExecStart=%s" % new})
    if not touched:
        return []
    return (["# ExecStart= without env(1)'s assignments of METNOS_SANDBOX/PATH (the unit's lines were:"]
            + ["#   %s" % item["value"] for item in execs]
            + ["ExecStart="] + ["ExecStart=%s" % value for value in rewritten])


def _plan_relax(plan: Dict[str, Any], state: Mapping[str, Any], unit: str, relax: bool,
                bwrap_info: Optional[Mapping[str, Any]]) -> List[str]:
    """The drop-in lines that relax the unit's restrictions that break bwrap (``relax``), or why not."""
    lines = []
    for diag in restriction_diagnostics(state.get("unit_file_settings") or state["settings"], unit, bwrap_info):
        if diag["severity"] != D.ERROR:
            continue
        details = diag.get("details") or {}
        entry = {"code": diag["code"], "directive": details.get("directive"), "line": details.get("relax"),
                 "message": diag["message"]}
        if not relax:
            plan["not_relaxed"].append(dict(entry, reason="metnos_sandbox_relax_restrictions is false "
                                                          "(relax_restrictions)"))
        elif not details.get("relax"):
            plan["not_relaxed"].append(dict(entry, reason=details.get("relax_note") or "no drop-in can relax it"))
        else:
            plan["relaxed"].append(entry)
            lines += ["# Relaxed for bwrap (relax_restrictions=true), the minimum it needs: %s" % diag["code"],
                      details["relax"]]
    return lines


# --------------------------------------------------------------------------- gathering (shared)

class SystemctlError(RuntimeError):
    pass


def systemd_running(root: str = "/") -> bool:
    return root in ("/", "") and os.path.isdir("/run/systemd/system") and bool(B.which("systemctl", "/usr/bin:/bin"))


def systemctl_argv(scope: str, user: Optional[str], *args: str) -> List[str]:
    argv = ["systemctl"]
    if scope == "user":
        argv += ["--user", "--machine=%s@" % user]
    return argv + list(args)


def _home(p: Params) -> Optional[str]:
    if p.get("scope") == "user":
        return pwd.getpwnam(p["user"]).pw_dir
    return None


def manager_environment(runner: B.Runner, scope: str = "system",
                        user: Optional[str] = None) -> Optional[Dict[str, str]]:
    """The manager's runtime environment (DefaultEnvironment= plus `systemctl set-environment`), or
    None when systemctl cannot tell."""
    rc, out, _err = runner(systemctl_argv(scope, user, "show-environment"))
    if rc != 0:
        return None
    env = {}
    for line in out.splitlines():
        words, ok = U.split_words(line)
        for word in words if ok else []:
            key, sep, value = word.partition("=")
            if sep:
                env[key] = value
    return env


def gather(p: Params, runner: B.Runner, exclude: Sequence[str] = ()) -> Gathered:
    """Read a unit's configuration. ``p``: unit, scope, user, mode (auto/systemd/disk), root, and
    (disk mode) manager_env.

    Raises U.UnitError when the unit does not exist, SystemctlError when systemctl fails.
    """
    home = _home(p)
    root = p.get("root") or "/"
    mode = p.get("mode") or "auto"
    scope = p.get("scope") or "system"
    if mode == "auto":
        mode = "systemd" if systemd_running(root) else "disk"
    if mode == "systemd":
        return _gather_systemd(p, runner, scope, home)
    state = U.load_unit(p["unit"], scope, root, home, exclude)
    state["unit_file_settings"] = state["settings"]
    manager_env = p.get("manager_env")
    if manager_env is None:
        manager_env = U.manager_default_environment(root) if scope == "system" else {}
    env, prov, problems = U.compose_environment(state, root, manager_env, U.default_service_path(root, runner))
    return Gathered(state, env, prov, problems, mode, False, None)


def _gather_systemd(p: Params, runner: B.Runner, scope: str, home: Optional[str]) -> Gathered:
    """gather() from `systemctl show` (and the unit files for what only they hold) and the live process."""
    rc, out, err = runner(systemctl_argv(scope, p.get("user"), *U.show_args(p["unit"])))
    if rc != 0:
        raise SystemctlError("systemctl show %s failed: %s" % (p["unit"], err.strip()))
    show = U.parse_show(out)
    if show.get("LoadState") == "not-found":
        raise U.UnitError("unit_not_found")
    state = U.state_from_show(show)
    try:   # what systemd silently dropped, and the start command lines, are only in the files
        disk = U.load_unit(p["unit"], scope, "/", home)
        state["rejected_assignments"] = disk["rejected_assignments"]
        state["unit_file_settings"] = disk["settings"]
        state["exec_start"] = disk["exec_start"]
    except U.UnitError:
        pass
    manager_env = manager_environment(runner, scope, p.get("user")) or {}
    env, prov, problems = U.compose_environment(state, "/", manager_env, manager_env.get("PATH") or
                                                U.default_service_path("/", runner))
    if "PATH" in manager_env and prov.get("PATH") == "manager environment":
        prov["PATH"] = "systemd default (manager environment)"
    state["manager_environment"] = manager_env
    pid = show.get("MainPID", "0")
    live = read_live_environ(pid) if pid.isdigit() and pid != "0" else None
    return Gathered(state, env, prov, problems, "systemd", show.get("NeedDaemonReload") == "yes", live)


def execution_context(p: Params, runner: B.Runner, probe_user: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The unit's whole execution context for the probe's transient unit (unit_context.py): every
    directive of its files minus the documented deny list, proven against `systemctl show`."""
    scope = p.get("scope") or "system"
    rc, out, err = runner(systemctl_argv(scope, p.get("user"), "show", "--all", "--no-pager", p["unit"]))
    if rc != 0:
        raise SystemctlError("systemctl show --all %s failed: %s" % (p["unit"], err.strip()))
    entry = None
    if scope == "user" and p.get("user"):
        pw = pwd.getpwnam(p["user"])
        entry = {"name": pw.pw_name, "uid": pw.pw_uid, "gid": pw.pw_gid, "home": pw.pw_dir, "shell": pw.pw_shell}
    ctx: Dict[str, Any] = UC.build(UC.parse_show_all(out), runner, p["unit"], scope, p.get("user"), user_entry=entry)
    if probe_user:
        ctx["assignments"] = [a for a in ctx["assignments"] if a[0] not in ("User", "DynamicUser")]
        ctx["excluded"].append({"directive": "User", "category": "probe (probe_user=%s)" % probe_user.get("name")})
    return ctx


class Inspection(NamedTuple):
    """inspect()'s answer: the public result (what metnos_service_env and the audit return) and the
    service's whole composed environment, None when the unit is masked (nothing was evaluated)."""
    result: Dict[str, Any]
    env: Optional[Dict[str, str]]


def inspect(p: Params, runner: B.Runner) -> Optional[Inspection]:
    """gather() + evaluate(): the whole service-environment result, or None when the unit is missing."""
    try:
        g = gather(p, runner)
    except U.UnitError:
        return None
    if g.state.get("masked"):
        return Inspection({"unit": p["unit"], "mode": g.mode, "status": envflags.status(None, {}),
                           "diagnostics": [D.make("unit_masked", unit=p["unit"])]}, None)
    admin_path = p.get("admin_path") if p.get("admin_path") is not None else os.environ.get("PATH", "")
    result = evaluate(Evaluation(p["unit"], g, admin_path, lambda path: F.bwrap_info(path, runner=runner)))
    user = result["user"]
    if user.get("missing"):
        result["diagnostics"].insert(0, D.make("service_user_missing", user=user["name"], unit=p["unit"]))
    return Inspection(result, g.env)
