"""Fleet report rendering from audit results (the shapes metnos_audit returns)."""
import datetime
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

from metnos_sandbox import diagnostics as D
from metnos_sandbox import report as R

WHEN = datetime.datetime(2026, 11, 30, 6, 0, tzinfo=datetime.timezone.utc)


def audit(verdict="pass", codes=(), revision="0.8.0-2+deb12u1", probe=True):
    return {"schema": "metnos-sandbox-audit/1", "verdict": verdict, "hostname": "h",
            "bwrap_facts": {"status": {"active": True},
                            "bwrap": {"path": "/usr/bin/bwrap", "version": "0.8.0",
                                      "package": {"name": "bubblewrap", "revision": revision}},
                            "userns": {"max_user_namespaces": 1, "smoke_test": {"ran": True, "passed": True}}},
            "service": None, "profiles": [],
            "probe": {"passed": probe, "context": "direct", "checks": [{"name": "only_loopback", "ok": probe}]},
            "diagnostics": [D.make(c) for c in codes]}


def fleet():
    return {"ok": audit(), "bad": audit("fail", ["unit_blocks_namespaces"], probe=False),
            "old": audit(revision="0.8.0-2"), "gone": {"unreachable": True, "msg": "ssh: connect timed out"},
            "ok2": audit()}


def test_build_totals_gate_and_package_drift():
    doc = R.build(fleet(), WHEN)
    assert doc["schema"] == R.SCHEMA and doc["generated"] == "2026-11-30T06:00:00+00:00"
    t = doc["totals"]
    assert (t["hosts"], t["pass"], t["warn"], t["fail"], t["unreachable"]) == (5, 2, 1, 1, 1)
    assert doc["fleet"]["bwrap_revision_majority"] == "0.8.0-2+deb12u1"
    old = [h for h in doc["hosts"] if h["host"] == "old"][0]
    assert old["verdict"] == "warn" and [d["code"] for d in old["diagnostics"]] == ["bwrap_package_drift"]
    assert doc["gate"] == {"failed": True, "failing_hosts": 2, "warnings_as_failures": False}
    assert R.build(fleet(), WHEN, warnings_as_failures=True)["gate"]["failing_hosts"] == 3
    gone = [h for h in doc["hosts"] if h["host"] == "gone"][0]
    assert gone["verdict"] == "unreachable" and "timed out" in gone["diagnostics"][0]["message"]


def test_junit_one_case_per_host_and_check():
    doc = R.build(fleet(), WHEN)
    root = ET.fromstring(R.to_junit(doc))
    cases = root.findall(".//testcase")
    assert len(cases) == 4 * len(R.CHECKS) + 1
    failed = sorted((c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None)
    assert failed == [("metnos.bad", "probe"), ("metnos.bad", "service_environment"), ("metnos.gone", "reachability")]


def test_markdown_and_html_carry_codes_and_remediation():
    doc = R.build(fleet(), WHEN)
    md = R.to_markdown(doc)
    assert "| bad | FAIL |" in md and "### `unit_blocks_namespaces`" in md and "RestrictNamespaces=user" in md
    page = R.to_html(doc)
    assert "<script>" in page and "http" not in page.split("<body>")[0]      # self-contained head
    assert 'src="' not in page and "href=\"http" not in page
    assert page.count('<tr data-verdict=') == 5 and "button class=\"cp\"" in page


def test_html_escapes_hostile_text():
    res = audit("fail", ["unit_blocks_namespaces"])
    res["diagnostics"][0]["message"] = "<script>alert(1)</script>"
    page = R.to_html(R.build({"<img src=x>": res}, WHEN))
    assert "<script>alert(1)" not in page and "<img src=x>" not in page


def test_write_all_and_merge(tmp_path):
    doc = R.build({"a": audit()}, WHEN)
    p1 = R.write_all(doc, str(tmp_path / "one"))
    doc2 = R.build({"b": audit("fail", ["unit_blocks_namespaces"])}, WHEN)
    p2 = R.write_all(doc2, str(tmp_path / "two"))
    assert sorted(p1) == ["html", "json", "junit.xml", "md"]
    proc = subprocess.run([sys.executable, "scripts/merge-audit-reports.py", str(tmp_path / "merged"),
                           p1["json"], p2["json"]], capture_output=True, text=True)
    assert proc.returncode == 1                                          # the merged gate fails (host b)
    merged = json.load(open(list((tmp_path / "merged").glob("*.json"))[0]))
    assert [h["host"] for h in merged["hosts"]] == ["a", "b"] and merged["totals"]["fail"] == 1
