# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What changed since a previous audit (``metnos_audit_baseline``: an earlier JSON report, e.g. the
``metnos-audit-latest.json`` link the report writes): every finding of a host is ``new`` or ``still`` there,
and the baseline's findings the host no longer has are ``resolved``. The gate can then fail on new findings
only (``fail_on: new``).

A finding is known by its host, its code and, where it has one, its subject (``finding_key``: a refused
manifest by its readable name, else its file's path; else the executor it is about): a finding waived in
either report counts as there. A host the audit could not reach resolves nothing (nothing is known about
it). Controller only; pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import os
import stat
from typing import Any, Dict, Iterable, List, Mapping, Optional

from ..base import diagnostics
from . import schema
from .record import HostRecord

SCHEMA = schema.CURRENT      # document.SCHEMA (report imports this module); an older one (schema.READ) is migrated
MAX_BYTES = 512 * 1024 * 1024                 # a 10,000-host report is ~40 MB
CHANGES = ("new", "still", "resolved")
FAIL_ON = ("any", "new")

Found = Dict[str, Dict[str, Any]]     # {finding_key: {code, severity, title, executor}}


class BaselineError(ValueError):
    def __init__(self, diagnostic: diagnostics.Diagnostic) -> None:
        self.diagnostics = [diagnostic]
        ValueError.__init__(self, diagnostic["message"])


def subject(finding: Mapping[str, Any]) -> Optional[str]:
    """What a finding is about: its ``subject`` (a refused manifest: its readable name, else its file), else the
    executor it names (the reports of schema /1 before subjects: the same text), else None (a host-wide one)."""
    details = finding.get("details") or {}
    for key in ("subject", "executor"):
        if isinstance(details.get(key), str) and details[key]:
            return str(details[key])
    return None


def finding_key(finding: Mapping[str, Any]) -> str:
    """How a finding is recognised from one report to the next (the host is the record's): its code and its
    subject."""
    about = subject(finding)
    return str(finding["code"]) + ("|" + about if about is not None else "")


def _found(findings: Iterable[Any]) -> Found:
    out: Found = {}
    for d in findings:
        if isinstance(d, dict) and isinstance(d.get("code"), str) and d.get("severity") != diagnostics.INFO:
            out[finding_key(d)] = {"code": d["code"], "severity": d.get("severity"), "title": d.get("title"),
                                   "executor": (d.get("details") or {}).get("executor"), "subject": subject(d)}
    return out


def _refuse(path: str, problem: str) -> BaselineError:
    return BaselineError(diagnostics.make("audit_baseline_unreadable", path=path, fill={"problem": problem}))


def read(path: str) -> Dict[str, Any]:
    """{"path", "generated", "hosts": {host: Found}} of an earlier report; raises BaselineError."""
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise _refuse(path, "not a regular file")
            if info.st_size > MAX_BYTES:
                raise _refuse(path, "%d bytes, more than %d" % (info.st_size, MAX_BYTES))
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise _refuse(path, exc.strerror or str(exc)) from None
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _refuse(path, "not JSON (%s)" % diagnostics.excerpt(str(exc), 120)[1:-1]) from None
    if not isinstance(doc, dict) or doc.get("schema") not in schema.READ or not isinstance(doc.get("hosts"), list):
        raise _refuse(path, "not an audit report of schema %s" % " or ".join(schema.READ))
    doc = schema.upgrade(doc)
    hosts: Dict[str, Found] = {}
    for record in doc["hosts"]:
        if not isinstance(record, dict) or not isinstance(record.get("host"), str) or \
                not isinstance(record.get("diagnostics"), list):
            raise _refuse(path, "a host record without host and diagnostics")
        hosts[record["host"]] = dict(_found(record.get("waived") or []), **_found(record["diagnostics"]))
    return {"path": path, "generated": str(doc.get("generated") or ""), "hosts": hosts}


def compare(hosts: List[HostRecord], base: Mapping[str, Any]) -> Dict[str, Any]:
    """Give each host ``change`` ({finding_key: new|still}) and ``resolved`` (the baseline's findings it no longer
    has); returns the document's ``baseline`` block (where it came from and the counts)."""
    counts = dict((c, 0) for c in CHANGES)
    for h in hosts:
        before = base["hosts"].get(h["host"], {})
        now = _found(list(h["diagnostics"]) + list(h.get("waived") or []))
        h["change"] = dict((key, "still" if key in before else "new") for key in _found(h["diagnostics"]))
        h["resolved"] = [] if not h.get("reachable", True) else \
            [dict(before[key], change="resolved") for key in sorted(before) if key not in now]
        for state in h["change"].values():
            counts[state] += 1
        counts["resolved"] += len(h["resolved"])
    return dict(counts, path=base["path"], generated=base["generated"])


def counts_for_new(h: Mapping[str, Any], warnings_as_failures: bool) -> bool:
    """With fail_on new: whether a failing host fails the gate (one of its findings that fail it is new; without
    a baseline every finding is new). An unreachable host always does: what was not audited this run is unknown,
    and a baseline that knew it unreachable before accepts nothing about it now (a waiver says so by name)."""
    if h["verdict"] == "unreachable":
        return True
    if "change" not in h:
        return any(d["severity"] == diagnostics.ERROR or (warnings_as_failures and d["severity"] == diagnostics.WARNING)
                   for d in h["diagnostics"]) or h["verdict"] in ("fail", "unreachable")
    change = h.get("change") or {}
    severities = (diagnostics.ERROR, diagnostics.WARNING) if warnings_as_failures else (diagnostics.ERROR,)
    return any(change.get(finding_key(d)) == "new" for d in h["diagnostics"] if d["severity"] in severities)
