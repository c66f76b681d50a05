# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""metnos_audit_report: write the fleet reports on the controller (no remote execution).

Options: hosts (the play's hosts: their results are read from what metnos_audit kept in this run's
controller-side temp dir) or results (host -> metnos_audit result, including unreachable/failed
ones), dest (directory), warnings_as_failures, waivers (the admin's waiver file), baseline (an earlier
report's JSON), fail_on (any, new), latest (the latest.<ext> links), textfile_dir (the metrics' textfile).
Returns paths, totals, gate, each host's verdict, timings and a terminal summary. Documentation:
library/metnos_audit_report.py.
"""
from __future__ import absolute_import, annotations, division, print_function

import datetime
import os
import time

from ansible import constants as C
from ansible.plugins.action import ActionBase

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import (
    baseline,
    document,
    metrics,
    run_context,
    spool,
    waivers,
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        # Types, unknown options, exactly one of hosts/results, defaults: Ansible's own validator.
        _validation, args = self.validate_argument_spec(
            argument_spec=spec.spec(spec.AUDIT_REPORT), mutually_exclusive=spec.AUDIT_REPORT_ONE_OF,
            required_one_of=spec.AUDIT_REPORT_ONE_OF)
        results, hosts = args["results"], args["hosts"]
        # A relative dest is the working directory's of ansible-playbook (where the user runs it), never the
        # playbook's or the collection's: the reports' paths are returned absolute.
        dest = os.path.abspath(args["dest"])
        start = time.time()
        # The waivers and the baseline are read before anything else (this run's latest.json is written below).
        today = datetime.datetime.now(datetime.timezone.utc).date()
        # A refused file never throws the hosts' audit away: the reports are written without it, marked, and the
        # gate fails (run_context.inputs_refused); its path is shown absolute, from ansible-playbook's directory.
        accepted, before, refused = None, None, []
        if args["waivers"]:
            path = os.path.abspath(args["waivers"])
            try:
                accepted = (path, waivers.read(path, today))
            except waivers.WaiverError as exc:
                refused += exc.diagnostics
        if args["baseline"]:
            try:
                before = baseline.read(os.path.abspath(args["baseline"]))
            except baseline.BaselineError as exc:
                refused += exc.diagnostics
        kept = spool.spool_dir(C.DEFAULT_LOCAL_TMP)     # where metnos_audit kept this run's results
        if hosts and not spool.spooled(kept, sorted(set(hosts))):
            # Another run, or before the audit: refused, never every host reported unreachable.
            asked = sorted(set(hosts))
            diag = diagnostics.make("audit_report_no_results", count=len(asked), fill={"hosts": ", ".join(asked[:20])
                                                                                       + (
                ", ..." if len(asked) > 20 else "")})
            result.update(failed=True, code=diag["code"], msg=diag["message"], diagnostics=[diag])
            return result
        pairs = spool.read_spooled(kept, sorted(set(hosts))) if hosts is not None else \
            ((name, results[name]) for name in sorted(results))
        doc = document.build_from_results(pairs, warnings_as_failures=args["warnings_as_failures"], waivers=accepted,
                                          baseline=before, fail_on=args["fail_on"])
        run_context.inputs_refused(doc, refused)
        # Every fix command carries the run's inventory (-i) and limit, so it runs as pasted (issue 54).
        given = task_vars or {}
        run_context.carry(doc, given.get("ansible_inventory_sources"), given.get("ansible_limit"))
        timings = {"build": round(time.time() - start, 3)}
        summary = run_context.refused_line(doc) + document.terminal_summary(doc)
        paths, removed = {}, []
        try:   # written in check mode too: they change no host
            removed = document.remove_debris(dest)       # what earlier runs left: removed, and said
            paths = document.write_all(doc, dest, timings=timings, latest=args["latest"])
            if args["textfile_dir"]:
                paths["prom"] = metrics.write(args["textfile_dir"], doc)
        except OSError as exc:
            # No partial set is left; the fleet summary is still returned (the playbook prints it) and the gate
            # fails: a run whose reports are not written is never a pass.
            error = "metnos_audit_report: cannot write the reports to %s: %s" % (dest, exc)
            doc["gate"].update(failed=True, write_error=error)
            summary.append(error)
        timings["total"] = round(time.time() - start, 3)
        if removed:
            summary.append("removed what earlier runs left in %s: %s" % (dest, " ".join(removed)))
        if paths:
            summary.append("reports written in %.2f s: %s" % (timings["total"], " ".join(paths.values())))
        result.update(changed=False, paths=paths, totals=doc["totals"], gate=doc["gate"], timings=timings,
                      verdicts=dict((h["host"], h["verdict"]) for h in doc["hosts"]), summary=summary,
                      removed=removed)
        return result
