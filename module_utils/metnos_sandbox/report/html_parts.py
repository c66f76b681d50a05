# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pieces of the HTML audit report (render_html.py's iter_html puts them together): its style and script
(report_assets/, files of their own inlined when a report is written), the gate's banner, a host to act on with
its findings, each fix as hints and a monospace block of commands with its copy button, a host's facts as text.

Pure Python, no Ansible imports; controller only.
"""
from __future__ import absolute_import, annotations, division, print_function

import functools
import html
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import quote

from ..audit import profile_states
from . import command_kind, containment_text
from .baseline import finding_key, subject
from .monitor_text import monitored_text

ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report_assets")
ACT_SHOWN = 100     # HTML: hosts to act on laid out with their findings and fixes (the others open from the table)
RANK = {"fail": "0", "unreachable": "1", "warn": "2", "pass": "3"}


@functools.lru_cache(maxsize=None)
def asset(name: str) -> str:
    """The text of one of the HTML report's files in report_assets/ (report.css, report.js), read once."""
    with open(os.path.join(ASSETS, name), encoding="utf-8") as handle:
        return handle.read()


def escape(text: Any) -> str:
    return html.escape("" if text is None else str(text))


def fix_parts(remediation: Any) -> Tuple[List[str], List[str]]:
    """(hints, commands) of a finding's fix: a {hint, commands} mapping (remediation as data), or a list of steps
    (each shown as a line to run)."""
    if isinstance(remediation, dict):
        hint = remediation.get("hint")
        hints = [hint] if isinstance(hint, str) else [x for x in hint or [] if isinstance(x, str)]
        return [x for x in hints if x], [c for c in remediation.get("commands") or [] if isinstance(c, str)]
    return [], [s for s in remediation or [] if isinstance(s, str)]


def fix_of(diag: Mapping[str, Any]) -> Dict[str, Any]:
    """A finding's fix as data: its hint (the words, when it has one) and its remediation (the commands)."""
    return {"hint": diag.get("hint"), "commands": diag.get("remediation")}


def fix_html(remediation: Any) -> str:
    """A fix as the reader sees it: its hints as text, its commands in a monospace block, and a copy button in
    the block's own bar (never over the commands)."""
    hints, commands = fix_parts(remediation)
    if not hints and not commands:
        return ""
    return ('<div class="fix"><div class="fixbar"><span>%s</span>%s</div>%s%s</div>' % (
        command_kind.label(commands),
        '<button class="cp" type="button" aria-label="copy the commands">copy</button>' if commands else "",
        "".join('<p class="hint">%s</p>' % escape(x) for x in hints),
        '<pre class="cmd"><code>%s</code></pre>' % escape("\n".join(commands)) if commands else ""))


