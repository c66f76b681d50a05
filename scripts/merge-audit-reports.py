#!/usr/bin/env python3
"""Merge per-host audit reports (JSON, schema metnos-sandbox-audit-report/1) into one fleet report.

    python scripts/merge-audit-reports.py OUT_DIR report1.json [report2.json ...]

Used with ansible-pull (each host audits itself) or several AWX jobs; writes the four formats.
Later reports win for a host that appears twice.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils"))

from metnos_sandbox import report as R  # noqa: E402


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    hosts = {}
    for path in argv[2:]:
        with open(path) as handle:
            doc = json.load(handle)
        if doc.get("schema") != R.SCHEMA:
            sys.exit("%s: schema %r is not %s" % (path, doc.get("schema"), R.SCHEMA))
        for host in doc["hosts"]:
            hosts[host["host"]] = host
    merged = R.build_from_hosts(list(hosts.values()))
    paths = R.write_all(merged, argv[1])
    print("\n".join(R.terminal_summary(merged)))
    print("reports: " + " ".join(paths.values()))
    return 1 if merged["gate"]["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
