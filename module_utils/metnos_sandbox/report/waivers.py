# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waivers: findings the admin accepts for a while, with a justification, an approver and an expiry.

The admin keeps a YAML file (``metnos_audit_waivers``), a list of waivers::

    - code: bwrap_package_drift        # a registered diagnostic code (docs/diagnostics.md)
      host: "web-*"                     # an inventory name or a shell-style pattern
      executor: read_notes              # optional: only the findings about this executor
      justification: "the 0.8.0-2 pin is kept until the kernel upgrade (CHG-1234)"
      approved_by: "ops-lead@example.org"
      expires: 2027-03-31               # YAML date or text, YYYY-MM-DD; at most MAX_DAYS ahead

It is read with the manifests' bounded reader and validated strictly: every kind of bad waiver has its
own code (audit_waiver_*), all of them reported at once (every field of every entry judged in one pass, with the
nearest known field or code for a typo), and the run's gate fails, its reports written without the file and
marked (report/run_context.inputs_refused: a finding someone meant to waive is never silently counted, nor one
nobody approved silently hidden). A waived finding
leaves the host's findings (it never counts toward the verdict or the gate) and is kept, with its
waiver, under the host's ``waived``. An expired waiver waives nothing and an unused one is suspicious:
both are fleet findings (warnings). Controller only; pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import datetime
import difflib
import fnmatch
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..base.diagnostics import MODULE, REGISTRY, Diagnostic, excerpt, make, section_of
from ..profile import reader
from ..profile.model import ManifestError
from .baseline import subject
from .record import HostRecord

FIELDS = ("code", "host", "executor", "justification", "approved_by", "expires")
REQUIRED = ("code", "host", "justification", "approved_by", "expires")
MAX_WAIVERS = 1000
MAX_TEXT = 500
MAX_DAYS = 366
HOST = re.compile(r"[A-Za-z0-9._:\-*?\[\]]{1,253}\Z")
DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
OWN_CODES = ("audit_waiver_expired", "audit_waiver_unused")

Waiver = Dict[str, Any]


class WaiverError(ValueError):
    """The waiver file is refused; ``diagnostics`` holds one entry per problem."""

    def __init__(self, problems: List[Diagnostic]) -> None:
        self.diagnostics = problems
        ValueError.__init__(self, "; ".join(d["message"] for d in problems))


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and len(value) <= MAX_TEXT and \
        all(ch >= " " and ch != "\x7f" for ch in value)


def _check(index: int, entry: Mapping[str, Any], path: str,
           today: datetime.date) -> Tuple[List[Diagnostic], Optional[Waiver]]:
    """(problems, the waiver) of entry #index (1-based)."""
    where: Dict[str, Any] = {"path": path, "index": index}
    bad: List[Diagnostic] = []
    for key in entry:
        if key not in FIELDS:
            near = _near(key, FIELDS)
            bad.append(make("audit_waiver_field_unknown", field=excerpt(key), wording="near" if near else None,
                            fill=dict(where, known=", ".join(FIELDS), meant=near), **where))
    for key in REQUIRED:
        if entry.get(key) is None:
            bad.append(make("audit_waiver_field_missing", field=key, **where))
    # every field judged in the same pass: a bad justification does not hide a mistyped code
    usable: Dict[str, Any] = {}
    for key in FIELDS:
        value = entry.get(key)
        if value is not None and not _text(value):
            bad.append(make("audit_waiver_field_invalid", field=key, value=excerpt(value), limit=MAX_TEXT,
                            **where))
        elif value is not None:
            usable[key] = value
    code, host, expires = usable.get("code"), usable.get("host"), usable.get("expires")
    if code is not None and (code in OWN_CODES or REGISTRY.get(code) is None or section_of(code) == MODULE):
        near = None if code in REGISTRY else _near(code, _waivable())
        bad.append(make("audit_waiver_code_unknown", value=excerpt(code), **where, fill={"meant": near},
                        wording="not_waivable" if code in REGISTRY else ("near" if near else None)))
    if host is not None and not HOST.match(host):
        bad.append(make("audit_waiver_host_invalid", value=excerpt(host), **where))
    when = None
    if expires is not None and DATE.match(expires):
        try:
            when = datetime.date(int(expires[:4]), int(expires[5:7]), int(expires[8:10]))
        except ValueError:
            when = None
    if expires is not None and when is None:
        bad.append(make("audit_waiver_expires_invalid", value=excerpt(expires), **where))
    elif when is not None and (when - today).days > MAX_DAYS:
        bad.append(make("audit_waiver_expires_invalid", wording="too_far", value=expires, limit=MAX_DAYS, **where))
    if bad or when is None:
        return bad, None
    return [], {"index": index, "code": code, "host": host, "executor": entry.get("executor"),
                "justification": entry["justification"], "approved_by": entry["approved_by"], "expires": expires,
                "days_left": (when - today).days}


