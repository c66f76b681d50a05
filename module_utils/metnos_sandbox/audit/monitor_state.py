# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The continuous proof as the audit sees it: the monitor's names, its stored result, its release.

The monitor (proof.py, run by the ``metnos-sandbox-monitor`` timer) keeps its last result in
``RESULT`` on the host. The audit (host_audit.py) asks here whether a host is monitored (its timer, the
age of its last proof) and, when ``collect_monitor`` is set, takes that stored result instead of
running the checks again; a proof older than ``monitor_max_age`` is not a pass
(``monitor_proof_stale``). A stored result is input like any other: bounded, exact, refused with its
own code (``monitor_result_unusable``) when it is not what the monitor writes.

The installed core's release (its versioned folder) is core_install.py's; how the fleet report shows the
continuous proof is report/monitor_text.py's. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import math
import os
import stat
import time
from typing import Any, List, Mapping, Optional, Tuple

from ..base import diagnostics
from ..base.records import Json
from ..host import bwrap

UNIT = "metnos-sandbox-monitor"
SERVICE = UNIT + ".service"
TIMER = UNIT + ".timer"
STATE_DIR = "/var/lib/metnos-sandbox-monitor"
RESULT = STATE_DIR + "/last.json"
RESULT_SCHEMA = "metnos-sandbox-monitor/1"
AUDIT_SCHEMA = "metnos-sandbox-audit/1"          # host_audit.SCHEMA (audit imports this module)
MAX_RESULT_BYTES = 4 * 1024 * 1024
FUTURE_TOLERANCE = 300.0                          # seconds a proof may seem to come from the future (clock skew)
VERDICTS = ("pass", "warn", "fail")


class Unusable(ValueError):
    """A file the monitor reads or the audit collects is not what it should be; the message says why."""


# --------------------------------------------------------------------------- files

