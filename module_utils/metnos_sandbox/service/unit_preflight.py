# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe's execution context built and proven (build): the plan from the unit files (unit_context), then one
transient unit started with it (Preflight: ``systemd-run`` once with ``/bin/true``, ``RemainAfterExit=yes``).
What systemd-run rejects is data: retried without it, named with systemd's own words; ``systemctl show`` of
that unit is compared with the service's, a differing property retried once in the form ``show`` prints it.

Pure Python, no Ansible imports; runs on managed hosts (Python >= 3.8).
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import re
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..base.records import Record
from ..host import bwrap
from .context_deny import DENY
from .unit_context import (
    Assignment,
    compare,
    directives,
    parse_show_all,
    plan,
    property_args,
    read_assignments,
    show_assignment,
    specifier_table,
    unit_files,
)

# --------------------------------------------------------------------------- systemd-run as data

MAX_ATTEMPTS = 24           # systemd-run attempts per preflight (rejections, bisection, fallback)
_REJECTION_PATTERNS = (
    re.compile(r"Unknown assignment: ([A-Za-z0-9]+)="),
    re.compile(r"Cannot set property ([A-Za-z0-9]+)"),
    re.compile(r"Failed to parse ([A-Za-z0-9]+)"),
    re.compile(r"Missing argument to ([A-Za-z0-9]+)="),
    re.compile(r"Invalid ([A-Za-z0-9]+) setting"),
    re.compile(r"\b([A-Z][A-Za-z0-9]+)= "),
    re.compile(r"Dependency type ([A-Za-z0-9]+) may not"),
)


def rejected_directive(stderr: str, keys: Sequence[str]) -> Optional[str]:
    """The directive a systemd-run error names, among ``keys``; None when it names none."""
    for pattern in _REJECTION_PATTERNS:
        for match in pattern.finditer(stderr):
            if match.group(1) in keys:
                return match.group(1)
    words = set(re.findall(r"[A-Za-z][A-Za-z0-9]+", stderr))
    named = sorted((k for k in keys if k in words), key=len, reverse=True)
    return named[0] if len(named) == 1 else None


def _error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith("Running as unit")]
    return lines[-1][:300] if lines else "systemd-run failed without a message"


