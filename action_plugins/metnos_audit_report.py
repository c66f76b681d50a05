# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""metnos_audit_report: write the fleet reports on the controller (no remote execution).

Options: results (host -> metnos_audit result, including unreachable/failed ones), dest
(directory, relative paths are taken from the playbook directory's parent), warnings_as_failures.
Returns paths, totals, gate and a terminal summary. Documentation: library/metnos_audit_report.py.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import sys

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

_CORE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "module_utils"))
if _CORE not in sys.path:
    sys.path.insert(0, _CORE)

from metnos_sandbox import report as R  # noqa: E402


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self._task.args
        unknown = set(args) - {"results", "dest", "warnings_as_failures"}
        if unknown:
            raise AnsibleActionFail("metnos_audit_report: unknown option(s) %s" % ", ".join(sorted(unknown)))
        results = args.get("results")
        if not isinstance(results, dict):
            raise AnsibleActionFail("metnos_audit_report: results must be a mapping host -> audit result")
        dest = args.get("dest") or "reports"
        if not isinstance(dest, str):
            raise AnsibleActionFail("metnos_audit_report: dest must be a directory path")
        doc = R.build(results, warnings_as_failures=bool(args.get("warnings_as_failures", False)))
        try:
            paths = R.write_all(doc, dest)    # reports are written in check mode too: they change no host
        except OSError as exc:
            raise AnsibleActionFail("metnos_audit_report: cannot write reports to %s: %s" % (dest, exc)) from None
        result.update(changed=False, paths=paths, totals=doc["totals"], gate=doc["gate"],
                      summary=R.terminal_summary(doc))
        return result
