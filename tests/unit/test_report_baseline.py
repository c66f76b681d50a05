"""What changed (issue 42 item 5): a previous report (the latest.json link a run writes next to its reports) as the
baseline gives every finding a state - new, still there, resolved - in every format, and the gate can fail on new
findings only (fail_on new). The audit results are built in the test; the reports and links are real files."""
import datetime
import json
import os
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import (
    baseline,
    document,
    render_json,
)
from helpers import report_text

WHEN = datetime.datetime(2026, 11, 30, 6, 0, tzinfo=datetime.timezone.utc)
LATER = WHEN + datetime.timedelta(days=1)


def audit(verdict="pass", findings=()):
    return {"schema": "metnos-sandbox-audit/1", "verdict": verdict, "hostname": "h",
            "bwrap_facts": {"status": {"active": True}, "bwrap": {}, "userns": {}}, "service": None, "profiles": [],
            "probe": {"passed": True, "context": "direct", "checks": [{"name": "only_loopback", "ok": True}]},
            "diagnostics": list(findings)}


def drift(executor):
    return diagnostics.make("profile_drift", executor=executor, path="/p/%s.args" % executor, added="[]", removed="[]")


def blocked():
    return diagnostics.make("unit_blocks_namespaces")


FIRST = {"db-1": audit("fail", [blocked()]), "web-1": audit("fail", [drift("read_notes")]), "web-2": audit()}
# The next day: db-1 unchanged (still), web-1's read_notes fixed (resolved) but send_mail drifts (new).
SECOND = {"db-1": audit("fail", [blocked()]), "web-1": audit("fail", [drift("send_mail")]), "web-2": audit()}
# Or: only what was already there.
SAME = {"db-1": audit("fail", [blocked()]), "web-1": audit("fail", [drift("read_notes")]), "web-2": audit()}


def first_run(tmp_path):
    paths = document.write_all(report_text.build(FIRST, WHEN), str(tmp_path), latest=True)
    latest = tmp_path / "latest.json"
    # One pointer (issue 52 item 2): latest -> runs/<this set>, latest.<ext> -> latest/report.<ext> through it.
    assert os.readlink(str(tmp_path / "latest")) == os.path.join("runs", os.path.basename(paths["json"])[:-5])
    assert os.readlink(str(latest)) == os.path.join("latest", "report.json")
    assert os.path.samefile(str(latest), paths["json"])
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_symlink()) == [
        "latest", "latest.html", "latest.json", "latest.junit.xml", "latest.md"]
    return baseline.read(str(latest))


def second(tmp_path, results, **kw):
    base = first_run(tmp_path)
    return document.build_from_results(sorted(results.items()), LATER, baseline=base, **kw)


def test_every_finding_has_a_state_in_every_format(tmp_path):
    doc = second(tmp_path, SECOND)
    hosts = dict((h["host"], h) for h in doc["hosts"])
    assert hosts["db-1"]["change"] == {"unit_blocks_namespaces": "still"}
    assert hosts["web-1"]["change"] == {"profile_drift|send_mail": "new"}
    assert [(r["code"], r["executor"], r["change"]) for r in hosts["web-1"]["resolved"]] == [
        ("profile_drift", "read_notes", "resolved")]
    assert hosts["web-2"]["change"] == {} and hosts["web-2"]["resolved"] == []
    b = doc["baseline"]
    assert (b["new"], b["still"], b["resolved"], b["generated"]) == (1, 1, 1, "2026-11-30T06:00:00+00:00")
    md = report_text.to_markdown(doc)
    assert "**1 new**, 1 still there, 1 resolved" in md
    assert "| web-1 | `profile_drift` | send_mail | error | NEW |" in md and \
        "| db-1 | `unit_blocks_namespaces` | - | error | still |" in md and \
        "| web-1 | `profile_drift` | read_notes | error | resolved |" in md      # each row with its subject
    junit = ET.fromstring(report_text.to_junit(doc))
    web1 = [c for c in junit.iter("testcase") if c.get("classname") == "metnos.web-1" and c.get("name") == "profiles"]
    assert web1[0].find("failure").text.startswith("profile_drift [new]: send_mail")
    base_case = [c for c in junit.iter("testcase") if c.get("name") == "baseline"][0]
    assert "resolved web-1: profile_drift" in base_case.find("system-out").text
    page = report_text.to_html(doc)
    assert '<code>profile_drift</code> <span class="badge new">new</span>' in page
    assert '<code>unit_blocks_namespaces</code> <span class="badge still">still</span>' in page
    assert '<span class="badge resolved">resolved</span> since the baseline: <code>profile_drift</code>' in page
    data = json.loads(page.split('<script type="application/json" id="data">')[1].split("</script>")[0])
    assert data["hosts"]["web-1"]["d"][0][5] == "new"
    assert data["hosts"]["web-1"]["res"] == ["profile_drift (read_notes)"]      # with its subject
    lines = document.terminal_summary(doc)
    assert "  since the baseline (2026-11-30T06:00:00+00:00): 1 new, 1 still there, 1 resolved" in lines
    assert "  FAIL web-1: profile_drift (new)" in lines
    assert json.loads(render_json.to_json(doc))["baseline"]["new"] == 1


