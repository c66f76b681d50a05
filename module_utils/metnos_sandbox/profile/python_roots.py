# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The interpreter's own roots: the executors' Python asked, with a bounded runner, for its package
roots and installation, added to the host context (with_python_roots).

The interpreter is the service's (typically its user's venv): it always runs with ``-I -S`` (no site, no .pth,
no user site, no PYTHON* variable), and only when root alone can change it (base/owners.py: the file, its
interpreter, every folder and link on the way) with the runner given; otherwise as the one user who owns it
(base/run_as.py: setpriv, no capabilities, a clean environment, a timeout), or not at all (issue 49).
What an interpreter run as its user names is judged as that user (a child forked as the user: which of the
named paths are folders it can reach, by their real paths), never by root: root's answer would tell the user
which folders exist where it cannot look (below /root); host_context then reaches each by descriptor.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import functools
import json
import os
import pwd
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Tuple,
)

from ..base import diagnostics, json_lite, owners, run_as, sources
from ..base.records import Record
from ..host import procfs
from . import ask_python, host_layout, model


@functools.lru_cache(maxsize=None)
def ask_python_text() -> str:
    """What discover_python runs (``python -c``): ask_python.py after base/json_lite.py, read once per process."""
    return sources.script(json_lite, ask_python)


ISOLATED = ("-I", "-S")      # no site (no .pth run), no user site, no PYTHON* variable, no script folder on sys.path
ASK_SECONDS = 30.0


class PythonFound(Record):
    """discover_python(): the interpreter's package roots (sys.path) and its installation's folders; ``ran_as``:
    the uid it ran as (-1: not run), ``problems``: what makes it another user's (base/owners.py)."""
    roots: List[str]
    installation: List[str]
    ran_as: int = -1
    problems: Tuple[owners.Problem, ...] = ()


def ask(python: str,
        runner: Callable[[List[str]], Tuple[int, str, str]]) -> Tuple[int, str, int, Tuple[owners.Problem, ...]]:
    """``python -I -S -c TEXT`` run as root (``runner``) when root alone can change it, else as its one owner
    (run_as), else not run: (rc, stdout, the uid it ran as or -1, the problems)."""
    argv = [python] + list(ISOLATED) + ["-c", ask_python_text()]
    found = tuple(owners.as_root_python(python))
    if not found:
        rc, out, _err = runner(argv)
        return rc, out, 0, found
    uid = owners.owner(list(found))
    if uid is None:
        return 1, "", -1, found
    ran = run_as.run(argv, uid, run_as.primary_gid(uid), timeout=ASK_SECONDS)
    return ran.rc, run_as.text(ran.stdout), uid, found


def _candidates(paths: Any) -> List[str]:
    """Absolute paths without control characters, normalised, sorted, bounded (not yet known to be folders)."""
    if not isinstance(paths, list):
        return []
    return sorted(set(host_layout.norm(p) for p in paths if isinstance(p, str) and p.startswith("/")
                      and not model.has_control(p)))[:host_layout.MAX_HOST_LIST]


def existing_folders(paths: List[str]) -> List[str]:
    """The ``paths`` that are folders, as the calling process sees them."""
    return [p for p in paths if os.path.isdir(p)]


def real_folders(paths: List[str]) -> List[str]:
    """The real paths (every link resolved) of the ``paths`` that are folders, as the calling process sees them."""
    return [os.path.realpath(p) for p in paths if os.path.isdir(p)]


def folders_seen_by(uid: int, paths: List[str]) -> List[str]:
    """The folders the ``paths`` name as the user ``uid`` sees them, by their real paths (the user's links
    resolved by the user, so root never follows them: host_context reaches each by descriptor): asked in a child
    forked as that user (its primary group and groups, no capability), so a path below a folder the user cannot
    search is no folder. [] when the child could not report."""
    try:
        entry = pwd.getpwuid(uid)
        gid, groups = entry.pw_gid, os.getgrouplist(entry.pw_name, entry.pw_gid)
    except KeyError:
        gid, groups = uid, []
    seen = procfs.call_as(uid, gid, real_folders, paths, groups)
    return _candidates(seen) if isinstance(seen, list) else []


def _folders(paths: Any, uid: int = 0) -> List[str]:
    """Absolute existing folders without control characters, normalised, sorted, bounded; judged as ``uid``
    (the user the interpreter that named them ran as) when that is not root."""
    candidates = _candidates(paths)
    return existing_folders(candidates) if uid == 0 else folders_seen_by(uid, candidates)


def discover_python(python: Optional[str], runner: Callable[[List[str]], Tuple[int, str, str]]) -> PythonFound:
    """Ask the runtime's interpreter (``runner(argv) -> (rc, out, err)``) for its sys.path and the folders
    of the installation it resolves to. Home folders are filtered later by HostContext.base()."""
    if not python or not os.path.exists(python):
        return PythonFound([], [])
    rc, out, uid, problems = ask(python, runner)
    if rc != 0:
        return PythonFound([], [], uid, problems)
    try:
        found = json.loads(out)
    except ValueError:
        return PythonFound([], [], uid, problems)
    if not isinstance(found, dict):
        return PythonFound([], [], uid, problems)
    return PythonFound(_folders(found.get("path"), uid), [p for p in _folders(found.get("install"), uid) if p != "/"],
                       uid, problems)


def discover_python_roots(python: Optional[str], runner: Callable[[List[str]], Tuple[int, str, str]]) -> List[str]:
    """sys.path directories of the runtime's interpreter, as absolute existing directories."""
    return discover_python(python, runner).roots


def with_python_roots(host_over: Optional[Dict[str, Any]],
                      runner: Callable[[List[str]], Tuple[int, str, str]],
                      findings: Optional[List[diagnostics.Diagnostic]] = None) -> Dict[str, Any]:
    """Host overrides completed with the interpreter's package roots and installation (unless given).
    ``findings``: where profile_python_not_run goes when the interpreter was run neither as root nor as its
    owner (base/owners.py)."""
    out = dict(host_over or {})
    if "python_package_roots" not in out or "python_installation" not in out:
        python = out.get("python_executable", host_layout.DEFAULT_HOST["python_executable"])
        found = discover_python(python, runner)
        if findings is not None and found.ran_as == -1 and found.problems:
            findings.extend(owners.findings("profile_python_not_run", str(python), list(found.problems)))
        out.setdefault("python_package_roots", found.roots)
        out.setdefault("python_installation", found.installation)
    return out
