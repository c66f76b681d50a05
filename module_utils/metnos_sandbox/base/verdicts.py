# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's verdict from its findings: the one function every face asks (the audit on the host, the monitor and
its metrics, the fleet report in every format and its gate, the role's summary).

A verdict is never set in one place and changed in another: whoever adds a finding (the controller's fleet
comparison, the monitor's stale proof) asks this function again over the whole list. Pure Python.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Iterable, Mapping, Optional

from . import registry

PASS, WARN, FAIL, UNREACHABLE = "pass", "warn", "fail", "unreachable"
VERDICTS = (PASS, WARN, FAIL, UNREACHABLE)
# The finding that says nothing could be asked of the host: its verdict is neither pass nor fail.
UNREACHABLE_CODES = ("host_unreachable",)


def verdict(findings: Iterable[Mapping[str, Any]], probe_passed: Optional[bool] = None) -> str:
    """``unreachable`` when a finding says the host could not be asked; else ``fail`` on any error finding or a
    probe that ran and did not pass (``probe_passed`` False; None: no probe); else ``warn`` on any warning; else
    ``pass``. Info findings never change a verdict."""
    worst = None
    for diag in findings:
        if diag.get("code") in UNREACHABLE_CODES:
            return UNREACHABLE
        rank = registry.RANK.get(str(diag.get("severity")))
        if rank is not None and (worst is None or rank < worst):
            worst = rank
    if probe_passed is False or worst == registry.RANK[registry.ERROR]:
        return FAIL
    return WARN if worst == registry.RANK[registry.WARNING] else PASS
