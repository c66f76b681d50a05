#!/usr/bin/env python3
"""Rewrite the core's old import names to its one name, in place (idempotent):

    from metnos_sandbox import X                      ->  from NAME import X
    from metnos_sandbox.mod import X                  ->  from NAME.mod import X
    ansible.module_utils.metnos_sandbox[.mod]         ->  NAME[.mod]   (imports, and the name in strings)

    NAME = ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox

    python3 scripts/one-import-name.py [PATH ...]
        (default: tests/ scripts/ library/ action_plugins/ filter_plugins/)

The core is the collection's module_utils: Ansible's module packager ships it with every module that
imports it, and on the controller Ansible's collection loader finds it (the checkout is the collection
through collections/ansible_collections/metnos/sandbox/). Tests and scripts get the same loader from
``core_path.use_core()``. Inside the core, imports stay relative, so the core also imports by the bare
name where Ansible is not installed: the files that do are listed in KEEP (checked by
tests/unit/test_import_name.py). A file that still puts module_utils on sys.path needs
``core_path.use_core()`` instead (tests get it from tests/conftest.py).
"""
import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox"
BARE = re.compile(r"^(\s*)from metnos_sandbox(\.[\w.]+)? import ")
LEGACY = re.compile(r"\bansible\.module_utils\.metnos_sandbox\b")
DIRS = ("tests", "scripts", "library", "action_plugins", "filter_plugins")
# Copied into hosts without Ansible (containers, the mutation matrix's other core), or a benchmark's
# no-Ansible floor: the bare name is the only one there. This tool and core_path (which maps the old name
# to the same module objects) name the old names themselves.
# The monitor's entry point runs on managed hosts with no Ansible (python3 -I -B from its release folder).
KEEP = ("tests/system/directive_trial.py", "tests/helpers/probe_mutations.py", "scripts/probe-matrix.py",
        "scripts/bench-audit.py", "scripts/bench-render.py", "scripts/one-import-name.py",
        "scripts/core_path.py",
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


def bare_imports(text):
    """Line numbers (1-based) of the import statements naming the bare ``metnos_sandbox`` (statements only:
    the same words inside a string, such as the audit payload's bootstrap that runs without Ansible, are
    not imports of this file)."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                (node.module == "metnos_sandbox" or node.module.startswith("metnos_sandbox.")):
            found.add(node.lineno)
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "metnos_sandbox" for a in node.names):
            found.add(node.lineno)
    return found


def rewrite(text):
    """``text`` with the old names replaced by NAME (idempotent: NAME contains neither pattern)."""
    bare = bare_imports(text)
    lines = text.splitlines(True)
    for number in bare:
        lines[number - 1] = BARE.sub(lambda m: "%sfrom %s%s import " % (m.group(1), NAME, m.group(2) or ""),
                                     lines[number - 1])
    return LEGACY.sub(NAME, "".join(lines))


def main(argv):
    paths = argv or [os.path.join(ROOT, d) for d in DIRS]
    for path in files(paths):
        if os.path.relpath(os.path.abspath(path), ROOT) in KEEP:
            continue
        with open(path) as handle:
            text = handle.read()
        new = rewrite(text)
        if new != text:
            with open(path, "w") as handle:
                handle.write(new)
            print("rewrote", os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main(sys.argv[1:])
