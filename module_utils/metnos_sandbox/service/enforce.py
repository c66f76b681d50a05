# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Enforce mode's plan: the drop-in that heals the service's environment (METNOS_SANDBOX, a PATH that
finds the packaged bwrap), ExecStart= prefixes that change it, and the relaxations of the directives
that break bwrap (only with relax_restrictions).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import stat
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ..base import diagnostics, envflags
from ..base.records import Record
from ..host import bwrap, package_owner
from . import exec_env, restrictions, run_user, systemd_unit

# --------------------------------------------------------------------------- enforce

ENV_FILE_SUFFIX = ".env"


def _bwrap_ok(candidate: str, user: Mapping[str, Any], package_of: Callable[[str], Any]) -> bool:
    """A bwrap the service may run: executable by the user, package-owned, root-owned up to /."""
    try:
        st = os.stat(candidate)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or run_user.first_executable_as([candidate],
                                                                    user) != 0 or not package_of(candidate):
        return False
    try:
        return not bwrap.file_facts(candidate)["ownership_problems"]
    except OSError:
        return False


def heal_path(path_text: str, user: Mapping[str, Any], package_of: Optional[Callable[[str], Any]] = None,
              fallback: str = systemd_unit.DEFAULT_SYSTEM_PATH) -> Tuple[str, List[str], Optional[str]]:
    """``path_text`` reordered so that bwrap resolves to a package-owned binary: that binary's
    directory moves just before the first entry that holds another bwrap the user can run, or that
    someone other than root can write to (where a bwrap could be planted). Other entries keep their
    order. Returns (new PATH, [changes], problem or None)."""
    package_of = package_of or package_owner.package_facts
    entries = list(bwrap.split_path(path_text))
    good = None
    for index, entry in enumerate(entries):
        if entry.startswith("/") and _bwrap_ok(os.path.join(entry, "bwrap"), user, package_of):
            good = index
            break
    if good is None:
        for entry in bwrap.split_path(fallback):
            if _bwrap_ok(os.path.join(entry, "bwrap"), user, package_of):
                return entry + ":" + path_text if path_text else entry, [
                    "added %s (it holds the package-owned bwrap; the PATH had none)" % entry], None
        return path_text, [], "no package-owned bwrap is reachable through %s or %s" % (path_text, fallback)
    offenders = []
    for index, entry in enumerate(entries[:good]):
        if not entry.startswith("/"):
            continue
        candidate = os.path.join(entry, "bwrap")
        if os.path.exists(candidate) and run_user.which_as("bwrap", entry, user):
            offenders.append((index, "%s holds %s, which is not the package-owned bwrap" % (entry, candidate)))
        else:
            problem = run_user.dir_problem(bwrap.entry_directory(entry))
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


class PlanInputs(Record):
    """What an enforce plan is computed from: the ``unit``'s configuration *without* our own files (``state``:
    its settings and ExecStart= lines, ``env``: the environment it gives its processes, ``prov``: where each
    variable comes from) and its ``user`` (run_user.resolve_service_user); the PATH asked for the sandbox
    (``sandbox_path``), the drop-in's env file as systemd names it (``env_file_path``), whether to ``relax`` the
    directives that break bwrap, the bwrap's facts (``bwrap_info``: facts.bwrap_info) and ``package_of`` (what
    owns a path: package_owner.package_facts when None)."""
    unit: str
    state: Mapping[str, Any]
    env: Mapping[str, str]
    prov: Mapping[str, str]
    user: Mapping[str, Any]
    sandbox_path: str
    env_file_path: str
    relax: bool = False
    bwrap_info: Optional[Mapping[str, Any]] = None
    package_of: Optional[Callable[[str], Any]] = None


