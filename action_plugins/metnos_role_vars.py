# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""metnos_role_vars: the roles' variables validated on the controller, before any task touches a host.

Each role's own meta/argument_specs.yml (the one spec: Ansible validates the role with it too when the role
starts, and ansible-doc shows it) is read from this collection, each variable the host defines is validated
with Ansible's own validator, and a refusal is one line per problem naming the variable, the value and the
choices, never the spec (Ansible's own role validation returns all of it, ~6 KB). Documentation:
library/metnos_role_vars.py.
"""
from __future__ import absolute_import, annotations, division, print_function

import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.vault import VaultHelper
from ansible.plugins.action import ActionBase

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import audit_vars

# The collection's roles: lexically from this file (plugins/action/ -> roles/), as installed and in the checkout.
ROLES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "roles"))


def _load_spec(role):
    """The options of ``role``'s entry point main, from its meta/argument_specs.yml; the error's text when it has
    none (raised when the role is asked for)."""
    import yaml  # controller side, Ansible's own dependency
    path = os.path.join(ROLES, role, "meta", "argument_specs.yml")
    try:
        with open(path, encoding="utf-8") as handle:
            # libyaml's loader when PyYAML has it (Ansible's own choice): ~1 ms, not ~10, for the 11 KB spec
            return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["argument_specs"]["main"][
                "options"]
    except (OSError, KeyError, TypeError, ValueError) as exc:
        return "metnos_role_vars: no argument spec for role %s at %s: %s" % (role, path, exc)


# Every role's spec read once per run (issue 52's cost): Ansible imports an action plugin in its main process
# (the strategy asks for the class) before it forks a worker per host, so each worker inherits these instead of
# parsing the YAML again (~10 ms of the controller's CPU per host with the pure-Python loader).
SPECS = dict((role, _load_spec(role)) for role in (sorted(os.listdir(ROLES)) if os.path.isdir(ROLES) else []))


def role_spec(role):
    """The options of ``role``'s entry point main (read once per run: SPECS)."""
    found = SPECS.get(role)
    if found is None:
        found = SPECS[role] = _load_spec(role)
    if isinstance(found, str):
        raise AnsibleActionFail(found) from None
    return found


def _spec_only(options):
    """The validator's part of the spec (no descriptions, no defaults: only what the host defines is checked)."""
    keep = ("type", "choices", "elements", "options", "required", "no_log")
    return dict((name, dict((k, v) for k, v in opt.items() if k in keep)) for name, opt in options.items())


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=spec.spec(spec.ROLE_VARS))
        if args["all_hosts"] and not self._task.run_once:
            raise AnsibleActionFail("metnos_role_vars: all_hosts needs run_once: true on its task (without it every "
                                    "host would judge every host's variables again)")
        hosts = list(self._every_host(task_vars)) if args["all_hosts"] else [("", task_vars, self._templar)]
        found: dict = {}      # each problem -> the hosts it was found on, in the play's order
        for name, host_vars, templar in hosts:
            for line in self._problems(args, host_vars, templar):
                found.setdefault(line, []).append(name)
        if found:
            problems = [_bounded(line) + _on_hosts(names, len(hosts)) for line, names in found.items()]
            later = args["all_hosts"] and len(hosts) < len(task_vars.get("ansible_play_hosts_all") or ())
            result.update(failed=True, code="invalid_option", problems=problems,
                          msg="Invalid variables, nothing was done on %s:\n%s\nThe choices: "
                              "ansible-doc -t role metnos.sandbox.<role>, and the head of playbooks/audit.yml"
                              % ("this batch's hosts (serial: the earlier batches' ran)" if later else
                                 "the hosts" if len(hosts) > 1 else "the host",
                                 "\n".join("  - " + line for line in problems)))
            return result
        result.update(changed=False, checked=args["roles"] + (["audit"] if args["audit"] else []))
        if args["all_hosts"]:
            result["hosts"] = len(hosts)
        if args["audit"]:
            result["paths"] = audit_vars.paths(_audit_vars(task_vars, self._templar)[0], os.getcwd())
        return result

    def _problems(self, args, host_vars, templar):
        """One host's problems: each role's variables by the role's spec, then (with ``audit``) the audit's; a
        variable whose template fails is a problem of its own (naming it), not the end of the check. The value of a
        vaulted variable, or of an option the spec marks no_log, is never shown (Ansible's validator quotes values)."""
        problems, secrets = [], []
        for role in args["roles"]:
            options = role_spec(role)
            defined, failed, hidden = _templated(templar, host_vars, [name for name in options if name in host_vars])
            secrets += hidden + [str(defined[name]) for name in defined if options[name].get("no_log")]
            checked = ArgumentSpecValidator(_spec_only(options)).validate(defined)
            problems += ["%s (role metnos.sandbox.%s)" % (msg, role) for msg in failed + checked.error_messages]
        if args["audit"]:
            values, failed, hidden = _audit_vars(host_vars, templar)
            secrets += hidden
            problems += failed + audit_vars.problems(values, os.getcwd())
        return [_redacted(line, secrets) for line in problems]

    def _every_host(self, task_vars):
        """(name, variables, templar) for each host of this batch (the whole play's hosts but with serial: each host
        judged once, in its own batch), its variables as Ansible gives them to this task on that host (play,
        inventory, extra vars: VariableManager.get_vars, the host lists given once, not recomputed per host); the
        host this task runs for with its own."""
        hostvars = task_vars.get("hostvars")
        manager, inventory = getattr(hostvars, "_variable_manager", None), getattr(hostvars, "_inventory", None)
        if manager is None or inventory is None:
            raise AnsibleActionFail("metnos_role_vars: all_hosts needs ansible-core's hostvars (2.21 or later)")
        every = list(task_vars.get("ansible_play_hosts_all") or [task_vars.get("inventory_hostname")])
        batch = list(task_vars.get("ansible_play_batch") or every)
        play, me = self._task.get_play(), task_vars.get("inventory_hostname")
        for name in batch:
            if name == me:
                yield name, task_vars, self._templar
                continue
            host_vars = manager.get_vars(play=play, host=inventory.get_host(name), task=self._task,
                                         _hosts=batch, _hosts_all=every)
            yield name, host_vars, self._templar.copy_with_new_env(available_variables=host_vars)


