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
import html
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

# JUnit's escaping as xml.sax.saxutils does it (tests/unit compares them): importing saxutils imports urllib.request,
# http.client and ssl, ~10-15 ms of CPU in the main process of every audit run.
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
                       warnings_as_failures: bool = False) -> Doc:
    """The report document from an iterable of (host, task result): each result is reduced to its host
    record as it comes, so the full results need not all be in memory at once."""
    return build_from_hosts([_host_entry(name, res) for name, res in pairs], generated, warnings_as_failures)


def build_from_hosts(hosts: List[Host], generated: Optional[datetime.datetime] = None,
                     warnings_as_failures: bool = False) -> Doc:
    """The report document from normalised host records (also used to merge reports)."""
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
    totals = dict((v, 0) for v in VERDICTS)
    codes: Dict[str, int] = {}
    for h in hosts:
        totals[h["verdict"]] = totals.get(h["verdict"], 0) + 1
        for code in sorted(set(d["code"] for d in h["diagnostics"])):
            codes[code] = codes.get(code, 0) + 1
    failing = totals["fail"] + totals["unreachable"] + (totals["warn"] if warnings_as_failures else 0)
    return {
        "schema": SCHEMA,
        "generated": generated.isoformat(),
        "totals": dict(totals, hosts=len(hosts), codes=dict(sorted(codes.items()))),
        "fleet": {"bwrap_revisions": revisions, "bwrap_revision_majority": majority},
        "gate": {"warnings_as_failures": bool(warnings_as_failures), "failed": failing > 0, "failing_hosts": failing},
        "hosts": hosts,
    }


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


def _junit_case(host: str, check: str, bad: List[Mapping[str, Any]]) -> str:
    cls = "metnos.%s" % re.sub(r"[^A-Za-z0-9_.-]", "_", host)
    body = ""
    if bad:
        text = "\n".join("%s: %s%s\n  fix: %s" % (
            d["code"], d["message"], "\n  hint: %s" % d["hint"] if d.get("hint") else "",
            "\n  fix: ".join(d.get("remediation") or [])) for d in bad)
        body = '<failure message=%s type=%s>%s</failure>' % (
            quoteattr(", ".join(d["code"] for d in bad)), quoteattr(bad[0]["code"]), xml_escape(text))
    return '    <testcase classname=%s name=%s>%s</testcase>\n' % (quoteattr(cls), quoteattr(check), body)


def iter_junit(doc: Doc) -> Iterator[str]:
    waf = doc["gate"]["warnings_as_failures"]
    tests = failures = 0
    for h in doc["hosts"]:            # first pass: the counts the testsuite element carries
        for _check, bad in _junit_cases(h, waf):
            tests += 1
            failures += 1 if bad else 0
    yield ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n  <testsuite name="metnos-sandbox-audit" '
           'tests="%d" failures="%d" errors="0" timestamp=%s>\n' % (tests, failures, quoteattr(doc["generated"])))
    for h in doc["hosts"]:
        for check, bad in _junit_cases(h, waf):
            yield _junit_case(h["host"], check, bad)
    yield "  </testsuite>\n</testsuites>\n"


