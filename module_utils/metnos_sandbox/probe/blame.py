# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Blame by experiment: when the probe fails in the service's context, find out why by running it again.

The directive table (docs/unit-directives.md, service_env.DIRECTIVE_CODES) names what was measured
directive by directive; real units combine directives nobody put on a list. So when the probe fails in
a transient unit carrying the unit's context, and bwrap works in a plain one on the same host (the same
user, nothing else), the probe re-runs itself in transient units carrying the unit's context with groups
of directives *kept* and the rest removed:

1. the directives most likely to break bwrap (the table's and the classes measured on real packages'
   units: AmbientCapabilities=, Limit*=, ReadOnlyPaths=, NoExecPaths=, ...) one by one, each alone on top
   of the user; the others as one group, bisected while a group fails;
2. a group that fails while neither of its halves does holds directives that break bwrap only
   together: it is minimised (ddmin) to the smallest such set, reported as one culprit;
3. then the whole context minus every culprit found must pass; if it does not, the rest is searched
   again (a directive that breaks only together with ones found in different halves);
4. for each culprit, relaxations (relaxations.py, smallest first) are tried in the unit's context
   minus the other culprits, and the first that passes is the one offered; finally every relaxation
   at once, on the whole context, must pass: that drop-in is offered as a whole.

The probe's own unit is the only thing started: the service's unit, drop-ins and processes are never
touched (read-only for the service). Every run is a real probe (probe.run_systemd); when the runtime's
interpreter itself is killed in the unit's context (it starts bwrap with fork/exec, which a
SystemCallFilter= may kill), each trial first runs the interpreter that way. Bounded in runs and wall
time (``Bounds``), both reported, with every run's outcome.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import shlex
import time
import typing as t

from ..base.diagnostics import ERROR, Diagnostic, amend, make
from ..base.records import Json, Record
from ..service import relaxations, run_user
from .runners import RunSpec

Assignment = t.List[str]                 # [directive, value, where]

IDENTITY = ("User", "Group")             # who the processes are: kept in every trial (the plain context)
# Tried one by one before the rest is bisected: what the table names and the classes measured on real
# packages' units (docs/unit-directives.md); any Limit*= too.
SUSPECTS = ("RestrictNamespaces", "SystemCallFilter", "ProcSubset", "RestrictSUIDSGID", "DynamicUser",
            "RestrictAddressFamilies", "AmbientCapabilities", "NoExecPaths", "ReadOnlyPaths", "InaccessiblePaths",
            "TemporaryFileSystem", "RootDirectory", "RootImage", "SecureBits")
MAX_ROUNDS = 3                           # searches of the rest after the culprits found are removed
MAX_LOG = 80                             # runs kept in the result


class Bounds(Record):
    runs: int = 128
    seconds: float = 300.0


class Outcome(Record):
    """One run: passed, how it failed (kind: setup/unit/interpreter/checks/timeout/payload; cause: the
    classified cause, systemd's status name or a check's name; said: bwrap's or systemd's words)."""
    passed: bool
    kind: str
    cause: t.Optional[str] = None
    said: str = ""
    seconds: float = 0.0


class Trials(t.Protocol):
    def probe(self, assignments: t.List[Assignment], user: Json) -> Outcome: ...       # the search's run
    def confirm(self, assignments: t.List[Assignment], user: Json) -> Outcome: ...     # the whole probe
    def interpreter(self, assignments: t.List[Assignment], user: Json) -> Outcome: ...


class Group(Record):
    directives: t.List[str]
    outcome: Outcome                     # how the group alone (on top of the user) makes the probe fail
    context: t.Optional[Outcome] = None  # how the unit's context minus the other culprits fails (needed())


class _Exhausted(Exception):
    pass


