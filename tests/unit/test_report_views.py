"""Every report says whose view the runtime's status() is and that the probe's verdict is proven;
a host without Python has its own code, not host_unreachable."""
import datetime
import json

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import (
    command_kind,
    document,
    monitor_text,
    site_summary,
    spool,
)
from helpers import report_text

WHEN = datetime.datetime(2026, 11, 30, 6, 0, tzinfo=datetime.timezone.utc)


def failed_probe_but_active_view():
    """The runtime's view says active (bwrap on PATH, no METNOS_SANDBOX) while the probe failed."""
    return {"schema": "metnos-sandbox-audit/1", "verdict": "fail", "hostname": "h",
            "bwrap_facts": {"status": {"active": True}, "bwrap": {}, "userns": {}},
            "service": {"unit": "metnos.service", "status": {"active": True}, "verdict": "fail",
                        "status_view": "runtime status() as seen by the live process of metnos.service (PID 9)"},
            "profiles": [], "probe": {"passed": False, "context": "systemd transient unit", "checks": [],
                                      "diagnostics": [TIMED_OUT]},      # what it proved: its findings say it
            "diagnostics": [TIMED_OUT]}      # a failed probe is a finding (issue 53)


TIMED_OUT = {"code": "probe_timeout", "severity": "error", "message": "the probe timed out", "rule": "R-DIAG-3",
             "details": {}}


def test_reports_label_the_view_and_the_proof():
    doc = report_text.build({"h": failed_probe_but_active_view()}, WHEN)
    host = doc["hosts"][0]
    assert host["status"]["active"] is True and host["status_view"].startswith("runtime status() as seen by the live")
    assert host["probe"]["view"] == "probe: proven by a real wrapped invocation" and host["probe"]["passed"] is False
    md = report_text.to_markdown(doc)
    assert "| host | verdict | status() view: active | bwrap | service | probe (proven) | monitored | codes |" in md
    assert "| h | FAIL | True |" in md and "| FAILED |" in md
    page = report_text.to_html(doc)
    assert "status() view: active</th>" in page and "probe (proven)</th>" in page
    assert "(a view, not a proof)" in page and "probe (proven verdict: FAILED)" in page


def test_summaries_label_the_view_and_the_proof():
    probe = {"passed": False, "context": "systemd transient unit x", "checks": [{"name": "only_loopback", "ok": False}],
             "status": {"active": True}, "status_view": "runtime status() as seen by the live process",
             "diagnostics": [TIMED_OUT]}          # a failed probe: its finding says it (the flag is a view of it)
    detail = site_summary.probe_section(probe)["detail"]
    assert detail.startswith("proven verdict: FAILED") and "active=" not in detail     # issue 54: one view
    lines = site_summary.host_summary({"status": {"active": True}, "verdict": "pass"})
    assert lines[0].startswith("runtime status() as the admin's shell sees it, no service unit (a view, not a proof)")


def test_the_summary_shows_one_status_view_the_services_first():
    """Issue 54 item 3: one runtime status() line, the service's when its unit was evaluated (labelled with its
    source), else the admin's shell's; the sections' details carry none (the summary once showed three)."""
    service = {"unit": "metnos.service", "mode": "file", "verdict": "pass", "environment": {"PATH": "/usr/bin"},
               "status": {"active": False, "bwrap_available": True}, "diagnostics": [],
               "status_view": "runtime status() as seen by the live process of metnos.service (PID 9)"}
    probe = {"passed": True, "context": "x", "checks": [], "status": {"active": True}, "diagnostics": [],
             "status_view": "runtime status() as seen by the live process of metnos.service (PID 9)"}
    lines = site_summary.host_summary({"status": {"active": True}, "verdict": "pass"},
                                      [site_summary.service_section(service), site_summary.probe_section(probe)])
    views = [line for line in lines if "active=" in line]
    assert views == ["runtime status() as seen by the live process of metnos.service (PID 9) (a view, not a proof): "
                     "active=False bwrap_available=True bwrap_path=None disabled_via_env=None"], lines
    no_unit = dict(service, status_view=None)      # unit_not_found: status() of no unit, not the service's
    lines = site_summary.host_summary({"status": {"active": True}, "verdict": "pass"},
                                      [site_summary.service_section(no_unit)])
    assert [line for line in lines if "active=" in line] == [
        "runtime status() as the admin's shell sees it, no service unit (a view, not a proof): active=True "
        "bwrap_available=None bwrap_path=None disabled_via_env=None"], lines


