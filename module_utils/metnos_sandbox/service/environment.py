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

import os
import pwd
import shlex
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..base import envflags, owners, safe_read
from ..base.diagnostics import ERROR, WARNING, Diagnostic, make, sort
from ..base.records import Record, Shape
from ..host import bwrap, bwrap_trust, facts, package_owner, procfs
from . import (
    env_channels,
    exec_env,
    groups,
    root_service,
    run_user,
    systemd_unit,
    unit_context,
    unit_environment,
    unit_preflight,
)
from .restrictions import restriction_diagnostics
from .run_user import Params, User

# --------------------------------------------------------------------------- evaluation

MAX_ENVIRON = 1 << 20


def parse_environ(data: bytes) -> Dict[str, str]:
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
        out.update(env=parse_environ(data[:MAX_ENVIRON]), read_as="uid %d" % os.geteuid())
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
    owned, error = procfs.read_file_as(path, uid, gid, MAX_ENVIRON)
    if owned is None:
        out["error"] = "%s; as the process's own uid %d: %s" % (first, uid, error)
        return out
    out.update(env=parse_environ(owned), read_as="uid %d (the process's own; root was refused: %s)" % (uid, first))
    return out


def exec_effects(state: Mapping[str, Any], env: Mapping[str, str]) -> List[Dict[str, Any]]:
    """The start command lines and what each does to METNOS_SANDBOX/PATH: [{where, value, effect}]."""
    out = []
    for item in state.get("exec_start") or []:
        effect = exec_env.exec_env_effect(item["value"], env, run_user.KEYS)
        touches = effect["clears"] or any(k in effect["sets"] or k in effect["unsets"] for k in run_user.KEYS)
        if touches or not effect["determinable"]:
            out.append({"where": item["where"], "value": item["value"], "effect": effect})
    return out


class Gathered(Record):
    """A unit's configuration as gather() reads it."""
    state: Dict[str, Any]           # systemd_unit's unit state: settings, fragment, dropins, exec_start, ...
    env: Dict[str, str]             # the environment its directives give (before the start command line)
    prov: Dict[str, str]            # where each variable of ``env`` comes from
    problems: List[Dict[str, Any]]  # EnvironmentFile= entries that cannot be read
    mode: str                       # "systemd" (systemctl show) or "disk" (the unit files)
    need_reload: bool               # systemd: the unit files changed since daemon-reload
    live: Optional[Dict[str, Any]]  # read_live_environ() of MainPID when the service runs, else None


class Evaluation(Record):
    """What evaluate() judges: one unit's gathered configuration, the admin's PATH (None: not compared)
    and ``bwrap_info_for(path)``, facts.bwrap_info() of the bwrap the service resolves."""
    unit: str
    gathered: Gathered
    admin_path: Optional[str] = None
    bwrap_info_for: Optional[Callable[[str], Dict[str, Any]]] = None
    grants: Sequence[str] = ()          # the folders the stored profiles grant (profile/store.py stored_grants)


class _View(Record):
    """What evaluate() derives from an Evaluation before judging it."""
    user: User
    cwd: str
    effects: List[Dict[str, Any]]      # exec_effects()
    predicted: Dict[str, str]          # env with the start command line applied
    prov: Dict[str, str]               # provenance, with the start command line's changes
    resolved: Optional[str]            # bwrap through the directives' PATH, as the service's user
    pred_resolved: Optional[str]       # ... through the predicted PATH
    bwrap_info: Optional[Dict[str, Any]]
    config_status: envflags.Status     # status() of the configuration (predicted)
    resolutions: Dict[str, Optional[str]]  # PATH text -> bwrap through it (_resolved: each PATH asked once)


def _resolve(path_text: str, user: Mapping[str, Any], cwd: str) -> Optional[str]:
    if user.get("uid") is not None:
        return run_user.which_as("bwrap", path_text, user, cwd=cwd)
    return bwrap.which("bwrap", path_text, cwd=cwd)


