# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report document as Markdown: the summary first, then the failing hosts grouped by code, the table of
every host last. Pure Python, no Ansible imports; controller only."""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Dict, Iterator, List, Tuple

from . import command_kind, containment_text, states
from .baseline import subject
from .record import HOSTS_PER_CODE_SHOWN, Document, HostRecord, by_severity, codes, hosts_by_code, row

FINDINGS_PER_CODE_SHOWN = 2 * HOSTS_PER_CODE_SHOWN     # finding lines listed per code before "and N more"


def md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_host_list(hosts: List[str]) -> str:
    shown = ", ".join(md(x) for x in hosts[:HOSTS_PER_CODE_SHOWN])
    more = len(hosts) - HOSTS_PER_CODE_SHOWN
    return shown + (" … and %d more (every host is in the JSON report and the table below)" % more if more > 0 else "")


def markdown_row(h: HostRecord) -> str:
    """A host's line in the table of every host (record.row: its cells, unpacked once)."""
    cells = row(h)
    return "| %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
        md(h["host"]), (h["verdict"] or "").upper(), cells.active,
        md("%s (%s)" % cells.bwrap) if cells.bwrap else "-",
        md("%s: %s" % cells.service) if cells.service else "-",
        cells.probe, md(cells.monitored), md(", ".join(codes(h, include_info=True))) or "-")


def findings_by_code(doc: Document) -> Dict[str, Tuple[List[str], int]]:
    """{code: (a line for each of its first FINDINGS_PER_CODE_SHOWN findings, how many it has)}: every finding
    under its code with its host and its subject (the finding's message says the rest)."""
    out: Dict[str, Tuple[List[str], int]] = {}
    for h in doc["hosts"]:
        for d in h["diagnostics"]:
            lines, count = out.get(d["code"]) or ([], 0)
            if count < FINDINGS_PER_CODE_SHOWN:
                about = subject(d)
                shown = " · `%s`" % md(about) if about else ""
                lines.append("- **%s**%s: %s\n" % (md(h["host"]), shown, md(d["message"])))
            out[d["code"]] = (lines, count + 1)
    return out


def iter_findings(listed: Tuple[List[str], int]) -> Iterator[str]:
    lines, count = listed
    yield "".join(lines)
    if count > len(lines):
        yield "- … and %d more finding(s) (every one is in the JSON report)\n" % (count - len(lines))
    yield "\n"


def iter_markdown(doc: Document) -> Iterator[str]:
    t = doc["totals"]
    gate = doc["gate"]
    yield ("# Metnos sandbox audit\n\nGenerated %s. %d hosts: **%d pass**, %d warn, **%d fail**, %d unreachable.\n\n"
           % (doc["generated"], t["hosts"], t["pass"], t["warn"], t["fail"], t["unreachable"]))
    yield "Gate: **%s** (%d failing host(s)%s).\n\n" % (
        "FAILED" if gate["failed"] else "passed", gate["failing_hosts"],
        "; warnings count as failures" if gate["warnings_as_failures"] else "")
    yield from states.iter_markdown(doc)
    by_code = by_severity(hosts_by_code(doc, include_info=True))   # every finding the terminal summary shows
    if by_code:
        yield "| code | severity | rule | hosts |\n|---|---|---|---|\n"
        for code, (diag, hosts) in by_code:
            yield "| `%s` | %s | %s | %d |\n" % (code, diag["severity"], diag.get("rule") or "-", len(hosts))
        yield "\n## Hosts by diagnostic (errors first, then warnings, then notes)\n\n"
        listed = findings_by_code(doc)
        for code, (diag, hosts) in by_code:
            yield "### `%s` (%s, %s) — %d host(s)\n\nHosts: %s\n\n" % (
                code, diag["severity"], diag.get("rule"), len(hosts), md_host_list(hosts))
            yield from iter_findings(listed[code])
            if diag.get("hint"):
                yield "%s\n\n" % md(diag["hint"])
            if diag.get("remediation"):
                yield "%s:\n\n```sh\n%s\n```\n\n" % (command_kind.label(diag["remediation"]),
                                                     "\n".join(diag["remediation"]))
    yield from containment_text.iter_markdown(doc)
    yield ("## All hosts\n\n`status() view` is the runtime's own view of the service's environment (not a proof); "
           "`probe (proven)` is the verdict of a real wrapped invocation; `monitored` says whether the continuous "
           "proof watches the host and how old its last proof is (`collected`: this verdict is that proof).\n\n"
           "| host | verdict | status() view: active | bwrap | service | probe (proven) | monitored | codes |\n"
           "|---|---|---|---|---|---|---|---|\n")
    for h in doc["hosts"]:
        yield markdown_row(h)
