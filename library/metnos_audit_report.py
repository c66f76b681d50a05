#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: metnos_audit_report
short_description: Write the fleet audit reports (JSON, Markdown, JUnit XML, HTML) on the controller
version_added: "1.0.0"
description:
  - Runs on the controller only (action plugin); it never contacts a host.
  - Builds one report document (schema C(metnos-sandbox-audit-report/2), see docs/audit-report.md)
    from the M(metnos.sandbox.metnos_audit) results of every host, including unreachable ones, flags hosts whose
    bubblewrap package differs from the fleet majority, and writes one set - C(.json),
    C(.md), C(.junit.xml), C(.html) (self-contained) - each streamed to its file, under a name no other run has
    (C(metnos-audit-<UTC time to the microsecond>-<run id>), each file created new, never replacing one).
  - The set is whole or absent - a failed write (a full disk) removes what it wrote, still returns the fleet
    summary, and fails the gate (RV(gate) C(write_error)). Sets left incomplete and the toolkit's hidden temp files
    left by earlier runs are removed first and listed in RV(removed); a set another run is writing is never touched.
  - With O(hosts), the results are those M(metnos.sandbox.metnos_audit) kept for each host in this run, in
    Ansible's per-run temp dir on the controller (no templating of registered results - the way
    for large fleets). With O(results), the registered results are passed in.
options:
  hosts:
    description:
      - The play's hosts (normally C(ansible_play_hosts_all)); a host without a result in this run
        is C(host_not_audited) (never unreachable), and when none of them has one (the report runs in
        another C(ansible-playbook) run than the audit) the task fails with C(audit_report_no_results).
        Exactly one of O(hosts) and O(results).
    type: list
    elements: str
  results:
    description: >-
      Mapping host -> registered M(metnos.sandbox.metnos_audit) result (the whole record, its default
      O(metnos.sandbox.metnos_audit#module:result=full); a summary has no checks to report). Exactly one of
      O(hosts) and O(results).
    type: dict
  dest:
    description: >-
      Directory for the reports; a relative path is relative to the working directory of C(ansible-playbook)
      (where the user runs it), never to the playbook or the collection. The returned RV(paths) are absolute.
    type: path
    default: reports
  warnings_as_failures:
    description: Count hosts with warnings as failing in the gate.
    type: bool
    default: false
  waivers:
    description:
      - The admin's waiver file (YAML, see docs/audit-report.md, "Waivers"), a list of waivers each with C(code),
        C(host) (an inventory name or a shell-style pattern), optional C(executor), C(justification),
        C(approved_by) and C(expires) (C(YYYY-MM-DD), at most 366 days ahead).
      - Validated strictly before anything is written; every kind of bad waiver has its own code
        (C(audit_waiver_*)) and the task fails. A waived finding is reported as waived, with its justification,
        in every format and never counts toward a verdict or the gate; an expired or unused waiver is itself a
        finding of the fleet (C(audit_waiver_expired), C(audit_waiver_unused), warnings).
    type: path
  baseline:
    description:
      - An earlier report's JSON (for example the C(latest.json) link the previous run wrote in O(dest)); every
        finding is marked C(new) or C(still) there and the baseline's findings a host no longer has C(resolved),
        in every format. Read before this run's reports (and links) are written; an unreadable one fails the task
        (C(audit_baseline_unreadable)).
    type: path
  fail_on:
    description:
      - C(any) - every failing host fails the gate. C(new) - only failing hosts with a failing finding that is
        new since O(baseline) do (without a baseline every finding is new).
    type: str
    choices: [any, new]
    default: any
  latest:
    description:
      - Point C(latest) in O(dest) to this run's set (one relative link to C(runs/<set>/), swapped in one rename);
        C(latest.json), C(latest.md), C(latest.junit.xml) and C(latest.html) are fixed links through it
        (C(latest/report.<ext>)), so they always show one whole set.
    type: bool
    default: true
  textfile_dir:
    description:
      - A node_exporter textfile collector's directory on the controller; the report writes
        C(metnos_sandbox_audit.prom) there (atomically, mode 0644) - hosts by verdict, the gate, findings by severity
        and by state since the baseline, waived findings by code, and per waiver the days until it expires and how
        many findings it waived (docs/audit-report.md, "Metrics").
    type: path
extends_documentation_fragment: [metnos.sandbox.metnos_sandbox]
"""

EXAMPLES = r"""
- name: Write the reports from what metnos.sandbox.metnos_audit kept in this run
  metnos.sandbox.metnos_audit_report:
    hosts: "{{ ansible_play_hosts_all }}"
    dest: reports
  run_once: true

- name: Write the reports from registered results (small fleets, or results from elsewhere)
  metnos.sandbox.metnos_audit_report:
    results: "{{ dict(ansible_play_hosts_all
                 | zip(ansible_play_hosts_all | map('extract', hostvars, 'metnos_audit_result'))) }}"
    dest: reports
  run_once: true
"""

RETURN = r"""
paths:
  description: Written files by kind (json, md, junit.xml, html; prom with O(textfile_dir)).
  returned: always
  type: dict
totals:
  description: Counts per verdict and per diagnostic code.
  returned: always
  type: dict
gate:
  description: >-
    {failed, failing_hosts, warnings_as_failures}: what CI should do; with O(fail_on=new) also C(fail_on), with
    fleet findings (waivers) also C(fleet_findings); when the reports could not be written, C(write_error) (and
    C(failed)); when the waiver file or the baseline was refused, C(inputs_refused) (their absolute paths; the
    reports are written without them, and C(failed)).
  returned: always
  type: dict
verdicts:
  description: >-
    Each reported host's verdict (C(pass), C(warn), C(fail) or C(unreachable), as the JSON report's
    C(hosts[].verdict)), by inventory name: what a play that imports playbooks/audit.yml reads per host
    (that playbook registers no per-host result).
  returned: always
  type: dict
  sample: {web1: pass, web2: fail}
summary:
  description: Terminal summary lines (at most 20 failing hosts named, then where the reports are).
  returned: always
  type: list
  elements: str
removed:
  description: What earlier runs left in O(dest) and this run removed (incomplete sets, hidden temp files).
  returned: always
  type: list
  elements: str
timings:
  description: "Seconds spent building the document and writing each format (json, md, junit.xml, html, total)."
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec

ARGUMENT_SPEC = spec.AUDIT_REPORT     # the action plugin validates with the same spec


def main():
    module = spec.utf8_module(AnsibleModule)(argument_spec=spec.spec(ARGUMENT_SPEC),
                                             mutually_exclusive=spec.AUDIT_REPORT_ONE_OF,
                                             required_one_of=spec.AUDIT_REPORT_ONE_OF, supports_check_mode=True)
    module.fail_json(msg="metnos_audit_report runs on the controller as an action plugin; "
                         "check that action_plugins/ is configured (ansible.cfg)")


if __name__ == "__main__":
    main()