def _resolved(v: _View, path_text: str) -> Optional[str]:
    """bwrap through ``path_text`` as the service's user, in its working directory: asked once per PATH in one
    evaluation (the directives', the start command line's, the live process's are often the same text, and each
    lookup asks the kernel in a child with the user's credentials)."""
    if path_text not in v.resolutions:
        v.resolutions[path_text] = _resolve(path_text, v.user, v.cwd)
    return v.resolutions[path_text]


def service_cwd(value: Optional[str], user: Mapping[str, Any]) -> str:
    """The working directory the service's process starts in (where execvp resolves an empty or relative PATH
    entry): WorkingDirectory= as a unit file writes it ('-' before a directory that may be missing, '~' for the
    user's home) or as systemctl show prints it ('!' for that '-'); '/' when it is unset, or optional and
    missing (systemd then leaves the process in /)."""
    text = value or ""
    optional = text[:1] in ("-", "!")
    if optional:
        text = text[1:]
    if text == "~":
        text = user.get("home") or "/"
    if not text.startswith("/") or (optional and not os.path.isdir(text)):
        return "/"
    return text


def _derive(ev: Evaluation) -> _View:
    g = ev.gathered
    env = g.env
    user = run_user.resolve_service_user(g.state["settings"])
    cwd = service_cwd(g.state["settings"].get("WorkingDirectory"), user)
    effects = exec_effects(g.state, env)
    predicted = dict(env)
    prov = dict(g.prov)
    for item in effects:
        if item["effect"]["determinable"]:
            predicted = exec_env.apply_exec_effect(env, item["effect"])
            for key in run_user.KEYS:
                if predicted.get(key) != env.get(key):
                    prov[key] = "ExecStart= (%s) through %s" % (item["where"], item["effect"]["how"])
    path_text = env.get("PATH", "")
    pred_path = predicted.get("PATH", "")
    resolutions: Dict[str, Optional[str]] = {}
    for text in (path_text, pred_path):
        if text not in resolutions:
            resolutions[text] = _resolve(text, user, cwd)
    resolved, pred_resolved = resolutions[path_text], resolutions[pred_path]
    bwrap_info = ev.bwrap_info_for(resolved) if resolved and ev.bwrap_info_for else None
    return _View(user, cwd, effects, predicted, prov, resolved, pred_resolved, bwrap_info,
                 envflags.status(pred_resolved, predicted), resolutions)


def _execstart_diagnostics(ev: Evaluation, v: _View) -> List[Diagnostic]:
    unit, env = ev.unit, ev.gathered.env
    diags = []
    for item in v.effects:
        effect = item["effect"]
        line = "ExecStart=%s (%s)" % (env_channels.redacted_text(item["value"]), item["where"])
        if not effect["determinable"]:
            diags.append(make("service_execstart_env_unknown", unit=unit, where=item["where"],
                              line=line,
                              how=effect["how"] or "a command", note=effect["note"]))
            continue
        after = exec_env.apply_exec_effect(env, effect)
        disabled, _reason = envflags.classify_value(after.get(envflags.ENV_VAR))
        new_resolved = _resolved(v, after.get("PATH", "")) if after.get("PATH") != env.get("PATH") else v.resolved
        misroutes = new_resolved != v.resolved
        severe = disabled or misroutes or (v.resolved and not new_resolved)
        heal, why = exec_env.neutralised_exec(item["value"], run_user.KEYS)
        changes = ["%s=%r" % (k, val) for k, val in sorted(effect["sets"].items()) if k in run_user.KEYS]
        changes += ["unset %s" % k for k in effect["unsets"] if k in run_user.KEYS]
        if effect["clears"]:
            changes.append("clears the whole environment (env -i)")
        diags.append(make(
            "service_execstart_sets_env", unit=unit,
            severity=ERROR if severe else WARNING, where=item["where"],
            healable=heal is not None, wording="disables" if disabled else "misroutes" if misroutes else "changes",
            fill={"line": line, "changes": "; ".join(changes), "new_bwrap": new_resolved, "old_bwrap": v.resolved},
            variant="healable" if heal is not None else "unhealable",
            fix=env_channels.redacted_text(heal or item["value"]), why=why))
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