def outcome_of(verdict: t.Mapping[str, t.Any]) -> Outcome:
    """A probe verdict (probe.run_systemd) as an Outcome: passed when it has findings and none is an error (the
    run's findings alone say it: runners.passed)."""
    seconds = float(verdict.get("duration") or 0.0)
    if verdict.get("diagnostics") is not None and not any(d["severity"] == ERROR
                                                          for d in verdict["diagnostics"]):
        return Outcome(True, "passed", None, "", seconds)
    failure = verdict.get("unit_failure")
    if failure:
        said = "%s/%s: %s" % (failure["status"], failure["name"], failure.get("reason") or failure["meaning"])
        return Outcome(False, "unit", failure["name"], said, seconds)
    if verdict.get("setup_failed"):
        cls = verdict.get("classification") or {}
        return Outcome(False, "setup", cls.get("cause"), cls.get("stderr_line") or cls.get("cause_text") or "",
                       seconds)
    if verdict.get("timed_out"):
        return Outcome(False, "timeout", "timeout", "the probe timed out", seconds)
    failed = [c["name"] for c in verdict.get("checks") or [] if not c.get("ok")]
    if failed:
        return Outcome(False, "checks", failed[0], "failed checks: %s" % ", ".join(failed[:5]), seconds)
    return Outcome(False, "payload", "payload_failed", (verdict.get("stderr") or "")[-200:], seconds)


