"""Blame by experiment (blame.py) against a model of a unit whose directives break the probe by known rules.

The trials are a model here (``Model``), not transient units: what a real systemd and bwrap do with each
directive is proven by tests/system/test_blame_fleet.py on Debian 12 and 13 hosts. This file proves the
search itself: which runs it makes, that it finds every culprit and every "only together" group, that it
offers nothing untried, its bounds, and the findings it reports.
"""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import blame
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import relaxations, restrictions

USER = {"name": "metnos", "uid": 999, "gid": 999}


def unit(*lines, user="metnos"):
    out = [["User", user, "systemctl show User"]] if user else []
    for line in lines:
        key, _sep, value = line.partition("=")
        out.append([key, value, "/etc/systemd/system/metnos.service:%d" % (len(out) + 1)])
    return out


class Model(object):
    """A unit's behaviour: ``rules`` are (set of directives that must all be kept, cause, fix(lines) -> bool);
    a run fails with the first rule whose directives are all kept and that the relaxation does not fix."""

    def __init__(self, rules, interpreter_rule=None):
        self.rules = rules
        self.interpreter_rule = interpreter_rule
        self.runs = []
        self.interpreter_runs = []

    @staticmethod
    def _state(assignments):
        kept = set(a[0] for a in assignments if not a[2].startswith("blame"))
        extra = [a[0] + "=" + a[1] for a in assignments if a[2] == "blame (relaxation)"]
        return kept, extra

    def probe(self, assignments, user):
        self.runs.append([list(a) for a in assignments])
        kept, extra = self._state(assignments)
        for needs, cause, fixed in self.rules:
            if needs <= kept and not fixed(extra):
                return blame.Outcome(False, "setup", cause, "bwrap: %s" % cause, 0.1)
        return blame.Outcome(True, "passed", None, "", 0.1)

    def confirm(self, assignments, user):
        return self.probe(assignments, user)

    def interpreter(self, assignments, user):
        self.interpreter_runs.append(assignments)
        kept, extra = self._state(assignments)
        if self.interpreter_rule and self.interpreter_rule[0] <= kept and not self.interpreter_rule[1](extra):
            return blame.Outcome(False, "interpreter", "SIGSYS", "the runtime's interpreter was killed by SIGSYS", 0.1)
        return blame.Outcome(True, "passed", None, "", 0.1)


def never(_extra):
    return False


def has(line):
    return lambda extra: line in extra


MANY = ["ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes", "PrivateDevices=yes", "NoNewPrivileges=yes",
        "LockPersonality=yes", "MemoryDenyWriteExecute=yes", "RestrictRealtime=yes", "ProtectClock=yes",
        "ProtectHostname=yes", "UMask=0077", "ProtectKernelLogs=yes"]


def run(assignments, model, **kw):
    exp = blame.Experiment(assignments, model, USER, ctx={"bwrap": "/usr/bin/bwrap", "python": "/usr/bin/python3"},
                           **kw)
    return exp.run()


def test_one_culprit_among_many_is_named_with_the_relaxation_that_passed():
    model = Model([({"AmbientCapabilities"}, "unexpected_capabilities", has("AmbientCapabilities="))])
    res = run(unit(*(MANY + ["AmbientCapabilities=CAP_NET_BIND_SERVICE"])), model)
    assert res["plain_context"] == "passed" and res["complete"] is True
    [culprit] = res["culprits"]
    assert culprit["directives"] == ["AmbientCapabilities"] and culprit["code"] == "unit_ambient_capabilities"
    assert culprit["lines"] == ["AmbientCapabilities=CAP_NET_BIND_SERVICE"] and culprit["alone"] is True
    assert culprit["relaxation"] == ["AmbientCapabilities="]
    assert res["relaxation"] == {"lines": ["AmbientCapabilities="], "passed": True, "cause": None}
    # bounded and reported: the suspect alone, the twelve others as one group, the whole minus it, two relaxations
    assert res["runs"] == len(model.runs) <= 8 and res["bounds"] == {"runs": 128, "seconds": 300.0}
    assert all(a[0] == "User" for a in model.runs[0])           # the plain context keeps only the user


