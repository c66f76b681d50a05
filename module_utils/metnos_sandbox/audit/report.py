# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet results -> JSON (versioned schema), Markdown, JUnit XML, self-contained HTML.

Input: {host: metnos_audit result | an unreachable/failed task result}. Pure Python, no
Ansible imports; run on the controller (action_plugins/metnos_audit_report.py) or by
scripts/merge-audit-reports.py to merge per-host JSON produced elsewhere (ansible-pull, AWX).

Sized for fleets of thousands: the document holds one compact record per host, and every renderer
is a generator of text chunks that ``write_all`` streams to its file (``to_json`` joins the JSON chunks
for the callers that want the document as one string).
"""
from __future__ import absolute_import, annotations, division, print_function

import datetime
import json
import os
import re
import time
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple
from urllib.parse import quote

from ..base import diagnostics as D
from ..base import files
from ..base import verdicts as V
from ..base.diagnostics import Diagnostic
from . import monitor_state as MS
from . import report_states
from .baseline import FAIL_ON, compare, counts_for_new, finding_key
from .report_html import (
    ACT_SHOWN,
    RANK,
    asset,
    changes_html,
    escape,
    finding_html,
    fix_html,
    fix_parts,
    gate_html,
    host_facts,
    host_section,
    waivers_html,
)
from .report_states import changes
from .waivers import waive

# JUnit's escaping as xml.sax.saxutils does it (tests/unit compares them): importing saxutils imports urllib.request,
# http.client and ssl in the main process of every audit run (its cost: docs/benchmarks.md).
XML_TEXT = (("&", "&amp;"), (">", "&gt;"), ("<", "&lt;"))
XML_ATTR = XML_TEXT + (("\n", "&#10;"), ("\r", "&#13;"), ("\t", "&#9;"))


def xml_escape(data: str) -> str:
    for char, entity in XML_TEXT:
        data = data.replace(char, entity)
    return data


def quoteattr(data: str) -> str:
    """An attribute value with its quotes: double ones, unless it holds one and no single one."""
    for char, entity in XML_ATTR:
        data = data.replace(char, entity)
    if '"' not in data:
        return '"%s"' % data
    return "'%s'" % data if "'" not in data else '"%s"' % data.replace('"', "&quot;")


Doc = Dict[str, Any]      # the report document (the JSON schema's instance)
Host = Dict[str, Any]     # one host's record in it

SCHEMA = "metnos-sandbox-audit-report/1"
VERDICTS = V.VERDICTS
CHECKS = (D.SANDBOX_ACTIVE, D.BWRAP_BINARY, D.KERNEL_USERNS, D.SMOKE_TEST, D.SERVICE_ENVIRONMENT, D.PROFILES,
          D.PROBE)


def check_of(code: str) -> str:
    """The report section of a code: the registry's (an unregistered code raises, never lands anywhere)."""
    return D.section_of(code)


def _not_audited(name: str, res: Any) -> Diagnostic:
    """The finding of a host the audit could not run on: reached without Python has its own code (an error: the
    host answered), anything else is host_unreachable (the verdict unreachable, verdicts.verdict)."""
    msg = (res or {}).get("msg") if isinstance(res, dict) else None
    if isinstance(res, dict) and res.get("code") == "host_no_python":
        return D.make("host_no_python", host=name, msg=msg)
    if isinstance(res, dict) and res.get("code") in ANSWERED_WITHOUT_RESULT:     # the host answered: a failure
        context = dict((k, v) for k, v in (res.get("context") or {}).items() if isinstance(k, str) and k != "host")
        return D.make(res["code"], host=name, **context)
    why = "unreachable" if isinstance(res, dict) and res.get("unreachable") else "audit failed"
    return D.make("host_unreachable", host=name, why=why + (": %s" % msg if msg else ""))


def status_view(svc: Optional[Mapping[str, Any]], facts: Optional[Mapping[str, Any]]) -> Optional[str]:
    """Whose view the reported status() is: it is the runtime's view, never the probe's proof."""
    if svc and svc.get("status"):
        return svc.get("status_view") or "runtime status() as seen by the service's configuration"
    if facts and facts.get("status"):
        return "runtime status() in the admin's environment (no service unit)"
    return None


