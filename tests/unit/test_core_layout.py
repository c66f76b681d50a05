# -*- coding: utf-8 -*-
"""The core's layout rules (docs/architecture.md, issue 22), read from the sources' syntax trees:

- no module of the core is longer than MAX_LINES;
- no import inside a function, except the ones listed in INNER_IMPORTS (each says why where it is made);
- the floors: a package imports only packages on lower floors (and itself); profile/ and service/ share a floor
  and neither imports the other; base/, the ground floor, imports nothing above it (every code's definition lives
  there, in base/codes_<package>.py, so that the one registry needs nothing above it: issue 44).

Each rule is checked against a planted breach too (the rule's function run on a made-up source), so a check that
has stopped looking fails here."""
from __future__ import absolute_import, annotations, division, print_function

import ast
import os
import re

import pytest

from helpers.paths import CORE, read_text

MAX_LINES = 650
# (module, its own limit): a module that must stay one file, each with its reason.
ONE_FILE = {
    # The launcher's core: shipped alone beside metnos-sandbox-exec and sent whole as `python -I -S -c` by the
    # probe (launcher_words), so it imports nothing of the core; the walker and the keyring join it needs are its
    # own copies (tests/unit/test_tree_walk.py keeps the walker equal to base/tree_walk.py). Splitting it means
    # shipping two files: issue 55's split of big rooms. 720 -> 740 (issue 52's cost): the walker's special_only
    # mode, the channel search's, without an lstat per file (_listed, _open_listed), in both copies.
    "profile/descriptors.py": 740,
}
# (module, what it imports inside a function): the exceptions docs/architecture.md names.
INNER_IMPORTS = {("probe/blame.py", ".blame_trials"),      # a real cycle: blame_trials imports blame's types
                 ("profile/reader.py", "yaml"),             # an optional dependency, for YAML text only
                 # the host's payload imports these only when it needs them (issue 52's cost; the comment where each
                 # is made says what it saves): a %-escaped D-Bus address, an unknown network word
                 ("profile/bus_proxy.py", "urllib.parse"), ("profile/model.py", "difflib")}
# A script's own imports (its text runs in another interpreter; importing the module for its text loads nothing).
INNER_IMPORTS |= {("probe/device_script.py", name) for name in ("ctypes", "json", "os", "signal", "socket", "sys",
                                                                 "time")}
# Top to bottom; packages on one floor do not import each other.
FLOORS = [("report",), ("monitor",), ("audit",), ("options",), ("probe",), ("profile", "service"), ("host",), ("base",)]
# The other packages of the core (base/ imports none of them, by any spelling: relative or by its full name).
ABOVE_BASE = tuple(package for floor in FLOORS[:-1] for package in floor)


def _modules():
    for folder, _dirs, files in os.walk(CORE):
        if "__pycache__" in folder:
            continue
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, CORE), path


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
    """[(package, names)] for each relative import of module ``rel`` (e.g. 'probe/run.py') that reaches another
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
    """The packages ``rel`` imports that are above it or beside it on its floor."""
    here = floor_of(rel.split("/")[0])
    return sorted({package for package, _names in imported_packages(rel, source) if floor_of(package) <= here})


def above_base(source):
    """The core's packages above base/ that a module of base/ imports, however it spells the import: relative
    (``from ..probe import x``, ``from .. import probe``) or by the core's full name (``...metnos_sandbox.probe``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level >= 2:
            names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            found.update(names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if "metnos_sandbox" in parts:
                rest = parts[parts.index("metnos_sandbox") + 1:]
                found.update(rest[:1] or [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if "metnos_sandbox" in parts:
                    found.update(parts[parts.index("metnos_sandbox") + 1:][:1])
    return sorted(found & set(ABOVE_BASE))


def test_base_imports_nothing_above_it():
    """The ground floor holds the one registry with every code (base/codes_<package>.py): wherever
    base.diagnostics is imported - the host's audit payload included - every code is there, and nothing of the
    floors above comes with it."""
    bad = {rel: up for rel, path in _modules() if rel.startswith("base/") for up in [above_base(read_text(path))] if up}
    assert not bad


def test_each_codes_module_imports_only_the_registry():
    """The code lists are data: each imports base/registry.py (and typing) alone, no logic of any package."""
    found = sorted(rel for rel, _path in _modules() if os.path.basename(rel).startswith("codes"))
    assert found == ["base/codes_%s.py" % p for p in ("audit", "channels", "holdings", "host", "launcher", "mounts",
                                                      "options", "probe", "profile", "service")]
    for rel, path in _modules():
        if rel in found:
            tree = ast.parse(read_text(path))
            froms = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module != "__future__"]
            assert all((n.level == 1 and n.module == "registry") or n.module == "typing" for n in froms), rel
            assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import)], rel


