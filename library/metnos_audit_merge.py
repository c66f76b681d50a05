#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: metnos_audit_merge
short_description: Merge fleet audit reports made elsewhere (ansible-pull, AWX slices) into one
version_added: "1.0.0"
description:
  - Runs on the controller only (action plugin); it never contacts a host.
  - Reads JSON reports (schema C(metnos-sandbox-audit-report/2), a /1 one migrated, as
    M(metnos.sandbox.metnos_audit_report) writes them) and rebuilds one fleet report from their host
    records - totals, the bubblewrap revision majority, the
    gate, all four formats (C(.json), C(.md), C(.junit.xml), C(.html)) - in O(dest). A host found in several
    reports keeps the record of the report generated last.
  - A file that is not such a report fails the task with C(audit_merge_input_invalid) before anything is written.
  - The playbook C(metnos.sandbox.merge_reports) runs it and fails when the merged gate fails (see
    docs/audit-report.md for the ansible-pull and AWX recipes).
options:
  reports:
    description: The JSON reports to merge.
    type: list
    elements: path
    default: []
  patterns:
    description:
      - Shell patterns of reports on the controller (C(/srv/metnos-audit/42/slice-*/*.json); C(~) expanded),
        each expanded and sorted; a pattern that matches no file fails the task.
    type: list
    elements: str
    default: []
  from_list:
    description: A file listing more reports, one path per line (for thousands of reports).
    type: path
  dest:
    description: Directory for the merged reports.
    type: path
    required: true
  warnings_as_failures:
    description: Count hosts with warnings as failing in the gate.
    type: bool
    default: false
extends_documentation_fragment: [metnos.sandbox.metnos_sandbox]
"""

EXAMPLES = r"""
- name: Merge the reports collected from every host
  metnos.sandbox.metnos_audit_merge:
    patterns: [/srv/metnos-audit/collected/*.json]
    dest: /srv/metnos-audit/fleet
  register: fleet
  run_once: true
"""

RETURN = r"""
paths:
  description: Written files by kind (json, md, junit.xml, html).
  returned: success
  type: dict
totals:
  description: Counts per verdict and per diagnostic code.
  returned: success
  type: dict
gate:
  description: "{failed, failing_hosts, warnings_as_failures}: what CI should do."
  returned: success
  type: dict
merged:
  description: How many reports were merged.
  returned: success
  type: int
verdicts:
  description: Each host's verdict in the merged report, by inventory name.
  returned: success
  type: dict
summary:
  description: Terminal summary lines, then where the merged reports are.
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec

ARGUMENT_SPEC = spec.AUDIT_MERGE     # the action plugin validates with the same spec


def main():
    module = spec.utf8_module(AnsibleModule)(argument_spec=spec.spec(ARGUMENT_SPEC), supports_check_mode=True)
    module.fail_json(msg="metnos_audit_merge runs on the controller as an action plugin; "
                         "check that action_plugins/ is configured (ansible.cfg)")


if __name__ == "__main__":
    main()