def _audit_vars(host_vars, templar):
    """The metnos_audit_* variables the host defines, templated (an -e value is a string): _templated's answer."""
    return _templated(templar, host_vars, [name for name in host_vars
                                           if isinstance(name, str) and name.startswith(audit_vars.PREFIX)])


def _templated(templar, host_vars, names):
    """``names`` of ``host_vars`` templated as the builtin types; a line for each whose template fails (its error's
    first line, never the value: ``'x' is undefined`` said of the variable, not of the task); and the text of each
    vaulted value (to keep out of every line)."""
    values, failed, secrets = {}, [], []
    for name in names:
        try:
            values[name] = templar.template(host_vars[name])
        except AnsibleError as exc:
            failed.append("%s: its template fails: %s" % (name, (str(exc).splitlines() or [""])[0][:300]))
            continue
        if any(VaultHelper.get_ciphertext(value, with_tags=False) is not None
               for value in (host_vars[name], values[name])):
            secrets.append(str(values[name]))
    return spec.plain(values), failed, secrets


def _redacted(line, secrets):
    """``line`` with every secret's text (at least 3 characters: a shorter one would blank ordinary words) replaced."""
    for secret in secrets:
        if len(secret) >= 3:
            line = line.replace(secret, "(a vaulted or no_log value, not shown)")
    return line


def _bounded(line, limit=600):
    """A problem line of at most ``limit`` characters (Ansible's validator quotes the whole value: a list of 20,000
    items made a line of 129 KB)."""
    return line if len(line) <= limit else line[:limit] + "... (%d characters more)" % (len(line) - limit)


def _on_hosts(names, among):
    """Where a problem was found, when more than one host was judged: every host, or the first few by name."""
    if among <= 1 or not names[0]:
        return ""
    if len(names) == among:
        return " (every host)"
    more = " and %d more" % (len(names) - 5) if len(names) > 5 else ""
    return " (host%s %s%s)" % ("s" if len(names) > 1 else "", ", ".join(names[:5]), more)