def test_every_module_is_short_enough():
    long = {rel: n for rel, path in _modules() for n in [len(read_text(path).splitlines())]
            if n > ONE_FILE.get(rel, MAX_LINES)}
    assert not long, "split these by job: %s" % long


def test_no_import_inside_a_function_but_the_listed_ones():
    found = {(rel, name) for rel, path in _modules() for _func, name in inner_imports(read_text(path))}
    assert found == INNER_IMPORTS


def test_no_package_imports_upwards_or_sideways():
    bad = {rel: up for rel, path in _modules() if "/" in rel for up in [upward(rel, read_text(path))] if up}
    assert not bad


def test_the_checks_see_a_planted_breach():
    """Mutations: an import planted in a function, base importing host, profile importing service."""
    assert inner_imports("def f():\n    import shutil\n") == [("f", "shutil")]
    assert upward("base/paths.py", "from ..host import bwrap as B\n") == ["host"]
    assert upward("profile/x.py", "from ..service import unit_context\n") == ["service"]
    assert upward("probe/x.py", "from ..host import bwrap\nfrom . import evidence\n") == []
    assert upward("base/diagnostics.py", "from ..probe import codes\n") == ["probe"]
    assert upward("host/x.py", "from ..probe import codes\n") == ["probe"]
    assert above_base("from ..probe import codes\n") == ["probe"]
    assert above_base("from .. import audit, base\n") == ["audit"]
    assert above_base("from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import x\n"
                      ) == ["host"]
    assert above_base("import metnos_sandbox.service.codes\n") == ["service"]
    assert above_base("from . import registry\nfrom .records import Shape\nimport os\n") == []
    with pytest.raises(AssertionError, match="on no floor"):
        floor_of("newpackage")


def architecture_tree(text):
    """{package: (modules an entry of the tree names first, every module named in the package's section)} of
    docs/architecture.md's tree (``codes_<package>.py`` stands for every codes module)."""
    block = text.split("```")[1]
    listed, package = {}, None
    for line in block.splitlines():
        head = re.match(r"^  (\w+)/ ", line)
        if head:
            package = head.group(1)
            listed[package] = (set(), set())
        elif not line.startswith("  "):
            package = None
        if package is None:
            continue
        names = re.findall(r"(?<![\w/.<>-])([a-z_]+\.py|codes_<package>\.py)(?![\w])", line)
        entry = re.match(r"^    ([a-z_]+\.py)", line)
        if entry:
            listed[package][0].add(entry.group(1))
        listed[package][1].update(names)
    return listed


def core_tree():
    found = {}
    for rel, _path in _modules():
        package, _sep, name = rel.partition("/")
        if name and name != "__init__.py":
            found.setdefault(package, set()).add("codes_<package>.py" if name.startswith("codes_") else name)
    return found


def tree_differences(listed, files):
    missing = {p: sorted(files[p] - listed.get(p, (set(), set()))[1]) for p in files
               if files[p] - listed.get(p, (set(), set()))[1]}
    stale = {p: sorted(listed[p][0] - files.get(p, set())) for p in listed if listed[p][0] - files.get(p, set())}
    return missing, stale


def test_the_architecture_tree_is_the_files():
    """docs/architecture.md's tree names every module of the core under its package, and no entry names a module
    that is not there (issue 55: it had left out both containment modules and channels.py)."""
    listed = architecture_tree(read_text(os.path.join(CORE, "..", "..", "docs", "architecture.md")))
    missing, stale = tree_differences(listed, core_tree())
    assert not missing and not stale, "docs/architecture.md's tree: missing %s, not there %s" % (missing, stale)


def test_the_architecture_tree_check_sees_a_planted_breach():
    text = "```\n  probe/       x\n    run.py  y (held.py)\n    gone.py  z\n```\n"
    listed = architecture_tree(text)
    assert listed == {"probe": ({"run.py", "gone.py"}, {"run.py", "held.py", "gone.py"})}
    assert tree_differences(listed, {"probe": {"run.py", "held.py", "new.py"}}) == ({"probe": ["new.py"]},
                                                                                  {"probe": ["gone.py"]})
