# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The core's own source files, found on disk, never listed by hand: what the audit payload ships (``closure``: what
the host's entry point imports), what the monitor's release holds, what the tests and scripts check; and ``script``,
the text of a module of the core that another interpreter runs as a script (``python -c``).

The core is a folder (``metnos_sandbox/``) of capability packages one level deep (``base/``, ``host/``,
...; docs/architecture.md draws the map). ``files(top)`` names every source of the core in ``top`` by its
path relative to ``top`` (``base/diagnostics.py``); ``module_name`` turns such a path into the module's
dotted name under ``metnos_sandbox``. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import re
import types
from typing import Dict, List, Set

PACKAGE = "metnos_sandbox"
# The core in this checkout or installed collection: the folder above this package.
CORE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A source file of the core: a module, optionally in one package folder (lowercase names, bounded).
SOURCE = re.compile(r"(?:[a-z_][a-z0-9_]{0,63}/)?[a-z_][a-z0-9_]{0,63}\.py\Z")


def files(top: str = CORE) -> List[str]:
    """Every source of the core in ``top`` (sorted relative paths: ``__init__.py``, ``base/__init__.py``,
    ``base/diagnostics.py``, ...): the ``*.py`` files of ``top`` and of its package folders (a folder with
    an ``__init__.py``); bytecode, caches and hidden files left out."""
    out = []
    for name in sorted(os.listdir(top)):
        path = os.path.join(top, name)
        if name.endswith(".py") and not name.startswith(".") and os.path.isfile(path):
            out.append(name)
        elif os.path.isfile(os.path.join(path, "__init__.py")) and not name.startswith((".", "_")):
            out.extend(name + "/" + sub for sub in sorted(os.listdir(path)) if sub.endswith(".py") and
                       not sub.startswith(".") and os.path.isfile(os.path.join(path, sub)))
    return out


def module_name(relative: str) -> str:
    """``base/diagnostics.py`` -> ``metnos_sandbox.base.diagnostics``; ``base/__init__.py`` -> its package."""
    parts = [PACKAGE] + relative[:-len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_package(relative: str) -> bool:
    return relative.endswith("__init__.py")


def script(*modules: types.ModuleType) -> str:
    """The text another interpreter runs (``python -c TEXT``): the sources of ``modules``, in order, one after the
    other. Such a module is a real file of the core, linted and type-checked like the rest; importing it runs
    nothing (its work is under ``if __name__ == "__main__"``, which is what ``-c`` gives). Each source is read
    through its module's own loader, so it is found wherever the core was imported from: the files of a
    checkout or an installed collection, the zip Ansible ships a module in, or the sources the audit's
    bootstrap was sent (audit/bootstrap.py). None of them may have a ``from __future__`` import: the text
    after the first module's would not compile."""
    return "".join(_source(module) for module in modules)


def _source(module: types.ModuleType) -> str:
    spec = module.__spec__
    loader = spec.loader if spec is not None else None
    get_source = getattr(loader, "get_source", None)
    text = get_source(spec.name) if spec is not None and get_source is not None else None
    if isinstance(text, bytes):         # Ansible's collection loader gives the file's bytes
        text = text.decode("utf-8")
    if not isinstance(text, str) or not text:
        raise ImportError("the source of %s cannot be read" % module.__name__)
    return text if text.endswith("\n") else text + "\n"


# An import statement of the core's own style (ruff's isort: one statement a line, a long name list in parentheses),
# at any indentation; read as text, never run. A line inside a string that reads like one only adds a module.
IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)|import[ \t]+([^\n]*))",
                    re.MULTILINE)


def imports(name: str, source: str, is_package_module: bool) -> Set[str]:
    """The dotted names module ``name`` imports from the core, read from its import statements (IMPORT, never
    run): every ``from . import x``, ``from ..base import diagnostics``, ``from .records import Shape``, ``import
    metnos_sandbox.x`` resolved against the module's package. A name may be a module or an attribute of one:
    both are listed (closure keeps those that are modules). Text, not a syntax tree: parsing the whole core costs
    the payload's builder far more CPU than reading its import lines (docs/benchmarks.md;
    tests/unit/test_audit_payload.py compares the result with what the interpreter imports)."""
    package = name if is_package_module else name.rpartition(".")[0]
    found: Set[str] = set()
    for dots, module, names, plain in IMPORT.findall(source):
        listed = [part.split("#")[0].strip(" \t\n()") for part in (names or plain).split(",")]
        listed = [item.split()[0] for item in listed if item]
        if plain:
            found.update(listed)
            continue
        if dots:
            base = package.rsplit(".", len(dots) - 1)[0] if len(dots) > 1 else package
            module = base + "." + module if module else base
        found.add(module)
        found.update(module + "." + item for item in listed)
    return {n for n in found if n == PACKAGE or n.startswith(PACKAGE + ".")}


def closure(entry: str, sources: Dict[str, str], packages: Set[str]) -> Set[str]:
    """The modules of ``sources`` ({dotted name: source}) that importing ``entry`` can import: ``entry``, what
    each imports (imports()), and the package above each (importing a module runs its package's __init__),
    followed until nothing new is found. What no import reaches (the controller's report/ and monitor/, the
    transport itself) is not in it: the host side of the audit is what its entry point imports, by construction."""
    seen: Set[str] = set()
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in seen or name not in sources:
            continue
        seen.add(name)
        todo.extend(imports(name, sources[name], name in packages))
        parent = name.rpartition(".")[0]
        while parent:
            todo.append(parent)
            parent = parent.rpartition(".")[0]
    return seen
