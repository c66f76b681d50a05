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

from . import bwrap as B
from . import diagnostics as D
from . import envflags
from . import systemd_unit as U

DROPIN_NAME = "zz-metnos-sandbox.conf"
NEEDED_SYSCALLS = ("mount", "pivot_root", "umount2", "unshare", "clone")
# Which of NEEDED_SYSCALLS each systemd syscall group contains (nested groups flattened;
# from `systemd-analyze syscall-filter`, systemd 252-257).
SYSCALL_GROUPS = {
    "@mount": {"mount", "pivot_root", "umount2"},
    "@process": {"clone", "unshare"},
    "@system-service": {"clone", "unshare"},
    "@privileged": {"pivot_root"},
    "@known": set(NEEDED_SYSCALLS),
}
ALL_NAMESPACES = ("cgroup", "ipc", "net", "mnt", "pid", "user", "uts")
BWRAP_NAMESPACES = ("user", "mnt", "ipc", "uts", "net")


def _truthy(value):
    return str(value).strip().lower() in ("1", "yes", "y", "true", "t", "on")


# --------------------------------------------------------------------------- restrictions

def allowed_namespaces(values):
    """RestrictNamespaces= lines -> the set of namespace types the service may create."""
    allowed = set(ALL_NAMESPACES)
    for value in values or []:
        value = value.strip()
        low = value.lower()
        if low in ("yes", "true", "1", "on"):
            allowed = set()
        elif low in ("no", "false", "0", "off", ""):
            allowed = set(ALL_NAMESPACES)
        elif value.startswith("~"):
            allowed = allowed - set(value[1:].split())
        else:
            allowed = set(value.split()) & set(ALL_NAMESPACES)
    return allowed


def syscalls_blocked(values):
    """SystemCallFilter= lines -> the needed syscalls it blocks (allow-list or deny-list semantics)."""
    allow_mode = None
    allowed = set()
    denied = set()
    for value in values or []:
        value = value.strip()
        if not value:
            allow_mode, allowed, denied = None, set(), set()
            continue
        negate = value.startswith("~")
        items = value[1:].split() if negate else value.split()
        names = set()
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


def restriction_diagnostics(settings, unit, bwrap_info=None):
    out = []
    dropin = "/etc/systemd/system/%s.d/%s" % (unit, DROPIN_NAME)
    ns = allowed_namespaces(settings.get("RestrictNamespaces"))
    missing = [n for n in BWRAP_NAMESPACES if n not in ns]
    if missing:
        out.append(D.make("unit_blocks_namespaces", unit=unit, directive="RestrictNamespaces",
                          message="%s: RestrictNamespaces=%s forbids the %s namespace(s) bwrap creates: "
                                  "bwrap fails with 'No permissions to create new namespace' inside the "
                                  "service only." % (unit, " ".join(settings["RestrictNamespaces"]),
                                                      ", ".join(missing)),
                          remediation=["mkdir -p /etc/systemd/system/%s.d" % unit,
                                       "printf '[Service]\\nRestrictNamespaces=user mnt ipc uts net\\n' > %s" % dropin,
                                       "systemctl daemon-reload",
                                       "systemctl restart %s" % unit]))
    blocked = syscalls_blocked(settings.get("SystemCallFilter"))
    if blocked:
        out.append(D.make("unit_syscall_filter_blocks_bwrap", unit=unit, directive="SystemCallFilter",
                          message="%s: SystemCallFilter= blocks %s: bwrap is killed by SIGSYS (exit 159, no "
                                  "message) inside the service." % (unit, ", ".join(blocked)),
                          remediation=["printf '[Service]\\nSystemCallFilter=@mount @process\\n' >> %s" % dropin,
                                       "systemctl daemon-reload", "systemctl restart %s" % unit]))
    if str(settings.get("ProcSubset", "")).strip() == "pid":
        out.append(D.make("unit_proc_subset_pid", unit=unit, directive="ProcSubset",
                          message="%s: ProcSubset=pid hides /proc/sys: bwrap cannot read "
                                  "/proc/sys/kernel/overflowuid on some kernels." % unit,
                          remediation=["printf '[Service]\\nProcSubset=all\\n' >> %s" % dropin,
                                       "systemctl daemon-reload"]))
    version = B.version_tuple((bwrap_info or {}).get("version"))
    suid = _truthy(settings.get("RestrictSUIDSGID", "no")) or _truthy(settings.get("DynamicUser", "no"))
    if suid:
        why = ("RestrictSUIDSGID=yes" if _truthy(settings.get("RestrictSUIDSGID", "no"))
               else "DynamicUser=yes (implies RestrictSUIDSGID=yes)")
        severe = version >= (0, 12)
        out.append(D.make("unit_restrict_suidsgid", unit=unit, directive="RestrictSUIDSGID",
                          severity=D.ERROR if severe else D.WARNING,
                          message="%s: %s makes openat2() return ENOSYS; bubblewrap %s %s ('Can't mkdir parents "
                                  "for ...: Function not implemented')." % (
                                      unit, why, (bwrap_info or {}).get("version") or "?",
                                      "fails" if severe else "works today but 0.12+ fails"),
                          remediation=["printf '[Service]\\nRestrictSUIDSGID=no\\n' >> %s" % dropin,
                                       "systemctl daemon-reload"]))
    nnp = _truthy(settings.get("NoNewPrivileges", "no")) or suid or bool(settings.get("SystemCallFilter")) \
        or bool(settings.get("RestrictNamespaces"))
    if nnp and (bwrap_info or {}).get("setuid"):
        out.append(D.make("unit_no_new_privileges_setuid", unit=unit, directive="NoNewPrivileges",
                          message="%s: NoNewPrivileges (explicit or implied) cancels the setuid bit of %s: bwrap "
                                  "takes the unprivileged path and needs user namespaces." % (
                                      unit, bwrap_info.get("path")),
                          remediation=["Enable unprivileged user namespaces (see userns_* diagnostics)",
                                       "chmod 0755 %s" % bwrap_info.get("path")]))
    return out


