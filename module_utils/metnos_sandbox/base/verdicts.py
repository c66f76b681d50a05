# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's verdict from its findings alone, decided in one function (``decide``) that every face asks: the audit
on the host, the monitor and its metrics, the fleet report in every format and its gate (after waivers).

A verdict rests on findings only: every failed check is an error finding of its own (a probe check, a timeout,
the device proof, a root service), so no flag beside the findings (a probe's ``passed``) can say otherwise. A
verdict is never set in one place and changed in another: whoever adds or removes a finding (the controller's
fleet comparison, waivers, the monitor's stale proof) asks ``decide`` again over the whole list. The guard
tests/unit/test_verdict_decided_once.py walks the code for any other place that stores a verdict. Pure Python.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Dict, Iterable, Mapping, Optional, cast

from . import registry

PASS, WARN, FAIL, UNREACHABLE = "pass", "warn", "fail", "unreachable"
VERDICTS = (PASS, WARN, FAIL, UNREACHABLE)
# The finding that says nothing could be asked of the host: its verdict is neither pass nor fail.
UNREACHABLE_CODES = ("host_unreachable",)


def verdict(findings: Iterable[Mapping[str, Any]]) -> str:
    """``unreachable`` when a finding says the host could not be asked; else ``fail`` on any error finding; else
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


def decide(record: Mapping[str, Any]) -> str:
    """The one place a host's verdict is stored: ``record["verdict"]`` from ``record["diagnostics"]`` (the
    findings that count: waived ones already moved out), returned too. ``record``: a host's (or a section's)
    mutable typed dict (HostResult, HostRecord, ServiceResult)."""
    decided = verdict(record.get("diagnostics") or [])
    cast(Dict[str, Any], record)["verdict"] = decided
    return decided


def probe_passed(probe: Optional[Mapping[str, Any]]) -> Optional[bool]:
    """What a probe proved, read from its findings: None when none ran, else True when none of them is an error
    (a probe that could not run, or whose check failed, has an error finding saying so)."""
    if not isinstance(probe, Mapping):
        return None
    return not any(d.get("severity") == registry.ERROR for d in probe.get("diagnostics") or [])
