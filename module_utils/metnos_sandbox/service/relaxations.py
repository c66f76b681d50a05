# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The relaxations blame.py tries for a culprit directive, smallest first, and the code it reports it with.

A relaxation is the list of lines a drop-in adds after the unit's own files (systemd applies drop-ins
last): ``AmbientCapabilities=`` (an empty assignment resets), ``LimitNPROC=4`` (a later assignment
wins), ``ReadWritePaths=/proc`` (a more specific writable path inside ``ReadOnlyPaths=/``),
``SystemCallFilter=@mount`` (adds to an allow list, removes from a deny list), ``ExecPaths=/usr/bin/bwrap``.
Nothing here is offered untried: blame.py runs the probe with each candidate and offers the first that
passes. The last candidate of each directive resets it, where systemd accepts an empty assignment.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import re
import typing as t

from . import restrictions

Lines = t.List[str]

# The static user a trial runs as when DynamicUser= is removed and the unit names no User=: the
# closest stand-in for an allocated user (no home, no groups, not root).
STANDIN_USER = "nobody"

# A power-of-two ladder for process limits (then systemd's infinity); blame.py narrows between the last
# value that failed and the first that passed.
NPROC_LADDER = (2, 4, 8, 16, 64, 256, 1024, 4096)
# Size and count limits other than processes: the unit's value times these, then infinity.
LIMIT_FACTORS = (2, 4, 16, 64, 256)

_SIZE = re.compile(r"^\s*([0-9]+)\s*([KMGTPE]?)i?B?\s*$", re.I)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}


def limit_value(text: str) -> t.Optional[int]:
    """The soft value of a Limit*= assignment ("64", "2G", "16:32", "infinity") in units, None when it is
    infinity or unreadable."""
    soft = text.split(":", 1)[0].strip()
    match = _SIZE.match(soft)
    if not match:
        return None
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def limit_ladder(name: str, values: t.Sequence[str]) -> t.List[Lines]:
    """The values of ``name`` (a Limit*= directive) to try, from just above the unit's value up."""
    current = limit_value(values[-1]) if values else None
    if name == "LimitNPROC":
        steps = [v for v in NPROC_LADDER if current is None or v > current]
    elif current is None:
        steps = []
    else:
        steps = [max(1, current) * f for f in LIMIT_FACTORS]
    return [["%s=%d" % (name, v)] for v in steps] + [["%s=infinity" % name]]


def _syscall_filter(values: t.Sequence[str], ctx: t.Mapping[str, t.Any]) -> t.List[Lines]:
    blocked = restrictions.syscalls_blocked(values)
    out = [["SystemCallFilter=%s" % " ".join(blocked)]] if blocked else []
    for groups in ("@mount", "@mount @process", "@system-service", "@system-service @mount"):
        out.append(["SystemCallFilter=%s" % groups])
    return out + [["SystemCallFilter="]]


def _namespaces(values: t.Sequence[str], ctx: t.Mapping[str, t.Any]) -> t.List[Lines]:
    """The allowed set plus what bwrap needs, written out whole: unit files merge RestrictNamespaces= lists
    (a later list adds) while a transient unit's assignment replaces the earlier one, so only the whole set
    means the same in the drop-in offered and in the trial that proved it."""
    allowed = restrictions.allowed_namespaces(values)
    missing = [n for n in restrictions.BWRAP_NAMESPACES if n not in allowed]
    whole = list(restrictions.BWRAP_NAMESPACES) + [n for n in restrictions.ALL_NAMESPACES if n in allowed and n not
                                                   in restrictions.BWRAP_NAMESPACES]
    return ([["RestrictNamespaces=%s" % " ".join(whole)]] if missing else []) + [["RestrictNamespaces=no"]]


def _noexec(values: t.Sequence[str], ctx: t.Mapping[str, t.Any]) -> t.List[Lines]:
    bwrap = ctx.get("bwrap") or "/usr/bin/bwrap"
    python = ctx.get("python_resolved") or os.path.realpath(ctx.get("python") or "/usr/bin/python3")
    return [["ExecPaths=%s" % bwrap], ["ExecPaths=%s %s" % (bwrap, python)], ["NoExecPaths="]]


