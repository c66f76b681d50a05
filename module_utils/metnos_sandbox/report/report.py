# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet results -> the report document, and its renderers written: JSON (versioned schema), Markdown, JUnit XML,
self-contained HTML (render_json.py, render_markdown.py, render_junit.py, render_html.py; the metrics' textfile is
report_metrics.py).

Input: {host: metnos_audit result | an unreachable/failed task result}, each reduced once to its typed record
(record.from_result) whose verdict is decided once here (record.verdict_of). Pure Python, no Ansible imports; run
on the controller (action_plugins/metnos_audit_report.py) or by scripts/merge-audit-reports.py to merge per-host
JSON produced elsewhere (ansible-pull, AWX).

Sized for fleets of thousands: the document holds one compact record per host, and every renderer
is a generator of text chunks that ``write_all`` streams to its file (render_json.to_json joins the JSON chunks
for the callers that want the document as one string).
"""
from __future__ import absolute_import, annotations, division, print_function

import datetime
import os
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from ..base import diagnostics, files, verdicts
from ..base.diagnostics import Diagnostic
from . import render_html, render_json, render_junit, render_markdown, report_containment, report_states
from .baseline import FAIL_ON, compare, counts_for_new, finding_key
from .record import Document, HostRecord, from_result, verdict_of
from .waivers import waive

Doc = Document     # the report document (the JSON schema's instance): record.Document

SCHEMA = "metnos-sandbox-audit-report/1"
VERDICTS = verdicts.VERDICTS


# --------------------------------------------------------------------------- the document

def revision(h: HostRecord) -> Optional[str]:
    """The bwrap package revision of a host, None without one."""
    bw = h.get("bwrap")
    return bw.get("revision") if bw else None


def build_from_results(pairs: Iterable[Tuple[str, Any]], generated: Optional[datetime.datetime] = None,
                       warnings_as_failures: bool = False, waivers: Optional[Tuple[str, List[Any]]] = None,
                       baseline: Optional[Mapping[str, Any]] = None, fail_on: str = "any") -> Doc:
    """The report document from an iterable of (host, task result): each result is reduced to its host
    record as it comes, so the full results need not all be in memory at once."""
    return build_from_hosts([from_result(name, res) for name, res in pairs], generated, warnings_as_failures,
                            waivers, baseline, fail_on)


def build_from_hosts(hosts: List[HostRecord], generated: Optional[datetime.datetime] = None,
                     warnings_as_failures: bool = False, waivers: Optional[Tuple[str, List[Any]]] = None,
                     baseline: Optional[Mapping[str, Any]] = None, fail_on: str = "any") -> Doc:
    """The report document from normalised host records (also used to merge reports). ``waivers``: (the file's
    path, its waivers: waivers.read) moves each waived finding out of what counts; ``baseline`` (baseline.read)
    marks each finding new or still there and lists the resolved ones; ``fail_on`` "new": only hosts with a new
    failing finding fail the gate."""
    if fail_on not in FAIL_ON:
        raise ValueError("fail_on: %r is not one of %s" % (fail_on, ", ".join(FAIL_ON)))
    generated = generated or datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    hosts = sorted(hosts, key=lambda h: h["host"])
    for h in hosts:   # drop a previous run's fleet-relative finding before recomputing it
        h["diagnostics"] = [d for d in h["diagnostics"] if d["code"] != "bwrap_package_drift"]
    revisions: Dict[str, int] = {}
    for h in hosts:
        rev = revision(h)
        if rev:
            revisions[rev] = revisions.get(rev, 0) + 1
    majority = max(sorted(revisions), key=lambda r: revisions[r]) if revisions else None
    if majority and len(revisions) > 1:
        for h in hosts:
            rev = revision(h)
            if rev and rev != majority:
                h["diagnostics"] = diagnostics.sort(h["diagnostics"] + [diagnostics.make(
                    "bwrap_package_drift", majority=majority, host=h["host"], revision=rev,
                    majority_hosts=revisions[majority], hosts=sum(revisions.values()))])
    for h in hosts:     # each verdict decided once, from every finding (the fleet's included): verdicts.verdict
        h["verdict"] = verdict_of(h)
    waiver_block = waive(hosts, waivers[1], waivers[0]) if waivers is not None else None
    findings: List[Diagnostic] = waiver_block.pop("findings") if waiver_block is not None else []
    baseline_block = compare(hosts, baseline) if baseline is not None else None
    totals = dict((v, 0) for v in VERDICTS)
    codes: Dict[str, int] = {}
    for h in hosts:
        verdict = str(h["verdict"])     # decided above
        totals[verdict] = totals.get(verdict, 0) + 1
        for code in sorted(set(d["code"] for d in h["diagnostics"])):
            codes[code] = codes.get(code, 0) + 1
    failing = totals["fail"] + totals["unreachable"] + (totals["warn"] if warnings_as_failures else 0)
    gate: Dict[str, Any] = {"warnings_as_failures": bool(warnings_as_failures), "failing_hosts": failing}
    if fail_on == "new":     # the hosts that fail the gate are the failing ones with a new failing finding
        gate["fail_on"] = fail_on
        gate["failing_hosts"] = failing = sum(1 for h in hosts if (
            h["verdict"] in ("fail", "unreachable") or (warnings_as_failures and h["verdict"] == "warn"))
            and counts_for_new(h, warnings_as_failures))
    fleet_failing = sum(1 for d in findings if d["severity"] == diagnostics.ERROR or (
        warnings_as_failures and d["severity"] == diagnostics.WARNING))
    if findings:
        gate["fleet_findings"] = fleet_failing
    gate["failed"] = failing + fleet_failing > 0
    doc: Doc = {
        "schema": SCHEMA,
        "generated": generated.isoformat(),
        "totals": dict(totals, hosts=len(hosts), codes=dict(sorted(codes.items())),
                       waived=sum(len(h.get("waived") or []) for h in hosts),
                       isolated=report_containment.isolated_count(hosts)),
        "fleet": {"bwrap_revisions": revisions, "bwrap_revision_majority": majority},
        "gate": gate,
        "hosts": hosts,
    }
    if waiver_block is not None:
        doc["waivers"] = waiver_block
    if findings:
        doc["findings"] = findings
    if baseline_block is not None:
        doc["baseline"] = baseline_block
    return doc


RENDERERS: Tuple[Tuple[str, Callable[[Document], Iterator[str]]], ...] = (
    ("json", render_json.iter_json), ("md", render_markdown.iter_markdown), ("junit.xml", render_junit.iter_junit),
    ("html", render_html.iter_html))


def terminal_summary(doc: Doc, max_hosts: int = 20) -> List[str]:
    t = doc["totals"]
    lines = ["%d hosts: %d pass, %d warn, %d fail, %d unreachable" % (t["hosts"], t["pass"], t["warn"], t["fail"],
                                                                      t["unreachable"])]
    monitored = sum(1 for h in doc["hosts"] if (h.get("monitor") or {}).get("monitored"))
    if monitored:
        lines.append("  %d host(s) monitored by the continuous proof" % monitored)
    for code, count in sorted(t["codes"].items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append("  %-40s %d host(s)" % (code, count))
    lines.extend(report_states.terminal_lines(doc))
    failing = [h for h in doc["hosts"] if h["verdict"] in ("fail", "unreachable")]
    for h in failing[:max_hosts]:
        change = h.get("change") or {}
        lines.append("  %s %s: %s" % (str(h["verdict"]).upper(), h["host"], ", ".join(sorted(set(
            d["code"] + (" (%s)" % change[finding_key(d)] if finding_key(d) in change else "")
            for d in h["diagnostics"] if d["severity"] == "error")))))
    if len(failing) > max_hosts:
        lines.append("  ... and %d more failing host(s): see the reports" % (len(failing) - max_hosts))
    return lines


LATEST = "latest"     # write_all(latest=True): latest.json, latest.md, ... link to this run's reports


def write_all(doc: Doc, directory: str, stamp: Optional[str] = None,
              timings: Optional[Dict[str, float]] = None, latest: bool = False) -> Dict[str, str]:
    """Write the four reports, each streamed chunk by chunk to a temp file then renamed into place.
    Returns their paths; ``timings`` (a dict), when given, receives the seconds each one took. With ``latest``,
    ``latest.<ext>`` next to them links to each (relative links, each replaced in one rename): the next run's
    baseline is ``<directory>/latest.json``."""
    stamp = stamp or doc["generated"].replace(":", "").replace("-", "").replace("+0000", "Z")
    os.makedirs(directory, exist_ok=True)
    paths = {}
    for ext, render in RENDERERS:
        start = time.time()
        path = os.path.join(directory, "metnos-audit-%s.%s" % (stamp, ext))
        files.replace(path, render(doc))
        paths[ext] = path
        if timings is not None:
            timings[ext] = round(time.time() - start, 3)
    if latest:
        for ext, path in paths.items():
            link = os.path.join(directory, "%s.%s" % (LATEST, ext))
            temp = "%s.%d.tmp" % (link, os.getpid())
            if os.path.lexists(temp):
                os.unlink(temp)
            os.symlink(os.path.basename(path), temp)
            os.replace(temp, link)
    return paths
