"""Waivers (issue 42 item 4): the admin's YAML file, read from disk and validated strictly (a code per kind of bad
waiver, all reported at once); a waived finding is shown as waived with its justification in every format and
never counts toward a verdict or the gate; an expired or unused waiver is itself a finding; the document carries
the waived counts and each waiver's days until expiry.

The audit results are built in the test (the shapes metnos_audit returns); the waiver file is a real file."""
import datetime
import json
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import document, waivers
from helpers import report_text

WHEN = datetime.datetime(2026, 11, 30, 6, 0, tzinfo=datetime.timezone.utc)
TODAY = WHEN.date()


def audit(verdict="pass", findings=(), probe=True):
    return {"schema": "metnos-sandbox-audit/1", "verdict": verdict, "hostname": "h",
            "bwrap_facts": {"status": {"active": True}, "bwrap": {}, "userns": {}},
            "service": None, "profiles": [],
            "probe": {"passed": probe, "context": "direct", "checks": [{"name": "only_loopback", "ok": probe}]},
            "diagnostics": list(findings)}


def blocked():
    return diagnostics.make("unit_blocks_namespaces")


def drift(executor):
    return diagnostics.make("profile_drift", executor=executor, path="/etc/metnos/sandbox/profiles/%s.args" % executor,
                            added="[]", removed="[]")


def fleet():
    return {"db-1": audit("fail", [blocked()]), "db-2": audit("fail", [blocked()]),
            "web-1": audit("fail", [drift("read_notes"), drift("send_mail")]), "web-2": audit()}


def write(tmp_path, text):
    path = tmp_path / "waivers.yml"
    path.write_text(text)
    return str(path)


GOOD = """\
- code: unit_blocks_namespaces
  host: "db-*"
  justification: "the database unit keeps RestrictNamespaces until CHG-1234 (kernel upgrade)"
  approved_by: ops-lead@example.org
  expires: 2027-01-31
- code: profile_drift
  host: web-1
  executor: read_notes
  justification: "read_notes is re-rendered by the next release"
  approved_by: ops-lead@example.org
  expires: "2026-12-15"
- code: bwrap_package_drift
  host: "cache-*"
  justification: "cache hosts keep the older bubblewrap"
  approved_by: ops-lead@example.org
  expires: 2027-02-01
- code: host_unreachable
  host: web-2
  justification: "decommissioned last week"
  approved_by: ops-lead@example.org
  expires: 2026-11-29
"""


def build(tmp_path, text=GOOD, **kw):
    path = write(tmp_path, text)
    return report_text.build(fleet(), WHEN, **kw) if text is None else document.build_from_results(
        ((name, res) for name, res in sorted(fleet().items())), WHEN, waivers=(path, waivers.read(path, TODAY)), **kw)