class Preflight(object):
    """Start the transient unit once with the carried context and learn what systemd accepts."""

    def __init__(self, runner: bwrap.Runner, unit_name: str, scope: str = "system", user: Optional[str] = None,
                 base_args: Sequence[str] = ()) -> None:
        self.runner = runner
        self.unit_name = unit_name
        self.scope = scope
        self.user = user
        self.base_args = list(base_args)
        self.attempts = 0
        self.started = False

    def _systemctl(self, *args: str) -> Tuple[int, str, str]:
        argv = ["systemctl"]
        if self.scope == "user":
            argv += ["--user", "--machine=%s@" % self.user]
        return self.runner(argv + list(args))

    def start(self, assignments: Sequence[Sequence[str]]) -> Tuple[bool, str]:
        """One attempt: (ok, stderr)."""
        self.attempts += 1
        argv = ["systemd-run"]
        if self.scope == "user":
            argv += ["--user", "--machine=%s@" % self.user]
        argv += ["--no-block", "--unit=" + self.unit_name, "--service-type=exec", "-p", "RemainAfterExit=yes",
                 "-p", "KillMode=mixed"] + self.base_args + property_args(assignments) + ["/bin/true"]
        rc, _out, err = self.runner(argv)
        self.started = rc == 0
        return rc == 0, err

    def show(self) -> Optional[Dict[str, str]]:
        rc, out, _err = self._systemctl("show", "--all", "--no-pager", self.unit_name + ".service")
        return parse_show_all(out) if rc == 0 else None

    def cleanup(self) -> None:
        """Stop the preflight unit if it was started (a refused one never existed)."""
        if not getattr(self, "started", False):
            return
        self.started = False
        self._systemctl("stop", self.unit_name + ".service")
        self._systemctl("reset-failed", self.unit_name + ".service")

    def accept(self, assignments: Sequence[Assignment],
               not_carried: List[Dict[str, Any]]) -> Optional[List[Assignment]]:
        """Drop rejected directives until systemd-run accepts the rest. Returns the accepted list
        (None when even the empty context is refused)."""
        pending = list(assignments)
        while self.attempts < MAX_ATTEMPTS:
            ok, err = self.start(pending)
            if ok:
                return pending
            keys = list(dict.fromkeys(a[0] for a in pending))
            if not keys:
                return None
            culprit = rejected_directive(err, keys) or self._bisect(pending)
            if culprit is None:
                return None
            where = [a[2] for a in pending if a[0] == culprit]
            not_carried.append({"directive": culprit, "where": where[0] if where else None,
                                "reason": "systemd-run refused it: %s" % _error_line(err)})
            pending = [a for a in pending if a[0] != culprit]
        return None

    def _bisect(self, pending: Sequence[Assignment]) -> Optional[str]:
        """Find one directive whose assignments alone are refused (the error named none)."""
        keys = list(dict.fromkeys(a[0] for a in pending))
        while len(keys) > 1 and self.attempts < MAX_ATTEMPTS:
            half = keys[:len(keys) // 2]
            ok, _err = self.start([a for a in pending if a[0] in half])
            if ok:
                self.cleanup()
                keys = keys[len(keys) // 2:]
            else:
                keys = half
        if len(keys) == 1:
            return keys[0]
        return None


class UnitAddress(Record):
    """Which unit, in which manager: the ``unit``'s name, its ``scope`` ("system" or "user"), the ``user`` whose
    manager holds a user unit, and that user's passwd entry (``user_entry``: name, uid, gid, home, shell), which
    the unit files' specifiers (%h, %u, ...) are expanded with."""
    unit: str
    scope: str = "system"
    user: Optional[str] = None
    user_entry: Optional[Mapping[str, Any]] = None


def build(show: Mapping[str, str], runner: bwrap.Runner, address: UnitAddress, unit_name: Optional[str] = None,
          verify: bool = True, read: Optional[Callable[[str], str]] = None) -> Dict[str, Any]:
    """The whole context: plan from the unit files, prove it with a preflight unit (``unit_name``: its name,
    random when None; none with ``verify`` false; ``read``: how the unit files are read).

    ``show``: the service's `systemctl show --all` as a dict. Returns the context dict with
    ``assignments`` (what the probe passes), ``excluded``, ``not_carried``, ``differences``,
    ``verified`` and ``confidence`` ("full" or "reduced") and ``reasons``.
    """
    scope = address.scope
    files = unit_files(show)
    assignments, problems = read_assignments(files, read)
    table = specifier_table(address.unit, scope, address.user_entry, show.get("FragmentPath") or None)
    ctx = plan(assignments, table, static_user=scope == "system")
    for problem in problems:       # a file systemd loaded but we cannot read: its directives are unknown
        ctx["not_carried"].append({"directive": "(all of %s)" % problem["path"], "where": problem["path"],
                                   "reason": "the unit file could not be read: %s" % problem["error"],
                                   "category": "unreadable"})
    ctx.update(files=files, differences=[], verified=False, attempts=0)
    if verify:
        pre = Preflight(runner, unit_name or "metnos-probe-ctx-%s" % os.urandom(5).hex(), scope, address.user)
        try:
            _verify(ctx, pre, show)
        finally:
            pre.cleanup()
        ctx["attempts"] = pre.attempts
    _reconcile(ctx)
    ctx["carried"] = directives(ctx)
    reasons = ["%s not carried: %s" % (n["directive"], n["reason"]) for n in ctx["not_carried"]]
    reasons += ["%s differs: the service has %r, the probe's unit %r" % (d["property"], d["service"], d["probe"])
                for d in ctx["differences"]]
    if verify and not ctx["verified"]:
        reasons.append("the copy could not be verified (systemd-run refused the transient unit)")
    ctx["reasons"] = reasons
    ctx["confidence"] = "reduced" if reasons else "full"
    return ctx


def _reconcile(ctx: Dict[str, Any]) -> None:
    """A directive systemd-run refused in the files' form but carried in the form `systemctl show`
    prints (e.g. PrivateTmp=disconnected as PrivateTmpEx=disconnected) is carried, not missing."""
    shown = dict((a[0], a) for a in ctx["assignments"] if str(a[2]).startswith("systemctl show"))
    differing = set(d["property"] for d in ctx["differences"])
    keep = []
    for item in ctx["not_carried"]:
        name = item["directive"]
        forms = [shown[k] for k in (name, name + "Ex") if k in shown]
        if item.get("category") is None and forms and not differing & set((name, name + "Ex")):
            ctx.setdefault("carried_as", []).append(
                {"directive": name, "where": item.get("where"),
                 "as": ["%s=%s" % (f[0], f[1]) for f in forms]})
            continue
        keep.append(item)
    ctx["not_carried"] = keep


def _verify(ctx: Dict[str, Any], pre: Preflight, service_show: Mapping[str, str]) -> None:
    accepted = pre.accept(ctx["assignments"], ctx["not_carried"])
    if accepted is None:
        ctx["assignments"] = []
        return
    ctx["assignments"] = accepted
    probe_show = pre.show()
    pre.cleanup()
    if probe_show is None:
        return
    diffs = expected_mounts(compare(service_show, probe_show), ctx)
    if diffs:
        # Second round: each differing property in the form `systemctl show` prints it, instead
        # of the files' assignments of that directive (also what the files do not say, such as
        # the slice of a template instance). A form systemd-run refuses keeps the first round's.
        fixes: List[Assignment] = []
        for diff in diffs:
            assignment = show_assignment(diff["property"], service_show)
            if assignment and assignment[0] not in DENY and not any(f[0] == assignment[0] for f in fixes):
                fixes.append([assignment[0], assignment[1], "systemctl show %s" % diff["property"]])
        if fixes:
            second = _second_round(pre, accepted, fixes, service_show, ctx.get("carried_as"))
            if second is not None and len(second[1]) < len(diffs):
                ctx["assignments"], diffs = second
    ctx["differences"] = diffs
    ctx["verified"] = True


def expected_mounts(diffs: Iterable[Dict[str, Any]], ctx: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Drop the ReadWritePaths= difference that is exactly the directories carried as mounts."""
    added = set(p for c in ctx.get("carried_as") or [] for p in c.get("mount_only") or [])
    out = []
    for diff in diffs:
        if diff["property"] == "ReadWritePaths" and added:
            extra = set((diff["probe"] or "").split()) - set((diff["service"] or "").split())
            missing = set((diff["service"] or "").split()) - set((diff["probe"] or "").split())
            if not missing and extra <= added:
                continue
        out.append(diff)
    return out


def _second_round(pre: Preflight, accepted: List[Assignment], fixes: List[Assignment], service_show: Mapping[str, str],
                  carried_as: Optional[Sequence[Mapping[str, Any]]] = ()
                  ) -> Optional[Tuple[List[Assignment], List[Dict[str, Any]]]]:
    """(assignments, differences) with the show forms that systemd-run accepts, or None."""
    fix_keys = set(f[0] for f in fixes)
    refused: List[Dict[str, Any]] = []
    ok_list = pre.accept([a for a in accepted if a[0] not in fix_keys] + fixes, refused)
    if ok_list is None:
        return None
    dropped = set(n["directive"] for n in refused)
    if dropped:
        pre.cleanup()
        ok_list = ok_list + [a for a in accepted if a[0] in dropped]
        ok, _err = pre.start(ok_list)
        if not ok:
            return None
    shown = pre.show()
    pre.cleanup()
    if shown is None:
        return None
    return ok_list, expected_mounts(compare(service_show, shown), {"carried_as": carried_as})
