# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report document as one self-contained HTML file, read top to bottom: the gate and how many hosts to act
on, then each of those hosts with its findings and their fixes laid out (no click needed), then the table of every
host (static HTML, readable without JavaScript). The details of any host are data (one JSON block, long strings
stored once) rendered on demand, so a 10,000-host page parses, sorts and filters in a fraction of the time 10,000
static sections take. The style and the script are files of their own (report_assets/), inlined when a report is
written; the page's pieces are html_parts.py's. Pure Python, no Ansible imports; controller only."""
from __future__ import absolute_import, annotations, division, print_function

import json
from typing import Any, Dict, Iterator, List, Mapping, Optional
from urllib.parse import quote

from ..audit import containment
from ..base import verdicts
from . import command_kind
from .baseline import finding_key, subject
from .html_parts import (
    ACT_SHOWN,
    RANK,
    asset,
    changes_html,
    escape,
    finding_html,
    fix_html,
    fix_of,
    fix_parts,
    gate_html,
    host_facts,
    host_section,
    waivers_html,
)
from .record import HOSTS_PER_CODE_SHOWN, Document, HostRecord, by_severity, codes, hosts_by_code, row
from .states import changes

PAGE_ROWS = 500                # HTML: table rows laid out at once (the others stay in the page, hidden)


def act_on(doc: Document) -> List[HostRecord]:
    """The hosts to act on, worst first: failing and unreachable hosts, then those with warnings."""
    return sorted((h for h in doc["hosts"] if h["verdict"] != "pass"),
                  key=lambda h: (RANK.get(h["verdict"] or "", "9"), h["host"]))


def html_row(h: HostRecord, hidden: bool = False) -> str:
    """A host's row in the table of every host (record.row: its cells, unpacked once)."""
    cells = row(h)
    shown = codes(h)
    verdict = h["verdict"] or ""
    return ('<tr data-verdict="%s" data-codes="%s"%s><td><a href="#h-%s">%s</a></td><td data-k="%s"><span class="v %s">'
            '%s</span></td><td>%s</td><td>%s</td><td>%s</td><td>%s &middot; %s</td><td>%s</td><td>%s</td></tr>\n' % (
                escape(verdict), escape(" ".join(shown)), " hidden" if hidden else "",
                escape(quote(h["host"], safe="")),
                escape(h["host"]),
                RANK.get(verdict, "9"), escape(verdict), escape(verdict), escape(cells.active),
                escape("%s %s" % tuple(part or "" for part in cells.bwrap)) if cells.bwrap else "-",
                escape("%s (%s)" % cells.service) if cells.service else "-",
                cells.probe, escape(containment.text(h.get("containment"))), escape(cells.monitored),
                " ".join("<code>%s</code>" % escape(c) for c in shown) or "-"))


def script_json(value: Any) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' can end the element or open a comment."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e") \
        .replace("&", "\\u0026")


class Interned(object):
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


def fix_ref(fixes: Interned, remediation: Any) -> Optional[int]:
    hints, commands = fix_parts(remediation)
    if not hints and not commands:
        return None
    return fixes.ref({"hints": hints, "commands": commands, "label": command_kind.label(commands)})


def _subject_ref(messages: Interned, finding: Mapping[str, Any]) -> Optional[int]:
    """The detail panel's subject of a finding (baseline.subject: what it is about), None for a host-wide one."""
    about = subject(finding)
    return messages.ref(about) if about is not None else None


def details_json(doc: Document) -> str:
    messages, fixes, hosts = Interned(), Interned(), {}
    for h in doc["hosts"]:
        change = h.get("change") or {}
        hosts[h["host"]] = {"v": h["verdict"], "facts": host_facts(h), "d": [
            [d["code"], d["severity"], d.get("title"), messages.ref(d["message"]),
             fix_ref(fixes, fix_of(d)), change.get(finding_key(d)), _subject_ref(messages, d)]
            for d in h["diagnostics"]],
            "w": [[w["code"], messages.ref(w.get("message") or ""), w.get("justification"), w.get("approved_by"),
                   w.get("expires"), _subject_ref(messages, w)] for w in h.get("waived") or []],
            "res": [r["code"] + (" (%s)" % r["subject"] if r.get("subject") else "")
                    for r in h.get("resolved") or []]}
    return script_json({"hosts": hosts, "m": messages.items, "r": fixes.items})


def iter_html(doc: Document) -> Iterator[str]:
    t = doc["totals"]
    yield ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Metnos sandbox audit</title>'
           '<meta name="viewport" content="width=device-width, initial-scale=1"><style>%s</style></head><body>\n'
           % asset("report.css"))
    yield ('<header><h1>Metnos sandbox audit</h1><p>Generated %s &middot; schema %s%s</p></header><main>\n'
           % (escape(doc["generated"]), escape(doc["schema"]), " &middot; compared with the baseline of %s" % escape(
               doc["baseline"].get("generated")) if doc.get("baseline") else ""))
    yield gate_html(doc)
    yield '<div class="cards"><div class="card"><b>%d</b>hosts</div>%s%s</div>\n' % (t["hosts"], "".join(
        '<div class="card %s"><b>%d</b>%s</div>' % (v, t[v], v) for v in verdicts.VERDICTS),
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
    by_code = by_severity(hosts_by_code(doc))
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
                       " &hellip; and %d more" % more if more > 0 else "", fix_html(fix_of(diag))))
    yield ('<h2>Hosts</h2><div><input id="q" placeholder="Filter hosts, codes, versions..." aria-label="filter"> '
           '<select id="f" aria-label="verdict"><option value="">all verdicts</option>%s</select> '
           '<button class="f" id="code" type="button" title="clear the code filter"></button> '
           '<span><span id="shown">%d</span> shown</span></div>\n'
           % ("".join('<option value="%s">%s</option>' % (v, v) for v in verdicts.VERDICTS), t["hosts"]))
    yield ('<table id="hosts" data-page="%d"><colgroup><col style="width:16%%"><col style="width:7%%">'
           '<col style="width:7%%"><col style="width:13%%"><col style="width:14%%"><col style="width:7%%">'
           '<col style="width:11%%"><col></colgroup><thead><tr>'
           '<th>host</th><th>verdict</th><th title="the runtime\'s status() view, not a proof">status() view: active'
           '</th><th>bwrap</th><th>service</th><th title="a real wrapped invocation">probe (proven)</th>'
           '<th title="the continuous proof: its timer and the age of its last proof">monitored</th>'
           '<th>diagnostics</th></tr></thead><tbody>\n' % PAGE_ROWS)
    for index, h in enumerate(doc["hosts"]):
        yield html_row(h, hidden=index >= PAGE_ROWS)
    yield ('</tbody></table><p id="more"%s><button class="f" type="button">show all matching hosts</button> '
           '(a long table takes a while to lay out; the filter and the verdict menu narrow it down)</p></main>\n'
           % ("" if t["hosts"] > PAGE_ROWS else " hidden"))
    yield '<script type="application/json" id="data">%s</script>\n' % details_json(doc)
    yield "<script>%s</script></body></html>\n" % asset("report.js")
