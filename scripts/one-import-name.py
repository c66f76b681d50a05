#!/usr/bin/env python3
"""Rewrite the core's old import name to its one name, in place (idempotent):

    from metnos_sandbox import X          ->  from ansible.module_utils.metnos_sandbox import X
    from metnos_sandbox.mod import X      ->  from ansible.module_utils.metnos_sandbox.mod import X

    python3 scripts/one-import-name.py [PATH ...]     (default: tests/ scripts/ filter_plugins/)

Files that run where Ansible is not installed keep the old name (listed in KEEP, checked by
tests/unit/test_import_name.py). A file that still puts module_utils on sys.path needs
``core_path.use_core()`` instead (tests get it from tests/conftest.py).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLD = re.compile(r"^(\s*)from metnos_sandbox(\.[\w.]+)? import ", re.M)
# Copied into hosts without Ansible (containers, the mutation matrix's other core), or a benchmark's
# no-Ansible floor: the bare name is the only one there.
# The monitor's entry point runs on managed hosts with no Ansible (python3 -I -B from its release folder).
KEEP = ("tests/system/directive_trial.py", "tests/helpers/probe_mutations.py", "scripts/probe-matrix.py",
        "scripts/bench-audit.py", "scripts/bench-render.py", "scripts/one-import-name.py",
        "roles/metnos_sandbox/files/metnos-sandbox-monitor.py")


def files(paths):
    for top in paths:
        if os.path.isfile(top):
            yield top
        for base, dirs, names in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
            for name in names:
                if name.endswith(".py"):
                    yield os.path.join(base, name)


def main(argv):
    paths = argv or [os.path.join(ROOT, d) for d in ("tests", "scripts", "filter_plugins")]
    for path in files(paths):
        if os.path.relpath(os.path.abspath(path), ROOT) in KEEP:
            continue
        with open(path) as handle:
            text = handle.read()
        new = OLD.sub(lambda m: "%sfrom ansible.module_utils.metnos_sandbox%s import " % (m.group(1), m.group(2) or ""),
                      text)
        if new != text:
            with open(path, "w") as handle:
                handle.write(new)
            print("rewrote", os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main(sys.argv[1:])
