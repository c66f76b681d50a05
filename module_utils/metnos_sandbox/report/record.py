# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One host's record in the fleet report, typed: what every renderer (JSON, Markdown, JUnit, HTML, metrics) reads.

A host's answer (metnos_audit's result, as the controller received it: JSON, or a failure record) is reduced here
once (``from_result``) to a ``HostRecord``, findings only: document.build_from_hosts attaches its verdict once, after
waivers, from its findings alone (base/verdicts.decide, the finalizer the audit and the monitor use too). The
report document that holds the records (``Document``) and what the renderers share about it (a host's table
row, its codes, the hosts by code) are here too. Pure Python, no Ansible imports; controller only.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple, TypedDict, cast

from ..base import diagnostics, verdicts
from ..base.diagnostics import Diagnostic
from . import monitor_text

# Failure records metnos_audit (or spool.read_spooled) keeps with their own code and its placeholders ("context").
ANSWERED_WITHOUT_RESULT = ("audit_result_unframed", "audit_transport_unsupported", "host_not_audited",
                           "host_timeout", "host_interrupted")
PROBE_VIEW = "probe: proven by a real wrapped invocation"


class Bwrap(TypedDict):
    """The bwrap binary the host's service would run, and its package."""
    path: Optional[str]
    version: Optional[str]
    package: Optional[str]
    revision: Optional[str]
    mode: Optional[str]
    setuid: Optional[bool]
    missing_features: Optional[List[str]]


class SmokeTest(TypedDict):
    ran: Optional[bool]
    passed: Optional[bool]
    user: Optional[str]
    cause: Optional[str]


class Service(TypedDict):
    unit: Optional[str]
    mode: Optional[str]
    verdict: Optional[str]
    user: Optional[str]
    environment: Any
    provenance: Any


class Probe(TypedDict):
    passed: Optional[bool]
    context: Optional[str]
    confidence: Optional[str]
    view: str
    checks: List[Dict[str, Any]]


class Containment(TypedDict, total=False):
    """How the host contains the executors (filled by the audit where it knows; absent otherwise)."""
    level: str
    proven: bool
    placement: str
    platform: str
    reason: Optional[str]


class HostRequired(TypedDict):
    """The fields every host record has (an audited host, or one the audit could not run on)."""
    host: str
    reachable: bool
    status: Optional[Dict[str, Any]]
    bwrap: Optional[Bwrap]
    userns: Optional[Dict[str, Any]]
    service: Optional[Service]
    profiles: List[Dict[str, Any]]
    probe: Optional[Probe]
    monitor: Optional[Dict[str, Any]]
    diagnostics: List[Diagnostic]


class HostRecord(HostRequired, total=False):
    """One host in the report: HostRequired, what an audited host adds, and what the report's options add
    (waivers: ``waived``; a baseline: ``change`` and ``resolved``) and its verdict, decided once by
    document.build_from_hosts (base/verdicts.decide) from its findings after waivers."""
    verdict: str
    hostname: Optional[str]
    duration: Optional[float]
    cpu: Optional[float]
    status_view: Optional[str]
    admin_status: Optional[Dict[str, Any]]
    smoke_test: SmokeTest
    waived: List[Dict[str, Any]]
    change: Dict[str, str]
    resolved: List[Dict[str, Any]]
    containment: Optional[Containment]


class DocumentRequired(TypedDict):
    schema: str
    generated: str
    totals: Dict[str, Any]
    fleet: Dict[str, Any]
    gate: Dict[str, Any]
    hosts: List[HostRecord]


class Document(DocumentRequired, total=False):
    """The report document (the JSON schema's instance): the blocks the report's options add."""
    waivers: Dict[str, Any]
    findings: List[Diagnostic]
    baseline: Dict[str, Any]
    context: Dict[str, Any]     # the run's inventory sources (run_context.carry)


def not_audited(name: str, res: Any) -> Diagnostic:
    """The finding of a host the audit could not run on: reached without Python has its own code (an error: the
    host answered), anything else is host_unreachable (the verdict unreachable, verdicts.verdict)."""
    msg = (res or {}).get("msg") if isinstance(res, dict) else None
    if isinstance(res, dict) and res.get("code") == "host_no_python":
        return diagnostics.make("host_no_python", host=name, msg=msg)
    if isinstance(res, dict) and res.get("code") in ANSWERED_WITHOUT_RESULT:     # the host answered: a failure
        context = dict((k, v) for k, v in (res.get("context") or {}).items() if isinstance(k, str) and k != "host")
        return diagnostics.make(res["code"], host=name, **context)
    why = "unreachable" if isinstance(res, dict) and res.get("unreachable") else "audit failed"
    return diagnostics.make("host_unreachable", host=name, why=why + (": %s" % msg if msg else ""))


def status_and_view(svc: Optional[Mapping[str, Any]],
                    facts: Mapping[str, Any]) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """The reported status() and whose view it is, chosen once: the service's when the audit saw one, else the
    admin's environment's. It is the runtime's view, never the probe's proof."""
    if svc and svc.get("status"):
        return svc["status"], svc.get("status_view") or "runtime status() as seen by the service's configuration"
    status = facts.get("status")
    return status, "runtime status() in the admin's environment (no service unit)" if status else None