def read_bounded(path: str, limit: int, trusted_owner: bool = True) -> bytes:
    """The bytes of the regular file ``path`` (not followed when a symlink), at most ``limit`` of them.
    With ``trusted_owner`` the file and every directory above it must be root's and not writable by
    group or others (sticky root directories excepted): what a root process acts on must not be
    someone else's to change."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise Unusable("%s cannot be opened: %s" % (path, exc.strerror or exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unusable("%s is not a regular file" % path)
        if st.st_size > limit:
            raise Unusable("%s has %d bytes; the limit is %d" % (path, st.st_size, limit))
        if trusted_owner:
            problems = bwrap.file_facts(path)["ownership_problems"]
            if problems:
                raise Unusable("%s is not trusted: %s" % (path, "; ".join(problems[:3])))
        data = os.read(fd, limit + 1)
        if len(data) > limit:
            raise Unusable("%s grew past %d bytes while it was read" % (path, limit))
        return data
    finally:
        os.close(fd)


def read_json(path: str, limit: int, trusted_owner: bool = True) -> Any:
    data = read_bounded(path, limit, trusted_owner)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise Unusable("%s is not JSON: %s" % (path, diagnostics.excerpt(str(exc), 120))) from None


# --------------------------------------------------------------------------- the stored result

def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_diagnostics(value: Any) -> None:
    if not isinstance(value, list):
        raise Unusable("its diagnostics are not a list")
    for diag in value:
        if not isinstance(diag, dict) or diag.get("code") not in diagnostics.REGISTRY:
            raise Unusable("a diagnostic has no registered code (%s)" % diagnostics.excerpt(
                diag.get("code") if isinstance(diag, dict) else diag))
        if diag.get("severity") not in diagnostics.SEVERITIES or not isinstance(diag.get("message"), str) or not (
                isinstance(diag.get("remediation"), list) and all(isinstance(s, str) for s in diag["remediation"])):
            raise Unusable("diagnostic %s is not in the registry's shape" % diag["code"])


_AUDIT_SHAPE = (("bwrap_facts", dict, False), ("service", dict, True), ("probe", dict, True),
                ("profiles", list, False))


def check_record(record: Any, now: float) -> Json:
    """``record`` if it is a result the monitor writes (its schema, a proof time not in the future, an audit
    result in the audit's shape), else Unusable."""
    if not isinstance(record, dict) or record.get("schema") != RESULT_SCHEMA:
        raise Unusable("it is not a %s result" % RESULT_SCHEMA)
    finished = record.get("finished")
    if not isinstance(finished, (int, float)) or not _number(finished) or finished <= 0:
        raise Unusable("it has no proof time")
    if finished > now + FUTURE_TOLERANCE:
        raise Unusable("its proof time is %d s in the future" % int(finished - now))
    if not isinstance(record.get("proven"), bool) or record.get("verdict") not in VERDICTS:
        raise Unusable("it has no verdict")
    audit = record.get("audit")
    if not isinstance(audit, dict) or audit.get("schema") != AUDIT_SCHEMA or audit.get("verdict") not in VERDICTS:
        raise Unusable("it holds no %s result" % AUDIT_SCHEMA)
    for key, kind, nullable in _AUDIT_SHAPE:
        value = audit.get(key)
        if not (isinstance(value, kind) or (nullable and value is None)):
            raise Unusable("its audit result has no %s" % key)
    _check_diagnostics(audit.get("diagnostics"))
    return record


def iso(seconds: float) -> str:
    """``seconds`` since the epoch as UTC ISO 8601 to the second (2026-12-02T00:25:00+00:00). time, not
    datetime: datetime's imports would cost every audited host CPU for this one line (docs/benchmarks.md)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(math.floor(round(seconds, 6))))


def proof_summary(record: Mapping[str, Any], now: float) -> Json:
    """What the audit report shows of a stored proof: when, how old, its verdict."""
    version = record.get("toolkit_version")
    return {"finished": iso(record["finished"]), "age_seconds": max(0, int(now - record["finished"])),
            "proven": record["proven"], "verdict": record["verdict"],
            "toolkit_version": version[:40] if isinstance(version, str) else None}


def load_result(path: str, now: float) -> Tuple[Optional[Json], Optional[diagnostics.Diagnostic]]:
    """(record, None) for a usable stored result, (None, monitor_result_unusable) for one that is not,
    (None, None) when there is none."""
    if not os.path.lexists(path):
        return None, None
    try:
        return check_record(read_json(path, MAX_RESULT_BYTES), now), None
    except Unusable as exc:
        return None, diagnostics.make("monitor_result_unusable", path=path, why=str(exc))


# --------------------------------------------------------------------------- the audit's view

def timer_state(runner: bwrap.Runner) -> Json:
    """The monitor timer as systemd reports it (read-only `systemctl show`)."""
    rc, out, err = runner(["systemctl", "show", TIMER, "-p", "LoadState", "-p", "ActiveState", "-p",
                           "UnitFileState", "-p", "LastTriggerUSec"])
    if rc != 0:
        return {"load": None, "active": None, "enabled": None, "last_trigger": None,
                "error": diagnostics.excerpt((err or out).strip(), 160)}
    props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return {"load": props.get("LoadState"), "active": props.get("ActiveState"),
            "enabled": props.get("UnitFileState") or None,
            "last_trigger": props.get("LastTriggerUSec") or None}


def describe(params: Mapping[str, Any], runner: bwrap.Runner,
             now: float) -> Tuple[Json, Optional[Json], List[diagnostics.Diagnostic]]:
    """(monitor, record, diagnostics) for the audit: whether the host is monitored (its timer loaded and
    active), the stored proof's summary, the stored record itself (None when there is none or it is
    unusable) and the findings about it."""
    path = params.get("monitor_result") or RESULT
    timer = timer_state(runner)
    record, problem = load_result(path, now)
    info: Json = {"monitored": timer["load"] == "loaded" and timer["active"] == "active", "timer": timer,
                  "result": path, "proof": proof_summary(record, now) if record is not None else None,
                  "collected": False}
    return info, record, [problem] if problem is not None else []


def collect(params: Mapping[str, Any], info: Json, record: Json, now: float) -> Json:
    """The audit result the monitor stored, as the audit's own (``monitor`` says it was collected); a proof
    older than ``monitor_max_age`` seconds is not a pass: monitor_proof_stale, verdict fail."""
    result = dict(record["audit"])      # a stored output read back as findings: its verdicts are not these
    result.pop("verdict", None)         # host_audit.finish decides them once over these findings
    if isinstance(result.get("service"), dict):
        result["service"] = dict((k, v) for k, v in result["service"].items() if k != "verdict")
    max_age = float(params.get("monitor_max_age") or 0)
    proof = info["proof"]
    stale = proof["age_seconds"] > max_age
    result["monitor"] = dict(info, collected=True, max_age=max_age, stale=stale)
    if stale:
        result["diagnostics"] = diagnostics.sort(list(result["diagnostics"]) + [diagnostics.make(
            "monitor_proof_stale", age=proof["age_seconds"], max_age=int(max_age), finished=proof["finished"],
            result=info["result"])])
    return result       # its verdict: host_audit.finish decides it over these findings (verdicts.decide)