def _live_diagnostics(ev: Evaluation, v: _View) -> List[Diagnostic]:
    """The running process against the configuration: the live process is the authority."""
    unit, live, predicted, resolved = ev.unit, ev.gathered.live, v.predicted, v.pred_resolved
    diags: List[Diagnostic] = []
    if live is None:
        return diags
    if live["env"] is None:
        diags.append(make("service_env_live_unreadable", unit=unit, pid=live["pid"],
                          error=live["error"]))
        return diags
    env = live["env"]
    origin = _live_origin(v.effects, ev.gathered.need_reload)
    value = env.get(envflags.ENV_VAR)
    configured = predicted.get(envflags.ENV_VAR)
    live_disabled, _r = envflags.classify_value(value)
    conf_disabled, _r = envflags.classify_value(configured)
    live_resolved = _resolved(v, env.get("PATH", "")) if env.get("PATH") != predicted.get("PATH") else resolved
    if live_disabled and not conf_disabled:
        diags.append(make("service_env_live_disables", unit=unit, pid=live["pid"],
                          key=envflags.ENV_VAR,
                          wording="value", fill={"value": repr(value), "configured": repr(configured),
                                                 "origin_conf": v.prov.get(envflags.ENV_VAR, "unset"),
                                                 "origin": origin}))
    if resolved and not live_resolved:
        diags.append(make("service_env_live_disables", unit=unit, pid=live["pid"], key="PATH",
                          wording="path", fill={"value": repr(env.get("PATH")), "resolved": resolved,
                                                "origin": origin}))
    elif live_resolved and resolved and os.path.realpath(live_resolved) != os.path.realpath(resolved):
        packaged = bool(package_owner.package_facts(live_resolved))
        diags.append(make("service_env_live_misroutes", unit=unit, pid=live["pid"],
                          wording="packaged" if packaged else "unpackaged",
                          fill={"value": repr(env.get("PATH")), "live_bwrap": live_resolved,
                                "resolved": resolved,
                                "origin": origin}))
    if env.get("PATH") is not None and env.get("PATH") != predicted.get("PATH"):
        # the PATH the running process resolves bwrap through now (until it restarts): judged like the configured one
        diags.extend(run_user.path_diagnostics(env["PATH"], live_resolved, unit, v.cwd))
    for key in run_user.KEYS:
        if env.get(key) != predicted.get(key) and not any(d.get("details", {}).get("key") == key or (
                key == "PATH" and d["code"] == "service_env_live_misroutes") for d in diags):
            diags.append(make("service_env_live_differs", unit=unit,
                              wording="differs", fill={"key": key, "value": repr(env.get(key)),
                                                       "configured": repr(predicted.get(key))}))
    return diags


def _missing_bwrap(ev: Evaluation, v: _View) -> List[Diagnostic]:
    """bwrap does not resolve through the service's PATH."""
    unit, path_text = ev.unit, ev.gathered.env.get("PATH", "")
    diags = []
    if not v.resolved:
        diags.append(make("service_path_missing_bwrap", unit=unit, path=path_text, user=v.user["name"],
                          origin=v.prov.get("PATH")))
    return diags


def _path_diagnostics(ev: Evaluation, v: _View) -> List[Diagnostic]:
    return run_user.path_diagnostics(ev.gathered.env.get("PATH", ""), v.resolved, ev.unit, v.cwd)