# (command, its label): "check:" only for what only looks, every part of a chain; anything else is a change.
KINDS = [
    ("systemctl cat metnos.service", "check"), ("ss -lntupx", "check"), ("grep -n x /etc/y", "check"),
    ("systemctl show -p Environment metnos.service | grep PATH", "check"),
    ("ansible -i 'inv' 'web-1' -m ansible.builtin.ping", "check"),
    ("ansible -i 'inv' 'web-1' -b -m ansible.builtin.ping", "fix"),
    ("ansible 'web-1' -m ansible.builtin.shell -a 'rm -rf /x'", "fix"),
    ("ls -l /x && rm /x", "fix"), ("systemctl restart metnos.service", "fix"), ("${EDITOR:-vi} /x.yml", "fix"),
    ("ansible-playbook -i inv metnos.sandbox.site --limit web-1", "fix"), ("sysctl --system", "fix"),
    ("unknown-tool --look", "fix"), ("", "fix"),
    ("grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status", "check"),     # a | inside quotes is no pipe
    ("cat /etc/x > /etc/y", "fix"), ("ls /x; rm /x", "fix"), ("ls 'unbalanced", "fix"), ("ls /x |", "fix"),
]


@pytest.mark.parametrize("command,expected", KINDS)
def test_check_for_investigation_fix_for_changes(command, expected):
    assert command_kind.kind(command) == expected


def test_a_fleets_shared_command_is_told_once_and_each_text_keeps_its_answer():
    """Issue 52's cost: the reports label each host's commands; a fleet's hosts share most of them (a real audit of
    this machine gives every host these four), so each text is split once per run (kind remembers it per text),
    and a remembered answer never serves another text (every case of KINDS asked again, after all of them, in
    the other order, keeps its answer)."""
    shared = ["systemctl list-unit-files 'metnos*'", "systemctl --user list-unit-files 'metnos*'",
              "systemd-detect-virt --container", "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status"]
    command_kind.kind.cache_clear()
    assert [command_kind.label(list(shared)) for _host in range(30)] == ["Check"] * 30    # the canary: all looks
    assert command_kind.kind.cache_info().misses == len(shared)
    assert command_kind.kind.cache_info().hits == 29 * len(shared)
    for command, expected in list(KINDS) + list(reversed(KINDS)):
        assert command_kind.kind(command) == expected, command


def test_host_without_python_has_its_own_code():
    res = {"failed": True, "code": "host_no_python", "msg": "the host answers, but has no Python"}
    doc = report_text.build({"bare": res, "gone": {"unreachable": True, "msg": "timeout"}}, WHEN)
    bare, gone = doc["hosts"]
    assert [d["code"] for d in bare["diagnostics"]] == ["host_no_python"] and bare["verdict"] == "fail"
    assert "raw" in " ".join(bare["diagnostics"][0]["remediation"])
    assert [d["code"] for d in gone["diagnostics"]] == ["host_unreachable"] and gone["verdict"] == "unreachable"
    assert doc["gate"]["failing_hosts"] == 2