def _near(word: str, known: Tuple[str, ...]) -> Optional[str]:
    """The known word ``word`` is a typo of (difflib's ratio 0.6 or more), None when there is none."""
    found = difflib.get_close_matches(word, known, n=1)
    return found[0] if found else None


def _waivable() -> Tuple[str, ...]:
    return tuple(sorted(code for code in REGISTRY if code not in OWN_CODES and section_of(code) != MODULE))


def parse(data: Any, path: str, today: datetime.date) -> List[Waiver]:
    """The waivers of decoded YAML ``data``; raises WaiverError with every problem found."""
    where: Dict[str, Any] = {"path": path}
    if not isinstance(data, list):
        raise WaiverError([make("audit_waiver_file_shape", found=type(data).__name__ if data is not None else
                                "empty", **where)])
    if len(data) > MAX_WAIVERS:
        raise WaiverError([make("audit_waiver_file_shape", wording="too_many", count=len(data), limit=MAX_WAIVERS,
                                **where)])
    problems: List[Diagnostic] = []
    out: List[Waiver] = []
    seen: Dict[Tuple[str, str, str], int] = {}
    for index, entry in enumerate(data, 1):
        if not isinstance(entry, dict):
            problems.append(make("audit_waiver_file_shape", wording="entry", index=index,
                                 found=type(entry).__name__, **where))
            continue
        bad, waiver = _check(index, entry, path, today)
        problems.extend(bad)
        if waiver is None:
            continue
        key = (waiver["code"], waiver["host"], waiver["executor"] or "")
        if key in seen:
            problems.append(make("audit_waiver_duplicate", index=index, first=seen[key], path=path,
                                 value="%s on %s%s" % (key[0], key[1], " for " + key[2] if key[2] else "")))
            continue
        seen[key] = index
        out.append(waiver)
    if problems:
        raise WaiverError(problems)
    return out


def read(path: str, today: datetime.date) -> List[Waiver]:
    """The waivers of the file at ``path`` (bounded read, strict validation); raises WaiverError."""
    try:
        data = reader.decode(reader.read_file(path), path)
    except ManifestError as exc:
        raise WaiverError([make("audit_waiver_file_unreadable", path=path,
                                fill={"problem": "; ".join(d["message"] for d in exc.diagnostics)})]) from None
    return parse(data, path, today)


def _matches(waiver: Waiver, host: str, finding: Mapping[str, Any]) -> bool:
    if finding["code"] != waiver["code"] or not fnmatch.fnmatchcase(host, waiver["host"]):
        return False
    about = ((finding.get("details") or {}).get("executor"), subject(finding))
    return waiver["executor"] is None or waiver["executor"] in about


def _executor_text(waiver: Waiver) -> str:
    return " for executor %s" % waiver["executor"] if waiver["executor"] else ""


def waive(hosts: List[HostRecord], waivers: List[Waiver], path: str) -> Dict[str, Any]:
    """Move each finding an active waiver matches from its host's ``diagnostics`` to its ``waived`` (the waiver's
    fields with it): the host's verdict is decided afterwards from the findings that remain (document.build_from_hosts,
    base/verdicts.decide; a failed probe is an error finding of its own, so only its waiver moves it). Returns the
    document's ``waivers`` block: each waiver with its state (active, expired, unused), the days until it expires
    and how many findings it waived, and the fleet findings (audit_waiver_expired, audit_waiver_unused)."""
    used: Dict[int, int] = dict((w["index"], 0) for w in waivers)
    active = [w for w in waivers if w["days_left"] >= 0]
    for h in hosts:
        if not active:
            break
        kept, waived = [], []
        for d in h["diagnostics"]:
            match = next((w for w in active if _matches(w, h["host"], d)), None)
            if match is None:
                kept.append(d)
                continue
            used[match["index"]] += 1
            waived.append({"code": d["code"], "severity": d["severity"], "title": d.get("title"),
                           "message": d["message"], "details": d.get("details") or {}, "waiver": match["index"],
                           "justification": match["justification"], "approved_by": match["approved_by"],
                           "expires": match["expires"], "days_left": match["days_left"]})
        if waived and h.get("reachable", True):
            h["diagnostics"], h["waived"] = kept, list(h.get("waived") or []) + waived     # a merge keeps earlier ones
    findings: List[Diagnostic] = []
    entries = []
    for w in waivers:
        state = "expired" if w["days_left"] < 0 else ("active" if used[w["index"]] else "unused")
        entries.append(dict(w, state=state, waived=used[w["index"]]))
        context = {"index": w["index"], "waived_code": w["code"], "host": w["host"], "path": path}
        if state == "expired":
            findings.append(make("audit_waiver_expired", expires=w["expires"], days_ago=-w["days_left"],
                                 fill={"executor_text": _executor_text(w)}, **context))
        elif state == "unused":
            findings.append(make("audit_waiver_unused", hosts=len(hosts), fill={"executor_text": _executor_text(w)},
                                 **context))
    return {"file": path, "entries": entries, "waived": sum(used.values()), "findings": findings}
