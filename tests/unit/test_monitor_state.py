"""The continuous proof as the audit sees it (monitor_state): a stored result is input - bounded, exact,
root's alone - each refusal with its reason; a collected proof older than the limit is not a pass; the
release of a core is the same digest on the controller (the role's filter) and on the host.

systemctl cannot run on this machine (no systemd): describe() gets a runner that answers as `systemctl show`
does (the real timer is read in tests/system/test_monitor.py)."""
import json
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import monitor_state
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics, verdicts

NOW = 1796129600.0


def stored(finished=NOW - 100, **changes):
    audit = {"schema": "metnos-sandbox-audit/1", "hostname": "h", "verdict": "pass", "bwrap_facts": {},
             "service": None, "probe": {"passed": True}, "profiles": [],
             "diagnostics": [diagnostics.make("bwrap_not_packaged", bwrap_path="/opt/b")]}
    out = {"schema": monitor_state.RESULT_SCHEMA, "finished": finished, "proven": True, "verdict": "pass",
           "toolkit_version": "0.1.0+0123456789ab", "audit": audit}
    for key, value in changes.items():
        target = audit if key.startswith("audit_") else out
        target[key[6:] if key.startswith("audit_") else key] = value
    return out


def write(path, doc, mode=0o600):
    with open(path, "w") as handle:
        handle.write(doc if isinstance(doc, str) else json.dumps(doc))
    os.chmod(path, mode)
    return str(path)


@pytest.mark.parametrize("changes,why", [
    ({"schema": "metnos-sandbox-monitor/2"}, "it is not a metnos-sandbox-monitor/1 result"),
    ({"finished": "yesterday"}, "it has no proof time"),
    ({"finished": float("nan")}, "it has no proof time"),
    ({"finished": True}, "it has no proof time"),
    ({"finished": NOW + 3600}, "its proof time is 3600 s in the future"),
    ({"proven": "yes"}, "it has no verdict"),
    ({"verdict": "great"}, "it has no verdict"),
    ({"audit": []}, "it holds no metnos-sandbox-audit/1 result"),
    ({"audit_schema": "other"}, "it holds no metnos-sandbox-audit/1 result"),
    ({"audit_probe": "passed"}, "its audit result has no probe"),
    ({"audit_bwrap_facts": None}, "its audit result has no bwrap_facts"),
    ({"audit_diagnostics": {}}, "its diagnostics are not a list"),
    ({"audit_diagnostics": [{"code": "made_up", "severity": "error"}]},
     "a diagnostic has no registered code ('made_up')"),
    ({"audit_diagnostics": [{"code": "probe_timeout", "severity": "fatal", "message": "m", "remediation": []}]},
     "diagnostic probe_timeout is not in the registry's shape"),
])
def test_a_stored_result_that_is_not_the_monitors_is_refused_with_why(changes, why):
    with pytest.raises(monitor_state.Unusable) as exc:
        monitor_state.check_record(stored(**changes), NOW)
    assert str(exc.value) == why


def test_a_proof_slightly_ahead_is_clock_skew_not_forgery():
    assert monitor_state.check_record(stored(finished=NOW + 60), NOW)["proven"] is True


@pytest.mark.parametrize("plant,why", [
    (lambda p: write(p, "{not json"), "is not JSON"),
    (lambda p: write(p, stored(), mode=0o666), "is not trusted"),
    (lambda p: (write(p, stored()), os.chown(p, 65534, 65534)), "is not trusted"),
    (lambda p: (write(str(p) + ".real", stored()), os.symlink(str(p) + ".real", p)), "cannot be opened"),
    (lambda p: os.mkdir(p), "is not a regular file"),
    (lambda p: write(p, " " * (monitor_state.MAX_RESULT_BYTES + 1)), "bytes; the limit is"),
])
def test_a_stored_file_is_read_bounded_and_root_s_alone(tmp_path, plant, why):
    path = str(tmp_path / "last.json")
    plant(path)
    record, problem = monitor_state.load_result(path, NOW)
    assert record is None and problem["code"] == "monitor_result_unusable" and why in problem["message"], problem


def test_no_stored_result_is_no_finding(tmp_path):
    assert monitor_state.load_result(str(tmp_path / "none.json"), NOW) == (None, None)


def systemctl(load="loaded", active="active"):
    def runner(argv, **_kw):
        assert argv[:3] == ["systemctl", "show", "metnos-sandbox-monitor.timer"]
        return 0, "LoadState=%s\nActiveState=%s\nUnitFileState=enabled\nLastTriggerUSec=\n" % (load, active), ""
    return runner


def test_describe_says_monitored_and_how_old_the_proof_is(tmp_path):
    path = write(tmp_path / "last.json", stored(finished=NOW - 754))
    info, record, diags = monitor_state.describe({"monitor_result": path}, systemctl(), NOW)
    assert info["monitored"] is True and record is not None and diags == []
    assert info["proof"] == {"finished": "2026-12-01T12:40:46+00:00", "age_seconds": 754, "proven": True,
                             "verdict": "pass", "toolkit_version": "0.1.0+0123456789ab"}
    info, _r, _d = monitor_state.describe({"monitor_result": path}, systemctl(active="inactive"), NOW)
    assert info["monitored"] is False
    info, _r, _d = monitor_state.describe({"monitor_result": path}, systemctl(load="not-found", active="inactive"), NOW)
    assert info["monitored"] is False
    info, _r, _d = monitor_state.describe({"monitor_result": path}, lambda argv, **kw: (127, "", "no systemctl"), NOW)
    assert info["monitored"] is False and info["timer"]["error"] == "'no systemctl'"


def test_a_collected_proof_past_the_limit_is_not_a_pass(tmp_path):
    path = write(tmp_path / "last.json", stored(finished=NOW - 7200))
    info, record, _d = monitor_state.describe({"monitor_result": path}, systemctl(), NOW)
    fresh = monitor_state.collect({"monitor_max_age": 10000}, info, record, NOW)
    assert verdicts.verdict(fresh["diagnostics"]) == "warn"      # its one finding, a warning, says so
    assert fresh["monitor"]["collected"] is True and fresh["monitor"]["stale"] is False
    assert diagnostics.codes(fresh["diagnostics"]) == ["bwrap_not_packaged"]
    stale = monitor_state.collect({"monitor_max_age": 3600}, info, record, NOW)
    assert verdicts.verdict(stale["diagnostics"]) == "fail" and stale["monitor"]["stale"] is True
    assert "verdict" not in stale       # the stored one is not carried: audit_host decides it (verdicts.decide)
    assert diagnostics.codes(stale["diagnostics"]) == ["monitor_proof_stale", "bwrap_not_packaged"]
    assert stale["diagnostics"][0]["message"] == (
        "The monitor's last proof (2026-12-01T10:53:20+00:00) is 7200 s old, more than the limit of 3600 s (%s): "
        "not a pass." % path)
    assert record["audit"]["verdict"] == "pass"          # the stored record itself is not changed