def test_enforce_lines_list_each_item():
    res = {"healed": [{"what": "METNOS_SANDBOX='0'", "source": "manager environment", "action": "UnsetEnvironment"}],
           "relaxed": [{"directive": "ProcSubset", "code": "unit_proc_subset_pid", "line": "ProcSubset=all"}],
           "not_healed": [{"what": "ExecStart=/bin/sh -c x", "source": "u:3", "reason": "a drop-in cannot"}],
           "not_relaxed": [{"directive": "RestrictNamespaces", "code": "unit_blocks_namespaces", "reason": "opt-in",
                            "line": "RestrictNamespaces=user"}]}
    assert site_summary.enforce_lines(res) == [
        "healed METNOS_SANDBOX='0' (from manager environment): UnsetEnvironment",
        "relaxed ProcSubset for bwrap (unit_proc_subset_pid): wrote ProcSubset=all",
        "NOT healed ExecStart=/bin/sh -c x (u:3): a drop-in cannot",
        "NOT relaxed RestrictNamespaces (unit_blocks_namespaces): opt-in; the minimum would be RestrictNamespaces=user"]
    assert site_summary.enforce_lines({}) == ["nothing to heal"]


def monitored(**mon):
    res = failed_probe_but_active_view()
    res["monitor"] = mon
    return res


def test_reports_say_whether_a_host_is_monitored_and_how_old_its_proof_is():
    proof = {"finished": "2026-11-30T05:48:00+00:00", "age_seconds": 720, "proven": True, "verdict": "pass"}
    doc = report_text.build({"a": monitored(monitored=True, timer={"active": "active"}, proof=proof),
                   "b": monitored(monitored=False, timer={"active": None}, proof=None),
                   "c": monitored(monitored=True, collected=True, stale=False, max_age=3600, proof=proof),
                   "d": monitored(monitored=True, collected=True, stale=True, max_age=600, proof=proof),
                   "e": monitored(monitored=False, timer={"active": "inactive"}, proof=dict(proof, age_seconds=200000)),
                   "f": failed_probe_but_active_view(), "g": {"unreachable": True}}, WHEN)
    cells = dict((h["host"], monitor_text.monitored_text(h["monitor"])) for h in doc["hosts"])
    assert cells == {"a": "yes, proof 12 min old", "b": "no", "c": "collected: proof 12 min old",
                     "d": "STALE: proof 12 min old (limit 10 min)", "e": "no (timer inactive; last proof 2 d old)",
                     "f": "-", "g": "-"}
    md = report_text.to_markdown(doc)
    assert "| FAILED | yes, proof 12 min old | probe_timeout |" in md and \
        "| STALE: proof 12 min old (limit 10 min) |" in md
    page = report_text.to_html(doc)
    assert "monitored</th>" in page and "<td>collected: proof 12 min old</td>" in page
    assert "continuous proof (monitored: yes, proof 12 min old)" in page
    assert "  3 host(s) monitored by the continuous proof" in document.terminal_summary(doc)


def test_a_hostile_monitor_record_is_reduced_to_its_known_fields():
    doc = report_text.build({"h": monitored(monitored="yes", proof=["x"], timer="<script>", extra={"a": 1})}, WHEN)
    assert doc["hosts"][0]["monitor"] == {"monitored": False, "timer": None, "collected": False, "stale": False,
                                          "max_age": None, "proof": None}


def test_a_host_without_a_result_is_not_audited_never_unreachable(tmp_path):
    """The report reads what metnos_audit kept in this run: a host without a kept result is host_not_audited
    (nothing is known about it), a host whose answer held no frame is audit_result_unframed, both failing."""
    spool.write_spooled(str(tmp_path), "seen", json.dumps({"failed": True, "code": "audit_result_unframed",
                                                       "context": {"rc": 0, "detail": "banner {", "python": "p"}}))
    assert spool.spooled(str(tmp_path), ["never", "seen"]) == ["seen"]
    doc = document.build_from_results(spool.read_spooled(str(tmp_path), ["never", "seen"]), WHEN)
    never, seen = doc["hosts"]
    assert [d["code"] for d in never["diagnostics"]] == ["host_not_audited"] and never["verdict"] == "fail"
    assert [d["code"] for d in seen["diagnostics"]] == ["audit_result_unframed"] and seen["verdict"] == "fail"
    assert "rc=0" in seen["diagnostics"][0]["message"] and doc["totals"]["unreachable"] == 0
