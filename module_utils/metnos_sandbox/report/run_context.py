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
is left as written. The run's ``--limit`` (ansible_limit) is carried the same way by each ``ansible-playbook``
command that names no limit of its own. Controller only; pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import shlex
from typing import Any, Dict, List, Sequence

from .record import Document

TOOLS = ("ansible", "ansible-playbook")
PLACEHOLDER = "-i <inventory>"
MAX_SOURCES = 16          # Ansible takes any number; a report names at most this many (the rest: none carried)
MAX_LIMIT = 4096          # a --limit longer than this is not carried (the commands stay as written)


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


def with_limit(command: str, limit: str) -> str:
    """An ``ansible-playbook`` command with the run's ``--limit`` when it names none (``-l``/``--limit``): pasted,
    it acts on the hosts the run audited, not on the whole inventory. Other commands are left as written (an
    ``ansible <host>`` command names its host itself)."""
    tool, space, rest = command.partition(" ")
    if not limit or tool != "ansible-playbook" or not space:
        return command
    words = rest.split()
    if "-l" in words or "--limit" in words or any(w.startswith(("-l=", "--limit=")) for w in words):
        return command
    return "%s --limit %s %s" % (tool, shlex.quote(limit), rest)     # after the tool's name: never after a ';'


def _carry(found: Sequence[Any], sources: Sequence[str], limit: str) -> None:
    """Each finding's remediation commands (found: diagnostics, or waived findings) with the sources and limit."""
    for diag in found:
        fix = diag.get("remediation")
        if isinstance(fix, dict) and isinstance(fix.get("commands"), list):    # remediation as data: {hint, commands}
            fix["commands"] = _with_context_all(fix["commands"], sources, limit)
        elif isinstance(fix, list):
            diag["remediation"] = _with_context_all(fix, sources, limit)


def _with_context_all(commands: Sequence[Any], sources: Sequence[str], limit: str) -> List[Any]:
    return [with_limit(with_inventory(c, sources), limit) if isinstance(c, str) else c for c in commands]


def _inventory_name(host: Any) -> None:
    """A finding made on the host names it by its own hostname (the payload knows no inventory); its commands
    name the host as the run's inventory does: ``--limit '<hostname>'`` and ``ansible '<hostname>'`` become the
    inventory name (a hostname the inventory does not know matched no host when pasted)."""
    name, hostname = host.get("host"), host.get("hostname")
    if not isinstance(name, str) or not isinstance(hostname, str) or not hostname or name == hostname:
        return
    # the codes write '{host}' in single quotes; a name holding one is quoted for the shell
    mine, theirs = "'%s'" % hostname, ("'%s'" % name) if "'" not in name else shlex.quote(name)
    for diag in host.get("diagnostics") or []:
        if (diag.get("details") or {}).get("host") != hostname or not isinstance(diag.get("remediation"), list):
            continue
        diag["remediation"] = [_renamed(c, mine, theirs) if isinstance(c, str) else c for c in diag["remediation"]]


def _renamed(command: str, mine: str, theirs: str) -> str:
    for before in ("--limit ", "ansible "):
        if command.startswith("ansible") and (before + mine) in command:
            command = command.replace(before + mine, before + theirs)
    return command


def carry(doc: Document, sources: Any, limit: Any = None) -> Document:
    """The document with ``context: {inventory: [...][, limit]}`` and every finding's commands carrying those
    sources and that limit (the hosts' findings, their waived ones, the fleet's). ``sources`` is what Ansible gave
    (a tuple of strings), ``limit`` the run's --limit (Ansible's ansible_limit); anything else, or empty, carries
    nothing (the commands stay as written)."""
    given = sources if isinstance(sources, (list, tuple)) else ()      # Ansible's command line gives a tuple
    kept = [s for s in given if isinstance(s, str) and s][:MAX_SOURCES]
    pattern = limit if isinstance(limit, str) and 0 < len(limit) <= MAX_LIMIT and "\0" not in limit else ""
    context: Dict[str, Any] = {"inventory": kept}
    if pattern:
        context["limit"] = pattern
    doc["context"] = context
    for host in doc["hosts"]:
        _inventory_name(host)
        _carry(host.get("diagnostics") or [], kept, pattern)
        _carry(host.get("waived") or [], kept, pattern)
    _carry(doc.get("findings") or [], kept, pattern)
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