def _bwrap_mismatch(ev: Evaluation, v: _View) -> List[Diagnostic]:
    """The service's bwrap is another binary than the admin's, or no package's."""
    unit, resolved = ev.unit, v.resolved
    diags = []
    admin = bwrap.which("bwrap", ev.admin_path) if ev.admin_path is not None else None
    if resolved and admin and os.path.realpath(resolved) != os.path.realpath(admin):
        diags.append(make("service_bwrap_mismatch", unit=unit, variant="different", admin_bwrap=admin,
                          service_bwrap=resolved))
    elif resolved and not (v.bwrap_info["package"] if v.bwrap_info else package_owner.package_facts(resolved)):
        diags.append(make("service_bwrap_mismatch", unit=unit, variant="unpackaged",
                          service_bwrap=resolved))
    return diags


def _bwrap_not_roots(ev: Evaluation, v: _View) -> List[Diagnostic]:
    """The service's bwrap is not root's alone (base/owners.py): it was not run (facts.bwrap_info's not_run)."""
    found = (v.bwrap_info or {}).get("not_run") or []
    return owners.findings("bwrap_not_run_not_roots", v.resolved or "bwrap", [owners.Problem(**p) for p in found])


def _rejected_diagnostics(ev: Evaluation, v: _View) -> List[Diagnostic]:
    """METNOS_SANDBOX assignments in the unit files that systemd ignores."""
    unit = ev.unit
    diags = []
    for rejected in ev.gathered.state.get("rejected_assignments", []):
        if envflags.ENV_VAR in rejected.get("line", rejected["text"]):
            diags.append(make("sandbox_env_rejected_by_systemd", unit=unit,
                              wording="ignored", fill={"text": repr(rejected["text"]),
                                                       "reason": rejected["reason"],
                                                       "effective": repr(
                                                           v.predicted.get(envflags.ENV_VAR))},
                              where=rejected["where"]))
    return diags


def _file_diagnostics(ev: Evaluation, v: _View) -> List[Diagnostic]:
    """Unreadable EnvironmentFile= entries, a pending daemon-reload."""
    unit, g = ev.unit, ev.gathered
    diags = []
    for problem in g.problems:
        if "error" in problem:
            diags.append(make("environment_file_missing", unit=unit, path=problem["path"],
                              severity=WARNING if problem["optional"]
                              else ERROR, where=problem["where"],
                              error=problem["error"], variant="optional" if problem["optional"]
                              else "required"))
    diags.extend(refused_file_diagnostics(unit, g.state))
    if g.need_reload:
        diags.append(make("unit_needs_daemon_reload", unit=unit))
    return diags


_REFUSED_FILE_CODES = {safe_read.LINK: "unit_file_link_refused", safe_read.FIFO: "unit_file_fifo",
                       safe_read.OWNER_CANNOT_READ: "unit_file_unreadable_by_owner",
                       safe_read.CHANGED: "unit_file_changed_while_read"}


def refused_file_diagnostics(unit: str, state: Mapping[str, Any]) -> List[Diagnostic]:
    """The unit files and drop-ins load_unit() did not read (base/safe_read.py refused them), each with its code."""
    return [make(_REFUSED_FILE_CODES.get(refused["reason"], "unit_file_unreadable"), unit=unit,
                 file=shlex.quote(refused["path"]), owner=refused["owner"],
                 target_owner=refused["target_owner"] or "an owner it does not say",
                 why=refused["why"])
            for refused in state.get("refused_files", [])]


def _runtime_status(ev: Evaluation, v: _View) -> Tuple[envflags.Status, str]:
    """The runtime's status() and whose view it is: the live process when it can be read, else the
    configuration."""
    unit, live = ev.unit, ev.gathered.live
    status, view = v.config_status, "configuration of %s (service not running)" % unit
    if live is not None and live["env"] is not None:
        live_env = live["env"]
        status = envflags.status(_resolved(v, live_env.get("PATH", "")), live_env)
        view = "live process of %s (PID %s, /proc/%s/environ read as %s)" % (unit, live["pid"], live["pid"],
                                                                             live["read_as"])
    elif live is not None:
        view = "configuration of %s (the running PID %s could not be read: %s)" % (unit, live["pid"], live["error"])
    if v.effects and not (live is not None and live["env"] is not None):
        view += ", with the ExecStart= command line applied"
    return status, view


