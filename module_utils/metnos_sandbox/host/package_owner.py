# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which installed package owns a path (bwrap's binary), asked of dpkg, rpm or pacman.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .bwrap import Runner, default_runner, which

# Which installed package owns a path, and its full revision. One query per package manager,
# run in the C locale (the runners set C_ENV), parsed by the functions below from the formats
# the tools print (sources read: dpkg's query tool, rpm lib/query.cc and its --queryformat,
# pacman src/pacman/query.c); tests/unit/test_package_facts.py holds the exact outputs.
RPM_OWNER_QF = "%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\n"


# The package that ships bwrap on dpkg systems. Asked first because `dpkg-query -L PKG` reads one file
# list while `dpkg-query -S PATH` reads all of them (docs/benchmarks.md);
# the answer is the same: a regular file is listed by one package at most. Anything else (another
# owner, a diversion) is answered by the full search.
DPKG_EXPECTED_OWNERS = ("bubblewrap",)
_DPKG_DIVERSION_NOTE = re.compile(r"(diverted by |locally diverted to: |package diverts others to: )")


def parse_dpkg_search(out: str, path: Optional[str] = None) -> Tuple[List[str], bool]:
    """``dpkg-query -S PATH`` -> (owners, diverted).

    Lines are ``pkg: /path``, ``pkg:arch: /path`` (Multi-Arch), ``pkg1, pkg2: /dir`` (a path in
    several packages) and, for a diverted file, ``diversion by X from: /path`` /
    ``diversion by X to: /path.distrib`` (or ``local diversion ...``) before the owners' line.
    With ``path``, only the lines for exactly that path count."""
    owners: List[str] = []
    diverted = False
    for line in out.splitlines():
        if line.startswith(("diversion by ", "local diversion ")):
            diverted = True
            continue
        names, _sep, listed = line.rpartition(": ")
        if not names or not listed.startswith("/") or (path is not None and listed.strip() != path):
            continue
        owners.extend(n.strip().split(":")[0] for n in names.split(","))   # 'pkg:arch' -> pkg
    return [o for o in owners if o], diverted


def parse_rpm_owner(out: str) -> Optional[Tuple[str, str]]:
    """``rpm -qf --qf RPM_OWNER_QF PATH`` -> (name, revision), or None.

    One ``NAME<TAB>EPOCH:VERSION-RELEASE`` line per owning package (two for multilib pairs: the
    first is taken); a zero epoch is dropped, as ``rpm -q`` prints it. A path nobody owns gives
    rc 1 and ``file PATH is not owned by any package`` on stdout, which is not in this format."""
    for line in out.splitlines():
        m = re.match(r"^([^\s]+)\t(\d+):(\S+-\S+)$", line)
        if m:
            epoch = m.group(2)
            return m.group(1), (m.group(3) if epoch == "0" else "%s:%s" % (epoch, m.group(3)))
    return None


_PACMAN_OWNED = re.compile(r"^(?P<path>/.*) is owned by (?P<name>\S+) (?P<version>\S+)$")


def parse_pacman_owner(out: str) -> Optional[Tuple[str, str]]:
    """``pacman -Qo PATH`` -> (name, revision), or None.

    ``%s is owned by %s %s``: the path with its directory resolved (pacman canonicalises the
    parent, so /bin/bwrap is reported as /usr/bin/bwrap), the package name and its version
    (``[epoch:]pkgver-pkgrel``). Colour codes are only added on a terminal. Nobody owning the
    path gives rc 1 and ``error: No package owns PATH`` on stderr."""
    for line in out.splitlines():
        m = _PACMAN_OWNED.match(line.rstrip())
        if m:
            return m.group("name"), m.group("version")
    return None


def _dpkg_diverted_by(path: str, runner: Runner) -> Optional[str]:
    """The package diverting ``path`` ('LOCAL' for a local diversion), or None."""
    rc, out, _err = runner(["dpkg-divert", "--listpackage", path])
    return out.strip() or None if rc == 0 else None


def _dpkg_owner(candidates: Sequence[str], runner: Runner) -> Tuple[Optional[str], Optional[str]]:
    """The dpkg package whose file is at the first of ``candidates`` (a path, its resolved path) that
    dpkg knows: (path, package) or (None, None).

    With a diversion, only the diverting package's own file stays at the path (the others' go to the
    diverted name): the owner is that package if it lists the path, nobody otherwise (a local file)."""
    for pkg in DPKG_EXPECTED_OWNERS:
        rc, out, _err = runner(["dpkg-query", "-L", pkg])
        lines = out.splitlines() if rc == 0 else []
        for path in candidates:
            # -L prints 'diverted by X to: ...' (or 'locally diverted to: ...') right after a diverted path
            if path in lines and not _DPKG_DIVERSION_NOTE.match((lines + [""])[lines.index(path) + 1]):
                return path, pkg
    for path in candidates:
        rc, out, _err = runner(["dpkg-query", "-S", path])
        owners, diverted = parse_dpkg_search(out, path) if rc == 0 else ([], False)
        if not owners:
            continue
        diverter = _dpkg_diverted_by(path, runner) if diverted else None
        if diverter is None:
            return path, owners[0]
        if diverter in owners:
            return path, diverter
        return path, None      # diverted away: the file at the path is a local one
    return None, None


def _dpkg_query(candidates: Sequence[str], runner: Runner) -> Optional[Tuple[str, Optional[str]]]:
    _path, name = _dpkg_owner(candidates, runner)
    if not name:
        return None
    rc, ver, _err = runner(["dpkg-query", "-W", "-f=${Version}", name])
    return name, (ver.strip().splitlines()[0] if rc == 0 and ver.strip() else None)


def _first_answer(argv: List[str], parse: Callable[[str], Optional[Tuple[str, str]]], candidates: Sequence[str],
                  runner: Runner) -> Optional[Tuple[str, str]]:
    for candidate in candidates:
        rc, out, _err = runner(argv + [candidate])
        found = parse(out) if rc == 0 else None
        if found:
            return found
    return None


def _rpm_query(candidates: Sequence[str], runner: Runner) -> Optional[Tuple[str, str]]:
    return _first_answer(["rpm", "-qf", "--qf", RPM_OWNER_QF], parse_rpm_owner, candidates, runner)


def _pacman_query(candidates: Sequence[str], runner: Runner) -> Optional[Tuple[str, str]]:
    return _first_answer(["pacman", "-Qo"], parse_pacman_owner, candidates, runner)


_PACKAGE_QUERIES = (("dpkg", "dpkg-query", _dpkg_query), ("rpm", "rpm", _rpm_query),
                    ("pacman", "pacman", _pacman_query))


def find_tool(tool: str, search: str = "/usr/bin:/bin:/usr/sbin:/sbin") -> Optional[str]:
    return which(tool, search)


def package_facts(path: str, runner: Runner = default_runner,
                  tool_on: Callable[[str], Optional[str]] = find_tool) -> Dict[str, Any]:
    """Distro package owning ``path``: name, full revision, manager. Empty when unowned.

    Asks every package manager present (dpkg, rpm, pacman, in that order; a Fedora laptop may
    also have dpkg-query), for the path as given and then resolved."""
    candidates = list(dict.fromkeys([path, os.path.realpath(path)]))
    for manager, tool, query in _PACKAGE_QUERIES:
        if not tool_on(tool):
            continue
        found = query(candidates, runner)
        if found:
            return {"manager": manager, "name": found[0], "revision": found[1]}
    return {}
