#!/usr/bin/env python3
"""Benchmark: in-process rendering throughput (manifest dict -> validated Manifest -> Profile -> argv).

    python scripts/bench-render.py [--seconds 3] [--host-tree]

Renders the bundled example manifests plus synthetic ones in a loop on one host context
(as the runtime does per invocation) and prints manifests per second. Not a test: the figure
goes in the docs/closing notes; CI never times anything.
"""
import argparse
import glob
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "module_utils"))

import yaml  # noqa: E402

from metnos_sandbox import profile as P  # noqa: E402


def build_tree():
    root = tempfile.mkdtemp(prefix="metnos-bench-")
    for d in ["runtime", "venv", "executors/ex", "data/notes/sub", "reports", "integrations/cal", "mail",
              "dialog/alice", "undo/t1", "sheets", "index/docs"]:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for f in ["mail/work.json", "data/notes/a.md"]:
        open(os.path.join(root, f), "w").close()
    return root


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    root = build_tree()
    host = P.HostContext({
        "runtime_dir": root + "/runtime", "executors_dir": root + "/executors", "python_prefix": root + "/venv",
        "python_executable": "/usr/bin/python3",
        "resources": dict((k, root + "/sheets") for k in P.DEFAULT_HOST["resources"]),
        "indexes": {"docs": root + "/index/docs"}, "integrations_dir": root + "/integrations",
        "mail_credentials_dir": root + "/mail", "dialog_dir": root + "/dialog", "undo_root": root + "/undo"})
    docs = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "manifests", "*.yml"))):
        with open(path) as handle:
            docs.append(yaml.safe_load(handle))
    docs += [
        {"name": "ex", "origin": "bench", "capabilities": ["fs:read:%s/data/notes/**" % root,
                                                           "fs:write:%s/reports" % root, "metnos:read:sheets"]},
        {"name": "ex", "origin": "bench", "capabilities": ["fs:read:arg:p", "net:http"],
         "arguments": {"p": {"within": [root + "/data/notes/**"]}}},
        {"name": "ex", "origin": "bench", "capabilities": ["provider:access:cal", "mail:read:work",
                                                           "dialog.user_input", "index:read:docs"],
         "inverse": {"model": "restore"}},
    ]
    invocation = {"arguments": {"p": "sub"}, "sender": "alice", "turn_id": "t1"}
    count = 0
    decisions = {}
    cpu0 = time.process_time()
    start = time.perf_counter()
    deadline = start + args.seconds
    while time.perf_counter() < deadline:
        for doc in docs:
            prof = P.render_safe(doc, host, invocation)
            decisions[prof["decision"]] = decisions.get(prof["decision"], 0) + 1
            count += 1
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    print("rendered %d manifests in %.2f s wall / %.2f s CPU: %.0f manifests/s wall, %.0f per CPU-second "
          "(%d distinct manifests; decisions %s; python %s)"
          % (count, elapsed, cpu, count / elapsed, count / cpu, len(docs), decisions, sys.version.split()[0]))


if __name__ == "__main__":
    main()