def test_every_independent_culprit_is_found_and_relaxed_together():
    model = Model([({"RestrictNamespaces"}, "userns_eperm", has("RestrictNamespaces=user mnt ipc uts net")),
                   ({"LimitNPROC"}, "clone_eagain", lambda e: any(x.startswith("LimitNPROC=") and x != "LimitNPROC=2"
                                                                  for x in e)),
                   ({"ProtectKernelLogs"}, "mount_denied", has("ProtectKernelLogs="))])
    res = run(unit(*(MANY + ["RestrictNamespaces=yes", "LimitNPROC=1"])), model)
    found = dict((c["directives"][0], c) for c in res["culprits"])
    assert sorted(found) == ["LimitNPROC", "ProtectKernelLogs", "RestrictNamespaces"]
    assert found["ProtectKernelLogs"]["code"] == "unit_directive_breaks_bwrap"       # the table never heard of it
    assert found["LimitNPROC"]["code"] == "unit_resource_limit_blocks_bwrap"
    assert found["RestrictNamespaces"]["code"] == "unit_blocks_namespaces"
    # LimitNPROC: 2 fails, 4 passes, 3 passes (the smallest), offered 4: one more process for the runtime, tried
    assert found["LimitNPROC"]["relaxation"] == ["LimitNPROC=4"]
    assert ["LimitNPROC=3"] in [t["lines"] for t in found["LimitNPROC"]["tried"]]
    assert res["relaxation"]["passed"] is True and res["complete"] is True
    assert set(res["relaxation"]["lines"]) == {"RestrictNamespaces=user mnt ipc uts net", "LimitNPROC=4",
                                               "ProtectKernelLogs="}


def test_directives_that_break_only_together_are_reported_together():
    model = Model([({"PrivateUsers", "ProtectProc"}, "USER", has("PrivateUsers=no"))])
    res = run(unit(*(MANY + ["PrivateUsers=yes", "ProtectProc=invisible"])), model)
    [culprit] = res["culprits"]
    assert sorted(culprit["directives"]) == ["PrivateUsers", "ProtectProc"] and culprit["alone"] is False
    assert culprit["code"] == "unit_directive_breaks_bwrap" and culprit["relaxation"] == ["PrivateUsers=no"]
    diag = blame.findings(res, "metnos.service").diagnostics[0]
    assert "(only together)" in diag["message"] and "PrivateUsers=yes" in diag["message"]


def test_a_pair_split_across_the_first_search_is_found_by_searching_the_rest():
    # the pair breaks only together, and one of them is a suspect tested alone: the rest is searched again
    model = Model([({"InaccessiblePaths", "ProtectHome"}, "mount_denied", has("InaccessiblePaths="))])
    res = run(unit(*(MANY + ["InaccessiblePaths=/srv"])), model)
    assert [sorted(c["directives"]) for c in res["culprits"]] == [["InaccessiblePaths", "ProtectHome"]]
    assert res["complete"] is True


def test_no_experiment_when_bwrap_fails_in_a_plain_context_too():
    model = Model([(set(), "userns_eperm", never)])
    res = run(unit("RestrictNamespaces=yes"), model)
    assert res["ran"] is False and res["plain_context"] == "failed" and res["culprits"] == []
    assert "plain context" in res["why"] and res["runs"] == 1
    assert blame.findings(res, "metnos.service").diagnostics == []


def test_bounds_stop_the_experiment_and_say_so():
    model = Model([({"ProtectHome"}, "mount_denied", never), ({"PrivateTmp"}, "mount_denied", never)])
    res = run(unit(*MANY), model, bounds=blame.Bounds(runs=4, seconds=60))
    assert res["exhausted"] is True and res["complete"] is False and res["runs"] + res["interpreter_runs"] <= 4
    codes = diagnostics.codes(blame.findings(res, "metnos.service").diagnostics)
    assert codes == ["probe_blame_inconclusive"]
    clock = iter(range(0, 1000, 50))
    res = blame.Experiment(unit(*MANY), model, USER, bounds=blame.Bounds(runs=100, seconds=120),
                           clock=lambda: next(clock)).run()
    assert res["exhausted"] is True and res["runs"] <= 3


def test_no_relaxation_that_passes_is_offered_as_none():
    model = Model([({"ProtectSystem"}, "mount_denied", never)])
    res = run(unit(*MANY), model)
    [culprit] = res["culprits"]
    assert culprit["relaxation"] is None and [t["passed"] for t in culprit["tried"]] == [False, False]
    found = blame.findings(res, "metnos.service")
    assert found.directives == ["ProtectSystem"]
    diag = [d for d in found.diagnostics if d["code"] == "unit_directive_breaks_bwrap"][0]
    assert diag["hint"] == "Remove ProtectSystem= from the unit (no drop-in relaxation made the probe pass)."
    assert diag["remediation"] == ["systemctl cat metnos.service"]
    assert "probe_blame_inconclusive" in diagnostics.codes(found.diagnostics)