def _host_entry(name: str, res: Any) -> Host:
    """Normalise one task result into the report's host record."""
    if not isinstance(res, dict) or res.get("unreachable") or res.get("failed") or "schema" not in res:
        diag = _not_audited(name, res)
        return {"host": name, "reachable": False, "verdict": None, "status": None, "bwrap": None,
                "userns": None, "service": None, "profiles": [], "probe": None, "monitor": None,
                "diagnostics": [diag]}
    facts = res.get("bwrap_facts") or {}
    bw = facts.get("bwrap") or {}
    us = dict(facts.get("userns") or {})
    smoke = us.pop("smoke_test", None) or {}
    svc = res.get("service") or None
    probe = res.get("probe") or None
    return {
        "host": name, "reachable": True, "verdict": None,     # build_from_hosts: verdict_of(), once
        "hostname": res.get("hostname"), "duration": res.get("duration"), "cpu": res.get("cpu"),
        "status": (svc or {}).get("status") or facts.get("status"),
        "status_view": status_view(svc, facts),
        "admin_status": facts.get("status"),
        "bwrap": {"path": bw.get("path"), "version": bw.get("version"),
                  "package": (bw.get("package") or {}).get("name"),
                  "revision": (bw.get("package") or {}).get("revision"), "mode": bw.get("mode"),
                  "setuid": bw.get("setuid"), "missing_features": bw.get("missing_features")} if bw else None,
        "userns": dict((k, us.get(k)) for k in ("max_user_namespaces", "unprivileged_userns_clone",
                                                "apparmor_restrict_unprivileged_userns", "selinux", "container")),
        "smoke_test": {"ran": smoke.get("ran"), "passed": smoke.get("passed"), "user": smoke.get("user"),
                       "cause": (smoke.get("classification") or {}).get("cause")},
        "service": {"unit": svc.get("unit"), "mode": svc.get("mode"), "verdict": svc.get("verdict"),
                    "user": (svc.get("user") or {}).get("name"), "environment": svc.get("environment"),
                    "provenance": svc.get("provenance")} if svc else None,
        "profiles": res.get("profiles") or [],
        "monitor": MS.report_entry(res.get("monitor")),
        "probe": {"passed": probe.get("passed"), "context": probe.get("context"),
                  "confidence": probe.get("confidence"), "view": "probe: proven by a real wrapped invocation",
                  "checks": probe.get("checks") or []} if probe else None,
        "diagnostics": res.get("diagnostics") or [],
    }


def verdict_of(h: Host) -> str:
    """A host record's verdict: the one function over its findings and its probe (base/verdicts.py)."""
    probe = h.get("probe")
    return V.verdict(h["diagnostics"], None if not isinstance(probe, dict) else probe.get("passed") is True)


# --------------------------------------------------------------------------- per-host results kept on disk

SPOOL = "metnos-audit-results"
# Failure records metnos_audit (or read_spooled) keeps with their own code and its placeholders ("context").
ANSWERED_WITHOUT_RESULT = ("audit_result_unframed", "audit_transport_unsupported", "host_not_audited")


def spool_path(directory: str, host: str) -> str:
    return os.path.join(directory, quote(host, safe="") + ".json")


