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

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
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
        problems = []
        for role in args["roles"]:
            options = role_spec(role)
            defined = dict((name, self._templar.template(task_vars[name])) for name in options if name in task_vars)
            checked = ArgumentSpecValidator(_spec_only(options)).validate(spec.plain(defined))
            problems += ["%s (role metnos.sandbox.%s)" % (msg, role) for msg in checked.error_messages]
        if args["audit"]:
            problems += self._audit_problems(task_vars)
        if problems:
            result.update(failed=True, code="invalid_option", problems=problems,
                          msg="Invalid variables, nothing was done on the host:\n%s\nThe choices: "
                              "ansible-doc -t role metnos.sandbox.<role>, and the head of playbooks/audit.yml"
                              % "\n".join("  - " + line for line in problems))
            return result
        result.update(changed=False, checked=args["roles"] + (["audit"] if args["audit"] else []))
        if args["audit"]:
            result["paths"] = audit_vars.paths(self._audit_vars(task_vars), os.getcwd())
        return result

    def _audit_vars(self, task_vars):
        """The metnos_audit_* variables the host defines, templated (an -e value is a string)."""
        return spec.plain(dict((name, self._templar.template(value)) for name, value in task_vars.items()
                               if name.startswith(audit_vars.PREFIX)))

    def _audit_problems(self, task_vars):
        return audit_vars.problems(self._audit_vars(task_vars), os.getcwd())