class Experiment(object):
    """The search over one unit's assignments (see the module's docstring)."""

    def __init__(self, assignments: t.Sequence[t.Sequence[str]], trials: Trials, user: Json,
                 first: t.Optional[Outcome] = None, bounds: t.Optional[Bounds] = None,
                 ctx: t.Optional[t.Mapping[str, t.Any]] = None, clock: t.Callable[[], float] = time.time) -> None:
        self.assignments = [list(a) for a in assignments]
        self.trials, self.user, self.bounds, self.clock = trials, user, bounds or Bounds(), clock
        self.ctx = dict(ctx or {})
        self.atoms = list(dict.fromkeys(a[0] for a in self.assignments if a[0] not in IDENTITY))
        self.static_user = _static_user(self.assignments)
        self.cache: t.Dict[t.Tuple[t.FrozenSet[str], t.Tuple[str, ...], bool], Outcome] = {}
        if first is not None:
            self.cache[(frozenset(self.atoms), (), False)] = first
            self.cache[(frozenset(self.atoms), (), True)] = first
        self.log: t.List[Json] = []
        self.runs = 0
        self.full_runs = 0
        self.interpreter_runs = 0
        self.interpreter_in_play = False
        self.start = clock()

    # ------------------------------------------------------------------ one trial

    def lines(self, kept: t.Iterable[str], extra: t.Sequence[str] = ()) -> t.List[Assignment]:
        """The assignments of a trial: the identity, the kept directives in the unit's order, and the
        relaxation's lines last (as a drop-in). DynamicUser= removed without a User= runs as a static
        stand-in user (relaxations.STANDIN_USER), never as root."""
        keep = set(kept)
        stand_in = "DynamicUser" in self.atoms and not self.static_user and (
            "DynamicUser" not in keep or "DynamicUser=no" in extra)
        out = [a for a in self.assignments if (a[0] in IDENTITY and not stand_in) or a[0] in keep]
        if stand_in and "DynamicUser" not in keep:   # User=/Group= (systemctl show) name the dynamic user
            out.append(["User", relaxations.STANDIN_USER, "blame (DynamicUser= removed)"])
        for line in extra:
            key, _sep, value = line.partition("=")
            out.append([key, value, "blame (relaxation)"])
        return out

    def test(self, kept: t.Iterable[str], extra: t.Sequence[str] = (), full: bool = False) -> Outcome:
        """One trial (cached): the probe in a transient unit with ``kept`` and the relaxation ``extra``; ``full``:
        the whole probe (checks included), else the trials' search probe (Trials.probe)."""
        key = (frozenset(kept), tuple(extra), full)
        if key in self.cache:
            return self.cache[key]
        if self.runs + self.interpreter_runs >= self.bounds.runs or \
                self.clock() - self.start >= self.bounds.seconds:
            raise _Exhausted()
        assignments = self.lines(key[0], extra)
        out = None
        if self.interpreter_in_play:
            self.interpreter_runs += 1
            checked = self.trials.interpreter(assignments, self.user)
            out = None if checked.passed else checked
        if out is None:
            self.runs += 1
            self.full_runs += 1 if full else 0
            out = self.trials.confirm(assignments, self.user) if full else self.trials.probe(assignments, self.user)
        self.cache[key] = out
        if not full and not out.passed:          # a failed search run fails the whole probe as well
            self.cache[(key[0], key[1], True)] = out
        self.log.append({"kept": sorted(key[0]) if len(key[0]) <= 6 or len(key[0]) == len(self.atoms) else
                         "all but %s" % ", ".join(sorted(set(self.atoms) - key[0])),
                         "extra": list(extra), "full": full, "passed": out.passed, "kind": out.kind,
                         "cause": out.cause, "seconds": round(out.seconds, 2)})
        return out

    # ------------------------------------------------------------------ the search

    def find(self, atoms: t.Sequence[str]) -> t.List[Group]:
        """Culprit groups among ``atoms``: suspects one by one, the others bisected."""
        groups = []
        for atom in [a for a in atoms if _suspect(a)]:
            out = self.test([atom])
            if not out.passed:
                groups.append(Group([atom], out))
        others = [a for a in atoms if not _suspect(a)]
        return groups + (self.bisect(others) if others else [])

    def bisect(self, part: t.Sequence[str], known: t.Optional[Outcome] = None) -> t.List[Group]:
        out = known or self.test(part)
        if out.passed:
            return []
        if len(part) == 1:
            return [Group(list(part), out)]
        half = len(part) // 2
        found = self.bisect(part[:half]) + self.bisect(part[half:])
        return found or [self.minimise(part, out)]

    def minimise(self, part: t.Sequence[str], out: Outcome) -> Group:
        """ddmin: the smallest subset of ``part`` that still makes the probe fail when kept alone."""
        current, n = list(part), 2
        while len(current) >= 2:
            chunks = [current[i * len(current) // n:(i + 1) * len(current) // n] for i in range(n)]
            reduced = None
            for chunk in chunks:
                result = self.test(chunk)
                if not result.passed:
                    reduced, n, out = chunk, 2, result
                    break
            if reduced is None and n > 2:
                for chunk in chunks:
                    rest = [a for a in current if a not in chunk]
                    result = self.test(rest)
                    if not result.passed:
                        reduced, n, out = rest, max(n - 1, 2), result
                        break
            if reduced is None:
                if n >= len(current):
                    break
                n = min(len(current), 2 * n)
                continue
            current = reduced
        return Group(current, out)

    def complete(self, groups: t.List[Group]) -> t.Tuple[t.List[Group], t.Optional[str]]:
        """The whole context minus every culprit must pass; else search the rest again."""
        for _round in range(MAX_ROUNDS):
            named = set(d for g in groups for d in g.directives)
            rest = [a for a in self.atoms if a not in named]
            out = self.test(rest)
            if out.passed:
                return groups, None
            more = self.bisect(rest, known=out) if rest else []
            if not more:
                return groups, "the unit's context without %s still fails (%s), yet no part of the rest fails " \
                               "alone" % (", ".join(sorted(named)) or "anything", out.cause or out.kind)
            groups = groups + more
        return groups, "culprits still remain after %d searches of the rest" % MAX_ROUNDS

    def needed(self, groups: t.List[Group]) -> t.List[Group]:
        """The culprits the unit's context really needs removed: a group whose removal is not needed once the
        others are removed (kept with everything else, the probe passes) was found only because a trial removed
        something else (e.g. a directive that breaks only without DynamicUser=): it is dropped."""
        keep = list(groups)
        for group in list(groups):
            others = set(d for g in keep if g is not group for d in g.directives)
            out = self.test([a for a in self.atoms if a not in others])
            if out.passed and len(keep) > 1:
                keep.remove(group)
            else:
                keep[keep.index(group)] = group._replace(context=out)
        return keep

    # ------------------------------------------------------------------ relaxations

    def values(self, directive: str) -> t.List[str]:
        return [a[1] for a in self.assignments if a[0] == directive]

    def relax(self, group: Group, groups: t.Sequence[Group]) -> Json:
        """The first relaxation of ``group`` with which the unit's context minus the other culprits passes."""
        others = set(d for g in groups if g is not group for d in g.directives)
        kept = [a for a in self.atoms if a not in others]
        tried: t.List[Json] = []
        for directive in group.directives:
            ladder = relaxations.candidates(directive, self.values(directive), self.ctx)
            last_failed: t.Optional[t.List[str]] = None
            for lines in ladder:
                out = self.test(kept, lines)
                tried.append({"lines": lines, "passed": out.passed, "cause": out.cause})
                if out.passed:
                    lines = self._narrow(directive, kept, last_failed, lines, tried)
                    confirmed = self.test(kept, lines, full=True)       # offered only if the whole probe passes
                    tried.append({"lines": lines, "passed": confirmed.passed, "cause": confirmed.cause, "full": True})
                    if confirmed.passed:
                        return {"lines": lines, "tried": tried}
                last_failed = lines
        return {"lines": None, "tried": tried}

    def _narrow(self, directive: str, kept: t.Sequence[str], failed: t.Optional[t.List[str]], passed: t.List[str],
                tried: t.List[Json]) -> t.List[str]:
        """LimitNPROC=: the smallest value between the last that failed and the first that passed, then one
        more process for the runtime (it forks bwrap where the probe's launcher executes it), tried too."""
        if directive != "LimitNPROC":
            return passed
        low = relaxations.limit_value(failed[0].split("=", 1)[1] if failed else self.values(directive)[-1])
        high = relaxations.limit_value(passed[0].split("=", 1)[1])
        if low is None or high is None:
            return passed
        while high - low > 1:
            mid = (low + high) // 2
            out = self.test(kept, ["%s=%d" % (directive, mid)])
            tried.append({"lines": ["%s=%d" % (directive, mid)], "passed": out.passed, "cause": out.cause})
            low, high = (low, mid) if out.passed else (mid, high)
        offer = ["%s=%d" % (directive, high + 1)]
        out = self.test(kept, offer)
        tried.append({"lines": offer, "passed": out.passed, "cause": out.cause})
        return offer if out.passed else ["%s=%d" % (directive, high)]

    # ------------------------------------------------------------------ the whole experiment

    def run(self) -> Json:
        result: Json = {"ran": True, "directives": list(self.atoms), "python": self.ctx.get("python")}
        groups: t.List[Group] = []
        relaxed: t.List[Json] = []
        try:
            self._interpreter_first()
            plain = self.test([])
            result["plain_context"] = "passed" if plain.passed else "failed"
            if not plain.passed:
                result.update(ran=False, why="bwrap fails in a plain context on this host too (as the service's "
                                             "user, nothing else): %s; not the unit's directives" % (
                                                 plain.said or plain.cause or plain.kind))
                return self._record(result, groups, relaxed)
            groups, problem = self.complete(self.find(self.atoms))
            if problem:
                result["inconsistent"] = problem
            groups = self.needed(groups)
            for group in groups:
                relaxed.append(self.relax(group, groups))
            lines = [line for r in relaxed for line in (r["lines"] or [])]
            if groups and all(r["lines"] for r in relaxed):
                combined = self.test(self.atoms, lines, full=True)
                result["relaxation"] = {"lines": lines, "passed": combined.passed, "cause": combined.cause}
        except _Exhausted:
            result["exhausted"] = True
        return self._record(result, groups, relaxed)

    def _interpreter_first(self) -> None:
        """Whether the runtime's interpreter itself dies in the unit's context (then every trial checks it)."""
        self.interpreter_runs += 1
        full = self.trials.interpreter(self.lines(self.atoms), self.user)
        if full.passed:
            return
        self.interpreter_runs += 1
        if self.trials.interpreter(self.lines([]), self.user).passed:
            self.interpreter_in_play = True
            self.cache[(frozenset(self.atoms), (), False)] = full
            self.cache[(frozenset(self.atoms), (), True)] = full

    def _record(self, result: Json, groups: t.Sequence[Group], relaxed: t.Sequence[Json]) -> Json:
        result["culprits"] = []
        for index, group in enumerate(groups):
            relax = relaxed[index] if index < len(relaxed) else {"lines": None, "tried": []}
            # what the unit's context (minus the other culprits) says, else what the group alone says
            shown = group.context if group.context is not None and not group.context.passed else group.outcome
            code = relaxations.code_for(group.directives, shown.kind, shown.cause)
            if code == "unit_directive_breaks_bwrap":
                code = relaxations.code_for(group.directives, group.outcome.kind, group.outcome.cause)
            result["culprits"].append({
                "directives": group.directives, "code": code,
                "lines": ["%s=%s" % (a[0], a[1]) for a in self.assignments if a[0] in group.directives],
                "where": sorted(set(a[2] for a in self.assignments if a[0] in group.directives)),
                "alone": len(group.directives) == 1, "kind": shown.kind, "cause": shown.cause, "said": shown.said,
                "said_alone": group.outcome.said, "relaxation": relax["lines"], "tried": relax["tried"]})
        result.update(runs=self.runs, full_runs=self.full_runs, interpreter_runs=self.interpreter_runs,
                      seconds=round(self.clock() - self.start, 1), interpreter_killed=self.interpreter_in_play,
                      bounds={"runs": self.bounds.runs, "seconds": self.bounds.seconds}, log=self.log[-MAX_LOG:])
        result["complete"] = bool(result["ran"] and not result.get("exhausted") and not result.get("inconsistent")
                                  and (result.get("relaxation") or {}).get("passed"))
        return result


def _static_user(assignments: t.Sequence[t.Sequence[str]]) -> bool:
    """Whether the processes run as a static account: User= names one that exists (outside the range systemd
    allocates dynamic users from), or there is no DynamicUser=yes."""
    users = [a[1] for a in assignments if a[0] == "User"]
    dynamic = [a[1] for a in assignments if a[0] == "DynamicUser"]
    if not dynamic or dynamic[-1].strip().lower() not in ("1", "yes", "y", "true", "t", "on"):
        return bool(users)
    return bool(users) and not run_user.resolve_service_user({"User": users[-1],
                                                              "DynamicUser": "yes"}).get("dynamic")


def _suspect(directive: str) -> bool:
    return directive in SUSPECTS or directive.startswith("Limit")


# --------------------------------------------------------------------------- findings

def _quoted(lines: t.Sequence[str]) -> str:
    return " ".join(shlex.quote(line) for line in lines)


class Findings(Record):
    diagnostics: t.List[Diagnostic]
    directives: t.List[str]              # every culprit directive, in the order found
    unit_killed: bool = False            # the runtime's interpreter dies first: bwrap's "setup failure" is not bwrap's


def findings(result: t.Mapping[str, t.Any], unit: str, static: t.Sequence[t.Mapping[str, t.Any]] = ()) -> Findings:
    """One finding per culprit, the whole drop-in, and what stayed inconclusive. A culprit the directive
    table already named for this unit (``static``: the service check's findings) with the same relaxation is
    that finding, confirmed ("blamed" and "found by experiment"): the report lists it once."""
    out: t.List[Diagnostic] = []
    how = "%d probe runs%s in %ss" % (result.get("runs", 0), (" and %d of the runtime's interpreter" %
                                                              result["interpreter_runs"]) if result.get(
        "interpreter_runs") else "", result.get("seconds"))
    for culprit in result.get("culprits") or []:
        out.append(_culprit_finding(culprit, unit, how, static))
    relaxation = result.get("relaxation") or {}
    if relaxation.get("passed") and len(result.get("culprits") or []) > 1:
        out.append(make("probe_relaxation_found", unit=unit, relax=relaxation["lines"],
                        relax_words=_quoted(relaxation["lines"]),
                        fill={"lines": "; ".join(relaxation["lines"])}))
    if result.get("interpreter_killed"):
        out.append(make("probe_unit_killed", wording="interpreter", unit=unit, signal="SYS",
                        python=result.get("python")))
    out.extend(_inconclusive(result, unit))
    return Findings(out, [d for c in result.get("culprits") or [] for d in c["directives"]],
                    bool(result.get("interpreter_killed")))


def _culprit_finding(culprit: t.Mapping[str, t.Any], unit: str, how: str,
                     static: t.Sequence[t.Mapping[str, t.Any]]) -> Diagnostic:
    lines = culprit["relaxation"]
    relaxed = ("the probe passed with %s (tried for real)%s." % ("; ".join(lines), relaxations.note(lines)) if lines
               else
               "no relaxation tried made the probe pass: remove %s from the unit." % ", ".join(
                   "%s=" % d for d in culprit["directives"]))
    for diag in static:
        details = diag.get("details") or {}
        if diag.get("code") == culprit["code"] and [details.get("directive")] == culprit["directives"] and \
                lines == [details.get("relax")]:
            return amend(diag, "confirmed_by_experiment", how=how, relaxed=relaxed)
    shown = ", ".join(culprit["lines"][:6]) + (" ..." if len(culprit["lines"]) > 6 else "")
    return make(culprit["code"], variant="experiment" if lines else "experiment_no_dropin",
                wording="experiment_unit" if culprit["kind"] == "unit" else "experiment", unit=unit,
                directives=culprit["directives"],
                directive=culprit["directives"][0], relax=lines, relax_words=_quoted(lines or []),
                relax_note="Remove %s from the unit (no drop-in relaxation made the probe pass)."
                % ", ".join("%s=" % d for d in culprit["directives"]),
                found_by="experiment", fill={
                    "shown": shown, "together": "" if culprit["alone"] else " (only together)",
                    "said": (culprit["said"] or culprit["cause"] or culprit["kind"]).rstrip(".") + ".",
                    "how": how, "relaxed": relaxed})


def _inconclusive(result: t.Mapping[str, t.Any], unit: str) -> t.List[Diagnostic]:
    relaxation = result.get("relaxation") or {}
    named = " (named so far: %s)" % ", ".join(d for c in result.get("culprits") or [] for d in c["directives"]) \
        if result.get("culprits") else ""
    if result.get("exhausted"):
        return [make("probe_blame_inconclusive", wording="exhausted", unit=unit,
                     runs=result.get("runs"),
                     seconds=result.get("seconds"), max_runs=result["bounds"]["runs"],
                     max_seconds=result["bounds"]["seconds"], fill={"named": named})]
    if result.get("inconsistent"):
        return [make("probe_blame_inconclusive", wording="inconsistent", unit=unit,
                     fill={"why": result["inconsistent"], "named": named})]
    if result.get("ran") and result.get("culprits") and not relaxation.get("passed"):
        why = ("with %s it failed: %s" % ("; ".join(relaxation["lines"]), relaxation.get("cause"))
               if relaxation else "no relaxation passed for %s" % ", ".join(
                   d for c in result["culprits"] if not c["relaxation"] for d in c["directives"]))
        return [make("probe_blame_inconclusive", wording="no_relaxation", unit=unit,
                     fill={"why": why})]
    return []


def bounds(params: t.Mapping[str, t.Any]) -> Bounds:
    """The experiment's bounds from the probe's parameters (blame_max_runs, blame_max_seconds)."""
    default = Bounds()
    return Bounds(int(params.get("blame_max_runs") or default.runs),
                  float(params.get("blame_max_seconds") or default.seconds))


def diagnose(job: RunSpec, user: Json, settings: t.Mapping[str, t.Any], failed: t.Mapping[str, t.Any],
             limits: t.Optional[Bounds] = None) -> Json:
    """The experiment after ``job`` failed in the service's context (``settings``: run._run_in_context, its
    verdict ``failed``), each trial at most 30 s: its record (findings() turns it into diagnostics)."""
    from .blame_trials import SystemdTrials  # here, not at the top: blame_trials imports this module (a real cycle)
    first = outcome_of(failed)
    trials = SystemdTrials(job._replace(timeout=min(float(job.timeout), 30.0)), light=first.kind in ("setup", "unit"))
    experiment = Experiment(settings.get("assignments") or [], trials, user, first=first,
                            bounds=limits, ctx={"bwrap": job.argv[0], "python": job.python})
    return experiment.run()
