#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: metnos_service_env
short_description: Check (and optionally fix) the environment a Metnos systemd service really gets
version_added: "1.0.0"
description:
  - Reports the environment the service's processes get (C(METNOS_SANDBOX), C(PATH), the user) and
    what follows for the sandbox (spec R-DIAG-3, R-FAIL-1), not what the admin's shell sees.
  - Through systemd when it runs (C(systemctl show), the live C(/proc/<MainPID>/environ) when
    readable), or from the unit files on disk when it does not (containers, images, chroots),
    with systemd's own rules for drop-ins, quoting, escapes, resets, optional EnvironmentFiles and
    C(UnsetEnvironment=). The result says which mode was used.
  - Validates with stable codes, including the unit's own restrictions that break bwrap inside the
    service only (C(RestrictNamespaces=), C(SystemCallFilter=), C(ProcSubset=), C(RestrictSUIDSGID=),
    C(NoNewPrivileges=) with a setuid bwrap).
  - The live process is the authority while the service runs - C(/proc/<MainPID>/environ) read as
    root or, where root is refused (no CAP_SYS_PTRACE, as in containers), as the process's own uid;
    a live C(METNOS_SANDBOX) or PATH that disables or misroutes the sandbox is an error with its origin;
    C(ExecStart=) is parsed for C(env)/C(sh -c) prefixes; an unreadable live environment is reported.
  - I(state=enforce) manages one drop-in for the unit (never the vendor unit) plus the PATH file it
    names. It unsets C(METNOS_SANDBOX) for the unit whatever sets it (unit, EnvironmentFiles, drop-ins
    in /run, the manager's environment); sets a PATH that resolves bwrap to the package-owned binary
    (directories holding another bwrap, or writable by others, are not placed before it); rewrites an
    C(env) prefix of C(ExecStart=) that sets them (or reports that a drop-in cannot); with
    I(relax_restrictions=true) relaxes the directives that break bwrap by the minimum. It keeps backups,
    supports check and diff mode, reloads systemd only when it changed something, and restarts the
    unit only when I(restart=true).
  - Enforce never goes where root must not (issue 49). A user unit's drop-in and PATH file are read and written
    as that user (a child forked with the user's uid, gid and groups), never by root through the user's folders;
    a system unit's through folders opened without following a link someone else can plant. A link, FIFO or
    other non-regular file in place of a managed file, a file where the drop-in folder is expected, an
    C(ExecStart=) that would run as root a program someone else can change, and a user unit's line read from a
    file its user cannot read are each refused with their own code (C(refused) in the result names the path,
    its owner and the fix). A system drop-in that carries text of a unit file others cannot read is 0600.
    Backups are made only of a file the writer itself owns.
options:
  mode:
    description: C(systemd) (systemctl show), C(disk) (unit files), or C(auto) (systemd when it runs).
    type: str
    choices: [auto, systemd, disk]
    default: auto
  root:
    description: Read unit and environment files below this directory (disk mode; images, chroots).
    type: path
    default: /
  state:
    description: C(validate) only reads; C(enforce) manages the drop-in.
    type: str
    choices: [validate, enforce]
    default: validate
  sandbox_path:
    description: The PATH enforce mode sets for the service.
    type: str
    default: /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin
  dropin_name:
    description: File name of the managed drop-in (sorts last so that it wins).
    type: str
    default: zz-metnos-sandbox.conf
  daemon_reload:
    description: Run C(systemctl daemon-reload) after changing the drop-in (systemd mode only).
    type: bool
    default: true
  restart:
    description: Restart the unit after changing the drop-in.
    type: bool
    default: false
  strict:
    description: Fail when the unit does not exist (otherwise report C(unit_not_found)).
    type: bool
    default: false
  admin_path:
    description: The admin's PATH, to compare which bwrap each resolves (default the module's PATH).
    type: str
  return_environment:
    description: Also return the whole effective environment (off by default); the value of a variable whose
      name looks like a credential or a key agent's socket is replaced by a marker, never returned.
    type: bool
    default: false
  profile_dir:
    description:
      - The folder of the stored profiles (the role's C(metnos_sandbox_profile_dir)). The folders they grant are
        searched, with the base binds, for files a supplementary group of the service opens
        (C(service_group_file)). Unset, only the base binds are searched.
    type: path
  run_as:
    description:
      - With I(state=enforce), also write the drop-in C(10-metnos-user.conf) that runs the service as this
        unprivileged user (C(User=)), or C(dynamic) for C(DynamicUser=yes). Unset (the default), a service that
        runs as root is only reported (C(service_runs_as_root), whose remediation lists the folders to hand
        over), as the drop-in changes who owns the service's files; it is written only when asked.
      - A user that does not exist, or root, is refused.
    type: str
  relax_restrictions:
    description:
      - With I(state=enforce), also relax the unit's directives that break bwrap (measured in
        docs/unit-directives.md), each by the minimum bwrap needs (e.g. C(RestrictAddressFamilies=AF_NETLINK)),
        in the managed drop-in; every relaxation is listed in C(relaxed). Off by default - without it they
        are only reported (C(not_relaxed)).
    type: bool
    default: false
  filter_keyrings:
    description:
      - With I(state=enforce), also add C(SystemCallFilter=~@keyring:EPERM) to the managed drop-in. Keyrings are
        not namespaced, so every executor the service starts holds the unit's session keyring (the probe's
        finding C(probe_keyring_unit)); under the line keyctl fails with EPERM and bwrap still works (it makes no
        keyctl call). Off by default - for a unit with C(User=) systemd then implies C(NoNewPrivileges=yes), which
        stops a setuid bwrap, so it is refused (C(not_healed)) when bwrap is setuid and the unit does not run as
        root.
    type: bool
    default: false