def write_spooled(directory: str, host: str, text: str) -> None:
    """Keep one host's result (JSON text: the audit result, or {unreachable|failed, msg}) in ``directory``."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    files.replace(spool_path(directory, host), text, 0o600)


def read_spooled(directory: str, hosts: Iterable[str]) -> Iterator[Tuple[str, Any]]:
    """(host, result) for each host, read one at a time; a host without a kept result (it never reached
    the audit in this run: an earlier task failed, or the play ended first) is host_not_audited, never
    unreachable (nothing is known about it)."""
    for host in hosts:
        try:
            with open(spool_path(directory, host), encoding="utf-8") as handle:
                yield host, json.load(handle)
        except (OSError, ValueError):
            yield host, {"failed": True, "code": "host_not_audited"}


def spooled(directory: str, hosts: Iterable[str]) -> List[str]:
    """The hosts of ``hosts`` that have a kept result in ``directory``."""
    return [host for host in hosts if os.path.isfile(spool_path(directory, host))]


# --------------------------------------------------------------------------- the document

def build_from_results(pairs: Iterable[Tuple[str, Any]], generated: Optional[datetime.datetime] = None,
                       warnings_as_failures: bool = False, waivers: Optional[Tuple[str, List[Any]]] = None,
                       baseline: Optional[Mapping[str, Any]] = None, fail_on: str = "any") -> Doc:
    """The report document from an iterable of (host, task result): each result is reduced to its host
    record as it comes, so the full results need not all be in memory at once."""
    return build_from_hosts([_host_entry(name, res) for name, res in pairs], generated, warnings_as_failures,
                            waivers, baseline, fail_on)


def build_from_hosts(hosts: List[Host], generated: Optional[datetime.datetime] = None,
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
        rev = (h.get("bwrap") or {}).get("revision")
        if rev:
            revisions[rev] = revisions.get(rev, 0) + 1
    majority = max(sorted(revisions), key=lambda r: revisions[r]) if revisions else None
    if majority and len(revisions) > 1:
        for h in hosts:
            rev = (h.get("bwrap") or {}).get("revision")
            if rev and rev != majority:
                h["diagnostics"] = D.sort(h["diagnostics"] + [D.make(
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
        totals[h["verdict"]] = totals.get(h["verdict"], 0) + 1
        for code in sorted(set(d["code"] for d in h["diagnostics"])):
            codes[code] = codes.get(code, 0) + 1
    failing = totals["fail"] + totals["unreachable"] + (totals["warn"] if warnings_as_failures else 0)
    gate: Dict[str, Any] = {"warnings_as_failures": bool(warnings_as_failures), "failing_hosts": failing}
    if fail_on == "new":     # the hosts that fail the gate are the failing ones with a new failing finding
        gate["fail_on"] = fail_on
        gate["failing_hosts"] = failing = sum(1 for h in hosts if (
            h["verdict"] in ("fail", "unreachable") or (warnings_as_failures and h["verdict"] == "warn"))
            and counts_for_new(h, warnings_as_failures))
    fleet_failing = sum(1 for d in findings if d["severity"] == D.ERROR or (
        warnings_as_failures and d["severity"] == D.WARNING))
    if findings:
        gate["fleet_findings"] = fleet_failing
    gate["failed"] = failing + fleet_failing > 0
    doc: Doc = {
        "schema": SCHEMA,
        "generated": generated.isoformat(),
        "totals": dict(totals, hosts=len(hosts), codes=dict(sorted(codes.items())),
                       waived=sum(len(h.get("waived") or []) for h in hosts)),
        "fleet": {"bwrap_revisions": revisions, "bwrap_revision_majority": majority},
        "gate": gate,
    }
    if waiver_block is not None:
        doc["waivers"] = waiver_block
    if findings:
        doc["findings"] = findings
    if baseline_block is not None:
        doc["baseline"] = baseline_block
    doc["hosts"] = hosts
    return doc


# --------------------------------------------------------------------------- renderers

HOSTS_PER_CODE_SHOWN = 200     # Markdown/HTML: host names listed per code before "and N more"
PAGE_ROWS = 500                # HTML: table rows laid out at once (the others stay in the page, hidden)


def _codes(h: Host, include_info: bool = False) -> List[str]:
    return sorted(set(d["code"] for d in h["diagnostics"] if include_info or d["severity"] != "info"))


def _hosts_by_code(doc: Doc, include_info: bool = False) -> Dict[str, Tuple[Diagnostic, List[str]]]:
    """{code: (first diagnostic seen, [hosts])}, each host once per code."""
    out: Dict[str, Tuple[Diagnostic, List[str]]] = {}
    for h in doc["hosts"]:
        seen = set()
        for d in h["diagnostics"]:
            if (d["severity"] == "info" and not include_info) or d["code"] in seen:
                continue
            seen.add(d["code"])
            out.setdefault(d["code"], (d, []))[1].append(h["host"])
    return out


def _by_severity(by_code: Dict[str, Tuple[Diagnostic, List[str]]]) -> List[Tuple[str, Tuple[Diagnostic, List[str]]]]:
    """Codes ordered errors first, then warnings, then by how many hosts, then by name."""
    rank = {D.ERROR: 0, D.WARNING: 1}
    return sorted(by_code.items(), key=lambda kv: (rank.get(kv[1][0]["severity"], 2), -len(kv[1][1]), kv[0]))


# -- JSON: one compact line per host inside the document, so it streams and diffs line by line

def iter_json(doc: Doc) -> Iterator[str]:
    head = dict((k, v) for k, v in doc.items() if k != "hosts")
    text = json.dumps(head, indent=2, sort_keys=True)
    yield text[:text.rindex("}")].rstrip() + ',\n  "hosts": [\n'
    last = len(doc["hosts"]) - 1
    for index, h in enumerate(doc["hosts"]):
        yield "    " + json.dumps(h, sort_keys=True) + (",\n" if index < last else "\n")
    yield "  ]\n}\n"


def to_json(doc: Doc) -> str:
    return "".join(iter_json(doc))


# -- Markdown: summary first, then failing hosts grouped by code, the full table last

def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_host_list(hosts: List[str]) -> str:
    shown = ", ".join(_md(x) for x in hosts[:HOSTS_PER_CODE_SHOWN])
    more = len(hosts) - HOSTS_PER_CODE_SHOWN
    return shown + (" … and %d more (every host is in the JSON report and the table below)" % more if more > 0 else "")


def _md_row(h: Host) -> str:
    st = h.get("status") or {}
    bw = h.get("bwrap") or {}
    svc = h.get("service") or {}
    probe = h.get("probe") or {}
    return "| %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
        _md(h["host"]), h["verdict"].upper(), st.get("active", "-"),
        _md("%s (%s)" % (bw.get("version"), bw.get("revision"))) if bw else "-",
        _md("%s: %s" % (svc.get("unit"), svc.get("verdict"))) if svc else "-",
        ("passed" if probe.get("passed") else "FAILED") if probe else "-", _md(MS.monitored_text(h.get("monitor"))),
        _md(", ".join(_codes(h, include_info=True))) or "-")


def iter_markdown(doc: Doc) -> Iterator[str]:
    t = doc["totals"]
    gate = doc["gate"]
    yield ("# Metnos sandbox audit\n\nGenerated %s. %d hosts: **%d pass**, %d warn, **%d fail**, %d unreachable.\n\n"
           % (doc["generated"], t["hosts"], t["pass"], t["warn"], t["fail"], t["unreachable"]))
    yield "Gate: **%s** (%d failing host(s)%s).\n\n" % (
        "FAILED" if gate["failed"] else "passed", gate["failing_hosts"],
        "; warnings count as failures" if gate["warnings_as_failures"] else "")
    yield from report_states.iter_markdown(doc)
    by_code = _by_severity(_hosts_by_code(doc, include_info=True))   # every finding the terminal summary shows
    if by_code:
        yield "| code | severity | rule | hosts |\n|---|---|---|---|\n"
        for code, (diag, hosts) in by_code:
            yield "| `%s` | %s | %s | %d |\n" % (code, diag["severity"], diag.get("rule") or "-", len(hosts))
        yield "\n## Hosts by diagnostic (errors first, then warnings, then notes)\n\n"
        for code, (diag, hosts) in by_code:
            yield "### `%s` (%s, %s) — %d host(s)\n\nHosts: %s\n\n%s\n\n" % (
                code, diag["severity"], diag.get("rule"), len(hosts), _md_host_list(hosts), diag["message"])
            if diag.get("hint"):
                yield "%s\n\n" % _md(diag["hint"])
            if diag.get("remediation"):
                yield "```sh\n%s\n```\n\n" % "\n".join(diag["remediation"])
    yield ("## All hosts\n\n`status() view` is the runtime's own view of the service's environment (not a proof); "
           "`probe (proven)` is the verdict of a real wrapped invocation; `monitored` says whether the continuous "
           "proof watches the host and how old its last proof is (`collected`: this verdict is that proof).\n\n"
           "| host | verdict | status() view: active | bwrap | service | probe (proven) | monitored | codes |\n"
           "|---|---|---|---|---|---|---|---|\n")
    for h in doc["hosts"]:
        yield _md_row(h)


# -- JUnit XML: one testcase per host and check

def _junit_cases(h: Host, warnings_as_failures: bool) -> Iterator[Tuple[str, List[Mapping[str, Any]]]]:
    """(check, [failing diagnostics]) for one host."""
    by_check: Dict[str, List[Mapping[str, Any]]] = dict((c, []) for c in CHECKS)
    for d in h["diagnostics"]:
        by_check.setdefault(check_of(d["code"]), []).append(d)
    for check in (CHECKS if h["reachable"] else ("reachability",)):
        bad = [d for d in by_check.get(check, []) if d["severity"] == "error" or
               (d["severity"] == "warning" and warnings_as_failures)]
        if check == "probe" and h.get("probe") and not bad:
            failed = [c for c in h["probe"]["checks"] if not c["ok"]]
            if failed:
                bad = [{"code": "probe_check_failed", "message": ", ".join(c["name"] for c in failed),
                        "remediation": []}]
        yield check, bad


def _junit_case(host: str, check: str, bad: List[Mapping[str, Any]], change: Optional[Mapping[str, str]] = None) -> str:
    cls = "metnos.%s" % re.sub(r"[^A-Za-z0-9_.-]", "_", host)
    body = ""
    if bad:
        text = "\n".join("%s%s: %s%s\n  fix: %s" % (
            d["code"], " [%s]" % (change or {})[finding_key(d)] if finding_key(d) in (change or {}) else "",
            d["message"], "\n  hint: %s" % d["hint"] if d.get("hint") else "",
            "\n  fix: ".join(fix_parts(d.get("remediation"))[1])) for d in bad)
        body = '<failure message=%s type=%s>%s</failure>' % (
            quoteattr(", ".join(d["code"] for d in bad)), quoteattr(bad[0]["code"]), xml_escape(text))
    return '    <testcase classname=%s name=%s>%s</testcase>\n' % (quoteattr(cls), quoteattr(check), body)


def _junit_extra(doc: Doc, waf: bool) -> List[Tuple[str, bool]]:
    """(testcase, failed) beyond one per host and check: each host's waived findings (skipped, with their
    justification), the fleet's own findings (an expired or unused waiver) and the changes since the baseline."""
    out = []
    for h in doc["hosts"]:
        if h.get("waived"):
            cls = "metnos.%s" % re.sub(r"[^A-Za-z0-9_.-]", "_", h["host"])
            text = "\n".join("%s: WAIVED until %s by %s: %s (%s)" % (
                w["code"], w["expires"], w["approved_by"], w["justification"], w["message"]) for w in h["waived"])
            out.append(('    <testcase classname=%s name="waived"><skipped message=%s>%s</skipped></testcase>\n' % (
                quoteattr(cls), quoteattr("%d waived finding(s)" % len(h["waived"])), xml_escape(text)), False))
    findings = doc.get("findings") or []
    if findings:
        bad = [d for d in findings if d["severity"] == D.ERROR or (waf and d["severity"] == D.WARNING)]
        text = xml_escape("\n".join("%s: %s" % (d["code"], d["message"]) for d in findings))
        body = "<failure message=%s type=%s>%s</failure>" % (
            quoteattr(", ".join(d["code"] for d in bad)), quoteattr(bad[0]["code"]), text) if bad else \
            "<system-out>%s</system-out>" % text
        out.append(('    <testcase classname="metnos.fleet" name="waivers">%s</testcase>\n' % body, bool(bad)))
    base = doc.get("baseline")
    if base:
        text = "%d new, %d still there, %d resolved since %s (%s)\n%s" % (
            base["new"], base["still"], base["resolved"], base["generated"], base["path"],
            "\n".join("%s %s: %s" % (state, host, code) for host, code, _sev, state in changes(doc)))
        out.append(('    <testcase classname="metnos.fleet" name="baseline"><system-out>%s</system-out></testcase>\n'
                    % xml_escape(text), False))
    return out


