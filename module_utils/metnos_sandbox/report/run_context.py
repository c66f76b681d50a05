# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's context in the report (issue 54): the inventory sources the ansible-playbook run was given
(Ansible's ansible_inventory_sources, absolute paths or host lists), kept as the report's ``context`` block, and
carried by every fix command of the report.

A finding's commands are written once, for any run (``ansible '{host}' -m ansible.builtin.ping``); pasted
without the run's inventory they ask Ansible's default one, which answers "Could not match supplied host
pattern" with exit status 0. Here each command that starts with ``ansible`` or ``ansible-playbook`` gets one
``-i <source>`` per source right after the tool's name (quoted for the shell), and a ``-i <inventory>``
placeholder is replaced by them. A command that already names its inventory (``-i`` or ``--inventory``)
is left as written. Controller only; pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import shlex
from typing import Any, Dict, List, Sequence

from .record import Document

TOOLS = ("ansible", "ansible-playbook")
PLACEHOLDER = "-i <inventory>"
MAX_SOURCES = 16          # Ansible takes any number; a report names at most this many (the rest: none carried)


def inventory_options(sources: Sequence[str]) -> str:
    """``-i '<source>'`` for each source, quoted for the shell."""
    return " ".join("-i %s" % shlex.quote(source) for source in sources)


def with_inventory(command: str, sources: Sequence[str]) -> str:
    """The command with the run's inventory: after the tool's name, or in place of ``-i <inventory>``."""
    if not sources:
        return command
    options = inventory_options(sources)
    if PLACEHOLDER in command:
        return command.replace(PLACEHOLDER, options)
    tool, space, rest = command.partition(" ")
    if tool not in TOOLS or not space:
        return command
    words = rest.split()
    if "-i" in words or "--inventory" in words or any(w.startswith(("-i=", "--inventory=")) for w in words):
        return command
    return "%s %s %s" % (tool, options, rest)


def _carry(found: Sequence[Any], sources: Sequence[str]) -> None:
    """Each finding's remediation commands (found: diagnostics, or waived findings) with the sources."""
    for diag in found:
        fix = diag.get("remediation")
        if isinstance(fix, dict) and isinstance(fix.get("commands"), list):    # remediation as data: {hint, commands}
            fix["commands"] = _with_inventory_all(fix["commands"], sources)
        elif isinstance(fix, list):
            diag["remediation"] = _with_inventory_all(fix, sources)


def _with_inventory_all(commands: Sequence[Any], sources: Sequence[str]) -> List[Any]:
    return [with_inventory(c, sources) if isinstance(c, str) else c for c in commands]


def carry(doc: Document, sources: Any) -> Document:
    """The document with ``context: {inventory: [...]}`` and every finding's commands carrying those sources (the
    hosts' findings, their waived ones, the fleet's). ``sources`` is what Ansible gave (a tuple of strings); anything
    else, or an empty list, carries nothing (the commands stay as written)."""
    given = sources if isinstance(sources, (list, tuple)) else ()      # Ansible's command line gives a tuple
    kept = [s for s in given if isinstance(s, str) and s][:MAX_SOURCES]
    context: Dict[str, Any] = {"inventory": kept}
    doc["context"] = context
    for host in doc["hosts"]:
        _carry(host.get("diagnostics") or [], kept)
        _carry(host.get("waived") or [], kept)
    _carry(doc.get("findings") or [], kept)
    return doc


def inputs_refused(doc: Document, refused: Sequence[Any]) -> Document:
    """The document marked as audited without the admin's waiver or baseline file (``refused``: each problem of
    the files, waivers.WaiverError's or baseline.BaselineError's diagnostics, every one of them): the problems
    lead the fleet's findings in every format, ``gate.inputs_refused`` names each refused file (absolute), and the
    gate fails - the hosts' findings were counted without the waivers meant to apply, or without the comparison
    asked for, so the run is never a pass. The hosts' own records are kept as audited (issue 54)."""
    if not refused:
        return doc
    doc["findings"] = list(refused) + list(doc.get("findings") or [])
    files = sorted(set(str((d.get("details") or {}).get("path")) for d in refused))
    gate = doc["gate"]
    gate["fleet_findings"] = int(gate.get("fleet_findings") or 0) + len(refused)
    gate["inputs_refused"] = files
    gate["failed"] = True
    return doc


def refused_line(doc: Document) -> List[str]:
    """The summary's first line when an input file was refused (empty else)."""
    files = doc["gate"].get("inputs_refused") or []
    if not files:
        return []
    problems = [d["message"] for d in doc.get("findings") or []
                if str((d.get("details") or {}).get("path")) in files]
    return ["NOT COUNTED AS ASKED: %s refused (%d problem(s)); the reports are written without it and the gate "
            "fails:" % (", ".join(files), len(problems))] + ["  - " + message for message in problems]