attributes:
  diff_mode:
    description: Returns details on what has changed (or would change in check mode) when run with C(--diff).
    support: full
extends_documentation_fragment: [metnos.sandbox.metnos_sandbox, metnos.sandbox.metnos_sandbox.service]
"""

EXAMPLES = r"""
- name: What does metnos.service really get?
  metnos.sandbox.metnos_service_env:
    unit: metnos.service
  register: svc

- name: Fix PATH and a disabling METNOS_SANDBOX with a managed drop-in, then restart
  metnos.sandbox.metnos_service_env:
    unit: metnos.service
    state: enforce
    restart: true

- name: Also relax the unit's directives that break bwrap (each one listed in the result)
  metnos.sandbox.metnos_service_env:
    unit: metnos.service
    state: enforce
    relax_restrictions: true
    restart: true
"""

RETURN = r"""
mode:
  description: systemd or disk (which source was used).
  returned: always
  type: str
status:
  description: The runtime's status() (bwrap_available, bwrap_path, disabled_via_env, active), as the service sees it.
  returned: always
  type: dict
environment:
  description: Effective METNOS_SANDBOX and PATH.
  returned: when the unit exists
  type: dict
provenance:
  description: Where each of them comes from (Environment=, EnvironmentFile=, systemd default, ...).
  returned: when the unit exists
  type: dict
user:
  description: The service user (name, uid, gid, groups, home, dynamic).
  returned: when the unit exists
  type: dict
restrictions:
  description: The unit's sandboxing directives that matter for bwrap.
  returned: when the unit exists
  type: dict
live_environment:
  description: METNOS_SANDBOX and PATH of the running MainPID, when readable.
  returned: when the unit exists
  type: dict
diagnostics:
  description: Findings, errors first; same shape as M(metnos.sandbox.bwrap_facts).
  returned: always
  type: list
  elements: dict
verdict:
  description: pass, warn or fail.
  returned: always
  type: str
status_view:
  description: Whose view that status() is (the live process, or the configuration and why).
  returned: when the unit exists
  type: str
