# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""metnos_audit_merge: merge JSON audit reports made elsewhere (ansible-pull, AWX slices) into one fleet report on
the controller (no remote execution). The work is report/merge.py; documentation: library/metnos_audit_merge.py."""
from __future__ import absolute_import, annotations, division, print_function

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import document, merge


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=spec.spec(spec.AUDIT_MERGE))
        start = time.time()
        try:
            paths = list(args["reports"]) + merge.paths_from_patterns(args["patterns"]) + (
                merge.paths_from_list(args["from_list"]) if args["from_list"] else [])
            doc = merge.merged(paths, warnings_as_failures=args["warnings_as_failures"])
        except merge.MergeError as exc:
            diag = diagnostics.make(merge.CODE, fill={"reason": str(exc)})
            result.update(failed=True, code=diag["code"], msg=diag["message"], diagnostics=[diag])
            return result
        try:
            # written in check mode too: they change no host; latest.<ext> as the audit writes them (the next
            # merge's or audit's baseline: -e metnos_audit_baseline=<dest>/latest.json)
            written = document.write_all(doc, args["dest"], latest=True)
        except OSError as exc:
            raise AnsibleActionFail("metnos_audit_merge: cannot write reports to %s: %s" % (args["dest"], exc)) \
                from None
        result.update(changed=False, paths=written, totals=doc["totals"], gate=doc["gate"], merged=len(paths),
                      verdicts=dict((h["host"], h["verdict"]) for h in doc["hosts"]),
                      summary=document.terminal_summary(doc) + ["merged %d report(s) in %.1f s: %s" % (
                          len(paths), time.time() - start, " ".join(written.values()))])
        return result