# --------------------------------------------------------------------------- users and PATH

def resolve_service_user(settings):
    """User= of the unit -> {name, uid, gid, groups, home, dynamic}."""
    if _truthy(settings.get("DynamicUser", "no")):
        entry = pwd.getpwnam("nobody")
        return {"name": "(dynamic)", "uid": entry.pw_uid, "gid": entry.pw_gid, "groups": [entry.pw_gid],
                "home": "/", "dynamic": True}
    name = settings.get("User") or "root"
    try:
        entry = pwd.getpwuid(int(name)) if str(name).isdigit() else pwd.getpwnam(name)
    except (KeyError, ValueError):
        return {"name": name, "uid": None, "gid": None, "groups": [], "home": None, "dynamic": False,
                "missing": True}
    groups = [entry.pw_gid] + [g.gr_gid for g in grp.getgrall() if entry.pw_name in g.gr_mem]
    group = settings.get("Group")
    if group:
        try:
            gid = grp.getgrnam(group).gr_gid if not str(group).isdigit() else int(group)
            groups.insert(0, gid)
        except KeyError:
            pass
    return {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid, "groups": groups,
            "home": entry.pw_dir, "dynamic": False}


def _can(st, user, bit_user, bit_group, bit_other):
    if user.get("uid") == 0:
        return True if bit_user != stat.S_IXUSR else bool(st.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    if st.st_uid == user.get("uid"):
        return bool(st.st_mode & bit_user)
    if st.st_gid in user.get("groups", []):
        return bool(st.st_mode & bit_group)
    return bool(st.st_mode & bit_other)


def which_as(name, path_text, user, cwd="/"):
    """Resolve ``name`` through ``path_text`` with ``user``'s permissions (search and execute bits)."""
    for candidate, st in B.path_candidates(name, path_text, cwd):
        if _searchable(os.path.dirname(candidate), user) and _can(st, user, stat.S_IXUSR, stat.S_IXGRP,
                                                                   stat.S_IXOTH):
            return candidate
    return None


def _searchable(directory, user):
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


def _dir_problem(directory):
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


def path_diagnostics(path_text, resolved, unit, cwd="/"):
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
        out.append(D.make("service_path_unsafe", unit=unit, path=path_text,
                          message="%s: PATH=%s: %s" % (unit, path_text, "; ".join(offending)),
                          offending=offending))
    return out


# --------------------------------------------------------------------------- evaluation

def read_live_environ(pid, proc="/proc"):
    try:
        with open(os.path.join(proc, str(pid), "environ"), "rb") as handle:
            data = handle.read()
    except (IOError, OSError):
        return None
    env = {}
    for item in data.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def evaluate(unit, state, env, prov, problems, mode, admin_path, bwrap_info_for=None, need_reload=False,
             live_env=None):
    """All diagnostics and facts for one service, from a composed environment.

    ``bwrap_info_for(path)`` returns facts.bwrap_info() of the bwrap the service resolves (version,
    setuid, package); without it only the package owner is queried.
    """
    settings = state["settings"]
    diags = []
    user = resolve_service_user(settings)
    path_text = env.get("PATH", "")
    cwd = settings.get("WorkingDirectory") or "/"
    cwd = cwd.lstrip("-") if cwd not in ("~",) else (user.get("home") or "/")
    resolved = which_as("bwrap", path_text, user, cwd=cwd) if user.get("uid") is not None else \
        B.which("bwrap", path_text, cwd=cwd)
    bwrap_info = bwrap_info_for(resolved) if resolved and bwrap_info_for else None
    quartet = envflags.status(resolved, env)
    value = env.get(envflags.ENV_VAR)
    diags.extend(d for d in envflags.diagnose(quartet, env, path_text, unit=unit,
                                              where="effective environment of %s (%s)"
                                              % (unit, prov.get(envflags.ENV_VAR, "unset")))
                 if d["code"] != "bwrap_missing")
    if not resolved:
        diags.append(D.make("service_path_missing_bwrap", unit=unit, path=path_text,
                            message="%s: bwrap does not resolve through the service's PATH=%s as user %s "
                                    "(PATH from %s). The runtime looks it up with this PATH, not the admin's."
                            % (unit, path_text, user["name"], prov.get("PATH")),
                            remediation=["Set the unit's PATH to include the bwrap directory (enforce mode "
                                         "writes a drop-in): Environment=PATH=%s" % U.DEFAULT_SYSTEM_PATH,
                                         "Or install bubblewrap: apt-get install bubblewrap"]))
    for rejected in state.get("rejected_assignments", []):
        if envflags.ENV_VAR in rejected.get("line", rejected["text"]):
            diags.append(D.make("sandbox_env_rejected_by_systemd", unit=unit,
                                message="%s: systemd ignores %r (%s) at %s; the value you meant is not the one "
                                        "the service gets (effective METNOS_SANDBOX=%r)." % (
                                            unit, rejected["text"], rejected["reason"], rejected["where"], value),
                                where=rejected["where"]))
    diags.extend(path_diagnostics(path_text, resolved, unit, cwd))
    admin = B.which("bwrap", admin_path) if admin_path is not None else None
    if resolved and admin and os.path.realpath(resolved) != os.path.realpath(admin):
        diags.append(D.make("service_bwrap_mismatch", unit=unit,
                            message="%s resolves bwrap to %s, the admin's shell to %s: they are different "
                                    "binaries." % (unit, resolved, admin),
                            remediation=["Remove the unexpected binary or fix the unit's PATH so that it "
                                         "resolves the package-owned %s" % admin]))
    elif resolved and not (bwrap_info["package"] if bwrap_info else B.package_facts(resolved)):
        diags.append(D.make("service_bwrap_mismatch", unit=unit,
                            message="%s resolves bwrap to %s, which no installed package owns." % (unit, resolved),
                            remediation=["Remove %s or put the package's directory first in the unit's PATH"
                                         % resolved]))
    for problem in problems:
        if "error" in problem:
            diags.append(D.make("environment_file_missing", unit=unit, path=problem["path"],
                                severity=D.WARNING if problem["optional"] else D.ERROR,
                                message="%s: EnvironmentFile=%s%s (%s) cannot be read: %s.%s" % (
                                    unit, "-" if problem["optional"] else "", problem["path"], problem["where"],
                                    problem["error"],
                                    " systemd skips it silently ('-' prefix)" if problem["optional"]
                                    else " The service fails to start."),
                                remediation=["Create %s or remove the EnvironmentFile= line" % problem["path"]]))
    if need_reload:
        diags.append(D.make("unit_needs_daemon_reload", unit=unit))
    if live_env is not None:
        for key in (envflags.ENV_VAR, "PATH"):
            if live_env.get(key) != env.get(key):
                diags.append(D.make("service_env_live_differs", unit=unit,
                                    message="%s: the running process has %s=%r, the configuration gives %r: "
                                            "restart the service to apply." % (unit, key, live_env.get(key),
                                                                               env.get(key))))
    diags.extend(restriction_diagnostics(settings, unit, bwrap_info))
    return {
        "unit": unit, "mode": mode, "fragment": state.get("fragment"), "dropins": state.get("dropins"),
        "user": user, "environment": {"METNOS_SANDBOX": value, "PATH": path_text},
        "provenance": {"METNOS_SANDBOX": prov.get(envflags.ENV_VAR, "unset"), "PATH": prov.get("PATH")},
        "environment_files": state.get("environment_files"), "restrictions": dict(
            (k, settings[k]) for k in U.RESTRICTION_KEYS if k in settings),
        "status": quartet, "bwrap_resolved": resolved, "live_environment": (
            {k: live_env.get(k) for k in (envflags.ENV_VAR, "PATH")} if live_env is not None else None),
        "diagnostics": D.sort(diags),
    }


def desired_dropin(env, sandbox_path, unit):
    """The drop-in enforce mode manages, computed from the environment *without* it."""
    lines = ["# Managed by metnos-sandbox-ops (metnos_service_env state=enforce). Local edits are",
             "# replaced; a backup of the previous file is kept beside it.", "[Service]"]
    lines.append('Environment="PATH=%s"' % sandbox_path.replace("\\", "\\\\").replace('"', '\\"'))
    disabled, _reason = envflags.classify_value(env.get(envflags.ENV_VAR))
    if disabled:
        lines.append("# METNOS_SANDBOX=%r disabled the sandbox (%s): unset it last." % (
            env.get(envflags.ENV_VAR), unit))
        lines.append("UnsetEnvironment=%s" % envflags.ENV_VAR)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- gathering (shared)

class SystemctlError(RuntimeError):
    pass


def systemd_running(root="/"):
    return root in ("/", "") and os.path.isdir("/run/systemd/system") and bool(B.which("systemctl", "/usr/bin:/bin"))


def systemctl_argv(scope, user, *args):
    argv = ["systemctl"]
    if scope == "user":
        argv += ["--user", "--machine=%s@" % user]
    return argv + list(args)


def _home(p):
    if p.get("scope") == "user":
        return pwd.getpwnam(p["user"]).pw_dir
    return None


def gather(p, runner, exclude=()):
    """Read a unit's configuration. ``p``: unit, scope, user, mode (auto/systemd/disk), root.

    Returns (state, env, prov, problems, mode, need_reload, live_env); raises U.UnitError when
    the unit does not exist, SystemctlError when systemctl fails.
    """
    home = _home(p)
    root = p.get("root") or "/"
    mode = p.get("mode") or "auto"
    scope = p.get("scope") or "system"
    if mode == "auto":
        mode = "systemd" if systemd_running(root) else "disk"
    if mode == "systemd":
        rc, out, err = runner(systemctl_argv(scope, p.get("user"), *U.show_args(p["unit"])))
        if rc != 0:
            raise SystemctlError("systemctl show %s failed: %s" % (p["unit"], err.strip()))
        show = U.parse_show(out)
        if show.get("LoadState") == "not-found":
            raise U.UnitError("unit_not_found")
        state = U.state_from_show(show)
        try:   # what systemd silently dropped is only visible in the files themselves
            disk = U.load_unit(p["unit"], scope, "/", home)
            state["rejected_assignments"] = disk["rejected_assignments"]
            state["unit_file_settings"] = disk["settings"]
        except U.UnitError:
            pass
        rc, out, _err = runner(systemctl_argv(scope, p.get("user"), "show-environment"))
        manager_env = {}
        for line in out.splitlines() if rc == 0 else []:
            words, ok = U.split_words(line)
            for word in words if ok else []:
                key, sep, value = word.partition("=")
                if sep:
                    manager_env[key] = value
        env, prov, problems = U.compose_environment(state, "/", manager_env, manager_env.get("PATH") or
                                                    U.default_service_path("/", runner))
        if "PATH" in manager_env and prov.get("PATH") == "manager environment":
            prov["PATH"] = "systemd default (manager environment)"
        pid = show.get("MainPID", "0")
        live = read_live_environ(pid) if pid not in ("", "0") else None
        return state, env, prov, problems, mode, show.get("NeedDaemonReload") == "yes", live
    state = U.load_unit(p["unit"], scope, root, home, exclude)
    state["unit_file_settings"] = state["settings"]
    manager_env = U.manager_default_environment(root) if scope == "system" else {}
    env, prov, problems = U.compose_environment(state, root, manager_env, U.default_service_path(root, runner))
    return state, env, prov, problems, mode, False, None


def inspect(p, runner):
    """gather() + evaluate(): the whole service-environment result, or None when the unit is missing."""
    from . import facts as F  # local import: facts imports nothing from here
    try:
        state, env, prov, problems, mode, need_reload, live = gather(p, runner)
    except U.UnitError:
        return None
    if state.get("masked"):
        return {"unit": p["unit"], "mode": mode, "status": envflags.status(None, {}),
                "diagnostics": [D.make("unit_masked", unit=p["unit"])]}
    admin_path = p.get("admin_path") if p.get("admin_path") is not None else os.environ.get("PATH", "")
    result = evaluate(p["unit"], state, env, prov, problems, mode, admin_path,
                      lambda path: F.bwrap_info(path, runner=runner), need_reload, live)
    result["_state"] = state
    result["_env"] = env
    user = result["user"]
    if user.get("missing"):
        result["diagnostics"].insert(0, D.make("service_user_missing", user=user["name"],
                                               message="%s: User=%s does not exist." % (p["unit"], user["name"])))
    return result
