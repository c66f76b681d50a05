# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The interpreter's own roots: the executors' Python asked, with a bounded runner, for its package
roots and installation, added to the host context (with_python_roots).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import functools
import json
import os
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Tuple,
)

from ..base import json_lite, sources
from ..base.records import Record
from . import ask_python, host_layout, model


@functools.lru_cache(maxsize=None)
def ask_python_text() -> str:
    """What discover_python runs (``python -c``): ask_python.py after base/json_lite.py, read once per process."""
    return sources.script(json_lite, ask_python)


class PythonFound(Record):
    """discover_python(): the interpreter's package roots (sys.path) and its installation's folders."""
    roots: List[str]
    installation: List[str]


def _folders(paths: Any) -> List[str]:
    """Absolute existing folders without control characters, normalised, sorted, bounded."""
    if not isinstance(paths, list):
        return []
    return sorted(set(host_layout.norm(p) for p in paths if isinstance(p, str) and p.startswith("/")
                      and not model.has_control(p) and os.path.isdir(p)))[:host_layout.MAX_HOST_LIST]


def discover_python(python: Optional[str], runner: Callable[[List[str]], Tuple[int, str, str]]) -> PythonFound:
    """Ask the runtime's interpreter (``runner(argv) -> (rc, out, err)``) for its sys.path and the folders
    of the installation it resolves to. Home folders are filtered later by HostContext.base()."""
    if not python or not os.path.exists(python):
        return PythonFound([], [])
    rc, out, _err = runner([python, "-c", ask_python_text()])
    if rc != 0:
        return PythonFound([], [])
    try:
        found = json.loads(out)
    except ValueError:
        return PythonFound([], [])
    if not isinstance(found, dict):
        return PythonFound([], [])
    return PythonFound(_folders(found.get("path")), [p for p in _folders(found.get("install")) if p != "/"])


def discover_python_roots(python: Optional[str], runner: Callable[[List[str]], Tuple[int, str, str]]) -> List[str]:
    """sys.path directories of the runtime's interpreter, as absolute existing directories."""
    return discover_python(python, runner).roots


def with_python_roots(host_over: Optional[Dict[str, Any]],
                      runner: Callable[[List[str]], Tuple[int, str, str]]) -> Dict[str, Any]:
    """Host overrides completed with the interpreter's package roots and installation (unless given)."""
    out = dict(host_over or {})
    if "python_package_roots" not in out or "python_installation" not in out:
        found = discover_python(out.get("python_executable", host_layout.DEFAULT_HOST["python_executable"]), runner)
        out.setdefault("python_package_roots", found.roots)
        out.setdefault("python_installation", found.installation)
    return out
