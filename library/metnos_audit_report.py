#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: metnos_audit_report
short_description: Write the fleet audit reports (JSON, Markdown, JUnit XML, HTML) on the controller
version_added: "0.1.0"
description:
  - Runs on the controller only (action plugin); it never contacts a host.
  - Builds one report document (schema C(metnos-sandbox-audit-report/1), see docs/audit-report.md)
    from the registered M(metnos_audit) results of every host, including unreachable ones, flags
    hosts whose bubblewrap package differs from the fleet majority, and writes one timestamped
    set - C(.json), C(.md), C(.junit.xml), C(.html) (self-contained).
options:
  results: {description: "Mapping host -> registered metnos_audit result.", type: dict, required: true}
  dest: {description: Directory for the reports., type: path, default: reports}
  warnings_as_failures: {description: Count hosts with warnings as failing in the gate., type: bool, default: false}
attributes:
  check_mode: {support: full}
  diff_mode: {support: none}
author:
  - metnos-sandbox-ops contributors
"""

EXAMPLES = r"""
- name: Write the reports
  metnos_audit_report:
    results: "{{ dict(ansible_play_hosts_all
                 | zip(ansible_play_hosts_all | map('extract', hostvars, 'metnos_audit_result'))) }}"
    dest: reports
  run_once: true
"""

RETURN = r"""
paths: {description: "Written files by kind (json, md, junit.xml, html).", returned: always, type: dict}
totals: {description: Counts per verdict and per diagnostic code., returned: always, type: dict}
gate: {description: "{failed, failing_hosts, warnings_as_failures}: what CI should do.", returned: always, type: dict}
summary: {description: Terminal summary lines., returned: always, type: list, elements: str}
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(results=dict(type="dict", required=True),
                                              dest=dict(type="path", default="reports"),
                                              warnings_as_failures=dict(type="bool", default=False)),
                           supports_check_mode=True)
    module.fail_json(msg="metnos_audit_report runs on the controller as an action plugin; "
                         "check that action_plugins/ is configured (ansible.cfg)")


if __name__ == "__main__":
    main()