# -- HTML: one self-contained file. The host table is static HTML (readable without JavaScript);
# the per-host details are data (one JSON block, long strings stored once) rendered on demand, so
# a 10,000-host page parses, sorts and filters in a fraction of the time 10,000 static sections take.

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:16px 24px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;color:#b8c0cc}main{padding:16px 24px}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin-bottom:16px}
.card{background:#fff;border-radius:8px;padding:12px 16px;min-width:110px;box-shadow:0 1px 2px #0002}
.card b{display:block;font-size:26px}.pass b{color:#19804a}.warn b{color:#a86b00}.fail b{color:#c62828}
.unreachable b{color:#6d4aa8}
input#q{padding:8px 10px;width:320px;border:1px solid #c7ccd4;border-radius:6px}
select,button.f{padding:7px;border:1px solid #c7ccd4;border-radius:6px;background:#fff}
table{border-collapse:collapse;width:100%;background:#fff;margin-top:10px;box-shadow:0 1px 2px #0002;
table-layout:fixed}
th,td{text-align:left;padding:7px 10px;border-bottom:1px solid #e6e8ec;vertical-align:top;overflow-wrap:anywhere}
th{cursor:pointer;background:#eef0f3;user-select:none;position:sticky;top:0}th:after{content:" \\2195";color:#99a}
tr[hidden]{display:none}
.v{font-weight:600;border-radius:10px;padding:1px 8px;font-size:12px}
.v.pass{background:#e3f4ea;color:#19804a}.v.warn{background:#fff2d6;color:#8a5800}
.v.fail{background:#fde4e4;color:#b71c1c}.v.unreachable{background:#eee6f8;color:#5b3a96}
code{background:#eef0f3;padding:1px 4px;border-radius:4px}
details,#detail{background:#fff;margin:8px 0;padding:8px 12px;border-radius:8px;box-shadow:0 1px 2px #0002}
summary{cursor:pointer;font-weight:600}pre{background:#1d2330;color:#e8ecf1;padding:10px;border-radius:6px;
overflow:auto;position:relative;white-space:pre-wrap}button.cp{position:absolute;right:6px;top:6px;font-size:11px}
.sev-error{color:#b71c1c}.sev-warning{color:#8a5800}.sev-info{color:#557}
#detail[hidden]{display:none}#detail h2{margin:4px 0 8px}button#code:empty{display:none}
"""

_JS = r"""
const PAGE = %d;
const q = document.getElementById('q'), f = document.getElementById('f'), tb = document.querySelector('#hosts tbody');
const rows = Array.from(tb.rows), text = rows.map(r => r.textContent.toLowerCase() + ' ' + r.dataset.codes);
const shown = document.getElementById('shown');
let code = '', limit = PAGE;
function apply() {
  const t = q.value.trim().toLowerCase(), v = f.value; let n = 0;
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    const ok = (!t || text[i].includes(t)) && (!v || r.dataset.verdict === v) &&
               (!code || (' ' + r.dataset.codes + ' ').includes(' ' + code + ' '));
    const hide = !ok || n >= limit;          // only the first `limit` matches are laid out
    if (r.hidden !== hide) r.hidden = hide;
    if (ok) n++;
  }
  shown.textContent = Math.min(n, limit) + (n > limit ? ' of ' + n : '');
  more.hidden = n <= limit;
  document.getElementById('code').textContent = code ? 'code ' + code + ' \u00d7' : '';
}
const more = document.getElementById('more');
more.addEventListener('click', () => { limit = Infinity; apply(); });
q.addEventListener('input', apply); f.addEventListener('change', apply);
document.getElementById('code').addEventListener('click', () => { code = ''; apply(); });
document.querySelectorAll('button.f').forEach(b => b.addEventListener('click', () => {
  code = b.dataset.code; apply(); document.getElementById('hosts').scrollIntoView();
}));
const coll = new Intl.Collator(undefined, {numeric: true});
document.querySelectorAll('#hosts th').forEach((th, i) => th.addEventListener('click', () => {
  const dir = th.dataset.dir = th.dataset.dir === 'asc' ? 'desc' : 'asc', s = dir === 'asc' ? 1 : -1;
  const keyed = rows.map((r, j) => [r.cells[i].dataset.k || r.cells[i].textContent, r, text[j]]);
  keyed.sort((a, b) => s * coll.compare(a[0], b[0]));
  keyed.forEach((k, j) => { rows[j] = k[1]; text[j] = k[2]; });
  const frag = document.createDocumentFragment(); rows.forEach(r => frag.appendChild(r)); tb.appendChild(frag);
}));
function copyButtons(root) {
  root.querySelectorAll('button.cp').forEach(b => b.addEventListener('click', () => {
    if (navigator.clipboard) navigator.clipboard.writeText(b.parentElement.querySelector('code').textContent);
    b.textContent = 'copied';
  }));
}
copyButtons(document);
const data = JSON.parse(document.getElementById('data').textContent);
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  for (const c of kids) if (c !== null && c !== undefined) e.append(c);
  return e;
}
function showHost(name) {
  const box = document.getElementById('detail'), h = data.hosts[name];
  if (!h) { box.hidden = true; return; }
  const kids = [el('h2', {}, name + ' \u2014 ', el('span', {class: 'v ' + h.v}, h.v))];
  for (const [label, value] of h.facts) kids.push(el('p', {}, label + ': ', el('code', {}, value)));
  for (const d of h.d) {
    kids.push(el('p', {class: 'sev-' + d[1]}, el('code', {}, d[0]), ' (' + d[1] + ', ' + d[2] + '): ' + data.m[d[3]]));
    if (d[4] !== null) kids.push(el('pre', {}, el('button', {class: 'cp', type: 'button'}, 'copy'),
                                    el('code', {}, data.r[d[4]].join('\n'))));
  }
  box.replaceChildren(...kids); box.hidden = false; copyButtons(box); box.scrollIntoView();
}
function route() { if (location.hash.startsWith('#h-')) showHost(decodeURIComponent(location.hash.slice(3))); }
window.addEventListener('hashchange', route);
route(); apply();
"""

_RANK = {"fail": "0", "unreachable": "1", "warn": "2", "pass": "3"}


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text))


def _remediation_html(steps: Optional[List[str]]) -> str:
    if not steps:
        return ""
    return '<pre><button class="cp" type="button">copy</button><code>%s</code></pre>' % _e("\n".join(steps))


def _html_row(h: Host, hidden: bool = False) -> str:
    st = h.get("status") or {}
    bw = h.get("bwrap") or {}
    svc = h.get("service") or {}
    probe = h.get("probe")
    codes = _codes(h)
    return ('<tr data-verdict="%s" data-codes="%s"%s><td><a href="#h-%s">%s</a></td><td data-k="%s"><span class="v %s">'
            '%s</span></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n' % (
                _e(h["verdict"]), _e(" ".join(codes)), " hidden" if hidden else "", _e(quote(h["host"], safe="")),
                _e(h["host"]),
                _RANK.get(h["verdict"], "9"), _e(h["verdict"]), _e(h["verdict"]), _e(st.get("active", "-")),
                _e("%s %s" % (bw.get("version") or "", bw.get("revision") or "")) if bw else "-",
                _e("%s (%s)" % (svc.get("unit"), svc.get("verdict"))) if svc else "-",
                ("passed" if probe.get("passed") else "FAILED") if probe else "-",
                _e(MS.monitored_text(h.get("monitor"))), " ".join("<code>%s</code>" % _e(c) for c in codes) or "-"))


def _host_facts(h: Host) -> List[List[str]]:
    """[label, text] pairs shown in a host's detail panel."""
    out = []
    if h.get("status"):
        out.append(["%s (a view, not a proof)" % (h.get("status_view") or "runtime status()"),
                    json.dumps(h["status"], sort_keys=True)])
    if h.get("admin_status") and h.get("admin_status") != h.get("status"):
        out.append(["status() in the admin's environment", json.dumps(h["admin_status"], sort_keys=True)])
    if h.get("bwrap"):
        out.append(["bwrap", json.dumps(h["bwrap"], sort_keys=True)])
    if h.get("smoke_test") and h["smoke_test"].get("ran") is not None:
        out.append(["smoke test", json.dumps(h["smoke_test"], sort_keys=True)])
    svc = h.get("service")
    if svc:
        out.append(["service %s (%s)" % (svc.get("unit"), svc.get("mode")),
                    json.dumps({"user": svc.get("user"), "environment": svc.get("environment"),
                                "provenance": svc.get("provenance")}, sort_keys=True)])
    probe = h.get("probe")
    if probe:
        failed = [c["name"] for c in probe.get("checks") or [] if not c["ok"]]
        out.append(["probe (proven verdict: %s)" % ("passed" if probe.get("passed") else "FAILED"),
                    "%s; %d checks%s" % (probe.get("context"), len(probe.get("checks") or []),
                                         (", failed: " + ", ".join(failed)) if failed else "")])
    mon = h.get("monitor")
    if mon:
        out.append(["continuous proof (monitored: %s)" % MS.monitored_text(mon), json.dumps(mon, sort_keys=True)])
    off = [p for p in h.get("profiles") or [] if p.get("state") != "in_sync"]
    if off:
        out.append(["profiles not in sync", json.dumps(off, sort_keys=True)])
    return out


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


def _details_json(doc: Doc) -> str:
    messages, remediations, hosts = _Interned(), _Interned(), {}
    for h in doc["hosts"]:
        hosts[h["host"]] = {"v": h["verdict"], "facts": _host_facts(h), "d": [
            [d["code"], d["severity"], d.get("rule"), messages.ref(d["message"]),
             remediations.ref(d["remediation"]) if d.get("remediation") else None] for d in h["diagnostics"]]}
    return _script_json({"hosts": hosts, "m": messages.items, "r": remediations.items})


def iter_html(doc: Doc) -> Iterator[str]:
    t = doc["totals"]
    yield ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Metnos sandbox audit</title>'
           '<meta name="viewport" content="width=device-width, initial-scale=1"><style>%s</style></head><body>\n'
           % _CSS)
    yield ('<header><h1>Metnos sandbox audit</h1><p>Generated %s &middot; schema %s</p></header><main>\n'
           % (_e(doc["generated"]), _e(doc["schema"])))
    yield '<div class="cards"><div class="card"><b>%d</b>hosts</div>%s</div>\n' % (t["hosts"], "".join(
        '<div class="card %s"><b>%d</b>%s</div>' % (v, t[v], v) for v in VERDICTS))
    yield '<section id="detail" hidden></section>\n'
    by_code = _by_severity(_hosts_by_code(doc))
    if by_code:
        yield "<h2>Hosts by diagnostic</h2>\n"
        for code, (diag, hosts) in by_code:
            more = len(hosts) - HOSTS_PER_CODE_SHOWN
            yield ('<details><summary class="sev-%s"><code>%s</code> &middot; %s &middot; %s &middot; %d host(s)'
                   '</summary><p>%s</p><p><button class="f" type="button" data-code="%s">show these %d host(s) in the '
                   'table</button></p><p>Hosts: %s%s</p>%s</details>\n' % (
                       _e(diag["severity"]), _e(code), _e(diag["severity"]), _e(diag.get("title")), len(hosts),
                       _e(diag["message"]), _e(code), len(hosts),
                       ", ".join('<a href="#h-%s">%s</a>' % (_e(quote(x, safe="")), _e(x))
                                 for x in hosts[:HOSTS_PER_CODE_SHOWN]),
                       " &hellip; and %d more" % more if more > 0 else "", _remediation_html(diag.get("remediation"))))
    yield ('<h2>Hosts</h2><div><input id="q" placeholder="Filter hosts, codes, versions..." aria-label="filter"> '
           '<select id="f" aria-label="verdict"><option value="">all verdicts</option>%s</select> '
           '<button class="f" id="code" type="button" title="clear the code filter"></button> '
           '<span><span id="shown">%d</span> shown</span></div>\n'
           % ("".join('<option value="%s">%s</option>' % (v, v) for v in VERDICTS), t["hosts"]))
    yield ('<table id="hosts"><colgroup><col style="width:16%"><col style="width:7%"><col style="width:7%">'
           '<col style="width:13%"><col style="width:14%"><col style="width:7%"><col style="width:11%"><col>'
           '</colgroup><thead><tr>'
           '<th>host</th><th>verdict</th><th title="the runtime\'s status() view, not a proof">status() view: active'
           '</th><th>bwrap</th><th>service</th><th title="a real wrapped invocation">probe (proven)</th>'
           '<th title="the continuous proof: its timer and the age of its last proof">monitored</th>'
           '<th>diagnostics</th></tr></thead><tbody>\n')
    for index, h in enumerate(doc["hosts"]):
        yield _html_row(h, hidden=index >= PAGE_ROWS)
    yield ('</tbody></table><p id="more"%s><button class="f" type="button">show all matching hosts</button> '
           '(a long table takes a while to lay out; the filter and the verdict menu narrow it down)</p></main>\n'
           % ("" if t["hosts"] > PAGE_ROWS else " hidden"))
    yield '<script type="application/json" id="data">%s</script>\n' % _details_json(doc)
    yield "<script>%s</script></body></html>\n" % (_JS % PAGE_ROWS)


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
    failing = [h for h in doc["hosts"] if h["verdict"] in ("fail", "unreachable")]
    for h in failing[:max_hosts]:
        lines.append("  %s %s: %s" % (h["verdict"].upper(), h["host"], ", ".join(
            sorted(set(d["code"] for d in h["diagnostics"] if d["severity"] == "error")))))
    if len(failing) > max_hosts:
        lines.append("  ... and %d more failing host(s): see the reports" % (len(failing) - max_hosts))
    return lines


def write_all(doc: Doc, directory: str, stamp: Optional[str] = None,
              timings: Optional[Dict[str, float]] = None) -> Dict[str, str]:
    """Write the four reports, each streamed chunk by chunk to a temp file then renamed into place.
    Returns their paths; ``timings`` (a dict), when given, receives the seconds each one took."""
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
    return paths