def iter_junit(doc: Doc) -> Iterator[str]:
    waf = doc["gate"]["warnings_as_failures"]
    tests = failures = 0
    for h in doc["hosts"]:            # first pass: the counts the testsuite element carries
        for _check, bad in _junit_cases(h, waf):
            tests += 1
            failures += 1 if bad else 0
    extra = _junit_extra(doc, waf)
    tests += len(extra)
    failures += sum(1 for _case, failed in extra if failed)
    yield ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n  <testsuite name="metnos-sandbox-audit" '
           'tests="%d" failures="%d" errors="0" timestamp=%s>\n' % (tests, failures, quoteattr(doc["generated"])))
    for h in doc["hosts"]:
        for check, bad in _junit_cases(h, waf):
            yield _junit_case(h["host"], check, bad, h.get("change"))
    for case, _failed in extra:
        yield case
    yield "  </testsuite>\n</testsuites>\n"


# -- HTML: one self-contained file, read top to bottom: the gate and how many hosts to act on, then each of those
# hosts with its findings and their fixes laid out (no click needed), then the table of every host (static HTML,
# readable without JavaScript). The details of any host are data (one JSON block, long strings stored once)
# rendered on demand, so a 10,000-host page parses, sorts and filters in a fraction of the time 10,000 static
# sections take. The style and the script are files of their own (report_assets/), inlined when a report is written.

