# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report document as JUnit XML: one testcase per host and check, then the waived findings, the fleet's
own findings and the changes since the baseline. Pure Python, no Ansible imports; controller only."""
from __future__ import absolute_import, annotations, division, print_function

import re
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ..base import diagnostics
from . import containment_text
from .baseline import finding_key, subject
from .html_parts import fix_parts
from .record import Document, HostRecord
from .states import changes

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


CHECKS = (diagnostics.SANDBOX_ACTIVE, diagnostics.BWRAP_BINARY, diagnostics.KERNEL_USERNS, diagnostics.SMOKE_TEST,
          diagnostics.SERVICE_ENVIRONMENT, diagnostics.PROFILES,
          diagnostics.PROBE)


def check_of(code: str) -> str:
    """The report section of a code: the registry's (an unregistered code raises, never lands anywhere)."""
    return diagnostics.section_of(code)


def host_checks(h: HostRecord, warnings_as_failures: bool) -> Iterator[Tuple[str, List[Mapping[str, Any]]]]:
    """(check, [failing diagnostics]) for one host."""
    by_check: Dict[str, List[Mapping[str, Any]]] = dict((c, []) for c in CHECKS)
    for d in h["diagnostics"]:
        by_check.setdefault(check_of(d["code"]), []).append(d)
    others = tuple(sorted(set(by_check) - set(CHECKS)))     # a finding of another section is its own testcase
    for check in (CHECKS + others if h["reachable"] else ("reachability",)):
        bad = [d for d in by_check.get(check, []) if d["severity"] == "error" or
               (d["severity"] == "warning" and warnings_as_failures)]
        probe = h.get("probe")
        if check == "probe" and probe and not bad:
            failed = [c for c in probe["checks"] if not c["ok"]]
            if failed:
                bad = [{"code": "probe_check_failed", "message": ", ".join(c["name"] for c in failed),
                        "remediation": []}]
        yield check, bad


def subject_text(d: Mapping[str, Any]) -> str:
    """' (subject)' of a finding whose message does not already name what it is about."""
    about = subject(d)
    return " (%s)" % about if about and about not in str(d.get("message")) else ""


def testcase(host: str, check: str, bad: List[Mapping[str, Any]], change: Optional[Mapping[str, str]] = None) -> str:
    cls = "metnos.%s" % re.sub(r"[^A-Za-z0-9_.-]", "_", host)
    body = ""
    if bad:
        text = "\n".join("%s%s%s: %s%s\n  fix: %s" % (
            d["code"], " [%s]" % (change or {})[finding_key(d)] if finding_key(d) in (change or {}) else "",
            subject_text(d), d["message"], "\n  hint: %s" % d["hint"] if d.get("hint") else "",
            "\n  fix: ".join(fix_parts(d.get("remediation"))[1])) for d in bad)
        body = '<failure message=%s type=%s>%s</failure>' % (
            quoteattr(", ".join(d["code"] for d in bad)), quoteattr(bad[0]["code"]), xml_escape(text))
    return '    <testcase classname=%s name=%s>%s</testcase>\n' % (quoteattr(cls), quoteattr(check), body)


def fleet_testcases(doc: Document, waf: bool) -> List[Tuple[str, bool]]:
    """(testcase, failed) beyond one per host and check: each host's waived findings (skipped, with their
    justification), the fleet's own findings (an expired or unused waiver) and the changes since the baseline."""
    out = []
    for h in doc["hosts"]:
        waived = h.get("waived")
        if waived:
            cls = "metnos.%s" % re.sub(r"[^A-Za-z0-9_.-]", "_", h["host"])
            text = "\n".join("%s: WAIVED until %s by %s: %s (%s)" % (
                w["code"], w["expires"], w["approved_by"], w["justification"], w["message"]) for w in waived)
            out.append(('    <testcase classname=%s name="waived"><skipped message=%s>%s</skipped></testcase>\n' % (
                quoteattr(cls), quoteattr("%d waived finding(s)" % len(waived)), xml_escape(text)), False))
    findings = doc.get("findings") or []
    if findings:
        bad = [d for d in findings if d["severity"] == diagnostics.ERROR or (waf and d["severity"]
                                                                             == diagnostics.WARNING)]
        text = xml_escape("\n".join("%s: %s" % (d["code"], d["message"]) for d in findings))
        body = "<failure message=%s type=%s>%s</failure>" % (
            quoteattr(", ".join(d["code"] for d in bad)), quoteattr(bad[0]["code"]), text) if bad else \
            "<system-out>%s</system-out>" % text
        out.append(('    <testcase classname="metnos.fleet" name="waivers">%s</testcase>\n' % body, bool(bad)))
    base = doc.get("baseline")
    if base:
        text = "%d new, %d still there, %d resolved since %s (%s)\n%s" % (
            base["new"], base["still"], base["resolved"], base["generated"], base["path"],
            "\n".join("%s %s: %s%s" % (state, host, code, "" if about == "-" else " (%s)" % about)
                      for host, code, about, _sev, state in changes(doc)))
        out.append(('    <testcase classname="metnos.fleet" name="baseline"><system-out>%s</system-out></testcase>\n'
                    % xml_escape(text), False))
    return out


def iter_junit(doc: Document) -> Iterator[str]:
    """The testsuite: its counts first, so each host's testcases are made once, before it (host_checks)."""
    waf = doc["gate"]["warnings_as_failures"]
    cases = [(testcase(h["host"], check, bad, h.get("change")), bool(bad))
             for h in doc["hosts"] for check, bad in host_checks(h, waf)]
    cases.extend(fleet_testcases(doc, waf))
    failures = sum(1 for _case, failed in cases if failed)
    yield ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n  <testsuite name="metnos-sandbox-audit" '
           'tests="%d" failures="%d" errors="0" timestamp=%s>\n' % (len(cases), failures, quoteattr(doc["generated"])))
    for case, _failed in cases:
        yield case
    yield "    <system-out>%s</system-out>\n" % xml_escape(containment_text.junit_text(doc))   # each host's level
    yield "  </testsuite>\n</testsuites>\n"
