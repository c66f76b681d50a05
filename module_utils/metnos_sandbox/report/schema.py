# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's schema versions and the migration of an older report (a baseline, or a report to merge) to the
current one, once, where it is read (baseline.read, merge.read_report). docs/audit-report.md says what changed.

/1 -> /2 (issue 53): in /2 a host's verdict rests on its findings alone (base/verdicts.decide). A /1 host could
fail on its probe's ``passed`` flag with no finding saying so; such a host gets that finding here
(``probe_check_failed``, check ``probe_passed``), so the verdict decided again from its findings is the one its
report gave. Nothing else changed shape. Pure Python, controller only.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Dict, List, Mapping

from ..base import diagnostics, verdicts

CURRENT = "metnos-sandbox-audit-report/2"
FIRST = "metnos-sandbox-audit-report/1"
READ = (FIRST, CURRENT)         # the versions a baseline or a merge reads (an older one is migrated)
FAILED = (verdicts.FAIL, verdicts.UNREACHABLE)


def upgrade(doc: Mapping[str, Any]) -> Dict[str, Any]:
    """``doc`` (a report of a version in READ, its shape checked by the caller) as a report of CURRENT."""
    if doc.get("schema") == CURRENT:
        return dict(doc)
    return dict(doc, schema=CURRENT, migrated_from=doc.get("schema"),
                hosts=[_host(h) if isinstance(h, dict) else h for h in doc.get("hosts") or []])


def _host(record: Dict[str, Any]) -> Dict[str, Any]:
    """A /1 host record whose verdict its findings do not give (the probe's flag): the probe's finding added."""
    found: List[Any] = list(record.get("diagnostics") or []) if isinstance(record.get("diagnostics"), list) else []
    probe = record.get("probe")
    failed_probe = isinstance(probe, dict) and probe.get("passed") is False
    if not failed_probe or record.get("verdict") not in FAILED or verdicts.of(
            d for d in found if isinstance(d, dict)) in FAILED:
        return record
    said = "probe_passed (R-DIAG-3): expected the probe to pass, observed it failed (a schema /1 report: no " \
           "finding of its own said so)"
    added = diagnostics.make("probe_check_failed", wording="failed", fill={"said": said, "traced": ""},
                             check="probe_passed", check_rule="R-DIAG-3")
    return dict(record, diagnostics=diagnostics.sort(found + [added]))
