# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitor's journal entries, sent with journald's native protocol (no python3-systemd needed).

Every run sends one entry with ``MESSAGE_ID=`` ``RUN_ID`` and the verdict; a run whose verdict differs
from the previous run's (proven or not, pass/warn/fail; the first run on a host included) sends a
second, distinct entry with ``MESSAGE_ID=`` ``CHANGED_ID``. The protocol (systemd's
"Native Journal Protocol"): one datagram on ``/run/systemd/journal/socket`` holding ``FIELD=value``
lines, or for a value with a newline ``FIELD``, a newline, its length as a 64-bit little-endian
integer, the value and a newline. Field names are constants; values are bounded (``MAX_VALUE`` bytes).
Find them with ``journalctl MESSAGE_ID=<id>``. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import re
import socket
import struct
from typing import Any, Dict, List, Mapping, Optional

SOCKET = "/run/systemd/journal/socket"
IDENTIFIER = "metnos-sandbox-monitor"
RUN_ID = "d481d1a4e1fd4a90b5403a7166f36850"
CHANGED_ID = "b62d4811bc5e4898828471fdc99a2b73"
MAX_VALUE = 4096
MAX_CODES = 20
_FIELD = re.compile(r"[A-Z0-9][A-Z0-9_]{0,63}\Z")
# syslog priorities
CRIT, ERR, WARNING, NOTICE, INFO = 2, 3, 4, 5, 6

Fields = Dict[str, str]


def encode(fields: Mapping[str, Any]) -> bytes:
    """One native-protocol datagram of ``fields`` (each value cut to MAX_VALUE bytes of UTF-8)."""
    out = bytearray()
    for name, value in fields.items():
        if not _FIELD.match(name):
            raise ValueError("not a journal field name: %r" % (name,))
        data = str(value).encode("utf-8", "replace")[:MAX_VALUE]
        if b"\n" in data:
            out += name.encode("ascii") + b"\n" + struct.pack("<Q", len(data)) + data + b"\n"
        else:
            out += name.encode("ascii") + b"=" + data + b"\n"
    return bytes(out)


def send(fields: Mapping[str, Any], path: str = SOCKET) -> Optional[str]:
    """Send one entry; None when journald took it, else why not (no journal socket, refused)."""
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    except OSError as exc:
        return "no AF_UNIX socket: %s" % exc
    try:
        sock.sendto(encode(fields), path)
        return None
    except OSError as exc:
        return "%s: %s" % (path, exc.strerror or exc)
    finally:
        sock.close()


def _codes(record: Mapping[str, Any], severity: str) -> List[str]:
    seen: List[str] = []
    for diag in (record.get("audit") or {}).get("diagnostics") or []:
        if diag.get("severity") == severity and diag.get("code") not in seen:
            seen.append(str(diag.get("code")))
    return seen


def _state(proven: Optional[bool], verdict: Optional[str]) -> str:
    if proven is None:
        return "no previous proof"
    return "%s (%s)" % ("proven" if proven else "NOT proven", verdict)


def _common(record: Mapping[str, Any]) -> Fields:
    errors, warnings = _codes(record, "error"), _codes(record, "warning")
    return {"SYSLOG_IDENTIFIER": IDENTIFIER, "METNOS_SANDBOX_PROVEN": "1" if record.get("proven") else "0",
            "METNOS_SANDBOX_VERDICT": str(record.get("verdict")), "METNOS_SANDBOX_UNIT": str(record.get("unit")),
            "METNOS_SANDBOX_ERRORS": " ".join(errors[:MAX_CODES]),
            "METNOS_SANDBOX_WARNINGS": " ".join(warnings[:MAX_CODES]),
            "METNOS_SANDBOX_TOOLKIT_VERSION": str(record.get("toolkit_version")),
            "METNOS_SANDBOX_DURATION": "%.3f" % float(record.get("duration") or 0)}


def _listed(codes: List[str]) -> str:
    return ", ".join(codes[:MAX_CODES]) + (" and %d more" % (len(codes) - MAX_CODES) if len(codes) > MAX_CODES else "")


def run_entry(record: Mapping[str, Any]) -> Fields:
    """The entry every run sends: the verdict, the error and warning codes, the duration."""
    fields = _common(record)
    errors, warnings = _codes(record, "error"), _codes(record, "warning")
    if record.get("proven"):
        text = "Metnos sandbox proven for %s: the real probe passed in the service's context (verdict %s%s)" % (
            record.get("unit"), record.get("verdict"), "; warnings: " + _listed(warnings) if warnings else "")
        priority = WARNING if warnings else INFO
    else:
        text = "Metnos sandbox NOT proven for %s (verdict %s): %s" % (
            record.get("unit"), record.get("verdict"), _listed(errors) or "the probe did not pass")
        priority = ERR
    fields.update(MESSAGE=text + "; %.1f s." % float(record.get("duration") or 0), MESSAGE_ID=RUN_ID,
                  PRIORITY=str(priority))
    return fields


def changed(record: Mapping[str, Any], previous: Optional[Mapping[str, Any]]) -> bool:
    """Whether the verdict differs from the previous run's (no previous run counts as a change)."""
    if previous is None:
        return True
    return (previous.get("proven"), previous.get("verdict")) != (record.get("proven"), record.get("verdict"))


def change_entry(record: Mapping[str, Any], previous: Optional[Mapping[str, Any]]) -> Fields:
    """The distinct entry of a verdict change: from what to what, and the errors now."""
    fields = _common(record)
    before = _state(previous.get("proven"), previous.get("verdict")) if previous is not None else _state(None, None)
    now = _state(bool(record.get("proven")), str(record.get("verdict")))
    errors = _codes(record, "error")
    lost = previous is not None and previous.get("proven") is True and not record.get("proven")
    text = "Metnos sandbox proof changed for %s: %s -> %s%s." % (
        record.get("unit"), before, now, " (%s)" % _listed(errors) if errors else "")
    fields.update(MESSAGE=text, MESSAGE_ID=CHANGED_ID,
                  PRIORITY=str(CRIT if lost else (NOTICE if record.get("proven") else ERR)),
                  METNOS_SANDBOX_PREVIOUS_PROVEN="none" if previous is None else (
                      "1" if previous.get("proven") else "0"),
                  METNOS_SANDBOX_PREVIOUS_VERDICT="none" if previous is None else str(previous.get("verdict")))
    return fields
