#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: metnos_role_vars
short_description: Validate the roles' variables on the controller before any task touches a host
version_added: "1.0.0"
description:
  - Runs on the controller only (action plugin); it never contacts a host.
  - Reads each role's own C(meta/argument_specs.yml) from this collection and validates every variable of it
    the host defines with Ansible's own validator (types, choices, list elements).
  - >-
    A refusal is one line per problem naming the variable, the value and the choices, e.g. C(value of
    metnos_sandbox_service_env_state must be one of: validate, enforce, got: enforced (role
    metnos.sandbox.metnos_sandbox)) - never the whole argument spec, which Ansible's own role validation
    returns (~6 KB) when the role starts, after the roles before it already ran.
  - A variable whose template fails (an undefined name in it) is a problem line of its own naming the variable and
    Ansible's error, not the failure of the whole task.
  - The value of a vaulted variable (or of an option its spec marks no_log) is never shown; a line is cut at 600
    characters.
  - playbooks/site.yml runs it first (pre_tasks) for both roles; put it first in your own playbooks the same way.
options:
  roles:
    description: The roles of this collection whose variables are validated.
    type: list
    elements: str
    required: true
    choices: [bwrap_host, metnos_sandbox]
  audit:
    description:
      - Also validate the audit playbook's C(metnos_audit_*) variables, each by the option it gives (the
        metnos_audit and metnos_audit_report option specs), naming the variable, its value and the accepted
        values; an unknown C(metnos_audit_*) name is refused with the nearest known one.
      - playbooks/audit.yml runs it first with I(roles=[metnos_sandbox]).
    type: bool
    default: false
  all_hosts:
    description:
      - Validate the variables of every host of the play (C(ansible_play_hosts_all)), each as Ansible gives them
        to that host's tasks, in one run of the action - for a task with C(run_once) (and C(any_errors_fatal), so
        that a refusal stops every host). A problem several hosts share is one line naming them (or "every host").
      - Refused without C(run_once) (every host would judge every host again). With C(serial), each batch judges its
        own hosts, with that batch's variables (C(ansible_play_batch)).
      - playbooks/audit.yml runs it this way - one task on the controller for the whole fleet, not one per host
        (~27 ms of the controller's CPU per host, measured with benchmarks/bench-audit.py).
      - Without it only the host the task runs for is judged (playbooks/site.yml, where each host runs its own task).
    type: bool
    default: false
extends_documentation_fragment: [metnos.sandbox.metnos_sandbox]
"""

EXAMPLES = r"""
- name: Validate the roles' variables before anything runs
  metnos.sandbox.metnos_role_vars:
    roles: [bwrap_host, metnos_sandbox]

- name: Validate every host's audit variables once, on the controller
  metnos.sandbox.metnos_role_vars:
    roles: [metnos_sandbox]
    audit: true
    all_hosts: true
  run_once: true
  any_errors_fatal: true
"""

RETURN = r"""
checked:
  description: The roles whose variables were validated (when they all are valid).
  returned: success
  type: list
  elements: str
paths:
  description: With I(audit), each path variable set -> the absolute path the report reads or writes.
  returned: success
  type: dict
problems:
  description: One line per invalid variable (its name, the value, the choices), and the role; with I(all_hosts)
    and more than one host, the hosts it was found on.
  returned: failure
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec

ARGUMENT_SPEC = spec.ROLE_VARS     # the action plugin validates with the same spec


def main():
    module = spec.utf8_module(AnsibleModule)(argument_spec=spec.spec(ARGUMENT_SPEC), supports_check_mode=True)
    module.fail_json(msg="metnos_role_vars runs on the controller as an action plugin; "
                         "check that action_plugins/ is configured (ansible.cfg)")


if __name__ == "__main__":
    main()
