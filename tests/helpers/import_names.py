"""The core's import names in the checkout's Python files (tests/unit/test_import_name.py): the one name is
``ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox``; the bare ``metnos_sandbox`` stays
only in the files of KEEP, with the reason."""
import ast
import os

NAME = "ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox"
# Copied into hosts without Ansible (containers, the mutation matrix's other core), or a benchmark's
# no-Ansible floor: the bare name is the only one there. core_path (which maps the old name to the same
# module objects) names the old names itself.
# The monitor's entry point runs on managed hosts with no Ansible (python3 -I -B from its release folder).
KEEP = ("tests/system/directive_trial.py", "tests/helpers/probe_mutations.py", "scripts/probe-matrix.py",
        "benchmarks/bench-audit.py", "benchmarks/bench-render.py", "scripts/core_path.py",
        "roles/metnos_sandbox/files/metnos-sandbox-monitor.py")


def files(paths):
    """The ``*.py`` files under ``paths`` (hidden folders and caches left out)."""
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
    the same words inside a string are not imports of this file)."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                (node.module == "metnos_sandbox" or node.module.startswith("metnos_sandbox.")):
            found.add(node.lineno)
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "metnos_sandbox" for a in node.names):
            found.add(node.lineno)
    return found