class _ServiceKeys(Shape):
    unit: str
    mode: str                                    # "systemd" (systemctl show) or "disk" (the unit files)
    status: envflags.Status                      # the runtime's status() in the service (see status_view)
    diagnostics: List[Diagnostic]


class ServiceResult(_ServiceKeys, total=False):
    """One service's environment and what follows from it (evaluate(); what metnos_service_env returns, the
    audit's ``service`` and the probe's): a masked unit has only the four keys above; ``verdict`` is the
    audit's (facts.verdict of the diagnostics)."""
    fragment: Optional[str]
    dropins: Optional[List[str]]
    user: User                                   # run_user.resolve_service_user()
    environment: Dict[str, Optional[str]]        # METNOS_SANDBOX and PATH as the service gets them
    provenance: Dict[str, Optional[str]]         # where each comes from
    environment_files: Optional[List[Dict[str, Any]]]
    restrictions: Dict[str, Any]                 # the unit's directives that can break bwrap
    status_view: str
    bwrap_resolved: Optional[str]
    exec_start_effects: List[Dict[str, Any]]
    live_environment: Optional[Dict[str, Optional[str]]]
    live_read: Optional[Dict[str, Any]]          # pid, read_as, error
    verdict: str


def _root_service(ev: Evaluation, v: _View) -> List[Diagnostic]:
    """The service (configured or running) as root: no boundary for its executors (root_service.py)."""
    state = ev.gathered.state
    settings = dict(state.get("unit_file_settings") or {})
    settings.update(state["settings"])
    return root_service.root_diagnostics(ev.unit, v.user, settings, ev.gathered.live)


def _channels(ev: Evaluation, v: _View) -> List[Diagnostic]:
    """The environment every executor inherits, judged as a channel (env_channels.py): the live process's
    when it can be read, else the configuration's with the start command line applied."""
    live = ev.gathered.live
    if live is not None and live["env"] is not None:
        return env_channels.channel_diagnostics(ev.unit, live["env"], "live process, PID %s" % live["pid"], v.cwd)
    return env_channels.channel_diagnostics(ev.unit, v.predicted, "configuration", v.cwd)


def _groups(ev: Evaluation, v: _View) -> List[Diagnostic]:
    """The supplementary groups every executor keeps, and the files they open in the base binds and the granted
    folders (groups.py)."""
    settings = ev.gathered.state["settings"]
    return groups.group_diagnostics(ev.unit, v.user, settings, ev.gathered.live, ev.grants)[1]


# The judges of one service, in the order their diagnostics are listed (base_diagnostics.sort keeps it within a
# severity).
_JUDGES: Tuple[Callable[[Evaluation, _View], List[Diagnostic]], ...] = (
    _root_service, _execstart_diagnostics, _missing_bwrap, _bwrap_not_roots, _rejected_diagnostics, _path_diagnostics,
    _bwrap_mismatch, _file_diagnostics, _live_diagnostics, _channels, _groups)


def evaluate(ev: Evaluation) -> ServiceResult:
    """All diagnostics and facts for one service, from a composed environment.

    ``ev.gathered.env`` is what the unit's directives give; the start command line (ExecStart= env(1)
    or ``sh -c`` prefixes) is applied on top; ``ev.gathered.live`` (read_live_environ()) is the
    authority for the runtime's status() when the service runs.
    """
    unit = ev.unit
    v = _derive(ev)
    diags = [d for d in envflags.diagnose(v.config_status, v.predicted, v.predicted.get("PATH", ""), unit=unit,
                                          where="effective environment of %s (%s)"
                                          % (unit, v.prov.get(envflags.ENV_VAR, "unset")))
             if d["code"] != "bwrap_missing"]
    for judge in _JUDGES:
        diags.extend(judge(ev, v))
    diags.extend(restriction_diagnostics(ev.gathered.state["settings"], unit, v.bwrap_info))
    status, view = _runtime_status(ev, v)
    if status["active"] != v.config_status["active"]:
        diags = [d for d in diags if d["code"] != "executor_os_sandbox_unavailable"]
        if not status["active"]:
            diags.append(make("executor_os_sandbox_unavailable", variant="running", view=view))
    return _result(ev, v, status, view, diags)