def enforce_plan(inputs: PlanInputs) -> Dict[str, Any]:
    """What enforce writes for the unit, computed from its configuration *without* our own files.

    Returns {"dropin", "env_file" (contents), "path" (the healed PATH), "healed", "relaxed",
    "not_healed", "not_relaxed"}; each list entry says what, from where, and the line written.
    """
    plan: Dict[str, Any] = {"healed": [], "relaxed": [], "not_healed": [], "not_relaxed": []}
    env_file_path = inputs.env_file_path
    path = _plan_environment(plan, inputs)
    lines = ["# Managed by metnos-sandbox-ops (metnos.sandbox.metnos_service_env state=enforce). Local edits are",
             "# replaced; a backup of the previous file is kept beside it.", "[Service]",
             "# PATH for the sandbox: bwrap resolves to the package-owned binary.",
             "EnvironmentFile=%s" % env_file_path,
             "# METNOS_SANDBOX is unset for the unit, whatever sets it (Environment=, EnvironmentFile=, drop-ins",
             "# in /etc or /run, the manager's environment): UnsetEnvironment= applies after all of them.",
             "UnsetEnvironment=%s" % envflags.ENV_VAR]
    lines += _plan_exec_start(plan, inputs.state, inputs.env)
    lines += _plan_relax(plan, inputs.state, inputs.unit, inputs.relax, inputs.bwrap_info)
    return dict({"dropin": "\n".join(lines) + "\n",
                 "env_file": "# Managed by metnos-sandbox-ops: the service's PATH for the sandbox.\nPATH=%s\n"
                 % _env_file_value(path), "path": path}, **plan)


def _plan_environment(plan: Dict[str, Any], inputs: PlanInputs) -> str:
    """The healed PATH (returned) and what healing PATH and unsetting METNOS_SANDBOX changes."""
    env, prov = inputs.env, inputs.prov
    path, changes, problem = heal_path(inputs.sandbox_path, inputs.user, inputs.package_of)
    for change in changes:
        plan["healed"].append({"what": "PATH", "source": "sandbox_path", "action": change})
    if problem:
        plan["not_healed"].append({"what": "PATH", "reason": problem})
    if env.get("PATH") != path:
        plan["healed"].append({
            "what": "PATH=%s" % env.get("PATH"), "source": prov.get("PATH"),
            "action": "PATH=%s from %s (an EnvironmentFile= of the drop-in: it wins over every "
                      "Environment= and the EnvironmentFile= lines before it)" % (path, inputs.env_file_path)})
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
        effect = exec_env.exec_env_effect(item["value"], env, run_user.KEYS)
        touches = effect["clears"] or any(k in effect["sets"] or k in effect["unsets"] for k in run_user.KEYS)
        if not touches:
            rewritten.append(item["value"])
            continue
        new, why = exec_env.neutralised_exec(item["value"], run_user.KEYS)
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
    for diag in restrictions.restriction_diagnostics(state.get("unit_file_settings") or state["settings"], unit,
                                                     bwrap_info):
        if diag["severity"] != diagnostics.ERROR:
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


# Keyrings are not namespaced: every executor the service starts holds the unit's session keyring (issue 51,
# probe_keyring_unit). keyctl answers EPERM under this line instead of killing its caller; bwrap makes no keyctl call
# (the probe's systemd matrix runs bwrap under it: rows keyring_filtered and keyring_filtered_kill).
KEYRING_FILTER = "SystemCallFilter=~@keyring:EPERM"


def add_keyring_filter(plan: Dict[str, Any], settings: Mapping[str, Any], user: Mapping[str, Any],
                       bwrap_info: Optional[Mapping[str, Any]]) -> None:
    """Opt-in (filter_keyrings): the drop-in line that keeps the service's executors from sharing its session
    keyring, added to ``plan`` (an enforce_plan() result), or why not. Refused for a setuid bwrap in a unit that
    does not run as root: systemd implies NoNewPrivileges=yes for SystemCallFilter= without CAP_SYS_ADMIN, and
    no_new_privs ignores the setuid bit, so bwrap would stop working."""
    what = "the unit's session keyring, shared by every executor it starts (probe_keyring_unit)"
    runs_as_root = not user.get("dynamic") and user.get("uid") == 0
    if (bwrap_info or {}).get("setuid") and not runs_as_root:
        plan["not_healed"].append({"what": what, "source": "KeyringMode=%s" % (settings.get("KeyringMode") or
                                                                               "private"),
                                   "reason": "bwrap is setuid and the unit runs as %s: %s implies "
                                             "NoNewPrivileges=yes, which ignores bwrap's setuid bit" % (
                                                 user.get("name") or "its user", KEYRING_FILTER)})
        return
    plan["healed"].append({"what": what, "source": "KeyringMode=%s" % (settings.get("KeyringMode") or "private"),
                           "action": KEYRING_FILTER})
    plan["dropin"] += ("# Keyrings are not namespaced: the service's executors would share its session keyring "
                       "(filter_keyrings=true)\n%s\n" % KEYRING_FILTER)
