# -*- coding: utf-8 -*-
"""The core's layout rules (docs/architecture.md, issue 22), read from the sources' syntax trees:

- no module of the core is longer than MAX_LINES;
- no import inside a function, except the ones listed in INNER_IMPORTS (each says why where it is made);
- the floors: a package imports only packages on lower floors (and itself); profile/ and service/ share a floor
  and neither imports the other.

Each rule is checked against a planted breach too (the rule's function run on a made-up source), so a check that
has stopped looking fails here."""
from __future__ import absolute_import, annotations, division, print_function

import ast
import os

import pytest

CORE = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", "module_utils", "metnos_sandbox"))
MAX_LINES = 650
# (module, what it imports inside a function): the exceptions docs/architecture.md names.
INNER_IMPORTS = {("probe/blame.py", ".blame_trials"),      # a real cycle: blame_trials imports blame's types
                 ("profile/reader.py", "yaml")}             # an optional dependency, for YAML text only
# Top to bottom; packages on one floor do not import each other.
FLOORS = [("report",), ("monitor",), ("audit",), ("options",), ("probe",), ("profile", "service"), ("host",), ("base",)]
# base/diagnostics.py gathers every package's codes.py: data that imports only base/registry.py (checked below).
GATHERER = "base/diagnostics.py"


def _modules():
    for folder, _dirs, files in os.walk(CORE):
        if "__pycache__" in folder:
            continue
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, CORE), path


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def inner_imports(source):
    """[(function name, imported name)] for every import statement inside a function body."""
    found = []
    for func in ast.walk(ast.parse(source)):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(func):
                if isinstance(node, ast.Import):
                    found.extend((func.name, alias.name) for alias in node.names)
                elif isinstance(node, ast.ImportFrom):
                    found.append((func.name, "." * node.level + (node.module or "")))
    return found


def imported_packages(rel, source):
    """[(package, names)] for each relative import of module ``rel`` (e.g. 'probe/probe.py') that reaches another
    of the core's packages: ``from ..host import bwrap`` -> ('host', ['bwrap'])."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 2:
            if node.module:
                package, _, rest = node.module.partition(".")
                out.append((package, [rest] if rest else [a.name for a in node.names]))
            else:
                out.extend((alias.name, []) for alias in node.names)
    own = rel.split("/")[0]
    return [(package, names) for package, names in out if package != own]


def floor_of(package):
    for index, floor in enumerate(FLOORS):
        if package in floor:
            return index
    raise AssertionError("package %s is on no floor of docs/architecture.md" % package)


def upward(rel, source):
    """The packages ``rel`` imports that are above it or beside it on its floor (the gatherer's imports of each
    package's codes.py excepted)."""
    here = floor_of(rel.split("/")[0])
    return sorted({package for package, names in imported_packages(rel, source) if floor_of(package) <= here
                   and not (rel == GATHERER and names == ["codes"])})


def test_each_codes_module_imports_only_the_registry():
    """What lets base/diagnostics.py gather them from the lowest floor: data, no logic of its package."""
    for rel, path in _modules():
        if rel.endswith("/codes.py"):
            tree = ast.parse(_read(path))
            froms = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module != "__future__"]
            assert all((n.level == 2 and n.module == "base.registry") or n.module == "typing" for n in froms), rel
            assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import)], rel


def test_every_module_is_short_enough():
    long = {rel: n for rel, path in _modules() for n in [len(_read(path).splitlines())] if n > MAX_LINES}
    assert not long, "split these by job: %s" % long


def test_no_import_inside_a_function_but_the_listed_ones():
    found = {(rel, name) for rel, path in _modules() for _func, name in inner_imports(_read(path))}
    assert found == INNER_IMPORTS


def test_no_package_imports_upwards_or_sideways():
    bad = {rel: up for rel, path in _modules() if "/" in rel for up in [upward(rel, _read(path))] if up}
    assert not bad


def test_the_checks_see_a_planted_breach():
    """Mutations: an import planted in a function, base importing host, profile importing service."""
    assert inner_imports("def f():\n    import shutil\n") == [("f", "shutil")]
    assert upward("base/paths.py", "from ..host import bwrap as B\n") == ["host"]
    assert upward("profile/x.py", "from ..service import unit_context\n") == ["service"]
    assert upward("probe/x.py", "from ..host import bwrap\nfrom . import evidence\n") == []
    assert upward(GATHERER, "from ..probe import codes\n") == []
    assert upward(GATHERER, "from ..probe import probe\n") == ["probe"]
    assert upward("host/x.py", "from ..probe import codes\n") == ["probe"]
    with pytest.raises(AssertionError, match="on no floor"):
        floor_of("newpackage")