def _result(ev: Evaluation, v: _View, status: envflags.Status, view: str,
            diags: List[Diagnostic]) -> ServiceResult:
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
            (k, settings[k]) for k in systemd_unit.RESTRICTION_KEYS if k in settings),
        "status": status, "status_view": "runtime status() as seen by the %s" % view,
        "bwrap_resolved": v.pred_resolved, "exec_start_effects": [
            {"where": e["where"], "how": e["effect"]["how"], "determinable": e["effect"]["determinable"],
             "sets": dict((k, val) for k, val in e["effect"]["sets"].items() if k in run_user.KEYS),
             "unsets": [k for k in e["effect"]["unsets"] if k in run_user.KEYS], "clears": e["effect"]["clears"]}
            for e in v.effects],
        "live_environment": {k: live_env.get(k) for k in run_user.KEYS} if live_env is not None else None,
        "live_read": ({"pid": live["pid"], "read_as": live["read_as"], "error": live["error"]}
                      if live is not None else None),
        "diagnostics": sort(diags),
    }


# --------------------------------------------------------------------------- gathering (shared)

class SystemctlError(RuntimeError):
    pass


def systemd_running(root: str = "/") -> bool:
    return root in ("/", "") and os.path.isdir("/run/systemd/system") and bool(bwrap.which("systemctl",
                                                                                           "/usr/bin:/bin"))


def systemctl_argv(scope: str, user: Optional[str], *args: str) -> List[str]:
    argv = ["systemctl"]
    if scope == "user":
        argv += ["--user", "--machine=%s@" % user]
    return argv + list(args)


def _home(p: Params) -> Optional[str]:
    if p.get("scope") == "user":
        return pwd.getpwnam(p["user"]).pw_dir
    return None


def manager_environment(runner: bwrap.Runner, scope: str = "system",
                        user: Optional[str] = None) -> Optional[Dict[str, str]]:
    """The manager's runtime environment (DefaultEnvironment= plus `systemctl set-environment`), or
    None when systemctl cannot tell."""
    rc, out, _err = runner(systemctl_argv(scope, user, "show-environment"))
    if rc != 0:
        return None
    env = {}
    for line in out.splitlines():
        words, ok = systemd_unit.split_words(line)
        for word in words if ok else []:
            key, sep, value = word.partition("=")
            if sep:
                env[key] = value
    return env


def gather(p: Params, runner: bwrap.Runner, exclude: Sequence[str] = ()) -> Gathered:
    """Read a unit's configuration. ``p``: unit, scope, user, mode (auto/systemd/disk), root, and
    (disk mode) manager_env.

    Raises systemd_unit.UnitError when the unit does not exist, SystemctlError when systemctl fails.
    """
    home = _home(p)
    root = p.get("root") or "/"
    mode = p.get("mode") or "auto"
    scope = p.get("scope") or "system"
    if mode == "auto":
        mode = "systemd" if systemd_running(root) else "disk"
    if mode == "systemd":
        return _gather_systemd(p, runner, scope, home)
    state = systemd_unit.load_unit(p["unit"], scope, root, home, exclude)
    state["unit_file_settings"] = state["settings"]
    manager_env = p.get("manager_env")
    if manager_env is None:
        manager_env = unit_environment.manager_default_environment(root) if scope == "system" else {}
    env, prov, problems = unit_environment.compose_environment(state, root, manager_env,
                                                               unit_environment.default_service_path(root, runner))
    return Gathered(state, env, prov, problems, mode, False, None)