def readable(value: Any) -> str:
    """A fact as a line of text (never raw JSON): key=value pairs, lists joined, yes/no."""
    if isinstance(value, dict):
        return ", ".join("%s=%s" % (k, readable(v)) for k, v in sorted(value.items()) if v not in (None, "", [], {}))
    if isinstance(value, (list, tuple)):
        return "[%s]" % ", ".join(readable(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None else str(value)


def host_facts(h: Mapping[str, Any]) -> List[List[str]]:
    """[label, text] pairs shown for a host (its section and its detail panel)."""
    out = []
    if h.get("status"):
        out.append(["%s (a view, not a proof)" % (h.get("status_view") or "runtime status()"), readable(h["status"])])
    if h.get("admin_status") and h.get("admin_status") != h.get("status"):
        out.append(["status() in the admin's environment", readable(h["admin_status"])])
    if h.get("bwrap"):
        out.append(["bwrap", readable(h["bwrap"])])
    if h.get("smoke_test") and h["smoke_test"].get("ran") is not None:
        out.append(["smoke test", readable(h["smoke_test"])])
    svc = h.get("service")
    if svc:
        out.append(["service %s (%s)" % (svc.get("unit"), svc.get("mode")),
                    readable({"user": svc.get("user"), "environment": svc.get("environment"),
                              "provenance": svc.get("provenance")})])
    probe = h.get("probe")
    if probe:
        failed = [c["name"] for c in probe.get("checks") or [] if not c["ok"]]
        out.append(["probe (proven verdict: %s)" % ("passed" if probe.get("passed") else "FAILED"),
                    "%s; %d checks%s" % (probe.get("context"), len(probe.get("checks") or []),
                                         (", failed: " + ", ".join(failed)) if failed else "")])
    out.append(["containment (R-SCOPE-4)", containment_text.line(h)])
    mon = h.get("monitor")
    if mon:
        out.append(["continuous proof (monitored: %s)" % monitored_text(mon), readable(mon)])
    off = [p for p in h.get("profiles") or [] if p.get("state") != "in_sync"]
    if off:
        out.append(["profiles not in sync",
                    "; ".join("%s: %s" % (profile_states.entry_label(p), p.get("state")) for p in off)])
    return out


def gate_html(doc: Mapping[str, Any]) -> str:
    """The gate's result and how many hosts to act on, first thing on the page."""
    gate, t = doc["gate"], doc["totals"]
    why = "%d fail, %d unreachable" % (t["fail"], t["unreachable"])
    if gate["warnings_as_failures"]:
        why += ", %d warn (warnings count as failures)" % t["warn"]
    if gate.get("fail_on") == "new":
        why += "; only hosts with findings new since the baseline count (fail on: new)"
    if gate.get("fleet_findings"):
        why += "; %d fleet finding(s)" % gate["fleet_findings"]
    if gate["failed"]:
        return ('<div class="gate failed" id="gate" role="status"><b>Gate FAILED</b> &mdash; act on %d host(s) first '
                '(%s).</div>\n' % (gate["failing_hosts"], escape(why)))
    to_act = t["fail"] + t["unreachable"] + t["warn"]        # render_html.act_on: every host that did not pass
    if not to_act:
        return '<div class="gate passed" id="gate" role="status"><b>Gate passed</b> &mdash; no host to act on.</div>\n'
    return ('<div class="gate passed" id="gate" role="status"><b>Gate passed</b> &mdash; %d host(s) to act on below, '
            'none of them counted by the gate (%s).</div>\n' % (to_act, escape(why)))


def finding_html(d: Mapping[str, Any], change: Optional[str]) -> str:
    about = subject(d)
    return ('<div class="finding"><p><span class="sev %s">%s</span><code>%s</code>%s%s %s</p><p>%s</p>%s</div>' % (
        escape(d["severity"]), escape(d["severity"]), escape(d["code"]),
        ' <span class="subject">%s</span>' % escape(about) if about and about not in d["message"] else "",
        ' <span class="badge %s">%s</span>' % (escape(change), escape(change)) if change else "",
        escape(d.get("title")),
        escape(d["message"]), fix_html(fix_of(d))))


def waived_html(w: Mapping[str, Any]) -> str:
    return ('<div class="finding waived"><p><span class="badge waived">waived</span> <code>%s</code> %s</p>'
            '<p>%s</p><p>Justification: %s (approved by %s, expires %s, %s day(s) left)</p></div>' % (
                escape(w["code"]), escape(w.get("title")), escape(w.get("message")), escape(w.get("justification")),
                escape(w.get("approved_by")), escape(w.get("expires")), escape(w.get("days_left"))))


def host_section(h: Mapping[str, Any]) -> str:
    """One host to act on: verdict, facts, every error and warning with its fix, what is waived and resolved,
    and the raw record only behind "details"."""
    change = h.get("change") or {}
    findings = [d for d in h["diagnostics"] if d["severity"] != "info"]
    info = len(h["diagnostics"]) - len(findings)
    out = ['<section class="host %s" id="a-%s"><h3><span class="v %s">%s</span> <a href="#h-%s">%s</a></h3>' % (
        escape(h["verdict"]), escape(quote(h["host"], safe="")), escape(h["verdict"]), escape(h["verdict"]),
        escape(quote(h["host"], safe="")), escape(h["host"]))]
    facts = host_facts(h)
    if facts:
        out.append('<ul class="facts">%s</ul>' % "".join("<li>%s: %s</li>" % (escape(k), escape(v)) for k, v in facts))
    out.extend(finding_html(d, change.get(finding_key(d))) for d in findings)
    out.extend(waived_html(w) for w in h.get("waived") or [])
    if h.get("resolved"):
        out.append('<p><span class="badge resolved">resolved</span> since the baseline: %s</p>' % ", ".join(
            "<code>%s</code>" % escape(r["code"]) for r in h["resolved"]))
    if info:
        out.append('<p class="muted">and %d informational finding(s), in the raw record.</p>' % info)
    out.append('<details><summary>raw record (JSON)</summary><pre class="raw">%s</pre></details></section>\n'
               % escape(json.dumps(h, indent=1, sort_keys=True)))
    return "".join(out)


def waivers_html(block: Mapping[str, Any]) -> str:
    """The waivers as a table: what each waives, its state, when it expires, how many findings it waived, why and
    who approved it."""
    rows = "".join('<tr><td>%d</td><td><code>%s</code></td><td>%s</td><td>%s</td><td><span class="badge %s">%s</span>'
                   '</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%s</td></tr>' % (
                       w["index"], escape(w["code"]), escape(w["host"]), escape(w["executor"] or "-"),
                       "expired" if w["state"] == "expired" else "waived", escape(w["state"]), escape(w["expires"]),
                       escape(w["days_left"]), w["waived"], escape(w["justification"]), escape(w["approved_by"]))
                   for w in block["entries"])
    return ('<h2 id="waivers">Waivers (%d finding(s) waived; they never count toward a verdict or the gate)</h2>'
            '<table class="waivers"><thead><tr><th>#</th><th>code</th><th>host</th><th>executor</th><th>state</th>'
            '<th>expires</th><th>days left</th><th>waived</th><th>justification</th><th>approved by</th></tr></thead>'
            '<tbody>%s</tbody></table>\n' % (block["waived"], rows))


def changes_html(base: Mapping[str, Any], rows: List[Tuple[str, str, str, str, str]], shown: int = 200) -> str:
    """The findings' states since the baseline as a table (new first, then still there, then resolved)."""
    body = "".join('<tr><td><a href="#h-%s">%s</a></td><td><code>%s</code></td><td>%s</td><td>%s</td><td>'
                   '<span class="badge %s">%s</span></td></tr>' % (
                       escape(quote(host, safe="")), escape(host), escape(code), escape(about), escape(severity),
                       escape(state), escape(state))
                   for host, code, about, severity, state in rows[:shown])
    return ('<h2 id="changes">Since the baseline of %s: %d new, %d still there, %d resolved</h2>'
            '<table class="changes"><thead><tr><th>host</th><th>code</th><th>subject</th><th>severity</th><th>state'
            '</th></tr></thead>'
            '<tbody>%s</tbody></table>%s\n' % (escape(base.get("generated")), base["new"], base["still"],
                                               base["resolved"], body, "<p>&hellip; and %d more (every one is in the "
                                               "JSON report)</p>" % (len(rows) - shown) if len(rows) > shown else ""))