def act_on(doc: Doc) -> List[Host]:
    """The hosts to act on, worst first: failing and unreachable hosts, then those with warnings."""
    return sorted((h for h in doc["hosts"] if h["verdict"] != "pass"),
                  key=lambda h: (RANK.get(h["verdict"], "9"), h["host"]))


def _html_row(h: Host, hidden: bool = False) -> str:
    st = h.get("status") or {}
    bw = h.get("bwrap") or {}
    svc = h.get("service") or {}
    probe = h.get("probe")
    codes = _codes(h)
    return ('<tr data-verdict="%s" data-codes="%s"%s><td><a href="#h-%s">%s</a></td><td data-k="%s"><span class="v %s">'
            '%s</span></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n' % (
                escape(h["verdict"]), escape(" ".join(codes)), " hidden" if hidden else "",
                escape(quote(h["host"], safe="")),
                escape(h["host"]),
                RANK.get(h["verdict"], "9"), escape(h["verdict"]), escape(h["verdict"]), escape(st.get("active", "-")),
                escape("%s %s" % (bw.get("version") or "", bw.get("revision") or "")) if bw else "-",
                escape("%s (%s)" % (svc.get("unit"), svc.get("verdict"))) if svc else "-",
                ("passed" if probe.get("passed") else "FAILED") if probe else "-",
                escape(MS.monitored_text(h.get("monitor"))),
                " ".join("<code>%s</code>" % escape(c) for c in codes) or "-"))


