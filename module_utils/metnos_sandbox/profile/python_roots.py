# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The interpreter's own roots: the executors' Python asked, with a bounded runner, for its package
roots and installation, added to the host context (with_python_roots).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

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

from ..base import json_lite as JL
from ..base.records import Record
from . import host_layout as HL
from . import model as MD

# Asked of the runtime's interpreter: its sys.path, and the installation it really runs from (the
# prefixes, the stdlib and site folders, the folder of libpython and the libpython it has mapped, the
# folder of the resolved executable): read-only base trees whatever the writable roots say.
# The answer is JSON written by base/json_lite.py (importing json there costs more: docs/benchmarks.md).
_ASK_PYTHON = JL.PRELUDE + r"""
import os, sys, sysconfig
inst = [sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", sys.exec_prefix),
        os.path.dirname(os.path.realpath(sys.executable))]
inst += [sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
inst.append(sysconfig.get_config_var("LIBDIR"))
try:
    with open("/proc/self/maps") as handle:
        for line in handle:
            fields = line.split(None, 5)
            if len(fields) > 5 and "libpython" in fields[5]:
                inst.append(os.path.dirname(fields[5].strip()))
except OSError:
    pass
print(dumps({"path": [p for p in sys.path if isinstance(p, str)], "install": [p for p in inst if isinstance(p, str)]}))
"""


class PythonFound(Record):
    """discover_python(): the interpreter's package roots (sys.path) and its installation's folders."""
    roots: List[str]
    installation: List[str]


def _folders(paths: Any) -> List[str]:
    """Absolute existing folders without control characters, normalised, sorted, bounded."""
    if not isinstance(paths, list):
        return []
    return sorted(set(HL.norm(p) for p in paths if isinstance(p, str) and p.startswith("/")
                      and not MD.has_control(p) and os.path.isdir(p)))[:HL.MAX_HOST_LIST]


def discover_python(python: Optional[str], runner: Callable[[List[str]], Tuple[int, str, str]]) -> PythonFound:
    """Ask the runtime's interpreter (``runner(argv) -> (rc, out, err)``) for its sys.path and the folders
    of the installation it resolves to. Home folders are filtered later by HostContext.base()."""
    if not python or not os.path.exists(python):
        return PythonFound([], [])
    rc, out, _err = runner([python, "-c", _ASK_PYTHON])
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
        found = discover_python(out.get("python_executable", HL.DEFAULT_HOST["python_executable"]), runner)
        out.setdefault("python_package_roots", found.roots)
        out.setdefault("python_installation", found.installation)
    return out
