# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet results -> the report document, and its renderers written: JSON (versioned schema), Markdown, JUnit XML,
self-contained HTML (render_json.py, render_markdown.py, render_junit.py, render_html.py; the metrics' textfile is
metrics.py).

Input: {host: metnos_audit result | an unreachable/failed task result}, each reduced once to its typed record
(record.from_result, findings only) whose verdict is attached once here, after the fleet's findings and the
waivers (base/verdicts.decide: the record as output). Pure Python, no Ansible imports; run
on the controller (action_plugins/metnos_audit_report.py) or by scripts/merge-audit-reports.py to merge per-host
JSON produced elsewhere (ansible-pull, AWX).

Sized for fleets of thousands: the document holds one compact record per host, and every renderer
is a generator of text chunks that ``write_all`` streams to its file (render_json.to_json joins the JSON chunks
for the callers that want the document as one string).
"""
from __future__ import absolute_import, annotations, division, print_function

import datetime
import errno
import fcntl
import os
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from ..base import diagnostics, files, verdicts
from ..base.diagnostics import Diagnostic
from . import containment_text, render_html, render_json, render_junit, render_markdown, schema, states
from .baseline import FAIL_ON, compare, counts_for_new, finding_key
from .record import Document, HostRecord, from_result
from .waivers import waive

Doc = Document     # the report document (the JSON schema's instance): record.Document

SCHEMA = schema.CURRENT      # report/schema.py: the versions read and the migration of an older one
VERDICTS = verdicts.VERDICTS


# --------------------------------------------------------------------------- the document

def revision(h: HostRecord) -> Optional[str]:
    """The bwrap package revision of a host, None without one."""
    bw = h.get("bwrap")
    return bw.get("revision") if bw else None


def build_from_results(pairs: Iterable[Tuple[str, Any]], generated: Optional[datetime.datetime] = None,
                       warnings_as_failures: bool = False, waivers: Optional[Tuple[str, List[Any]]] = None,
                       baseline: Optional[Mapping[str, Any]] = None, fail_on: str = "any") -> Doc:
    """The report document from an iterable of (host, task result): each result is reduced to its host
    record as it comes, so the full results need not all be in memory at once."""
    return build_from_hosts([from_result(name, res) for name, res in pairs], generated, warnings_as_failures,
                            waivers, baseline, fail_on)


def build_from_hosts(hosts: List[HostRecord], generated: Optional[datetime.datetime] = None,
                     warnings_as_failures: bool = False, waivers: Optional[Tuple[str, List[Any]]] = None,
                     baseline: Optional[Mapping[str, Any]] = None, fail_on: str = "any") -> Doc:
    """The report document from normalised host records (also used to merge reports). ``waivers``: (the file's
    path, its waivers: waivers.read) moves each waived finding out of what counts; ``baseline`` (baseline.read)
    marks each finding new or still there and lists the resolved ones; ``fail_on`` "new": only hosts with a new
    failing finding fail the gate."""
    if fail_on not in FAIL_ON:
        raise ValueError("fail_on: %r is not one of %s" % (fail_on, ", ".join(FAIL_ON)))
    generated = generated or datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    hosts = sorted(hosts, key=lambda h: h["host"])
    for h in hosts:   # drop a previous run's fleet-relative finding before recomputing it
        h["diagnostics"] = [d for d in h["diagnostics"] if d["code"] != "bwrap_package_drift"]
    revisions: Dict[str, int] = {}
    for h in hosts:
        rev = revision(h)
        if rev:
            revisions[rev] = revisions.get(rev, 0) + 1
    majority = max(sorted(revisions), key=lambda r: revisions[r]) if revisions else None
    if majority and len(revisions) > 1:
        for h in hosts:
            rev = revision(h)
            if rev and rev != majority:
                h["diagnostics"] = diagnostics.sort(h["diagnostics"] + [diagnostics.make(
                    "bwrap_package_drift", majority=majority, host=h["host"], revision=rev,
                    majority_hosts=revisions[majority], hosts=sum(revisions.values()))])
    waiver_block = waive(hosts, waivers[1], waivers[0]) if waivers is not None else None
    # each record as output: its verdict decided once, from every finding that counts (the fleet's in, waived out)
    hosts = [verdicts.decide(h) for h in hosts]
    findings: List[Diagnostic] = waiver_block.pop("findings") if waiver_block is not None else []
    baseline_block = compare(hosts, baseline) if baseline is not None else None
    totals = dict((v, 0) for v in VERDICTS)
    codes: Dict[str, int] = {}
    for h in hosts:
        verdict = str(h["verdict"])     # decided above
        totals[verdict] = totals.get(verdict, 0) + 1
        for code in sorted(set(d["code"] for d in h["diagnostics"])):
            codes[code] = codes.get(code, 0) + 1
    failing = totals["fail"] + totals["unreachable"] + (totals["warn"] if warnings_as_failures else 0)
    gate: Dict[str, Any] = {"warnings_as_failures": bool(warnings_as_failures), "failing_hosts": failing}
    if fail_on == "new":     # the hosts that fail the gate are the failing ones with a new failing finding
        gate["fail_on"] = fail_on
        gate["failing_hosts"] = failing = sum(1 for h in hosts if (
            h["verdict"] in ("fail", "unreachable") or (warnings_as_failures and h["verdict"] == "warn"))
            and counts_for_new(h, warnings_as_failures))
    fleet_failing = sum(1 for d in findings if d["severity"] == diagnostics.ERROR or (
        warnings_as_failures and d["severity"] == diagnostics.WARNING))
    if findings:
        gate["fleet_findings"] = fleet_failing
    gate["failed"] = failing + fleet_failing > 0
    doc: Doc = {
        "schema": SCHEMA,
        "generated": generated.isoformat(),
        "totals": dict(totals, hosts=len(hosts), codes=dict(sorted(codes.items())),
                       waived=sum(len(h.get("waived") or []) for h in hosts),
                       isolated=containment_text.isolated_count(hosts)),
        "fleet": {"bwrap_revisions": revisions, "bwrap_revision_majority": majority},
        "gate": gate,
        "hosts": hosts,
    }
    if waiver_block is not None:
        doc["waivers"] = waiver_block
    if findings:
        doc["findings"] = findings
    if baseline_block is not None:
        doc["baseline"] = baseline_block
    return doc


RENDERERS: Tuple[Tuple[str, Callable[[Document], Iterator[str]]], ...] = (
    ("json", render_json.iter_json), ("md", render_markdown.iter_markdown), ("junit.xml", render_junit.iter_junit),
    ("html", render_html.iter_html))


def terminal_summary(doc: Doc, max_hosts: int = 20) -> List[str]:
    t = doc["totals"]
    lines = ["%d hosts: %d pass, %d warn, %d fail, %d unreachable" % (t["hosts"], t["pass"], t["warn"], t["fail"],
                                                                      t["unreachable"])]
    monitored = sum(1 for h in doc["hosts"] if (h.get("monitor") or {}).get("monitored"))
    if monitored:
        lines.append("  %d host(s) monitored by the continuous proof" % monitored)
    for code, count in sorted(t["codes"].items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append("  %-40s %d host(s)" % (code, count))
    lines.extend(states.terminal_lines(doc))
    failing = [h for h in doc["hosts"] if h["verdict"] in ("fail", "unreachable")]
    for h in failing[:max_hosts]:
        change = h.get("change") or {}
        lines.append("  %s %s: %s" % (str(h["verdict"]).upper(), h["host"], ", ".join(sorted(set(
            d["code"] + (" (%s)" % change[finding_key(d)] if finding_key(d) in change else "")
            for d in h["diagnostics"] if d["severity"] == "error")))))
    if len(failing) > max_hosts:
        lines.append("  ... and %d more failing host(s): see the reports" % (len(failing) - max_hosts))
    return lines


LATEST = "latest"     # write_all(latest=True): the one pointer to the newest complete set (a folder link)
RUNS = "runs"         # <directory>/runs/<name>/report.<ext>: each set's folder, what ``latest`` points to
PREFIX = "metnos-audit-"
LOCK = ".lock"        # .<name>.lock: held (flock) by the run writing the set <name>, removed once it is whole
DEBRIS_AGE = 3600     # seconds: an unlocked hidden temp name older than this is an earlier run's debris


class ReportWriteError(OSError):
    """A report set that could not be written whole: nothing of it is left (the message names what failed)."""


def run_name(stamp: Optional[str] = None) -> str:
    """A name no other run has: the UTC time to the microsecond (or the caller's ``stamp``) and a random run id."""
    if stamp is None:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    return "%s%s-%s" % (PREFIX, stamp, os.urandom(4).hex())


def _link_new(tmp: str, path: str) -> None:
    """files.replace's move: the finished temp file linked to a name that must not exist yet (never replaced)."""
    os.link(tmp, path)


def _locked_by_a_live_run(path: str) -> bool:
    """True when the run that made the lock file ``path`` still holds it (flock: released when it ends)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        for name in os.listdir(path):
            _remove(os.path.join(path, name))
        os.rmdir(path)
    else:
        os.unlink(path)


def _run_of(name: str) -> str:
    """The set a toolkit name belongs to: metnos-audit-<stamp>-<id> from its file, its lock or its temp files."""
    name = name.lstrip(".")
    for ext, _render in RENDERERS:
        if name.startswith(PREFIX) and "." + ext in name:
            return name[:name.index("." + ext)]
    return name[:-len(LOCK)] if name.endswith(LOCK) else name


def remove_debris(directory: str, now: Optional[float] = None) -> List[str]:
    """Remove what earlier runs left in ``directory`` and return the names removed: a set whose run ended before
    it was whole (its lock left behind, no longer held; or fewer files than formats), a set's folder under runs/
    that is not whole, its hidden temp files, and the toolkit's other hidden temp names (files.temporary_beside's,
    the latest pointer's) older than DEBRIS_AGE. A running audit's set (its lock held) is never touched."""
    if not os.path.isdir(directory):
        return []
    now = time.time() if now is None else now
    names = sorted(os.listdir(directory))
    locks = dict((_run_of(name), _locked_by_a_live_run(os.path.join(directory, name))) for name in names
                 if name.startswith("." + PREFIX) and name.endswith(LOCK))
    live = set(run for run, held in locks.items() if held)
    sets: Dict[str, int] = {}
    for name in names:
        if name.startswith(PREFIX) and not name.startswith("."):
            sets[_run_of(name)] = sets.get(_run_of(name), 0) + 1
    dead = set(run for run, held in locks.items() if not held)     # a run that ended without removing its lock
    broken = set(run for run, count in sets.items() if count < len(RENDERERS) and run not in live)
    removed = []
    for name in names:
        run = _run_of(name)
        if run in live:
            continue
        toolkit_temp = name.startswith("." + PREFIX) or name.startswith("." + LATEST) or (
            name.startswith(LATEST + ".") and name.endswith(".tmp"))
        path = os.path.join(directory, name)
        try:
            old = now - os.lstat(path).st_mtime > DEBRIS_AGE
        except OSError:
            continue
        if run in broken or (toolkit_temp and (old or run in dead)):
            _remove(path)
            removed.append(name)
    runs = os.path.join(directory, RUNS)
    if os.path.isdir(runs) and not os.path.islink(runs):
        for name in sorted(os.listdir(runs)):
            whole = all(os.path.isfile(os.path.join(runs, name, "report." + ext)) for ext, _r in RENDERERS)
            if not whole and name not in live:
                _remove(os.path.join(runs, name))
                removed.append(os.path.join(RUNS, name))
    return removed


def _not_a_folder(directory: str) -> None:
    """A destination that exists and is not a folder: its own error, naming it (never "File exists")."""
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise NotADirectoryError(errno.ENOTDIR, "the reports' destination is not a folder (it is a %s); move it "
                                 "away or choose another dest" % ("link" if os.path.islink(directory) else "file"),
                                 directory)


def _point_latest(directory: str, name: str, paths: Dict[str, str]) -> None:
    """runs/<name>/report.<ext> (hard links to the set's files), then ``latest`` swapped to that folder in one
    rename; latest.<ext> are fixed links through it (latest/report.<ext>), made once."""
    folder = os.path.join(directory, RUNS, name)
    os.makedirs(os.path.join(directory, RUNS), exist_ok=True)
    os.mkdir(folder)
    for ext, path in paths.items():
        os.link(path, os.path.join(folder, "report." + ext))
    temp = os.path.join(directory, ".%s.%s" % (LATEST, os.urandom(6).hex()))
    os.symlink(os.path.join(RUNS, name), temp)
    os.replace(temp, os.path.join(directory, LATEST))
    for ext in paths:
        link, target = os.path.join(directory, "%s.%s" % (LATEST, ext)), os.path.join(LATEST, "report." + ext)
        if os.path.islink(link) and os.readlink(link) == target:
            continue
        temp = os.path.join(directory, ".%s.%s" % (LATEST, os.urandom(6).hex()))
        os.symlink(target, temp)
        os.replace(temp, link)


def write_all(doc: Doc, directory: str, stamp: Optional[str] = None,
              timings: Optional[Dict[str, float]] = None, latest: bool = False) -> Dict[str, str]:
    """Write the four reports as one set under a name no other run has (run_name), each streamed chunk by chunk
    to a temp file then linked to its new name (never replacing a file). Returns their paths; ``timings`` (a dict),
    when given, receives the seconds each one took. The set is whole or absent: a failed write removes what this
    run wrote and raises ReportWriteError. With ``latest``, ``<directory>/latest`` (one link, swapped in one
    rename) points to this set's folder runs/<name>/ and ``latest.<ext>`` read through it: the next run's baseline
    is ``<directory>/latest.json``."""
    _not_a_folder(directory)
    os.makedirs(directory, exist_ok=True)
    name = run_name(stamp)
    lock = os.path.join(directory, "." + name + LOCK)
    # The lock is held before its name appears (made aside, locked, linked to a name that must not exist: O_EXCL's
    # guarantee): remove_debris never sees it free while this run lives.
    fd = os.open(lock + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                 0o600)
    paths: Dict[str, str] = {}
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.link(lock + ".tmp", lock)
        os.unlink(lock + ".tmp")
        try:
            for ext, render in RENDERERS:
                start = time.time()
                path = os.path.join(directory, "%s.%s" % (name, ext))
                files.replace(path, render(doc), move=_link_new)
                paths[ext] = path
                if timings is not None:
                    timings[ext] = round(time.time() - start, 3)
            if latest:
                _point_latest(directory, name, paths)
        except OSError as exc:
            for path in list(paths.values()) + [os.path.join(directory, RUNS, name)]:
                if os.path.lexists(path):
                    _remove(path)
            raise ReportWriteError(exc.errno, "the report set %s was not written whole (nothing of it is kept): %s"
                                   % (name, exc.strerror or exc), directory) from None
    finally:
        for path in (lock + ".tmp", lock):
            if os.path.lexists(path):
                os.unlink(path)
        os.close(fd)
    return paths