def from_result(name: str, res: Any) -> HostRecord:
    """One host's answer (as the controller received it) reduced to its record, once."""
    if not isinstance(res, dict) or res.get("unreachable") or res.get("failed") or "schema" not in res:
        return {"host": name, "reachable": False, "status": None, "bwrap": None,
                "userns": None, "service": None, "profiles": [], "probe": None, "monitor": None,
                "containment": None, "diagnostics": [not_audited(name, res)]}
    facts = res.get("bwrap_facts") or {}
    bw = facts.get("bwrap") or {}
    package = bw.get("package") or {}
    us = dict(facts.get("userns") or {})
    smoke = us.pop("smoke_test", None) or {}
    svc = res.get("service") or None
    probe = res.get("probe") or None
    status, view = status_and_view(svc, facts)
    return {
        "host": name, "reachable": True,       # its verdict: build_from_hosts decides it, once (verdicts.decide)
        "hostname": res.get("hostname"), "duration": res.get("duration"), "cpu": res.get("cpu"),
        "status": status, "status_view": view, "admin_status": facts.get("status"),
        "bwrap": {"path": bw.get("path"), "version": bw.get("version"), "package": package.get("name"),
                  "revision": package.get("revision"), "mode": bw.get("mode"), "setuid": bw.get("setuid"),
                  "missing_features": bw.get("missing_features")} if bw else None,
        "userns": dict((k, us.get(k)) for k in ("max_user_namespaces", "unprivileged_userns_clone",
                                                "apparmor_restrict_unprivileged_userns", "selinux", "container")),
        "smoke_test": {"ran": smoke.get("ran"), "passed": smoke.get("passed"), "user": smoke.get("user"),
                       "cause": (smoke.get("classification") or {}).get("cause")},
        "service": {"unit": svc.get("unit"), "mode": svc.get("mode"), "verdict": svc.get("verdict"),
                    "user": (svc.get("user") or {}).get("name"), "environment": svc.get("environment"),
                    "provenance": svc.get("provenance")} if svc else None,
        "profiles": res.get("profiles") or [],
        "monitor": monitor_text.report_entry(res.get("monitor")),
        "containment": res.get("containment"),         # audit/containment.py: where executors run, at what level
        "probe": {"passed": verdicts.probe_passed(probe), "context": probe.get("context"),    # from its findings
                  "confidence": probe.get("confidence"), "view": PROBE_VIEW,
                  "checks": probe.get("checks") or []} if probe else None,
        "diagnostics": res.get("diagnostics") or [],
    }


def findings_only(h: Mapping[str, Any]) -> HostRecord:
    """A report's host record (output: its verdict attached) read back as a record to build a report from (a merge,
    a report built again): its fields without the verdict that report decided (build_from_hosts decides this
    one's once, over the findings that count here)."""
    return cast(HostRecord, dict((k, v) for k, v in h.items() if k != "verdict"))


# --------------------------------------------------------------------------- what the renderers share

HOSTS_PER_CODE_SHOWN = 200     # Markdown/HTML: host names listed per code before "and N more"


class Row(NamedTuple):
    """A host's cells in the table of every host (Markdown and HTML lay them out, each in its own way)."""
    active: Any                              # status()'s "active", "-" without a status
    bwrap: Optional[Tuple[Any, Any]]         # (version, revision), None without bwrap
    service: Optional[Tuple[Any, Any]]       # (unit, its verdict), None without a service
    probe: str                               # passed, FAILED, or "-" without a probe
    monitored: str                           # monitor_text.monitored_text


def row(h: HostRecord) -> Row:
    bw = h.get("bwrap")
    svc = h.get("service")
    probe = h.get("probe")
    return Row((h.get("status") or {}).get("active", "-"),
               (bw.get("version"), bw.get("revision")) if bw else None,
               (svc.get("unit"), svc.get("verdict")) if svc else None,
               ("passed" if probe.get("passed") else "FAILED") if probe else "-",
               monitor_text.monitored_text(h.get("monitor")))


def codes(h: HostRecord, include_info: bool = False) -> List[str]:
    return sorted(set(d["code"] for d in h["diagnostics"] if include_info or d["severity"] != "info"))


ByCode = Dict[str, Tuple[Diagnostic, List[str]]]


def hosts_by_code(doc: Document, include_info: bool = False) -> ByCode:
    """{code: (first diagnostic seen, [hosts])}, each host once per code."""
    out: ByCode = {}
    for h in doc["hosts"]:
        seen = set()
        for d in h["diagnostics"]:
            if (d["severity"] == "info" and not include_info) or d["code"] in seen:
                continue
            seen.add(d["code"])
            out.setdefault(d["code"], (d, []))[1].append(h["host"])
    return out


def by_severity(by_code: ByCode) -> List[Tuple[str, Tuple[Diagnostic, List[str]]]]:
    """Codes ordered errors first, then warnings, then by how many hosts, then by name."""
    rank = {diagnostics.ERROR: 0, diagnostics.WARNING: 1}
    return sorted(by_code.items(), key=lambda kv: (rank.get(kv[1][0]["severity"], 2), -len(kv[1][1]), kv[0]))
