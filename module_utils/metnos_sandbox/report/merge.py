# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Merge audit reports made elsewhere (JSON, schema ``metnos-sandbox-audit-report/2``; a /1 report migrated:
report/schema.py) into one fleet report.

For ansible-pull (each host audits itself and writes a one-host report) and AWX job slicing (each slice writes
the report of its share of the inventory): the host records are the same wherever the audit ran, so the fleet
report is rebuilt from them (document.build_from_hosts) - totals, the bubblewrap revision majority
(bwrap_package_drift recomputed over the whole fleet), the gate, all four formats. A host that appears in
several reports keeps the record of the report generated last (ties: the later path). Input is bounded and
checked: a file that is not such a report is refused with ``audit_merge_input_invalid``, never half merged.
The faces: the collection's playbook ``metnos.sandbox.merge_reports`` (the action metnos_audit_merge) and, in
a checkout, scripts/merge-audit-reports.py. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import glob
import json
import os
from typing import Any, Dict, List, Sequence, Tuple

from . import document, schema
from .record import HostRecord, findings_only

MAX_REPORT_BYTES = 512 * 1024 * 1024      # one report file (the 10,000-host JSON is ~90 MB)
MAX_LIST_BYTES = 64 * 1024 * 1024         # a list of report paths, one per line
CODE = "audit_merge_input_invalid"


class MergeError(ValueError):
    """A file that cannot be merged; the message names it and says why (code ``audit_merge_input_invalid``)."""


def _load(path: str, limit: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise MergeError("%s: cannot be read (%s)" % (path, exc.strerror or exc)) from None
    if len(data) > limit:
        raise MergeError("%s: larger than %d bytes" % (path, limit))
    return data


def read_report(path: str) -> Tuple[str, List[HostRecord]]:
    """A report's (generated, host records); anything that is not our schema is refused."""
    try:
        doc = json.loads(_load(path, MAX_REPORT_BYTES).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise MergeError("%s: not a JSON report (%s)" % (path, exc)) from None
    if not isinstance(doc, dict) or doc.get("schema") not in schema.READ or not isinstance(doc.get("hosts"), list):
        found = doc.get("schema") if isinstance(doc, dict) else None
        shown = str(found)[:80] if found is not None else None
        raise MergeError("%s: schema %r is not %s" % (path, shown, " or ".join(schema.READ)))
    doc = schema.upgrade(doc)       # an older report migrated once (report/schema.py)
    for record in doc["hosts"]:
        name = record.get("host") if isinstance(record, dict) else None
        if not isinstance(name, str) or not isinstance(record.get("diagnostics"), list) or "verdict" not in record:
            raise MergeError("%s: a host record without host, verdict and diagnostics" % path)
    # each checked above; read back without the verdict that report decided (build_from_hosts decides it once here)
    return str(doc.get("generated") or ""), [findings_only(record) for record in doc["hosts"]]


def paths_from_list(path: str) -> List[str]:
    """The report paths of a list file, one per line (blank lines skipped)."""
    try:
        text = _load(path, MAX_LIST_BYTES).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MergeError("%s: not a text list of paths (%s)" % (path, exc)) from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def paths_from_patterns(patterns: Sequence[str]) -> List[str]:
    """The files each shell pattern matches (``slice-*/*.json``; ``~`` expanded), sorted per pattern; a pattern
    that matches nothing is refused (a recipe pointed at the wrong folder must not pass with fewer hosts)."""
    out: List[str] = []
    for pattern in patterns:
        found = sorted(p for p in glob.glob(os.path.expanduser(pattern)) if os.path.isfile(p))
        if not found:
            raise MergeError("%s: no file matches" % pattern)
        out.extend(found)
    return out


def merge_hosts(paths: Sequence[str]) -> List[HostRecord]:
    """Every host once: the record of the newest report that has it (ties: the later path)."""
    hosts: Dict[str, HostRecord] = {}
    stamp: Dict[str, str] = {}
    for path in paths:
        generated, records = read_report(path)
        for record in records:
            name = record["host"]
            if name not in hosts or generated >= stamp[name]:
                hosts[name], stamp[name] = record, generated
    return [hosts[name] for name in sorted(hosts)]


def merged(paths: Sequence[str], warnings_as_failures: bool = False, **report_options: Any) -> document.Doc:
    """The fleet report document of ``paths`` (at least one); ``report_options`` (waivers, baseline, fail_on)
    as document.build_from_hosts takes them."""
    if not paths:
        raise MergeError("no reports to merge")
    hosts = merge_hosts(paths)
    if report_options.get("baseline") is None:
        # each slice compared itself with its own baseline: without one here the merge has no "new" or "still"
        # to say (a slice's badges would mix baselines of different days), and no "resolved"
        for record in hosts:
            record.pop("change", None)
            record.pop("resolved", None)
    return document.build_from_hosts(hosts, warnings_as_failures=warnings_as_failures, **report_options)
