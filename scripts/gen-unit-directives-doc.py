#!/usr/bin/env python3
"""docs/unit-directives.md from the measurement (docs/unit-directives.json, written by
tests/system/test_unit_directives.py with METNOS_UPDATE_DIRECTIVES=1) and from the code (the
codes and smallest fixes of service_env.restriction_diagnostics, the deny list of context_deny).

    python scripts/gen-unit-directives-doc.py > docs/unit-directives.md

tests/unit/test_unit_directives_doc.py fails when the file and this output differ.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
import core_path  # noqa: E402  (scripts/: the core as ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox)

core_path.use_core()

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe.blame import (
    MAX_ROUNDS,
    SUSPECTS,
    Bounds,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import (
    context_deny,  # noqa: E402
    relaxations,  # noqa: E402
    restrictions,
    systemd_unit,  # noqa: E402
)

DATA = os.path.join(ROOT, "docs", "unit-directives.json")
BLAME = os.path.join(ROOT, "docs", "unit-blame.json")
MARK = {"works": "works", "breaks": "**breaks bwrap**", "not measurable here": "not measurable here"}


def smallest_fix(lines, bwrap_version):
    """The relax line restriction_diagnostics gives for these unit lines (None when none)."""
    settings = systemd_unit.settings_from_text("[Service]\n" + "\n".join(lines) + "\n")
    fixes = []
    for diag in restrictions.restriction_diagnostics(settings, "metnos.service", {"version": bwrap_version}):
        details = diag.get("details") or {}
        fixes.append("`%s`" % details["relax"] if details.get("relax") else details.get("relax_note") or "-")
    return "; ".join(fixes) or None


def load_blame():
    if not os.path.exists(BLAME):
        return {}
    with open(BLAME) as handle:
        return json.load(handle)


def _median(values):
    values = sorted(v for v in values if v is not None)
    return values[len(values) // 2] if values else 0


def render_blame(blame):
    """The experiment: what it does, its bounds, and its measured cost per failing host (docs/unit-blame.json,
    written by tests/system/test_blame_fleet.py)."""
    bounds = Bounds()
    out = ["## Blame by experiment", "",
           "The table above is measured directive by directive; real units combine directives nobody put on a list. "
           "So when the probe fails in the service's context (a transient unit carrying the unit's context) and bwrap "
           "works in a plain one on the same host (the service's user, nothing else), the probe finds the culprits "
           "itself (`module_utils/metnos_sandbox/probe/blame.py`):", "",
           "1. The directives most likely to break bwrap (%s, every `Limit*=`) are kept one by one on top of the "
           "user; all the others as one group, bisected while a group fails." % ", ".join(
               "`%s=`" % d for d in SUSPECTS),
           "2. A group that fails while neither half does holds directives that break bwrap **only together**: it is "
           "minimised (ddmin) to the smallest such set and reported as one culprit (the finding says \"only "
           "together\").",
           "3. The whole context minus every culprit must pass; otherwise the rest is searched again (at most %d "
           "times). A culprit the context does not need removed once the others are (found only because a trial "
           "removed something else) is dropped." % MAX_ROUNDS,
           "4. For each culprit, relaxations are tried smallest first (`relaxations.py`) in the unit's context minus "
           "the other culprits; the first that passes is the one offered. `LimitNPROC=` is narrowed to the smallest "
           "value that passes, then one more process for the runtime (it forks bwrap where the probe's launcher "
           "executes it), tried too. Finally every relaxation at once, on the whole context, must pass: that "
           "drop-in is offered as a whole (`probe_relaxation_found`).",
           "5. If the runtime's interpreter itself is killed in the unit's context (it starts bwrap with "
           "fork/exec, which a `SystemCallFilter=` may kill), every trial first runs the interpreter that way: "
           "that culprit is `unit_syscall_filter_kills_interpreter`, and bwrap's \"killed by SIGSYS\" is not "
           "reported as bwrap's.", "",
           "A culprit is reported with the directive table's code when the table knows the directive, with its "
           "class's code (`unit_ambient_capabilities`, `unit_resource_limit_blocks_bwrap`, `unit_read_only_proc`, "
           "`unit_noexec_bwrap`, `unit_syscall_filter_kills_interpreter`) when bwrap's words or the directive say "
           "it, and otherwise with `unit_directive_breaks_bwrap`, which names it. Relaxations tried, in order:", ""]
    examples = [("AmbientCapabilities", ["CAP_NET_BIND_SERVICE"]), ("LimitNPROC", ["1"]),
                ("ReadOnlyPaths", ["/"]), ("NoExecPaths", ["/"]), ("SystemCallFilter", ["@system-service"]),
                ("RestrictNamespaces", ["yes"]), ("RestrictAddressFamilies", ["AF_UNIX"]),
                ("DynamicUser", ["yes"]), ("PrivateUsers", ["yes"])]
    for name, values in examples:
        tried = relaxations.candidates(name, values, {"bwrap": "/usr/bin/bwrap",
                                                      "python_resolved": "/usr/bin/python3.N"})
        out.append("- `%s=%s`: %s" % (name, values[0], ", then ".join(
            "`%s`" % "` + `".join(c) for c in tried[:7]) + (" ..." if len(tried) > 7 else "")))
    out += ["", ("Bounds: at most %d runs and %d s per failing host (`blame_max_runs`, `blame_max_seconds` of "
                 "`metnos.sandbox.sandbox_probe`; `blame: false` turns the experiment off); both, and every run's "
                 "outcome, are in the probe's result (`blame.runs`, `blame.interpreter_runs`, `blame.seconds`, "
                 "`blame.log`). Reaching a bound is `probe_blame_inconclusive`, with what was named so far. "
                 "The probe's timeout applies to each run (at most 30 s); a probe that timed out starts no "
                 "experiment.") % (bounds.runs, bounds.seconds),
            "",
            "Read-only for the service: only the probe's own transient units (`metnos-probe-*`) are started; the "
            "service's unit, drop-ins and processes are never touched, and no `daemon-reload` is made (the system "
            "test compares the unit files, drop-ins, MainPID and NRestarts before and after). The probe's launcher "
            "(`/bin/sh`, standing for the service's own process) is given an `ExecPaths=` of its own where the unit "
            "has `NoExecPaths=`; bwrap and the payload are not. `DynamicUser=` removed without a static `User=` "
            "runs as `%s`, never as root; a relaxation offering `User=%s` says to name a static user of the "
            "service's own instead." % (relaxations.STANDIN_USER, relaxations.STANDIN_USER), ""]
    if not blame:
        return out
    out += ["### Measured on the fleet", "",
            "`tests/system/test_blame_fleet.py`: the `[Service]` hardening of %d units of real Debian 12 packages "
            "(`tests/system/fleet_units.py`) on stand-in Metnos units (plus a unit naming a missing path and one with "
            "`DynamicUser=yes` and a static `User=`), on both hosts at once: the whole fleet on Debian 12, the units "
            "of the classes and the combination on Debian 13. Every failing unit got its culprits, and its offered "
            "drop-in, pasted as the remediation says, made the probe pass on the real unit." % (
                len(blame.get("debian12", next(iter(blame.values())))["units"]) - 2), "",
            "| host | units | failing | runs per failing host (median / max) | seconds per failing host (median / max) "
            "| the whole run, 4 probes at a time: wall / CPU of the host |", "|---|---|---|---|---|---|"]
    for key in sorted(blame):
        units = blame[key]["units"]
        failing = [u for u in units.values() if not u["passed"]]
        runs = [(u["runs"] or 0) + (u["interpreter_runs"] or 0) for u in failing]
        secs = [u["seconds"] for u in failing]
        out.append("| %s (systemd %s, bubblewrap %s) | %d | %d | %s / %s | %s / %s | %s s / %s s |" % (
            key.replace("debian", "Debian "), blame[key]["systemd"], blame[key]["bubblewrap"], len(units),
            len(failing), _median(runs), max(runs or [0]), _median(secs), max(secs or [0]),
            blame[key]["wall_seconds"]["probe_and_blame"], blame[key].get("cpu_seconds")))
    keys = sorted(blame)
    out += ["", "Culprits found (code), per unit:", "",
            "| unit | %s |" % " | ".join(k.replace("debian", "Debian ") for k in keys),
            "|---|%s" % ("---|" * len(keys))]
    for unit in sorted(blame[keys[0]]["units"]):
        cells = []
        for key in keys:
            entry = blame[key]["units"].get(unit) or {}
            if entry.get("passed"):
                cells.append("passes")
            else:
                cells.append("<br>".join("%s (`%s`)" % (" + ".join("`%s=`" % d for d in ds), code)
                                         for ds, code in entry.get("culprits") or []) or "-")
        out.append("| `%s` | %s |" % (unit, " | ".join(cells)))
    out += ["", "Seconds are wall time on the build machine (2 cores) while other work ran (load average 12-17): the "
            "CPU time the host containers used (their cgroup, for the probes, the experiments and the probes after "
            "the drop-ins were pasted) is what a quiet machine pays; the probe's runs are about 0.1-0.3 s each "
            "there. A run is counted in `runs` (the search's own, cheap when the probe failed before its payload "
            "ran: bwrap with a one-line payload), `full_runs` (the whole probe, confirming each offered "
            "relaxation) and `interpreter_runs`. `PrivateUsers=` with `ProtectProc=invisible` stops systemd 252 "
            "and 257 from starting any process in these containers (217/USER): the experiment names the pair "
            "together.", ""]
    return out


def render(data, blame=None):
    releases = sorted(data)
    out = ["# Unit directives and bubblewrap", "",
           "Generated by `scripts/gen-unit-directives-doc.py` from the measurement in "
           "`docs/unit-directives.json`; do not edit by hand.", "",
           "Each directive was set **alone** on a real systemd unit (`User=metnos`, a oneshot service) in a "
           "container with `CAP_SYS_ADMIN` (so that mount-namespace directives really apply), and from inside "
           "that unit (`tests/system/test_unit_directives.py`):", "",
           "- its effect was read back from the kernel (mount table, namespace inodes, `/proc/self/status`, a "
           "syscall's errno, rlimits); a baseline unit proves each check can fail. A directive whose effect "
           "could not be seen is **not measurable here** (never \"works\");",
           "- the strict probe profile ran for real as the unit's user and was checked from inside;",
           "- the toolkit's probe (a transient unit carrying the unit's copied context) reached the same "
           "verdict from outside, and named every breaking directive by its code.", "",
           "Measured on:", ""]
    for key in releases:
        out.append("- %s: systemd %s, bubblewrap %s" % (key.replace("debian", "Debian "), data[key]["systemd"],
                                                          data[key]["bubblewrap"]))
    out += ["", "| directive (unit lines) | %s | code | smallest fix (enforce with `metnos_sandbox_relax_restrictions: "
            "true`) |" % " | ".join("%s (systemd %s)" % (k.replace("debian", "Debian "), data[k]["systemd"])
                                    for k in releases),
            "|---|%s---|---|" % ("---|" * len(releases))]
    rows = data[releases[0]]["rows"]
    for index, row in enumerate(rows):
        cells = []
        codes = []
        fix = None
        for key in releases:
            entry = data[key]["rows"][index]
            cells.append(MARK.get(entry["verdict"], entry["verdict"]))
            if entry.get("code") and entry["code"] not in codes:
                codes.append(entry["code"])
                fix = smallest_fix(entry["lines"], data[key]["bubblewrap"])
        out.append("| %s | %s | %s | %s |" % ("<br>".join("`%s`" % line for line in row["lines"]), " | ".join(cells),
                                               ", ".join("`%s`" % c for c in codes) or "-", fix or "-"))
    out += ["", "Codes that apply only under a condition the trial host does not have:", ""]
    for code, (directive, condition) in sorted(restrictions.CONDITIONAL_CODES.items()):
        out.append("- `%s` (`%s=`): %s." % (code, directive, condition))
    out += ["", "Breaking causes as bwrap reports them:", ""]
    seen = set()
    for key in releases:
        for entry in data[key]["rows"]:
            if entry["verdict"] == "breaks" and (entry["row"], entry["stderr"]) not in seen:
                seen.add((entry["row"], entry["stderr"]))
                out.append("- `%s` (%s): %s" % (entry["row"], key.replace("debian", "Debian "),
                                                 "`%s`" % entry["stderr"] if entry["stderr"] else
                                                 "killed by SIGSYS (exit 159), no message"))
    out += ["", "## What the probe's unit does not copy", "",
            "The probe's transient unit carries **every** assignment of the unit's files (fragment and drop-ins, "
            "in systemd's order; specifiers expanded for the service's name) to `systemd-run -p`; a directive a "
            "later systemd adds is carried the same way. Only these are not copied "
            "(`module_utils/metnos_sandbox/service/context_deny.py`, `DENY`):", ""]
    by_category = {}
    for name, (category, _note) in sorted(context_deny.DENY.items()):
        by_category.setdefault(category, []).append(name)
    for category in (context_deny.LIFECYCLE, context_deny.PROBE, context_deny.SIDE_EFFECT):
        out += ["- **%s** — %s: %s" % (category, context_deny.CATEGORIES[category],
                                        ", ".join("`%s=`" % n for n in by_category.get(category, [])))]
    out += ["- **[Unit] and [Install]** — dependencies, ordering, conditions, triggers, descriptions, start "
            "limits (copying them would start or stop other units); carried: %s." % ", ".join(
                "`%s=`" % n for n in context_deny.UNIT_SECTION_CARRIED), "",
            "A directive `systemd-run` refuses (not transient-capable in that systemd, or a value its client cannot "
            "parse) is retried without it and named in `unit_context.not_carried` with systemd's own words; if "
            "`systemctl show` of the probe's unit then differs from the service's, the property is retried in the "
            "form `show` prints it (e.g. `PrivateTmp=disconnected` as `PrivateTmpEx=disconnected` on systemd 257). "
            "Whatever still differs, or is not carried, lowers the probe's `confidence` "
            "(`probe_context_incomplete`).", "",
            "The comparison covers every `systemctl show` property except the unit's identity, dependencies, state, "
            "timestamps, counters and the properties of the lifecycle directives above (`IGNORED_PROPERTIES`, %d "
            "names, and the `*Timestamp*`/`ExecMain*` patterns)." % len(context_deny.IGNORED_PROPERTIES), ""]
    out += render_blame(load_blame() if blame is None else blame)
    return "\n".join(out)


def main():
    with open(DATA) as handle:
        data = json.load(handle)
    sys.stdout.write(render(data))


if __name__ == "__main__":
    main()
