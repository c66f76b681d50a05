# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's verdict from its findings alone, attached once where a record becomes output (``decide``).

A verdict rests on findings only: every failed check is an error finding of its own (a probe check, a timeout,
the device proof, a root service), so no flag beside the findings (a probe's ``passed``) can say otherwise.
Records carry findings only while they are built; whoever adds or removes a finding (the controller's fleet
comparison, waivers, the monitor's own findings, a collected proof gone stale) works on that record. ``decide``
is the one finalizer: it returns the record as output, a new mapping with the verdict its findings give, and
refuses a record that already has one (a verdict is decided once in a record's life, never set again). It is
the only caller of ``verdict`` (the one mapping of findings to a verdict); tests/unit/test_verdict_decided_once.py
walks the code for any other caller and any other place that stores a verdict. Pure Python.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Dict, Iterable, Mapping, Optional, TypeVar, cast

from . import registry

PASS, WARN, FAIL, UNREACHABLE = "pass", "warn", "fail", "unreachable"
VERDICTS = (PASS, WARN, FAIL, UNREACHABLE)
# The finding that says nothing could be asked of the host: its verdict is neither pass nor fail.
UNREACHABLE_CODES = ("host_unreachable",)


def verdict(findings: Iterable[Mapping[str, Any]]) -> str:
    """The one mapping of findings to a verdict (asked by ``decide`` alone): ``unreachable`` when a finding says
    the host could not be asked; else ``fail`` on any error finding; else
    ``warn`` on any warning; else ``pass``. Info findings never change a verdict."""
    worst = None
    for diag in findings:
        if diag.get("code") in UNREACHABLE_CODES:
            return UNREACHABLE
        rank = registry.RANK.get(str(diag.get("severity")))
        if rank is not None and (worst is None or rank < worst):
            worst = rank
    if worst == registry.RANK[registry.ERROR]:
        return FAIL
    return WARN if worst == registry.RANK[registry.WARNING] else PASS


Record = TypeVar("Record", bound=Mapping[str, Any])


class Decided(ValueError):
    """A record handed to ``decide`` that already carries a verdict: a second decision (a defect)."""


def decide(record: Record) -> Record:
    """``record`` as output: a new mapping with its fields and ``verdict`` from ``record["diagnostics"]`` (the
    findings that count: waived ones already moved out); an audit's service section (a ``service`` mapping with
    its own ``diagnostics``) gets its section's verdict the same way. ``record`` is not changed. A record (or
    section) that already has a verdict raises Decided: it was output once, its verdict is not decided again."""
    if "verdict" in record:
        name = record.get("host") or record.get("hostname") or record.get("name") or "a record"
        raise Decided("%s: its verdict was decided once already" % name)
    out = dict(record)
    out["verdict"] = verdict(record.get("diagnostics") or [])
    section = record.get("service")
    if isinstance(section, Mapping) and "diagnostics" in section:
        if "verdict" in section:
            raise Decided("%s: its service section's verdict was decided once already" % out.get("hostname"))
        decided = dict(section)
        decided["verdict"] = verdict(section["diagnostics"] or [])
        out["service"] = decided
    return cast(Record, out)


def of(findings: Iterable[Mapping[str, Any]]) -> str:
    """The verdict of ``findings`` alone (a summary's over its sections, a bare list), as ``decide`` gives it."""
    record: Dict[str, Any] = {"diagnostics": list(findings)}
    return str(decide(record)["verdict"])


def no_error(findings: Iterable[Mapping[str, Any]]) -> bool:
    """True when none of ``findings`` is an error."""
    return not any(d.get("severity") == registry.ERROR for d in findings)


def probe_passed(probe: Optional[Mapping[str, Any]]) -> Optional[bool]:
    """What a probe proved, read from its findings: None when none ran, else True when none of them is an error
    (a probe that could not run, or whose check failed, has an error finding saying so)."""
    if not isinstance(probe, Mapping):
        return None
    return no_error(probe.get("diagnostics") or [])
