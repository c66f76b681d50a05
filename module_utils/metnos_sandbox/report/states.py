# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Markdown report and the terminal summary say about waived findings, the waivers themselves and the
findings' state since a baseline (new, still there, resolved); the HTML and JUnit reports say the same from
the same fields (html_parts.py, document.py). Pure Python, no Ansible imports; controller only.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Iterator, List, Mapping, Tuple

from .baseline import finding_key, subject

ROWS_SHOWN = 500      # Markdown: finding rows listed per table before "and N more (every one is in the JSON)"


def _md(text: Any) -> str:
    return str("-" if text is None else text).replace("|", "\\|").replace("\n", " ")


def changes(doc: Mapping[str, Any]) -> List[Tuple[str, str, str, str, str]]:
    """(host, code, subject or "-", severity, state) of every finding with a state: new and still there (errors
    and warnings), then resolved; worst hosts first as the document orders them (by name). A host's findings with
    one key (code and subject) are one row, as the baseline's counts count them."""
    out = []
    for h in doc["hosts"]:
        change = h.get("change") or {}
        seen = set()
        for d in h["diagnostics"]:
            key = finding_key(d)
            state = change.get(key)
            if state and key not in seen:
                seen.add(key)
                out.append((h["host"], d["code"], subject(d) or "-", d["severity"], state))
        out.extend((h["host"], r["code"], r.get("subject") or r.get("executor") or "-", r.get("severity") or "-",
                    "resolved") for r in h.get("resolved") or [])
    order = {"new": 0, "still": 1, "resolved": 2}
    return sorted(out, key=lambda row: (order[row[4]], row[0], row[1], row[2]))


def _table(head: str, rows: List[str]) -> Iterator[str]:
    yield head
    yield from rows[:ROWS_SHOWN]
    if len(rows) > ROWS_SHOWN:
        yield "\n… and %d more (every one is in the JSON report)\n" % (len(rows) - ROWS_SHOWN)
    yield "\n"


def iter_markdown(doc: Mapping[str, Any]) -> Iterator[str]:
    """The Markdown sections: fleet findings, the baseline's changes, waivers and waived findings."""
    base = doc.get("baseline")
    for d in doc.get("findings") or []:
        yield "**%s** `%s`: %s\n\n" % (d["severity"], d["code"], d["message"])
        if d.get("hint"):
            yield "%s\n\n" % d["hint"]
        if d.get("remediation"):
            yield "```sh\n%s\n```\n\n" % "\n".join(d["remediation"])
    if base:
        only_new = " The gate counts new findings only." if doc["gate"].get("fail_on") == "new" else ""
        counts = (base["generated"], base["path"], base["new"], base["still"], base["resolved"], only_new)
        yield ("## Changes since the baseline\n\nCompared with the report of %s (`%s`): **%d new**, %d still there, "
               "%d resolved.%s\n\n") % counts
        rows = ["| %s | `%s` | %s | %s | %s |\n" % (
            _md(host), code, _md(about), severity, state.upper() if state == "new" else state)
            for host, code, about, severity, state in changes(doc)]
        if rows:
            yield from _table("| host | code | subject | severity | state |\n|---|---|---|---|---|\n", rows)
    block = doc.get("waivers")
    if block:
        yield ("## Waivers\n\n`%s`: %d finding(s) waived; a waived finding never counts toward a verdict or the "
               "gate.\n\n" % (block["file"], block["waived"]))
        rows = ["| %d | `%s` | %s | %s | %s | %s | %s | %d | %s | %s |\n" % (
            w["index"], w["code"], _md(w["host"]), _md(w["executor"]), w["state"], w["expires"], w["days_left"],
            w["waived"], _md(w["justification"]), _md(w["approved_by"])) for w in block["entries"]]
        yield from _table("| # | code | host | executor | state | expires | days left | waived | justification "
                          "| approved by |\n|---|---|---|---|---|---|---|---|---|---|\n", rows)
        rows = ["| %s | `%s` | WAIVED | %s | %s | %s |\n" % (
            _md(h["host"]), w["code"], _md(w["justification"]), _md(w["approved_by"]), w["expires"])
            for h in doc["hosts"] for w in h.get("waived") or []]
        if rows:
            yield "### Waived findings\n\n"
            yield from _table("| host | code | state | justification | approved by | expires |\n"
                              "|---|---|---|---|---|---|\n", rows)


def terminal_lines(doc: Mapping[str, Any]) -> List[str]:
    """The summary's lines about the baseline, the waivers and the fleet findings."""
    lines = []
    base = doc.get("baseline")
    if base:
        lines.append("  since the baseline (%s): %d new, %d still there, %d resolved%s" % (
            base["generated"], base["new"], base["still"], base["resolved"],
            "; the gate counts new findings only" if doc["gate"].get("fail_on") == "new" else ""))
    block = doc.get("waivers")
    if block:
        lines.append("  waived: %d finding(s) by %d waiver(s) of %s" % (
            block["waived"], sum(1 for w in block["entries"] if w["state"] == "active"), block["file"]))
    for d in doc.get("findings") or []:
        lines.append("  %s %s: %s" % (d["severity"].upper(), d["code"], d["message"]))
    return lines