def _gather_systemd(p: Params, runner: bwrap.Runner, scope: str, home: Optional[str]) -> Gathered:
    """gather() from `systemctl show` (and the unit files for what only they hold) and the live process."""
    rc, out, err = runner(systemctl_argv(scope, p.get("user"), *systemd_unit.show_args(p["unit"])))
    if rc != 0:
        raise SystemctlError("systemctl show %s failed: %s" % (p["unit"], err.strip()))
    show = systemd_unit.parse_show(out)
    if show.get("LoadState") == "not-found":
        raise systemd_unit.UnitError("unit_not_found")
    state = systemd_unit.state_from_show(show)
    try:   # what systemd silently dropped, and the start command lines, are only in the files
        disk = systemd_unit.load_unit(p["unit"], scope, "/", home)
        state["rejected_assignments"] = disk["rejected_assignments"]
        state["unit_file_settings"] = disk["settings"]
        state["exec_start"] = disk["exec_start"]
        state["refused_files"] = disk["refused_files"]
    except systemd_unit.UnitError:
        pass
    manager_env = manager_environment(runner, scope, p.get("user")) or {}
    env, prov, problems = unit_environment.compose_environment(state, "/", manager_env, manager_env.get("PATH") or
                                                               unit_environment.default_service_path("/", runner))
    if "PATH" in manager_env and prov.get("PATH") == "manager environment":
        prov["PATH"] = "systemd default (manager environment)"
    state["manager_environment"] = manager_env
    pid = show.get("MainPID", "0")
    live = read_live_environ(pid) if pid.isdigit() and pid != "0" else None
    return Gathered(state, env, prov, problems, "systemd", show.get("NeedDaemonReload") == "yes", live)


def execution_context(p: Params, runner: bwrap.Runner, probe_user: Optional[Mapping[str, Any]] = None) -> Dict[str,
                                                                                                               Any]:
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
    address = unit_preflight.UnitAddress(unit=p["unit"], scope=scope, user=p.get("user"), user_entry=entry)
    ctx: Dict[str, Any] = unit_preflight.build(unit_context.parse_show_all(out), runner, address)
    if probe_user:
        ctx["assignments"] = [a for a in ctx["assignments"] if a[0] not in ("User", "DynamicUser")]
        ctx["excluded"].append({"directive": "User", "category": "probe (probe_user=%s)" % probe_user.get("name")})
    return ctx


class Inspection(Record):
    """inspect()'s answer: the public result (what metnos_service_env and the audit return) and the
    service's whole composed environment, None when the unit is masked (nothing was evaluated)."""
    result: ServiceResult
    env: Optional[Dict[str, str]]


def inspect(p: Params, runner: bwrap.Runner,
            verifications: Optional[bwrap_trust.Verifications] = None) -> Optional[Inspection]:
    """gather() + evaluate(): the whole service-environment result, or None when the unit is missing.
    ``verifications``: the audit's verifications of bwrap files (bwrap_trust.Verifications), reused for the
    service's bwrap."""
    try:
        g = gather(p, runner)
    except systemd_unit.UnitError:
        return None
    if g.state.get("masked"):
        return Inspection({"unit": p["unit"], "mode": g.mode, "status": envflags.status(None, {}),
                           "diagnostics": [make("unit_masked", unit=p["unit"])]}, None)
    admin_path = p.get("admin_path") if p.get("admin_path") is not None else os.environ.get("PATH", "")
    grants = list(p.get("grants") or [])           # the folders the stored profiles grant (the module's)

    def bwrap_info(path: str) -> Dict[str, Any]:
        return facts.bwrap_info(path, runner=runner, verifications=verifications)
    result = evaluate(Evaluation(p["unit"], g, admin_path, bwrap_info, grants))
    user = result["user"]
    if user.get("missing"):
        result["diagnostics"].insert(0, make("service_user_missing", user=user["name"],
                                             unit=p["unit"]))
    return Inspection(result, g.env)
