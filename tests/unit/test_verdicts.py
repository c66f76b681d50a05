"""One verdict, decided once (issue 42, item 1): base/verdicts.verdict over a host's findings is what the audit,
the monitor, the report (every format, the gate) and the role's summary say; every manifest state is a finding
with its own code; a drift is told as mounts with their modes (item 2)."""
import datetime

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import profile_states
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.verdicts import (
    decide,
    probe_passed,
    verdict,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import prometheus, proof
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import site_summary
from helpers import report_text

WHEN = datetime.datetime(2026, 12, 6, 6, 0, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize("codes, want", [
    ([], "pass"),
    (["running_in_container"], "pass"),                    # info never changes a verdict
    (["bwrap_package_drift"], "warn"),
    (["bwrap_package_drift", "profile_refused"], "fail"),
    (["probe_timeout"], "fail"),                            # a probe that ran and failed: its finding (issue 53)
    (["probe_device_check_failed"], "fail"),                # the device proof
    (["probe_root_not_contained"], "fail"),                 # a root service's payload not contained
    (["bwrap_package_drift", "probe_context_incomplete"], "warn"),
    (["host_unreachable"], "unreachable"),
    (["host_no_python"], "fail"),
])
def test_the_one_verdict(codes, want):
    """The verdict from findings alone (issue 53): no flag beside them (the probe's passed is read from them)."""
    findings = [diagnostics.make(code, severity=diagnostics.spec(code).severity) if code != "host_unreachable" else
                diagnostics.make(code, host="h", why="unreachable") for code in codes]
    assert verdict(findings) == want
    assert probe_passed({"diagnostics": findings}) is (want in ("pass", "warn"))
    record_of = {"diagnostics": findings}
    assert decide(record_of)["verdict"] == want and "verdict" not in record_of     # the record as output


def test_every_manifest_state_is_a_finding_with_its_own_code():
    entries = [{"executor": "a", "state": "in_sync", "path": "/p/a.args"},
               dict(profile_states.describe_drift(["bwrap", "--ro-bind", "/x", "/x", "--", "py"], ["bwrap", "--",
                                                                                                   "py"]),
                    executor="b", state="drift", path="/p/b.args"),
               {"executor": "c", "state": "missing", "path": "/p/c.args"},
               {"executor": "d", "state": "refused", "refusal": "capability_unknown", "message": "d: unknown"},
               {"executor": None, "state": "error", "message": "host.writable_roots must be absolute"}]
    found = profile_states.findings(entries)
    assert [d["code"] for d in found] == ["profile_in_sync", "profile_drift", "profile_missing", "profile_refused",
                                          "profile_context_error"]
    assert [d["severity"] for d in found] == ["info", "error", "warning", "error", "error"]
    assert found[3]["message"] == "d: the manifest is refused (capability_unknown): d: unknown"
    assert verdict(found) == "fail"
    with pytest.raises(KeyError):          # a state without its code is a defect, never dropped
        profile_states.findings([{"executor": "e", "state": "something_new"}])


def test_drift_is_told_as_mounts_with_their_modes():
    on_disk = ["bwrap", "--ro-bind", "/usr", "/usr", "--bind", "/srv/notes", "/srv/notes", "--ro-bind", "/var/log",
               "/var/log", "--unshare-net", "--", "python3", "main.py"]
    want = ["bwrap", "--ro-bind", "/usr", "/usr", "--ro-bind", "/srv/notes", "/srv/notes", "--ro-bind", "/etc/x",
            "/etc/x", "--tmpfs", "/tmp", "--", "python3", "main.py"]
    change = profile_states.describe_drift(want, on_disk)
    assert change["mounts"]["added"] == [{"path": "/etc/x", "mode": "ro", "source": "/etc/x"},
                                         {"path": "/tmp", "mode": "tmpfs", "source": None}]
    assert change["mounts"]["removed"] == [{"path": "/var/log", "mode": "ro", "source": "/var/log"}]
    assert change["mounts"]["changed"] == [{"path": "/srv/notes", "was": {"mode": "rw", "source": "/srv/notes"},
                                            "now": {"mode": "ro", "source": "/srv/notes"}}]
    assert change["options"] == {"added": [], "removed": ["--unshare-net"]} and change["command_changed"] is False
    assert profile_states.drift_text(change) == (
        "mount added /etc/x (ro); mount added /tmp (tmpfs); mount removed /var/log (ro); "
        "mount changed /srv/notes: rw -> ro; option removed --unshare-net")


def test_the_report_decides_each_verdict_once_from_every_finding():
    """The host said pass; the fleet comparison adds a warning: the verdict is the function's over the whole
    list (never the host's, then patched), in the JSON, the Markdown, the JUnit and the HTML alike."""
    def host(revision, probe=True):
        return {"schema": "metnos-sandbox-audit/1", "verdict": "pass", "hostname": "h",
                "bwrap_facts": {"bwrap": {"version": "0.8.0", "package": {"name": "bubblewrap",
                                                                          "revision": revision}},
                                "userns": {}, "diagnostics": []},
                "service": None, "profiles": [], "probe": {"passed": probe, "checks": []},
                "diagnostics": [diagnostics.make("running_in_container", container="podman")] + ([] if probe else [
                    diagnostics.make("probe_timeout", wording="killed", timeout=5)])}   # a failed probe: a finding
    doc = report_text.build({"a": host("1"), "b": host("1"), "c": host("2"), "d": host("1", probe=False)}, WHEN)
    verdicts = dict((h["host"], h["verdict"]) for h in doc["hosts"])
    assert verdicts == {"a": "pass", "b": "pass", "c": "warn", "d": "fail"}
    assert all(h["verdict"] == verdict(h["diagnostics"]) for h in doc["hosts"])
    md = report_text.to_markdown(doc)
    assert "| c | WARN |" in md and "| d | FAIL |" in md
    assert "`running_in_container`" in md          # the info finding the terminal summary shows
    assert 'data-verdict="warn"' in report_text.to_html(doc)
    assert doc["gate"]["failing_hosts"] == 1


def test_the_monitor_and_the_summary_ask_the_same_function():
    result = {"diagnostics": [diagnostics.make("bwrap_package_drift", majority="1", host="h", revision="2",
                                               majority_hosts=2,
                                               hosts=3)], "probe": {"passed": True}}
    assert proof.judge(result, []) is True          # proven: a warning is no error
    assert proof.output({"audit": dict(result, schema="s", hostname="h"), "previous": None})["verdict"] == "warn"
    section = site_summary.probe_section({"passed": True, "checks": [], "diagnostics": result["diagnostics"]})
    assert section["verdict"] == "warn"
    refused = diagnostics.make("capability_unknown", field="c", value="'x'", wording="refused",
                               fill={"expected": "y"})
    lines = site_summary.host_summary({"status": {}, "diagnostics": [], "verdict": "pass", "userns": {}},
                                      [section, site_summary.profiles_section([{"executor": "x", "decision": "refused",
                                                                                "refusal": "capability_unknown",
                                                                                "diagnostics": [refused]}])])
    assert lines[-1] == "verdict: FAIL"
    assert any("profile_refused" in line for line in lines)


def test_the_roles_results_each_have_a_state():
    entries = profile_states.role_entries([{"skipped": True}, {"executor": "a", "decision": "wrapped",
                                                               "files": ["/p/a.args"]},
                                           {"executor": "b", "decision": "refused", "refusal": "capability_unknown",
                                            "diagnostics": []},
                                           {"failed": True, "msg": "host.writable_roots must be absolute"}])
    assert [e["state"] for e in entries] == ["in_sync", "refused", "error"]
    assert [d["code"] for d in profile_states.findings(entries)] == ["profile_in_sync", "profile_refused",
                                                                     "profile_context_error"]


def test_nothing_proven_is_a_finding_not_a_flag():
    """Issue 53: where a probe proved nothing, an error finding says so (its passed is read from findings): a device
    proof with no check, and a profile the probe cannot run (a pinned direct exception) with no error of its own.
    A fake profile and an empty check list: the real runs are tests/integration/test_device_probe_real.py's."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import device
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe.run import not_wrapped
    none_ran = device.judged([], ["bwrap", "--", "true"], [])
    assert [d["code"] for d in none_ran["diagnostics"]] == ["probe_device_check_failed"]
    assert "passed" not in none_ran and probe_passed(none_ran) is False     # no flag beside the findings
    assert verdict(none_ran["diagnostics"]) == "fail"
    direct = {"decision": "direct", "diagnostics": []}
    [found] = not_wrapped(direct)
    assert found["code"] == "probe_check_failed" and "observed direct" in found["message"]
    refused = {"decision": "refused", "diagnostics": [diagnostics.make("capability_unknown", field="c", value="'x'",
                                                                       wording="refused", fill={"expected": "y"})]}
    assert not_wrapped(refused) == []          # its own error already says why


def test_the_probes_passed_is_read_from_its_findings_everywhere():
    """A probe whose flag says passed while its own findings hold an error (a flag beside the findings, as a /1
    record or a stale copy could have): the report's probe, the monitor's probe check and the role's summary say
    FAILED (the findings), never the flag. Canary: the same probe without the error passes in all three."""
    timed_out = diagnostics.make("probe_timeout", wording="killed", timeout=5)
    for errors, want in (([timed_out], False), ([], True)):
        probe = {"passed": True, "context": "direct", "checks": [], "diagnostics": errors}
        doc = report_text.build({"h": {"schema": "metnos-sandbox-audit/1", "hostname": "h", "bwrap_facts": {},
                                       "service": None, "profiles": [], "probe": probe, "diagnostics": errors}}, WHEN)
        assert doc["hosts"][0]["probe"]["passed"] is want
        assert ("| %s |" % ("passed" if want else "FAILED")) in report_text.to_markdown(doc)
        states = prometheus.check_states({"audit": {"probe": probe, "diagnostics": []}})
        assert states["probe"] is want
        detail = site_summary.probe_section(probe)["detail"]
        assert detail.startswith("proven verdict: %s" % ("PASSED" if want else "FAILED"))
