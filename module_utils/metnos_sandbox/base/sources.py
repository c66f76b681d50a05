# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The core's own source files, found on disk, never listed by hand: what the audit payload ships, what
the monitor's release holds, what the tests and scripts check.

The core is a folder (``metnos_sandbox/``) of capability packages one level deep (``base/``, ``host/``,
...; docs/architecture.md draws the map). ``files(top)`` names every source of the core in ``top`` by its
path relative to ``top`` (``base/diagnostics.py``); ``module_name`` turns such a path into the module's
dotted name under ``metnos_sandbox``. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import re
from typing import List

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
