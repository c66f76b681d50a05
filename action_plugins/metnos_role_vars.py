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

# The collection's roles: lexically from this file (plugins/action/ -> roles/), as installed and in the checkout.
ROLES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "roles"))


def role_spec(role):
    """The options of ``role``'s entry point main, from its meta/argument_specs.yml."""
    import yaml  # controller side, Ansible's own dependency
    path = os.path.join(ROLES, role, "meta", "argument_specs.yml")
    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleActionFail("metnos_role_vars: no argument spec for role %s at %s: %s" % (role, path, exc)) \
            from None


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
        if problems:
            result.update(failed=True, code="invalid_option", problems=problems,
                          msg="Invalid role variables, nothing was done on the host: %s. The choices: "
                              "ansible-doc -t role metnos.sandbox.<role>" % "; ".join(problems))
            return result
        result.update(changed=False, checked=args["roles"])
        return result