def _script_json(value: Any) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' can end the element or open a comment."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e") \
        .replace("&", "\\u0026")


class _Interned(object):
    """Long strings (messages, remediation lists) stored once and referred to by index."""

    def __init__(self) -> None:
        self.items: List[Any] = []
        self._index: Dict[str, int] = {}

    def ref(self, value: Any) -> int:
        key = json.dumps(value, sort_keys=True)
        if key not in self._index:
            self._index[key] = len(self.items)
            self.items.append(value)
        return self._index[key]


def _fix_ref(fixes: _Interned, remediation: Any) -> Optional[int]:
    hints, commands = fix_parts(remediation)
    return fixes.ref({"hints": hints, "commands": commands}) if hints or commands else None


def _details_json(doc: Doc) -> str:
    messages, fixes, hosts = _Interned(), _Interned(), {}
    for h in doc["hosts"]:
        change = h.get("change") or {}
        hosts[h["host"]] = {"v": h["verdict"], "facts": host_facts(h), "d": [
            [d["code"], d["severity"], d.get("title"), messages.ref(d["message"]),
             _fix_ref(fixes, d.get("remediation")), change.get(finding_key(d))] for d in h["diagnostics"]],
            "w": [[w["code"], messages.ref(w.get("message") or ""), w.get("justification"), w.get("approved_by"),
                   w.get("expires")] for w in h.get("waived") or []],
            "res": [r["code"] for r in h.get("resolved") or []]}
    return _script_json({"hosts": hosts, "m": messages.items, "r": fixes.items})