def test_the_interpreter_killed_by_the_filter_is_the_units_not_bwraps():
    filt = "SystemCallFilter=@basic-io @file-system @io-event @network-io @signal"
    model = Model([({"SystemCallFilter"}, "killed_by_seccomp", has("SystemCallFilter=@system-service @mount"))],
                  interpreter_rule=({"SystemCallFilter"}, lambda e: "SystemCallFilter=@system-service @mount" in e))
    res = run(unit(*(MANY + [filt])), model)
    assert res["interpreter_killed"] is True and res["interpreter_runs"] > 2
    [culprit] = res["culprits"]
    assert culprit["code"] == "unit_syscall_filter_kills_interpreter" and culprit["kind"] == "interpreter"
    assert culprit["relaxation"] == ["SystemCallFilter=@system-service @mount"]
    diag = blame.findings(res, "metnos.service").diagnostics[0]
    assert "killed by SIGSYS" in diag["message"] and "bwrap was killed" not in diag["message"]


def test_a_culprit_that_is_one_only_because_a_trial_removed_something_else_is_dropped():
    # the pair fails only without DynamicUser=: kept alone it fails, in the unit's context it does not
    rules = [({"RestrictNamespaces"}, "userns_eperm", has("RestrictNamespaces=user mnt ipc uts net"))]
    model = Model(rules)
    base = model.probe

    def probe(assignments, user):
        kept, _extra = model._state(assignments)
        if {"PrivateUsers", "ProtectProc"} <= kept and "DynamicUser" not in kept:
            return blame.Outcome(False, "unit", "USER", "217/USER", 0.1)
        return base(assignments, user)
    model.probe = probe
    res = run(unit("DynamicUser=yes", "PrivateUsers=yes", "ProtectProc=invisible", "RestrictNamespaces=yes",
                   user=None), model)
    assert [c["directives"] for c in res["culprits"]] == [["RestrictNamespaces"]] and res["complete"] is True


def test_dynamic_user_removed_runs_as_a_static_stand_in_never_as_root():
    assignments = unit("DynamicUser=yes", "RestrictSUIDSGID=yes", user=None) + [
        ["User", "metnos-dyn", "systemctl show User"], ["Group", "metnos-dyn", "systemctl show Group"]]
    exp = blame.Experiment(assignments, Model([]), USER)
    assert exp.lines([]) == [["User", relaxations.STANDIN_USER, "blame (DynamicUser= removed)"]]
    kept = exp.lines(["DynamicUser"])
    assert ["User", "metnos-dyn", "systemctl show User"] in kept and ["DynamicUser", "yes", kept[0][2]] in kept
    relaxed = exp.lines(["DynamicUser"], ["DynamicUser=no", "User=nobody"])
    assert [a[:2] for a in relaxed] == [["DynamicUser", "yes"], ["DynamicUser", "no"], ["User", "nobody"]]
    # a static account named by User= is what systemd runs as: nothing stands in for it
    static = blame.Experiment(unit("DynamicUser=yes", user="nobody"), Model([]), USER)
    assert static.lines([]) == [["User", "nobody", "systemctl show User"]]


def test_a_table_culprit_confirmed_by_experiment_is_the_service_checks_finding():
    settings = {"RestrictNamespaces": ["yes"]}
    static = restrictions.restriction_diagnostics(settings, "metnos.service")
    model = Model([({"RestrictNamespaces"}, "userns_eperm", has("RestrictNamespaces=user mnt ipc uts net"))])
    res = run(unit("RestrictNamespaces=yes", *MANY), model)
    [diag] = blame.findings(res, "metnos.service", static).diagnostics
    assert diag["details"] == static[0]["details"] and diag["message"].startswith(static[0]["message"])
    assert "found by experiment" in diag["message"] and "tried for real" in diag["message"]
    assert diagnostics.union(static, [diag]) == [diag]                    # the report lists it once, in its place


def test_findings_carry_a_drop_in_a_sysadmin_can_paste():
    model = Model([({"AmbientCapabilities"}, "unexpected_capabilities", has("AmbientCapabilities=")),
                   ({"ReadOnlyPaths"}, "uid_map_readonly", has("ReadWritePaths=/proc"))])
    res = run(unit("ReadOnlyPaths=/", "ReadWritePaths=/proc/irq", "AmbientCapabilities=CAP_NET_RAW"), model)
    found = blame.findings(res, "metnos-x.service")
    by_code = dict((d["code"], d) for d in found.diagnostics)
    assert set(by_code) == {"unit_ambient_capabilities", "unit_read_only_proc", "probe_relaxation_found"}
    steps = by_code["unit_read_only_proc"]["remediation"]
    assert "printf '%s\\n' '[Service]' ReadWritePaths=/proc >> /etc/systemd/system/metnos-x.service.d/" \
           "zz-metnos-relax.conf" in steps
    whole = by_code["probe_relaxation_found"]["remediation"][1]
    assert "AmbientCapabilities= ReadWritePaths=/proc" in whole or "ReadWritePaths=/proc AmbientCapabilities=" in whole


FAILED = [{"code": "probe_check_failed", "severity": "error"}]     # a run's verdict: passed is read from findings