def test_the_gate_can_fail_on_new_findings_only(tmp_path):
    assert second(tmp_path / "a", SAME)["gate"]["failed"] is True                      # any: the default
    same = second(tmp_path / "b", SAME, fail_on="new")
    assert same["gate"] == {"warnings_as_failures": False, "failing_hosts": 0, "fail_on": "new", "failed": False}
    assert "Gate: **passed**" in report_text.to_markdown(same)
    assert "The gate counts new findings only." in report_text.to_markdown(same)
    changed = second(tmp_path / "c", SECOND, fail_on="new")
    assert changed["gate"]["failed"] is True and changed["gate"]["failing_hosts"] == 1        # web-1 only
    # Without a baseline every finding is new: fail_on new is then fail_on any.
    alone = document.build_from_results(sorted(SAME.items()), LATER, fail_on="new")
    assert alone["gate"]["failing_hosts"] == 2
    with pytest.raises(ValueError):
        document.build_from_results(sorted(SAME.items()), LATER, fail_on="sometimes")


def test_an_unreachable_host_resolves_nothing(tmp_path):
    doc = second(tmp_path, dict(SECOND, **{"web-1": {"unreachable": True, "msg": "timeout"}}))
    web1 = [h for h in doc["hosts"] if h["host"] == "web-1"][0]
    assert web1["resolved"] == [] and web1["change"] == {"host_unreachable": "new"}


def test_a_host_unreachable_again_still_fails_the_gate_on_new(tmp_path):
    """Unknown is a failure: a host unreachable in the baseline and again now is not accepted as "still" by
    fail_on new (nothing about it was audited this run). Mutation run: counts_for_new without its unreachable
    rule - the gate passes and this test fails."""
    gone = {"unreachable": True, "msg": "timeout"}
    paths = document.write_all(report_text.build(dict(SAME, **{"web-1": gone}), WHEN), str(tmp_path), latest=True)
    doc = document.build_from_results(sorted(dict(SAME, **{"web-1": gone}).items()), LATER,
                                      baseline=baseline.read(paths["json"]), fail_on="new")
    web1 = [h for h in doc["hosts"] if h["host"] == "web-1"][0]
    assert web1["change"] == {"host_unreachable": "still"}
    assert doc["gate"]["failed"] is True and doc["gate"]["failing_hosts"] == 1


@pytest.mark.parametrize("content,problem", [
    (b"{not json", "not JSON"), (json.dumps({"schema": "other/1", "hosts": []}).encode(), "not an audit report"),
    (json.dumps({"schema": document.SCHEMA, "hosts": [{"host": "a"}]}).encode(), "a host record without")])
def test_a_bad_baseline_has_its_code(tmp_path, content, problem):
    path = tmp_path / "old.json"
    path.write_bytes(content)
    with pytest.raises(baseline.BaselineError) as err:
        baseline.read(str(path))
    assert err.value.diagnostics[0]["code"] == "audit_baseline_unreadable" and problem in str(err.value)
    with pytest.raises(baseline.BaselineError):
        baseline.read(str(tmp_path))                                         # a directory


def test_the_merge_takes_waivers_a_baseline_and_fail_on(tmp_path):
    """scripts/merge-audit-reports.py (AWX slices, ansible-pull): the same options as the playbook."""
    import subprocess
    import sys
    base = first_run(tmp_path / "yesterday")
    assert base["hosts"]
    today = document.write_all(report_text.build(SAME, LATER), str(tmp_path / "today"))
    waiver = tmp_path / "waivers.yml"
    waiver.write_text("- {code: unit_blocks_namespaces, host: db-1, justification: until CHG-7, approved_by: ops,"
                      " expires: %s}\n" % (datetime.date.today() + datetime.timedelta(days=10)).isoformat())
    run = [sys.executable, "scripts/merge-audit-reports.py"]
    proc = subprocess.run(run + [str(tmp_path / "m1"), today["json"]], capture_output=True, text=True)
    assert proc.returncode == 1                                          # fail_on any: db-1 and web-1 fail
    proc = subprocess.run(run + ["--baseline", str(tmp_path / "yesterday" / "latest.json"), "--fail-on", "new",
                                 str(tmp_path / "m2"), today["json"]], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr               # nothing new since yesterday
    assert "0 new, 2 still there, 0 resolved" in proc.stdout
    proc = subprocess.run(run + ["--waivers", str(waiver), str(tmp_path / "m3"), today["json"]],
                          capture_output=True, text=True)
    merged = json.load(open(list((tmp_path / "m3").glob("*.json"))[0]))
    assert [h["verdict"] for h in merged["hosts"]] == ["pass", "fail", "pass"] and proc.returncode == 1
    waiver.write_text("- {code: unit_blocks_namespaces}\n")
    proc = subprocess.run(run + ["--waivers", str(waiver), str(tmp_path / "m4"), today["json"]],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "audit_waiver_field_missing" in proc.stderr