def _dynamic(values: t.Sequence[str], ctx: t.Mapping[str, t.Any]) -> t.List[Lines]:
    return [["RestrictSUIDSGID=no"], ["DynamicUser=no", "User=%s" % STANDIN_USER]]


_FIXED: t.Dict[str, t.List[Lines]] = {
    "AmbientCapabilities": [["AmbientCapabilities="]],
    "ReadOnlyPaths": [["ReadWritePaths=/proc"], ["ReadOnlyPaths="]],
    "RestrictAddressFamilies": [["RestrictAddressFamilies=AF_NETLINK"], ["RestrictAddressFamilies="]],
    "ProcSubset": [["ProcSubset=all"]],
    "RestrictSUIDSGID": [["RestrictSUIDSGID=no"]],
}
_BUILT: t.Dict[str, t.Callable[[t.Sequence[str], t.Mapping[str, t.Any]], t.List[Lines]]] = {
    "SystemCallFilter": _syscall_filter, "RestrictNamespaces": _namespaces, "NoExecPaths": _noexec,
    "ExecPaths": _noexec, "DynamicUser": _dynamic,
}


def candidates(directive: str, values: t.Sequence[str], ctx: t.Mapping[str, t.Any]) -> t.List[Lines]:
    """The relaxations of one directive, smallest first; ``values`` its assignments in the unit, in order;
    ``ctx``: bwrap (the path the service runs) and python (the runtime's interpreter)."""
    if directive in _FIXED:
        return [list(c) for c in _FIXED[directive]]
    if directive in _BUILT:
        return _BUILT[directive](values, ctx)
    if directive.startswith("Limit"):
        return limit_ladder(directive, values)
    return [["%s=" % directive], ["%s=no" % directive]]


def note(lines: t.Sequence[str]) -> str:
    """What a sysadmin must adapt in a relaxation that was tried with a stand-in."""
    if "User=%s" % STANDIN_USER in lines:
        return " (User=%s stood in for a static user of the service's own: create one with useradd --system and " \
               "name it instead)" % STANDIN_USER
    return ""


# --------------------------------------------------------------------------- codes

# Signatures (how a culprit alone makes the probe fail) that name their class whatever the directive.
_BY_CAUSE = {
    "unexpected_capabilities": "unit_ambient_capabilities",
    "uid_map_readonly": "unit_read_only_proc",
    "clone_eagain": "unit_resource_limit_blocks_bwrap",
    "bwrap_exec_denied": "unit_noexec_bwrap",
}
_BY_DIRECTIVE = {
    "AmbientCapabilities": "unit_ambient_capabilities",
    "ReadOnlyPaths": "unit_read_only_proc",
    "NoExecPaths": "unit_noexec_bwrap",
    "ExecPaths": "unit_noexec_bwrap",
}


def code_for(directives: t.Sequence[str], kind: str, cause: t.Optional[str]) -> str:
    """The code a culprit group is reported with: its class when its failure says it (the interpreter
    killed, bwrap's text), else the directive table's code, else the class of the directive, else the
    generic "found by experiment" code that names it."""
    if kind == "interpreter":
        return "unit_syscall_filter_kills_interpreter"
    if cause in _BY_CAUSE:
        return _BY_CAUSE[cause]
    if len(directives) != 1:
        return "unit_directive_breaks_bwrap"
    name = directives[0]
    if kind == "unit" and cause == "EXEC" and name in ("NoExecPaths", "ExecPaths"):
        return "unit_noexec_bwrap"
    if name in restrictions.DIRECTIVE_CODES:
        return restrictions.DIRECTIVE_CODES[name]
    if name in _BY_DIRECTIVE:
        return _BY_DIRECTIVE[name]
    if name.startswith("Limit"):
        return "unit_resource_limit_blocks_bwrap"
    return "unit_directive_breaks_bwrap"