@pytest.mark.parametrize("verdict,expected", [
    ({"diagnostics": []}, ("passed", None)),
    ({"diagnostics": [{"code": "probe_context_incomplete", "severity": "warning"}]}, ("passed", None)),
    ({"diagnostics": FAILED, "unit_failure": {"status": 203, "name": "EXEC", "meaning": "m", "reason": None}},
     ("unit", "EXEC")),
    ({"diagnostics": FAILED, "setup_failed": True,
      "classification": {"cause": "uid_map_readonly", "stderr_line": "x"}}, ("setup", "uid_map_readonly")),
    ({"diagnostics": FAILED, "timed_out": True}, ("timeout", "timeout")),
    ({"diagnostics": FAILED, "checks": [{"name": "read_only:/usr", "ok": False}]}, ("checks", "read_only:/usr")),
    ({}, ("payload", "payload_failed")),        # no findings at all: nothing says it passed
])
def test_outcome_of_a_verdict(verdict, expected):
    out = blame.outcome_of(verdict)
    assert (out.kind, out.cause) == expected and out.passed is (expected[0] == "passed")


def test_relaxations_smallest_first_and_the_namespace_set_written_whole():
    assert relaxations.candidates("RestrictNamespaces", ["mnt user"],
                                  {})[0] == ["RestrictNamespaces=user mnt ipc uts net"]
    assert relaxations.candidates("RestrictNamespaces", ["cgroup"],
                                  {})[0] == ["RestrictNamespaces=user mnt ipc uts net cgroup"]
    assert relaxations.candidates("LimitNPROC", ["1"], {})[:2] == [["LimitNPROC=2"], ["LimitNPROC=4"]]
    assert relaxations.candidates("LimitNOFILE", ["64:128"], {})[0] == ["LimitNOFILE=128"]
    assert relaxations.candidates("LimitAS", ["2G"], {})[0] == ["LimitAS=%d" % (4 << 30)]
    assert relaxations.candidates("NoExecPaths", ["/"], {"bwrap": "/usr/bin/bwrap"})[0] == ["ExecPaths=/usr/bin/bwrap"]
    assert relaxations.candidates("SystemCallFilter", ["~@mount"],
                                  {})[0] == ["SystemCallFilter=mount pivot_root umount2"]
    assert relaxations.candidates("SystemCallFilter", ["~@mount"], {})[-1] == ["SystemCallFilter="]
    assert relaxations.candidates("PrivateUsers", ["yes"], {}) == [["PrivateUsers="], ["PrivateUsers=no"]]
    assert relaxations.limit_value("infinity") is None and relaxations.limit_value("16:32") == 16


def test_a_relaxation_the_whole_probe_rejects_is_not_offered():
    """The search's cheap runs (bwrap with a one-line payload) can pass where the whole probe's checks fail: every
    offered relaxation is confirmed by the whole probe first, and the ladder goes on when it is not."""
    model = Model([({"SystemCallFilter"}, "killed_by_seccomp",
                    lambda e: any(x.startswith("SystemCallFilter=@") for x in e))])
    base = model.probe

    def confirm(assignments, user):
        _kept, extra = model._state(assignments)
        if "SystemCallFilter=@mount" in extra:        # passes the search, fails a check of the whole probe
            return blame.Outcome(False, "checks", "no_custom_seccomp", "failed checks: no_custom_seccomp", 0.1)
        return base(assignments, user)
    model.confirm = confirm
    res = run(unit("SystemCallFilter=~@mount", *MANY), model)
    [culprit] = res["culprits"]
    assert culprit["relaxation"] == ["SystemCallFilter=@mount @process"]
    assert {"lines": ["SystemCallFilter=@mount"], "passed": False, "cause": "no_custom_seccomp", "full": True} in \
        culprit["tried"]
    assert res["full_runs"] == 2 and res["relaxation"]["passed"] is True      # the combined run is the same one


def test_the_interpreter_killed_is_reported_as_the_units_and_replaces_bwraps_setup_failure():
    filt = "SystemCallFilter=@basic-io @file-system @io-event @network-io @signal"
    model = Model([({"SystemCallFilter"}, "killed_by_seccomp", has("SystemCallFilter=@system-service @mount"))],
                  interpreter_rule=({"SystemCallFilter"}, lambda e: "SystemCallFilter=@system-service @mount" in e))
    found = blame.findings(run(unit(filt), model), "metnos.service")
    assert found.unit_killed is True and "probe_unit_killed" in diagnostics.codes(found.diagnostics)
    killed = [d for d in found.diagnostics if d["code"] == "probe_unit_killed"][0]
    assert "runtime's interpreter (/usr/bin/python3) is killed by SIGSYS" in killed["message"]
