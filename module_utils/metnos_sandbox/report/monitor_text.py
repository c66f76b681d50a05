# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each host's continuous proof in the fleet report: the host record's ``monitor`` entry (from what
audit/monitor_state.py's describe() and collect() put in the audit result) and its cell in the table of every
host (monitored, the last proof's age, collected or stale).

Pure Python, no Ansible imports; controller only.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Mapping, Optional

from ..base.records import Json


def report_entry(mon: Any) -> Optional[Json]:
    """The continuous proof of a host as the audit report (document.py) shows it, None when the audit did not
    say (an older one): monitored (its timer loaded and active), the last proof's time, age and verdict, and
    whether the report's verdict is that proof (collected) and too old for the limit (stale)."""
    if not isinstance(mon, dict):
        return None
    proof = mon.get("proof") if isinstance(mon.get("proof"), dict) else None
    timer: Mapping[str, Any] = mon["timer"] if isinstance(mon.get("timer"), dict) else {}
    return {"monitored": mon.get("monitored") is True, "timer": timer.get("active"),
            "collected": mon.get("collected") is True, "stale": mon.get("stale") is True,
            "max_age": mon.get("max_age"),
            "proof": dict((k, proof.get(k)) for k in ("finished", "age_seconds", "proven", "verdict"))
            if proof else None}


def age_text(seconds: Any) -> str:
    """45 s, 12 min, 3 h, 2 d."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return "?"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return "%d %s" % (seconds // size, unit)
    return "%d s" % seconds


def monitored_text(mon: Optional[Mapping[str, Any]]) -> str:
    """One cell: whether the host is monitored and how old its last proof is (a stale collected one says so)."""
    if not mon:
        return "-"
    proof = mon.get("proof")
    age = ("proof %s old" % age_text(proof.get("age_seconds"))) if proof else "no proof yet"
    if mon.get("stale"):
        return "STALE: %s (limit %s)" % (age, age_text(mon.get("max_age")))
    if mon.get("collected"):
        return "collected: %s" % age
    if mon.get("monitored"):
        return "yes, %s" % age
    return "no" + (" (timer %s; last %s)" % (mon.get("timer") or "missing", age) if proof else "")