def iter_html(doc: Doc) -> Iterator[str]:
    t = doc["totals"]
    yield ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Metnos sandbox audit</title>'
           '<meta name="viewport" content="width=device-width, initial-scale=1"><style>%s</style></head><body>\n'
           % asset("report.css"))
    yield ('<header><h1>Metnos sandbox audit</h1><p>Generated %s &middot; schema %s%s</p></header><main>\n'
           % (escape(doc["generated"]), escape(doc["schema"]), " &middot; compared with the baseline of %s" % escape(
               doc["baseline"].get("generated")) if doc.get("baseline") else ""))
    yield gate_html(doc)
    yield '<div class="cards"><div class="card"><b>%d</b>hosts</div>%s%s</div>\n' % (t["hosts"], "".join(
        '<div class="card %s"><b>%d</b>%s</div>' % (v, t[v], v) for v in VERDICTS),
        '<div class="card waived"><b>%d</b>waived findings</div>' % t["waived"] if t.get("waived") else "")
    for d in doc.get("findings") or []:
        yield '<div class="fleet">%s</div>\n' % finding_html(d, None)
    yield '<section id="detail" hidden></section>\n'
    hosts = act_on(doc)
    if hosts:
        worse = sum(1 for h in hosts if h["verdict"] in ("fail", "unreachable"))
        yield '<h2 id="act">Hosts to act on: %d failing or unreachable first, then %d with warnings</h2>\n' % (
            worse, len(hosts) - worse)
        for h in hosts[:ACT_SHOWN]:
            yield host_section(h)
        if len(hosts) > ACT_SHOWN:
            yield ('<p>&hellip; and %d more host(s) to act on: filter the table below by verdict, or open a host '
                   'from it.</p>\n' % (len(hosts) - ACT_SHOWN))
    if doc.get("baseline"):
        yield changes_html(doc["baseline"], changes(doc))
    if doc.get("waivers"):
        yield waivers_html(doc["waivers"])
    by_code = _by_severity(_hosts_by_code(doc))
    if by_code:
        yield "<h2>Hosts by diagnostic</h2>\n"
        for code, (diag, names) in by_code:
            more = len(names) - HOSTS_PER_CODE_SHOWN
            yield ('<details><summary class="sev-%s"><code>%s</code> &middot; %s &middot; %s &middot; %d host(s)'
                   '</summary><p>%s</p><p><button class="f" type="button" data-code="%s">show these %d host(s) in the '
                   'table</button></p><p>Hosts: %s%s</p>%s</details>\n' % (
                       escape(diag["severity"]), escape(code), escape(diag["severity"]), escape(diag.get("title")),
                       len(names),
                       escape(diag["message"]), escape(code), len(names),
                       ", ".join('<a href="#h-%s">%s</a>' % (escape(quote(x, safe="")), escape(x))
                                 for x in names[:HOSTS_PER_CODE_SHOWN]),
                       " &hellip; and %d more" % more if more > 0 else "", fix_html(diag.get("remediation"))))
    yield ('<h2>Hosts</h2><div><input id="q" placeholder="Filter hosts, codes, versions..." aria-label="filter"> '
           '<select id="f" aria-label="verdict"><option value="">all verdicts</option>%s</select> '
           '<button class="f" id="code" type="button" title="clear the code filter"></button> '
           '<span><span id="shown">%d</span> shown</span></div>\n'
           % ("".join('<option value="%s">%s</option>' % (v, v) for v in VERDICTS), t["hosts"]))
    yield ('<table id="hosts" data-page="%d"><colgroup><col style="width:16%%"><col style="width:7%%">'
           '<col style="width:7%%"><col style="width:13%%"><col style="width:14%%"><col style="width:7%%">'
           '<col style="width:11%%"><col></colgroup><thead><tr>'
           '<th>host</th><th>verdict</th><th title="the runtime\'s status() view, not a proof">status() view: active'
           '</th><th>bwrap</th><th>service</th><th title="a real wrapped invocation">probe (proven)</th>'
           '<th title="the continuous proof: its timer and the age of its last proof">monitored</th>'
           '<th>diagnostics</th></tr></thead><tbody>\n' % PAGE_ROWS)
    for index, h in enumerate(doc["hosts"]):
        yield _html_row(h, hidden=index >= PAGE_ROWS)
    yield ('</tbody></table><p id="more"%s><button class="f" type="button">show all matching hosts</button> '
           '(a long table takes a while to lay out; the filter and the verdict menu narrow it down)</p></main>\n'
           % ("" if t["hosts"] > PAGE_ROWS else " hidden"))
    yield '<script type="application/json" id="data">%s</script>\n' % _details_json(doc)
    yield "<script>%s</script></body></html>\n" % asset("report.js")


RENDERERS = (("json", iter_json), ("md", iter_markdown), ("junit.xml", iter_junit), ("html", iter_html))


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
        lines.append("  %s %s: %s" % (h["verdict"].upper(), h["host"], ", ".join(sorted(set(
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