exec_start_effects:
  description: ExecStart= lines that change METNOS_SANDBOX or PATH (env(1), sh -c), with what they do.
  returned: when the unit exists
  type: list
  elements: dict
live_read:
  description: PID, how its environment was read (root or the process's uid) or why it could not be.
  returned: when the unit exists
  type: dict
dropin:
  description: Path, desired content and backup of the managed drop-in and of its PATH file (enforce), and
    C(debris_removed), the temporary files of a dead earlier run removed from their folder.
  returned: when state=enforce
  type: dict
healed:
  description: What enforce neutralised (what, source, action written).
  returned: when state=enforce
  type: list
  elements: dict
relaxed:
  description: Directives relaxed for bwrap (code, directive, line written); only with relax_restrictions.
  returned: when state=enforce
  type: list
  elements: dict
not_healed:
  description: What a drop-in cannot heal, with the reason (e.g. a shell script in ExecStart=).
  returned: when state=enforce
  type: list
  elements: dict
not_relaxed:
  description: Directives that break bwrap and were left as they are, with the reason.
  returned: when state=enforce
  type: list
  elements: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics, envflags
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap, facts, package_owner
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import checks, spec
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import store
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import (
    enforce_write,
    env_channels,
    environment,
    restrictions,
    root_service,
    run_user,
    systemd_unit,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service.enforce import (
    ENV_FILE_SUFFIX,
    PlanInputs,
    add_keyring_filter,
    enforce_plan,
)

ARGUMENT_SPEC = spec.spec(
    spec.SERVICE,
    mode={"type": "str", "choices": ["auto", "systemd", "disk"], "default": "auto"},
    root={"type": "path", "default": "/"},
    state={"type": "str", "choices": ["validate", "enforce"], "default": "validate"},
    sandbox_path={"type": "str", "default": systemd_unit.DEFAULT_SYSTEM_PATH},
    dropin_name={"type": "str", "default": restrictions.DROPIN_NAME},
    daemon_reload={"type": "bool", "default": True},
    restart={"type": "bool", "default": False},
    strict={"type": "bool", "default": False},
    admin_path={"type": "str"},
    return_environment={"type": "bool", "default": False},
    relax_restrictions={"type": "bool", "default": False},
    filter_keyrings={"type": "bool", "default": False},
    run_as={"type": "str"},
    profile_dir={"type": "path"},
)


def build_module():
    return spec.utf8_module(AnsibleModule)(argument_spec=ARGUMENT_SPEC, required_if=spec.USER_SCOPE_NEEDS_USER,
                                           supports_check_mode=True)


def _systemctl(module, scope, user, *args):
    return bwrap.module_runner(module)(environment.systemctl_argv(scope, user, *args))


def gather(module, p, exclude=()):
    try:
        return environment.gather(p, bwrap.module_runner(module), exclude)
    except environment.SystemctlError as exc:
        module.fail_json(msg="metnos_service_env: %s" % exc, code="systemctl_failed")


def evaluate(module, p):
    grants = store.stored_grants(p["profile_dir"]) if p["profile_dir"] else []
    try:
        return environment.inspect(dict(p, grants=grants), bwrap.module_runner(module))
    except environment.SystemctlError as exc:
        module.fail_json(msg="metnos_service_env: %s" % exc, code="systemctl_failed")


def _writer(p):
    """Who writes the managed files: None (root, in root's folder) for a system unit; the user, dropped (a
    child forked as that user), for a user unit: root never goes through the user's folders."""
    if p["scope"] != "user":
        return None
    account = facts.resolve_user(p["user"])
    return dict(account, groups=enforce_write.user_groups(account["name"], account["gid"]))


def enforce(module, p, result):
    """Manage the drop-in and its PATH file. Returns (changed, info, diffs, plan)."""
    directory = os.path.join(p["root"], "etc/systemd/%s/%s.d" % ("user" if p["scope"] == "user" else "system",
                                                                 p["unit"]))
    if p["scope"] == "user":
        home = facts.resolve_user(p["user"])["home"]
        directory = os.path.join(home, ".config/systemd/user", p["unit"] + ".d")
    path = os.path.join(directory, p["dropin_name"])
    env_path = path[:-len(".conf")] + ENV_FILE_SUFFIX
    # The plan is computed from the configuration *without* our own files, with the manager's
    # runtime environment (set-environment) where systemd runs.
    runtime = p["root"] in ("/", "") and environment.systemd_running(p["root"])
    sub = dict(p, mode="disk", manager_env=environment.manager_environment(bwrap.module_runner(module), p["scope"],
                                                                           p["user"])
               if runtime else None)
    try:
        found = gather(module, sub, exclude=(path,))
    except systemd_unit.UnitError:
        return False, None, None, None
    state, env, prov = found.state, found.env, found.prov
    info = {"path": path, "content": None, "backup": None, "env_file": env_path, "env_file_backup": None}
    refused = environment.refused_file_diagnostics(p["unit"], state)
    if refused:          # a unit file it could not read safely: no drop-in is planned from half of the unit
        module.fail_json(msg="metnos_service_env: %s" % refused[0]["message"], code=refused[0]["code"],
                         refused=state["refused_files"][0], diagnostics=refused, dropin=info)
    user = run_user.resolve_service_user(state["settings"])
    resolved = result.get("bwrap_resolved")
    info_bwrap = facts.bwrap_info(resolved, runner=bwrap.module_runner(module)) if resolved else None
    visible = env_path if p["root"] in ("/", "") else "/" + os.path.relpath(env_path, p["root"])
    plan = enforce_plan(PlanInputs(unit=p["unit"], state=state, env=env, prov=prov, user=user,
                                   sandbox_path=p["sandbox_path"], env_file_path=visible,
                                   relax=p["relax_restrictions"], bwrap_info=info_bwrap,
                                   package_of=lambda path: package_owner.package_facts(
                                       path, bwrap.module_runner(module))))
    if p["filter_keyrings"]:
        add_keyring_filter(plan, state["settings"], user, info_bwrap)
    targets = [(env_path, plan["env_file"]), (path, plan["dropin"])]
    info["content"] = plan["dropin"]
    if p["run_as"]:          # only when asked: it changes who owns the service's files (service_runs_as_root)
        info["user_dropin"] = os.path.join(directory, root_service.USER_DROPIN)
        targets.append((info["user_dropin"], root_service.user_dropin(p["run_as"])))
    writer = _writer(p)
    try:
        if writer is None:       # root writes in root's folder: what an ExecStart= it writes runs is root's
            enforce_write.check_exec_lines(plan["dropin"].splitlines(), user.get("uid"), p["root"] or "/")
        readable = enforce_write.content_sources(state) if writer and "\nExecStart=" in plan["dropin"] else []
        seen = enforce_write.run_job({"read": [target for target, _content in targets], "readable": readable},
                                     writer)
        if writer is not None:
            enforce_write.check_readable(seen["readable"], writer["name"])
    except enforce_write.EnforceRefused as exc:
        module.fail_json(msg="metnos_service_env: %s" % exc, code=exc.code, refused=exc.details(), dropin=info)
    modes = {path: enforce_write.dropin_mode(state)} if writer is None else {}
    diffs = []
    for target, content in targets:
        before, mode, wanted = seen["before"].get(target), seen["modes"].get(target), modes.get(target, 0o644)
        if before != content or mode not in (None, wanted):
            header = target if mode in (None, wanted) else "%s (mode %04o -> %04o)" % (target, mode, wanted)
            diffs.append({"before": before or "", "after": content, "after_header": header,
                          "before_header": header if before is not None else "(absent)"})
    if not diffs:
        return False, info, None, plan
    if module.check_mode:
        return True, info, diffs, plan
    try:
        written = enforce_write.run_job({"write": [[target, content, modes.get(target, 0o644)]
                                                   for target, content in targets]}, writer)["written"]
    except enforce_write.EnforceRefused as exc:
        module.fail_json(msg="metnos_service_env: %s" % exc, code=exc.code, refused=exc.details(), dropin=info)
    info["env_file_backup"] = written[env_path]["backup"]
    info["backup"] = written[path]["backup"]
    if p["run_as"]:
        info["user_dropin_backup"] = written[info["user_dropin"]]["backup"]
    info["debris_removed"] = sorted(set(name for answer in written.values() for name in answer["debris"]))
    if result.get("mode") == "systemd":
        if p["daemon_reload"]:
            rc, _out, err = _systemctl(module, p["scope"], p["user"], "daemon-reload")
            if rc != 0:
                module.fail_json(msg="metnos_service_env: daemon-reload failed: %s" % err.strip(),
                                 code="daemon_reload_failed", dropin=info)
        if p["restart"]:
            rc, _out, err = _systemctl(module, p["scope"], p["user"], "restart", p["unit"])
            if rc != 0:
                module.fail_json(msg="metnos_service_env: restart of %s failed: %s" % (p["unit"], err.strip()),
                                 code="restart_failed", dropin=info)
    return True, info, diffs, plan


def main():
    module = build_module()
    try:
        run(module)
    except Exception as exc:   # never "Unknown error": a message, a code and the traceback
        import traceback
        module.fail_json(msg="metnos_service_env: unexpected %s: %s" % (type(exc).__name__, exc),
                         code="internal_error", exception=traceback.format_exc())


def _options(p):
    spec.unit_name(p["unit"])
    checks.path_string("sandbox_path", p["sandbox_path"])
    if not p["sandbox_path"] or bwrap.unsafe_entries(p["sandbox_path"]):
        raise checks.OptionError("sandbox_path: %r must be a non-empty PATH of absolute directories"
                                 % p["sandbox_path"])
    if "/" in p["dropin_name"] or not p["dropin_name"].endswith(".conf"):
        raise checks.OptionError("dropin_name: %r must be a file name ending in .conf" % p["dropin_name"])
    if p["scope"] == "user":
        spec.users(p["user"])
    if p["mode"] == "systemd":
        spec.systemd_running("mode", "mode=disk or auto", p["root"])
    if p["run_as"] and p["run_as"] != root_service.DYNAMIC:
        spec.users(p["run_as"])
        if facts.resolve_user(p["run_as"])["uid"] == 0:
            raise checks.OptionError("run_as: %r is root; name an unprivileged user or 'dynamic'" % p["run_as"])


def run(module):
    p = module.params
    spec.checked(module.fail_json, "metnos_service_env", lambda: _options(p))

    found = evaluate(module, p)
    result = found.result if found is not None else None
    if found is not None and p["return_environment"]:
        result["full_environment"] = env_channels.redacted(found.env)
    if result is None:
        diag = diagnostics.unit_not_found(p["unit"], scope=p["scope"], root=p["root"])
        out = {"changed": False, "unit": p["unit"], "mode": p["mode"], "status": envflags.status(None, {}),
               "diagnostics": [diag], "verdict": "warn"}
        if p["strict"]:
            module.fail_json(msg="metnos_service_env: %s" % diag["message"], code="unit_not_found", **out)
        module.exit_json(**out)

    changed = False
    if p["state"] == "enforce":
        changed, info, diff, plan = enforce(module, p, result)
        result["dropin"] = info
        if diff and module._diff:
            result["diff"] = diff
        if changed and not module.check_mode:
            found = evaluate(module, p)
            after = found.result
            if p["return_environment"]:
                after["full_environment"] = env_channels.redacted(found.env)
            result = dict(after, dropin=info, diff=result.get("diff"))
            if result.get("diff") is None:
                result.pop("diff")
        for key in ("healed", "relaxed", "not_healed", "not_relaxed"):
            result[key] = (plan or {}).get(key, [])
    result["verdict"] = facts.verdict(result["diagnostics"])
    module.exit_json(changed=changed, **result)


if __name__ == "__main__":
    main()