def test_a_waived_finding_never_counts_and_is_shown_with_its_justification_everywhere(tmp_path):
    plain = report_text.build(fleet(), WHEN)
    assert plain["gate"]["failing_hosts"] == 3 and plain["totals"]["waived"] == 0
    doc = build(tmp_path)
    hosts = dict((h["host"], h) for h in doc["hosts"])
    # db-1, db-2: their one finding waived -> pass; web-1: only read_notes' drift waived -> still fails (send_mail).
    assert [hosts[n]["verdict"] for n in ("db-1", "db-2", "web-1", "web-2")] == ["pass", "pass", "fail", "pass"]
    assert [d["code"] for d in hosts["db-1"]["diagnostics"]] == []
    assert [(w["code"], w["justification"][:20]) for w in hosts["db-1"]["waived"]] == [
        ("unit_blocks_namespaces", "the database unit ke")]
    assert [(d["details"]["executor"]) for d in hosts["web-1"]["diagnostics"]] == ["send_mail"]
    assert [w["details"]["executor"] for w in hosts["web-1"]["waived"]] == ["read_notes"]
    assert doc["gate"]["failing_hosts"] == 1 and doc["totals"]["fail"] == 1 and doc["totals"]["waived"] == 3
    assert "unit_blocks_namespaces" not in doc["totals"]["codes"]
    # The metrics: waived counts and days until expiry, per waiver.
    entries = dict((w["index"], w) for w in doc["waivers"]["entries"])
    assert [(entries[i]["state"], entries[i]["waived"], entries[i]["days_left"]) for i in (1, 2, 3, 4)] == [
        ("active", 2, 62), ("active", 1, 15), ("unused", 0, 63), ("expired", 0, -1)]
    # Every format.
    page = report_text.to_html(doc)
    assert page.count('<span class="badge waived">waived</span>') == 1            # the failing web-1 section
    assert "<td>the database unit keeps RestrictNamespaces until CHG-1234 (kernel upgrade)</td>" in page
    data = json.loads(page.split('<script type="application/json" id="data">')[1].split("</script>")[0])
    assert data["hosts"]["db-1"]["w"][0][2].startswith("the database unit keeps RestrictNamespaces")
    assert "read_notes is re-rendered by the next release (approved by ops-lead@example.org" in page
    md = report_text.to_markdown(doc)
    assert "| db-1 | `unit_blocks_namespaces` | WAIVED | the database unit keeps RestrictNamespaces" in md
    assert "| 1 | `unit_blocks_namespaces` | db-* | - | active | 2027-01-31 | 62 | 2 |" in md
    junit = ET.fromstring(report_text.to_junit(doc))
    skipped = [c for c in junit.iter("testcase") if c.find("skipped") is not None]
    assert sorted(c.get("classname") for c in skipped) == ["metnos.db-1", "metnos.db-2", "metnos.web-1"]
    assert "the database unit keeps" in skipped[0].find("skipped").text
    failed = [(c.get("classname"), c.get("name")) for c in junit.iter("testcase") if c.find("failure") is not None]
    assert failed == [("metnos.web-1", "profiles")]
    lines = document.terminal_summary(doc)
    assert "  waived: 3 finding(s) by 2 waiver(s) of %s" % doc["waivers"]["file"] in lines


def test_expired_and_unused_waivers_are_findings(tmp_path):
    doc = build(tmp_path)
    found = [(d["code"], d["severity"], d["details"]["index"]) for d in doc["findings"]]
    assert found == [("audit_waiver_unused", "warning", 3), ("audit_waiver_expired", "warning", 4)]
    assert doc["findings"][1]["message"] == ("waiver #4 (host_unreachable on web-2) expired on 2026-11-29 (1 day(s) "
                                             "ago); its findings count again.")
    assert doc["gate"]["failed"] and doc["gate"]["fleet_findings"] == 0              # warnings: not the gate's
    strict = build(tmp_path, warnings_as_failures=True)
    assert strict["gate"]["fleet_findings"] == 2
    junit = ET.fromstring(report_text.to_junit(strict))
    fleet_case = [c for c in junit.iter("testcase") if c.get("classname") == "metnos.fleet"][0]
    assert fleet_case.find("failure").get("message") == "audit_waiver_unused, audit_waiver_expired"
    assert "WARNING audit_waiver_expired: waiver #4" in "\n".join(document.terminal_summary(doc))
    page = report_text.to_html(doc)
    assert page.count('<div class="fleet">') == 2


def test_an_expired_waiver_waives_nothing(tmp_path):
    text = GOOD.replace("expires: 2027-01-31", "expires: 2026-11-01")
    doc = build(tmp_path, text)
    assert [h["verdict"] for h in doc["hosts"] if h["host"].startswith("db-")] == ["fail", "fail"]
    assert doc["gate"]["failing_hosts"] == 3


