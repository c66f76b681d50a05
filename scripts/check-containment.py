#!/usr/bin/env python3
"""Check that an audit report puts a host at the expected containment level, with its reason (issue 45 item 4).

    python scripts/check-containment.py REPORT.json HOST LEVEL

The users' CI runs the audit against a macOS runner itself and expects level none (R-SCOPE-4: macOS has no native
containment module): the host is in the report at that level, with a reason, is not counted as isolated and fails
the gate. The checks are report/containment_text.py's unmet(). Exit status: 0 when all hold, 1 when one does
not (each printed), 2 when the report cannot be read.
"""
import json
import sys

import core_path  # noqa: E402  (scripts/: the core as ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox)

core_path.use_core()

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import containment_text

MAX_REPORT = 64 * 1024 * 1024


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    path, host, level = argv
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_REPORT + 1)
        if len(data) > MAX_REPORT:
            raise ValueError("larger than %d bytes" % MAX_REPORT)
        doc = json.loads(data.decode("utf-8"))
    except (OSError, ValueError) as exc:
        print("check-containment: %s: %s" % (path, exc), file=sys.stderr)
        return 2
    if not isinstance(doc, dict):
        print("check-containment: %s is not an audit report" % path, file=sys.stderr)
        return 2
    problems = containment_text.unmet(doc, host, level)
    for problem in problems:
        print("check-containment: %s" % problem)
    if not problems:
        print("check-containment: %s is at %s" % (host, containment_text.line(
            next(h for h in doc["hosts"] if h.get("host") == host))))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
