# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet audit's numbers for Prometheus: one textfile (``metnos_sandbox_audit.prom``) in a node_exporter
textfile collector's directory on the controller (``metnos_audit_textfile_dir``), written atomically by the report.

Hosts by verdict, the gate, findings by severity (and by state since the baseline), waived findings by code,
and per waiver the days until it expires (as seconds, Prometheus' base unit) and how many findings it waived -
so that an alert can fire before a waiver runs out. Every family is a gauge without timestamps; names are
constants and every label value is bounded and escaped by the monitor's textfile writer
(prometheus.sample_line). Pure Python, no Ansible imports; controller only.
"""
from __future__ import absolute_import, annotations, division, print_function

import datetime
from typing import Any, Dict, Iterator, List, Mapping

from ..base import files
from ..monitor.prometheus import Sample, sample_line
from . import containment_text

FILE_NAME = "metnos_sandbox_audit.prom"
METRICS = (
    ("metnos_sandbox_audit_hosts", "Hosts of the last fleet audit by verdict."),
    ("metnos_sandbox_audit_gate_failed", "1 when the last fleet audit's gate failed, else 0."),
    ("metnos_sandbox_audit_failing_hosts", "Hosts that failed the last fleet audit's gate."),
    ("metnos_sandbox_audit_findings", "Findings of the last fleet audit that count, by severity."),
    ("metnos_sandbox_audit_changes", "Findings of the last fleet audit by state since its baseline (new, still, "
                                     "resolved); absent without a baseline."),
    ("metnos_sandbox_audit_waived_findings", "Findings waived in the last fleet audit, by code."),
    ("metnos_sandbox_audit_waiver_remaining_seconds", "Whole days until each waiver expires, in seconds (days x "
                                                      "86400; negative once expired)."),
    ("metnos_sandbox_audit_waiver_waived", "Findings each waiver waived in the last fleet audit."),
    (containment_text.METRIC, containment_text.METRIC_HELP),
    (containment_text.ISOLATED_METRIC, containment_text.ISOLATED_HELP),
    ("metnos_sandbox_audit_report_timestamp_seconds", "When the last fleet audit's report was generated, in seconds "
                                                      "since the epoch."),
)


def samples(doc: Mapping[str, Any]) -> Dict[str, List[Sample]]:
    """{metric name: [(name, labels, value)]} of one report document."""
    out: Dict[str, List[Sample]] = dict((name, []) for name, _help in METRICS)
    totals, gate = doc["totals"], doc["gate"]
    for verdict in ("pass", "warn", "fail", "unreachable"):
        out["metnos_sandbox_audit_hosts"].append(("metnos_sandbox_audit_hosts", (("verdict", verdict),),
                                                  float(totals.get(verdict, 0))))
    out["metnos_sandbox_audit_gate_failed"].append(("metnos_sandbox_audit_gate_failed", (),
                                                    1.0 if gate["failed"] else 0.0))
    out["metnos_sandbox_audit_failing_hosts"].append(("metnos_sandbox_audit_failing_hosts", (),
                                                      float(gate["failing_hosts"])))
    severities = dict((s, 0) for s in ("error", "warning", "info"))
    waived: Dict[str, int] = {}
    for h in doc["hosts"]:
        for d in h["diagnostics"]:
            severities[d["severity"]] = severities.get(d["severity"], 0) + 1
        for w in h.get("waived") or []:
            waived[w["code"]] = waived.get(w["code"], 0) + 1
    for severity, count in sorted(severities.items()):
        out["metnos_sandbox_audit_findings"].append(("metnos_sandbox_audit_findings", (("severity", severity),),
                                                     float(count)))
    base = doc.get("baseline")
    if base:
        for state in ("new", "still", "resolved"):
            out["metnos_sandbox_audit_changes"].append(("metnos_sandbox_audit_changes", (("state", state),),
                                                        float(base[state])))
    for code, count in sorted(waived.items()):
        out["metnos_sandbox_audit_waived_findings"].append(("metnos_sandbox_audit_waived_findings",
                                                            (("code", code),), float(count)))
    for w in (doc.get("waivers") or {}).get("entries") or []:
        labels = (("waiver", str(w["index"])), ("code", w["code"]), ("host", w["host"]),
                  ("executor", w["executor"] or "none"), ("expires", w["expires"]), ("state", w["state"]))
        out["metnos_sandbox_audit_waiver_remaining_seconds"].append(
            ("metnos_sandbox_audit_waiver_remaining_seconds", labels, float(w["days_left"] * 86400)))
        out["metnos_sandbox_audit_waiver_waived"].append(("metnos_sandbox_audit_waiver_waived", labels,
                                                          float(w["waived"])))
    out[containment_text.METRIC], out[containment_text.ISOLATED_METRIC] = containment_text.samples(doc)
    generated = datetime.datetime.fromisoformat(doc["generated"])
    out["metnos_sandbox_audit_report_timestamp_seconds"].append(
        ("metnos_sandbox_audit_report_timestamp_seconds", (), float(int(generated.timestamp()))))
    return out


def iter_text(doc: Mapping[str, Any]) -> Iterator[str]:
    by_name = samples(doc)
    for name, help_text in METRICS:
        yield "# HELP %s %s\n# TYPE %s gauge\n" % (name, help_text, name)
        for sample in by_name[name]:
            yield sample_line(*sample)


def write(directory: str, doc: Mapping[str, Any]) -> str:
    """Write the textfile into the collector's ``directory`` atomically (mode 0644: node_exporter runs as another
    user); returns its path."""
    path = directory.rstrip("/") + "/" + FILE_NAME
    files.replace(path, "".join(iter_text(doc)), 0o644)
    return path