BAD = [
    ("{}", "audit_waiver_file_shape"),
    ("- just a line\n", "audit_waiver_file_shape"),
    ("- {code: unit_blocks_namespaces, host: h, justification: j, approved_by: a, expires: 2027-01-01, expiry: x}\n",
     "audit_waiver_field_unknown"),
    ("- {code: unit_blocks_namespaces, host: h, approved_by: a, expires: 2027-01-01}\n", "audit_waiver_field_missing"),
    ("- {code: unit_blocks_namespaces, host: h, justification: '  ', approved_by: a, expires: 2027-01-01}\n",
     "audit_waiver_field_invalid"),
    ("- {code: unit_blocks_namespaces, host: h, justification: [j], approved_by: a, expires: 2027-01-01}\n",
     "audit_waiver_field_invalid"),
    ("- {code: no_such_code, host: h, justification: j, approved_by: a, expires: 2027-01-01}\n",
     "audit_waiver_code_unknown"),
    ("- {code: audit_waiver_expired, host: h, justification: j, approved_by: a, expires: 2027-01-01}\n",
     "audit_waiver_code_unknown"),
    ("- {code: unit_blocks_namespaces, host: 'h; rm -rf /', justification: j, approved_by: a, expires: 2027-01-01}\n",
     "audit_waiver_host_invalid"),
    ("- {code: unit_blocks_namespaces, host: h, justification: j, approved_by: a, expires: 2027-02-30}\n",
     "audit_waiver_expires_invalid"),
    ("- {code: unit_blocks_namespaces, host: h, justification: j, approved_by: a, expires: next week}\n",
     "audit_waiver_expires_invalid"),
    ("- {code: unit_blocks_namespaces, host: h, justification: j, approved_by: a, expires: 2030-01-01}\n",
     "audit_waiver_expires_invalid"),
    ("- {code: unit_blocks_namespaces, host: h, justification: j, approved_by: a, expires: 2027-01-01}\n"
     "- {code: unit_blocks_namespaces, host: h, justification: k, approved_by: b, expires: 2027-01-02}\n",
     "audit_waiver_duplicate"),
    ("- {code: x\n", "audit_waiver_file_unreadable"),
    ("- &a {code: x}\n- *a\n- !!python/object {}\n", "audit_waiver_file_unreadable"),
]


@pytest.mark.parametrize("text,code", BAD, ids=[code + "-%d" % i for i, (_t, code) in enumerate(BAD)])
def test_each_kind_of_bad_waiver_has_its_code(tmp_path, text, code):
    path = write(tmp_path, text)
    with pytest.raises(waivers.WaiverError) as err:
        waivers.read(path, TODAY)
    assert [d["code"] for d in err.value.diagnostics] == [code], err.value.diagnostics
    assert path in err.value.diagnostics[0]["message"]


def test_every_problem_is_reported_at_once_and_a_missing_file_has_its_code(tmp_path):
    path = write(tmp_path, "- {code: nope, host: h, justification: j, approved_by: a, expires: 2027-01-01}\n"
                           "- {code: unit_blocks_namespaces, host: h, justification: j, approved_by: a}\n")
    with pytest.raises(waivers.WaiverError) as err:
        waivers.read(path, TODAY)
    assert [(d["code"], d["details"]["index"]) for d in err.value.diagnostics] == [
        ("audit_waiver_code_unknown", 1), ("audit_waiver_field_missing", 2)]
    with pytest.raises(waivers.WaiverError) as err:
        waivers.read(str(tmp_path / "absent.yml"), TODAY)
    assert [d["code"] for d in err.value.diagnostics] == ["audit_waiver_file_unreadable"]


def test_the_metrics_carry_waived_counts_and_days_until_expiry(tmp_path):
    """metnos_sandbox_audit.prom, written for real into a directory and judged by Prometheus' own parser
    (promtool check metrics); the host pattern of a waiver is a label value, bounded and escaped."""
    from test_monitor_textfile import check_metrics, parse

    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import metrics
    doc = build(tmp_path)
    path = metrics.write(str(tmp_path), doc)
    text = open(path).read()
    assert check_metrics(text) == (0, "")
    series = parse(text)
    assert dict((s[0]["code"], s[1]) for s in series["metnos_sandbox_audit_waived_findings"]) == {
        "unit_blocks_namespaces": 2.0, "profile_drift": 1.0}
    days = dict((s[0]["waiver"], (s[0]["host"], s[0]["state"], s[1] / 86400)) for s in
                series["metnos_sandbox_audit_waiver_remaining_seconds"])
    assert days == {"1": ("db-*", "active", 62.0), "2": ("web-1", "active", 15.0), "3": ("cache-*", "unused", 63.0),
                    "4": ("web-2", "expired", -1.0)}
    assert [s[1] for s in series["metnos_sandbox_audit_waiver_waived"]] == [2.0, 1.0, 0.0, 0.0]
    assert series["metnos_sandbox_audit_gate_failed"] == [({}, 1.0)]
    assert dict((s[0]["verdict"], s[1]) for s in series["metnos_sandbox_audit_hosts"])["pass"] == 3.0
    assert "metnos_sandbox_audit_changes" not in series                       # no baseline
