#!/usr/bin/env python3
"""Print the probe's mutation matrix: each weakening of the strict profile x each user -> the
checks that failed and the verdict's code (tests/helpers/probe_mutations.py defines the rows;
tests/integration/test_probe_matrix.py asserts them). Runs real bwrap; needs root.

  scripts/probe-matrix.py                 the table (Markdown)
  scripts/probe-matrix.py --json          one JSON object per row and user
  scripts/probe-matrix.py --without GLOB  drop the checks - and the finding codes - named GLOB from
                                          every verdict, as if the check (or the finding) were deleted,
                                          and show which rows no longer catch their weakening
  scripts/probe-matrix.py --core DIR      use another checkout's module_utils (e.g. main's) for
                                          the probe itself: its verdict per row, for comparison
"""
import argparse
import fnmatch
import importlib
import json
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--without", action="append", default=[], metavar="GLOB")
    ap.add_argument("--core", help="module_utils directory whose metnos_sandbox probe runs the rows")
    ap.add_argument("--rows", help="comma-separated row names (default: all)")
    ap.add_argument("--judge", action="store_true", help="with --core: judge that core's verdicts by this "
                    "checkout's expectations (e.g. a copy of this core with one check deleted)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("probe-matrix: run as root (the rows switch to nobody and mount test fixtures)")
    from helpers import probe_mutations
    core = probe_mutations.CORE
    if args.core:
        # The bench and the profile come from this checkout; only the probe is the other one's.
        for name in [m for m in sys.modules if m == "metnos_sandbox" or m.startswith("metnos_sandbox.")]:
            del sys.modules[name]
        sys.path.insert(0, os.path.abspath(args.core))
        core = importlib.import_module("metnos_sandbox.probe")  # a flat core: before issue 22
        if hasattr(core, "__path__"):      # the core in capability packages (issue 22)
            payload = importlib.import_module("metnos_sandbox.probe.payload")
            runners = importlib.import_module("metnos_sandbox.probe.runners")
            core = types.SimpleNamespace(expectations=payload.expectations, run=runners.run,
                                         run_systemd=runners.run_systemd, RunSpec=getattr(runners, "RunSpec", None))
    rows = [r for r in probe_mutations.ROWS if not args.rows or r.name in args.rows.split(",")]
    out, missed, wrong = [], 0, 0
    with probe_mutations.Bench() as bench:
        prof = probe_mutations.strict_profile()
        for row in rows:
            ok, reason = probe_mutations.applicable(row, bench)
            for user in probe_mutations.USERS:
                if not ok:
                    out.append({"row": row.name, "what": row.what, "user": user, "skipped": reason})
                    continue
                verdict, failed = probe_mutations.run_row(row, user, bench, prof, core)
                if args.without:
                    verdict["checks"] = [c for c in verdict["checks"]
                                         if not any(fnmatch.fnmatchcase(c["name"], g) for g in args.without)]
                    failed = sorted(c["name"] for c in verdict["checks"] if not c["ok"])
                    verdict["diagnostics"] = [d for d in verdict["diagnostics"]
                                              if not any(fnmatch.fnmatchcase(d["code"], g) for g in args.without)]
                    if not failed:
                        verdict["diagnostics"] = [d for d in verdict["diagnostics"]
                                                  if d["code"] not in ("probe_check_failed", "probe_not_isolated")]
                    verdict["passed"] = not failed and not probe_mutations.counted_codes(verdict) and (
                        bool(verdict["checks"]) or not verdict.get("setup_failed"))
                codes = probe_mutations.counted_codes(verdict)
                judged = probe_mutations.judge(row, user, verdict,
                                               failed) if core is probe_mutations.CORE or args.judge else "-"
                if row.weakening(user) and verdict["passed"]:
                    missed += 1
                if judged not in ("ok", "-"):
                    wrong += 1
                out.append({"row": row.name, "what": row.what, "user": user, "passed": verdict["passed"],
                            "failed": failed, "codes": codes, "expected": row.expect(user), "judged": judged,
                            "note": row.note, "duration": verdict["duration"]})
    if args.json:
        for item in out:
            print(json.dumps(item, sort_keys=True))
    else:
        print("| mutation | user | verdict | failed checks | code | as expected |")
        print("|---|---|---|---|---|---|")
        for item in out:
            if "skipped" in item:
                print("| %s | %s | skipped | %s | | |" % (item["what"], item["user"], item["skipped"]))
                continue
            print("| %s | %s | %s | %s | %s | %s |" % (
                item["what"], item["user"], "pass" if item["passed"] else "FAIL",
                _short(item["failed"]) or "-", ", ".join(item["codes"]) or "-", item["judged"]))
        notes = sorted(set((i["what"], i["note"]) for i in out if i.get("note")))
        for what, note in notes:
            print("\n* %s: %s" % (what, note))
        if args.without:
            print("\nwith %s deleted: %d row(s) where a weakening now passes" % (", ".join(args.without), missed))
        print("\n%d row(s) not as expected; %d weakening(s) passed" % (wrong, missed))
    return 1 if missed or wrong else 0


def _short(names):
    """hidden:/a, hidden:/b, ... -> hidden:* (8) when a family is long."""
    fam = {}
    for n in names:
        fam.setdefault(n.split(":")[0] if ":" in n else n, []).append(n)
    parts = []
    for key, items in fam.items():
        parts.append("%s:* (%d)" % (key, len(items)) if len(items) > 3 else ", ".join(items))
    return ", ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
