#!/usr/bin/env python3
"""Merge audit reports (JSON, schema metnos-sandbox-audit-report/1) into one fleet report.

    python scripts/merge-audit-reports.py OUT_DIR report1.json [report2.json ...]
    python scripts/merge-audit-reports.py --from-list FILES.txt OUT_DIR      # one path per line

For ansible-pull (each host audits itself and writes a one-host report) and AWX job slicing (each
slice writes the report of its share of the inventory): the host records are the same wherever the
audit ran, so the fleet report is rebuilt from them - totals, the bubblewrap revision majority
(bwrap_package_drift is recomputed over the whole fleet), the gate, all four formats. A host that
appears in several reports keeps the record of the report generated last (ties: the later argument).
Exit status: 0 when the merged gate passes, 1 when it fails, 2 on unusable input (a refused waiver file or
baseline included). --waivers FILE, --baseline REPORT.json and --fail-on new do what the playbook's
metnos_audit_waivers, metnos_audit_baseline and metnos_audit_fail_on do (docs/audit-report.md).
"""
import argparse
import datetime
import json
import sys
import time

import core_path  # noqa: E402  (scripts/: the core as ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox)

core_path.use_core()

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import (  # noqa: E402
    baseline,
    waivers,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import report as R  # noqa: E402


def die(message):
    print("merge-audit-reports: " + message, file=sys.stderr)
    sys.exit(2)


def read_report(path):
    """A report's (generated, host records); refuses anything that is not our schema."""
    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except (OSError, ValueError) as exc:
        die("%s: not a readable JSON report (%s)" % (path, exc))
    if not isinstance(doc, dict) or doc.get("schema") != R.SCHEMA or not isinstance(doc.get("hosts"), list):
        die("%s: schema %r is not %s" % (path, doc.get("schema") if isinstance(doc, dict) else None, R.SCHEMA))
    return str(doc.get("generated") or ""), doc["hosts"]


def merge(paths):
    """{host: record}, the newest report's record winning for a host seen twice."""
    hosts, stamp = {}, {}
    for path in paths:
        generated, records = read_report(path)
        for record in records:
            name = record.get("host") if isinstance(record, dict) else None
            if not isinstance(name, str) or "diagnostics" not in record or "verdict" not in record:
                die("%s: a host record without host/verdict/diagnostics" % path)
            if name not in hosts or generated >= stamp[name]:
                hosts[name], stamp[name] = record, generated
    return hosts


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from-list", help="a file with one report path per line (for thousands of reports)")
    ap.add_argument("--warnings-as-failures", action="store_true")
    ap.add_argument("--waivers", help="the admin's waiver file (YAML)")
    ap.add_argument("--baseline", help="an earlier report's JSON: each finding new, still there or resolved")
    ap.add_argument("--fail-on", choices=baseline.FAIL_ON, default="any")
    ap.add_argument("out_dir")
    ap.add_argument("reports", nargs="*")
    args = ap.parse_args(argv[1:])
    paths = list(args.reports)
    if args.from_list:
        with open(args.from_list, encoding="utf-8") as handle:
            paths += [line.strip() for line in handle if line.strip()]
    if not paths:
        ap.error("no reports to merge")
    start = time.time()
    try:
        today = datetime.datetime.now(datetime.timezone.utc).date()
        accepted = (args.waivers, waivers.read(args.waivers, today)) if args.waivers else None
        before = baseline.read(args.baseline) if args.baseline else None
    except (waivers.WaiverError, baseline.BaselineError) as exc:
        die("\n".join("%s: %s" % (d["code"], d["message"]) for d in exc.diagnostics))
    merged = R.build_from_hosts(list(merge(paths).values()), warnings_as_failures=args.warnings_as_failures,
                                waivers=accepted, baseline=before, fail_on=args.fail_on)
    out = R.write_all(merged, args.out_dir)
    print("\n".join(R.terminal_summary(merged)))
    print("merged %d report(s) in %.1f s: %s" % (len(paths), time.time() - start, " ".join(out.values())))
    return 1 if merged["gate"]["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
