# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitor's result in Prometheus' text exposition format, for node_exporter's textfile collector.

One file (``metnos_sandbox.prom``), written atomically in the collector's directory (a hidden
temporary file there, then one rename: node_exporter reads only ``*.prom``, never a half-written
file). No sample carries a timestamp (the collector refuses them). Metric and label names are
constants; every label value is bounded (``MAX_LABEL`` characters, printable ASCII, anything else
shown as ``?``) and escaped as the format requires (``\\`` and ``"``), so no text from a host (a unit
name, a package revision, ``/etc/os-release``) can end a value, add a line or forge a series; a code
that is not in the registry is shown as ``unregistered``. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import math
import re
from typing import Any, Dict, Iterator, List, Mapping, Tuple

from ..base import diagnostics, files, verdicts

FILE_NAME = "metnos_sandbox.prom"
MAX_LABEL = 128
# The checks a run is made of: the audit report's sections (one JUnit case each) and the monitor's own.
CHECKS = tuple(s for s in diagnostics.SECTIONS if s not in (diagnostics.REACHABILITY, diagnostics.MODULE))
INFO_LABELS = ("bwrap_version", "package", "package_revision", "toolkit_version", "os", "unit")

Labels = Tuple[Tuple[str, str], ...]
Sample = Tuple[str, Labels, float]

# name -> help text (every family is a gauge); the order is the file's.
METRICS: Tuple[Tuple[str, str], ...] = (
    ("metnos_sandbox_proven", "1 when the last run proved the sandbox (the real probe passed in the service's "
                              "context and no check failed), else 0."),
    ("metnos_sandbox_check_ok", "1 when the check (a section of the audit report, or the monitor's own) had no "
                                "error in the last run, else 0."),
    ("metnos_sandbox_diagnostic", "Diagnostics of the last run by code and severity (docs/diagnostics.md)."),
    ("metnos_sandbox_last_run_timestamp_seconds", "When the last run finished, in seconds since the epoch."),
    ("metnos_sandbox_run_duration_seconds", "Wall seconds the last run took."),
    ("metnos_sandbox_info", "The bwrap and toolkit of the last run (constant 1)."),
)
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")


def label_value(value: Any) -> str:
    """``value`` as an exposition label value: at most MAX_LABEL characters (cut before any work, the cut
    marked with ``...``), printable ASCII (others become ``?``), backslash and double quote escaped."""
    text = value if isinstance(value, str) else ("" if value is None else diagnostics.excerpt(value, MAX_LABEL))
    if len(text) > MAX_LABEL:
        text = text[:MAX_LABEL - 3] + "..."
    text = "".join(ch if " " <= ch <= "~" else "?" for ch in text)
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _number(value: float) -> str:
    if not math.isfinite(value):
        return "NaN"
    if value == int(value) and abs(value) < 2 ** 53:
        return "%d" % value
    return repr(round(value, 6))


def sample_line(name: str, labels: Labels, value: float) -> str:
    """One sample in the exposition format (names checked, label values bounded and escaped)."""
    if not _NAME.match(name) or any(not _LABEL_NAME.match(k) for k, _v in labels):
        raise ValueError("not a metric or label name: %s %r" % (name, [k for k, _v in labels]))
    inner = ",".join('%s="%s"' % (k, label_value(v)) for k, v in labels)
    return "%s%s %s\n" % (name, "{%s}" % inner if inner else "", _number(value))


def check_states(record: Mapping[str, Any]) -> Dict[str, bool]:
    """{check: ok} for every check: no error diagnostic in its section (and, for the probe, a probe that
    passed). A code outside the registry counts against the monitor's own check."""
    audit = record.get("audit") or {}
    failed = set()
    for diag in audit.get("diagnostics") or []:
        if diag.get("severity") == diagnostics.ERROR:
            failed.add(diagnostics.section_of(diag["code"]) if diag.get("code") in diagnostics.REGISTRY
                       else diagnostics.MONITOR)
    probe = audit.get("probe")
    if verdicts.probe_passed(probe) is not True:      # read from the probe's findings (None: no probe ran)
        failed.add(diagnostics.PROBE)
    return dict((check, check not in failed) for check in CHECKS)


def _diagnostic_counts(record: Mapping[str, Any]) -> List[Tuple[str, str, int]]:
    counts: Dict[Tuple[str, str], int] = {}
    for diag in (record.get("audit") or {}).get("diagnostics") or []:
        code = diag.get("code") if diag.get("code") in diagnostics.REGISTRY else "unregistered"
        severity = diag.get("severity") if diag.get("severity") in diagnostics.SEVERITIES else "unknown"
        counts[(code, severity)] = counts.get((code, severity), 0) + 1
    return [(code, severity, n) for (code, severity), n in sorted(counts.items())]


def info_labels(record: Mapping[str, Any]) -> Labels:
    """The labels of metnos_sandbox_info: the bwrap the monitor found (version, owning package and its
    revision), the toolkit's release, the host's OS and the service unit."""
    audit = record.get("audit") or {}
    bw = (audit.get("bwrap_facts") or {}).get("bwrap") or {}
    pkg = bw.get("package") or {}
    values = {"bwrap_version": bw.get("version") or "none", "package": pkg.get("name") or "none",
              "package_revision": pkg.get("revision") or "none",
              "toolkit_version": record.get("toolkit_version") or "unknown", "os": record.get("os") or "unknown",
              "unit": record.get("unit") or "none"}
    return tuple((k, str(values[k]) if not isinstance(values[k], str) else values[k]) for k in INFO_LABELS)


def samples(record: Mapping[str, Any]) -> Dict[str, List[Sample]]:
    """{metric name: [(name, labels, value)]} of one monitor record."""
    out: Dict[str, List[Sample]] = dict((name, []) for name, _help in METRICS)
    out["metnos_sandbox_proven"].append(("metnos_sandbox_proven", (), 1.0 if record.get("proven") is True else 0.0))
    for check, ok in check_states(record).items():
        out["metnos_sandbox_check_ok"].append(("metnos_sandbox_check_ok", (("check", check),), 1.0 if ok else 0.0))
    for code, severity, count in _diagnostic_counts(record):
        out["metnos_sandbox_diagnostic"].append(
            ("metnos_sandbox_diagnostic", (("code", code), ("severity", severity)), float(count)))
    for name, key in (("metnos_sandbox_last_run_timestamp_seconds", "finished"),
                      ("metnos_sandbox_run_duration_seconds", "duration")):
        value = record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name].append((name, (), float(value)))
    out["metnos_sandbox_info"].append(("metnos_sandbox_info", info_labels(record), 1.0))
    return out


def iter_text(record: Mapping[str, Any]) -> Iterator[str]:
    by_name = samples(record)
    for name, help_text in METRICS:
        yield "# HELP %s %s\n# TYPE %s gauge\n" % (name, help_text.replace("\\", "\\\\").replace("\n", " "), name)
        for sample in by_name[name]:
            yield sample_line(*sample)


def render(record: Mapping[str, Any]) -> str:
    """The whole textfile of one monitor record."""
    return "".join(iter_text(record))


def write(directory: str, record: Mapping[str, Any]) -> str:
    """Write the textfile into the collector's ``directory`` atomically (mode 0644: node_exporter runs as
    another user); returns its path."""
    path = directory.rstrip("/") + "/" + FILE_NAME
    files.replace(path, render(record), 0o644)
    return path
