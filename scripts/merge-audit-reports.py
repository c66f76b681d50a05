#!/usr/bin/env python3
"""Merge audit reports (JSON, schema metnos-sandbox-audit-report/2; /1 migrated) into one fleet report, from a checkout.

    python scripts/merge-audit-reports.py OUT_DIR report1.json [report2.json ...]
    python scripts/merge-audit-reports.py --from-list FILES.txt OUT_DIR      # one path per line

The installed collection's face of the same merge is the playbook metnos.sandbox.merge_reports (the action
metnos_audit_merge); both are plugins/module_utils/metnos_sandbox/report/merge.py (see its docstring).
--waivers FILE, --baseline REPORT.json and --fail-on new do what the playbook's metnos_audit_waivers,
metnos_audit_baseline and metnos_audit_fail_on do (docs/audit-report.md).
Exit status: 0 when the merged gate passes, 1 when it fails, 2 on unusable input (audit_merge_input_invalid, a
refused waiver file or baseline).
"""
import argparse
import datetime
import sys
import time

import core_path  # noqa: E402  (scripts/: the core as ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox)

core_path.use_core()

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import (
    baseline,
    document,
    merge,
    waivers,
)


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
    start = time.time()
    try:
        paths = list(args.reports) + (merge.paths_from_list(args.from_list) if args.from_list else [])
        if not paths:
            ap.error("no reports to merge")
        today = datetime.datetime.now(datetime.timezone.utc).date()
        accepted = (args.waivers, waivers.read(args.waivers, today)) if args.waivers else None
        before = baseline.read(args.baseline) if args.baseline else None
        merged = merge.merged(paths, warnings_as_failures=args.warnings_as_failures, waivers=accepted,
                              baseline=before, fail_on=args.fail_on)
    except merge.MergeError as exc:
        print("merge-audit-reports: %s: %s" % (merge.CODE, exc), file=sys.stderr)
        return 2
    except (waivers.WaiverError, baseline.BaselineError) as exc:
        print("merge-audit-reports: %s" % "\n".join("%s: %s" % (d["code"], d["message"]) for d in exc.diagnostics),
              file=sys.stderr)
        return 2
    out = document.write_all(merged, args.out_dir)
    print("\n".join(document.terminal_summary(merged)))
    print("merged %d report(s) in %.1f s: %s" % (len(paths), time.time() - start, " ".join(out.values())))
    return 1 if merged["gate"]["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
