"""Fleet report rendering from audit results (the shapes metnos_audit returns)."""
import datetime
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from xml.sax import saxutils

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import (
    document,
    render_html,
    render_junit,
    render_markdown,
)
from helpers import report_text

WHEN = datetime.datetime(2026, 11, 30, 6, 0, tzinfo=datetime.timezone.utc)


def audit(verdict="pass", codes=(), revision="0.8.0-2+deb12u1", probe=True):
    return {"schema": "metnos-sandbox-audit/1", "verdict": verdict, "hostname": "h",
            "bwrap_facts": {"status": {"active": True},
                            "bwrap": {"path": "/usr/bin/bwrap", "version": "0.8.0",
                                      "package": {"name": "bubblewrap", "revision": revision}},
                            "userns": {"max_user_namespaces": 1, "smoke_test": {"ran": True, "passed": True}}},
            "service": None, "profiles": [],
            "probe": {"passed": probe, "context": "direct", "checks": [{"name": "only_loopback", "ok": probe}]},
            "diagnostics": [diagnostics.make(c) for c in codes]}


def fleet():
    return {"ok": audit(), "bad": audit("fail", ["unit_blocks_namespaces"], probe=False),
            "old": audit(revision="0.8.0-2"), "gone": {"unreachable": True, "msg": "ssh: connect timed out"},
            "ok2": audit()}


def test_build_totals_gate_and_package_drift():
    doc = report_text.build(fleet(), WHEN)
    assert doc["schema"] == document.SCHEMA and doc["generated"] == "2026-11-30T06:00:00+00:00"
    t = doc["totals"]
    assert (t["hosts"], t["pass"], t["warn"], t["fail"], t["unreachable"]) == (5, 2, 1, 1, 1)
    assert doc["fleet"]["bwrap_revision_majority"] == "0.8.0-2+deb12u1"
    old = [h for h in doc["hosts"] if h["host"] == "old"][0]
    assert old["verdict"] == "warn" and [d["code"] for d in old["diagnostics"]] == ["bwrap_package_drift"]
    assert doc["gate"] == {"failed": True, "failing_hosts": 2, "warnings_as_failures": False}
    assert report_text.build(fleet(), WHEN, warnings_as_failures=True)["gate"]["failing_hosts"] == 3
    gone = [h for h in doc["hosts"] if h["host"] == "gone"][0]
    assert gone["verdict"] == "unreachable" and "timed out" in gone["diagnostics"][0]["message"]


def test_junit_one_case_per_host_and_check():
    doc = report_text.build(fleet(), WHEN)
    root = ET.fromstring(report_text.to_junit(doc))
    cases = root.findall(".//testcase")
    assert len(cases) == 4 * len(render_junit.CHECKS) + 1
    failed = sorted((c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None)
    assert failed == [("metnos.bad", "probe"), ("metnos.bad", "service_environment"), ("metnos.gone", "reachability")]


def test_markdown_and_html_carry_codes_and_remediation():
    doc = report_text.build(fleet(), WHEN)
    md = report_text.to_markdown(doc)
    assert "| bad | FAIL |" in md and "### `unit_blocks_namespaces`" in md and "RestrictNamespaces=user" in md
    page = report_text.to_html(doc)
    assert "<script>" in page and "http" not in page.split("<body>")[0]      # self-contained head
    assert 'src="' not in page and "href=\"http" not in page
    assert page.count('<tr data-verdict=') == 5 and "button class=\"cp\"" in page


def test_html_escapes_hostile_text():
    res = audit("fail", ["unit_blocks_namespaces"])
    res["diagnostics"][0]["message"] = "<script>alert(1)</script>"
    page = report_text.to_html(report_text.build({"<img src=x>": res}, WHEN))
    assert "<script>alert(1)" not in page and "<img src=x>" not in page


def test_write_all_and_merge(tmp_path):
    doc = report_text.build({"a": audit()}, WHEN)
    p1 = document.write_all(doc, str(tmp_path / "one"))
    doc2 = report_text.build({"b": audit("fail", ["unit_blocks_namespaces"])}, WHEN)
    p2 = document.write_all(doc2, str(tmp_path / "two"))
    assert sorted(p1) == ["html", "json", "junit.xml", "md"]
    proc = subprocess.run([sys.executable, "scripts/merge-audit-reports.py", str(tmp_path / "merged"),
                           p1["json"], p2["json"]], capture_output=True, text=True)
    assert proc.returncode == 1                                          # the merged gate fails (host b)
    merged = json.load(open(list((tmp_path / "merged").glob("*.json"))[0]))
    assert [h["host"] for h in merged["hosts"]] == ["a", "b"] and merged["totals"]["fail"] == 1


def test_merge_of_1000_host_results_from_four_slices(tmp_path):
    """AWX job slicing at fleet size: four slice reports of 250 hosts each, one host audited twice (the
    newer record wins), one slice on another bubblewrap revision: the merge recomputes the fleet-wide
    majority and flags the minority slice, and the gate covers the whole fleet."""
    paths = []
    for index in range(4):
        res = dict(("h%04d" % (index * 250 + i), audit(revision="0.8.0-2" if index == 3 else "0.8.0-2+deb12u1"))
                   for i in range(250))
        if index == 2:
            res["h0001"] = audit("fail", ["unit_blocks_namespaces"], probe=False)    # re-audited later: fails
        when = WHEN + datetime.timedelta(minutes=index)
        paths.append(document.write_all(report_text.build(res, when), str(tmp_path / ("slice-%d" % index)))["json"])
    listing = tmp_path / "list.txt"
    listing.write_text("\n".join(reversed(paths)) + "\n")      # order of the arguments does not matter
    proc = subprocess.run([sys.executable, "scripts/merge-audit-reports.py", "--from-list", str(listing),
                           str(tmp_path / "merged")], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    merged = json.load(open(list((tmp_path / "merged").glob("*.json"))[0]))
    t = merged["totals"]
    assert (t["hosts"], t["pass"], t["warn"], t["fail"]) == (1000, 749, 250, 1)
    assert merged["fleet"]["bwrap_revision_majority"] == "0.8.0-2+deb12u1"
    assert t["codes"]["bwrap_package_drift"] == 250
    assert [h["verdict"] for h in merged["hosts"] if h["host"] == "h0001"] == ["fail"]
    assert "1000 hosts: 749 pass, 250 warn, 1 fail, 0 unreachable" in proc.stdout


def test_merge_refuses_other_documents(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "something-else/1", "hosts": []}))
    proc = subprocess.run([sys.executable, "scripts/merge-audit-reports.py", str(tmp_path / "out"), str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "something-else/1" in proc.stderr and not (tmp_path / "out").exists()


def test_markdown_summary_first_and_failing_hosts_grouped():
    res = dict(("h%03d" % i, audit()) for i in range(300))
    for i in range(0, 300, 3):
        res["h%03d" % i] = audit("fail", ["unit_blocks_namespaces"], probe=False)
    md = report_text.to_markdown(report_text.build(res, WHEN))
    head, _sep, table = md.partition("## All hosts")
    assert head.index("Gate: **FAILED**") < head.index("| `unit_blocks_namespaces` | error |") \
        < head.index("### `unit_blocks_namespaces`")
    assert all("h%03d" % i in head for i in range(0, 300, 3)) and "more (every host" not in head   # all named
    assert table.count("| FAIL |") == 100 and table.count("\n| h") == 301       # header + 300 hosts


def test_html_table_pages_and_details_are_data():
    res = dict(("h%04d" % i, audit()) for i in range(render_html.PAGE_ROWS + 20))
    page = report_text.to_html(report_text.build(res, WHEN))
    assert page.count("<tr data-verdict=") == render_html.PAGE_ROWS + 20
    assert page.count(" hidden><td>") == 20                     # laid out only when asked for
    data = json.loads(page.split('<script type="application/json" id="data">')[1].split("</script>")[0])
    assert set(data["hosts"]) == set(res) and len(data["r"]) <= 1     # one remediation text, stored once


def test_junit_escaping_is_saxutils():
    """document.py escapes JUnit text and attributes itself (importing xml.sax.saxutils costs every audit run
    urllib, http.client and ssl): the same output as saxutils on hostile text, each quoting branch taken."""
    corpus = ["", "plain", "a&b<c>d", "&amp;", 'say "hi"', "it's", "both ' and \"", "\n\r\t end", "]]>",
              "\x00\x1b[31m", "caf\u00e9 \ud800 \U0001f600", "<script>alert('x')</script>", "\"'\"'&\n"]
    for text in corpus + [a + b for a in corpus for b in corpus]:
        assert render_junit.xml_escape(text) == saxutils.escape(text)
        assert render_junit.quoteattr(text) == saxutils.quoteattr(text)


def test_report_imports_no_network_module():
    """Importing the report module (the main process of every audit run does) pulls in no urllib.request, ssl
    or http.client (xml.sax.saxutils did)."""
    code = ("import sys; from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import "
            "document; print(sorted(m for m in ('ssl', 'urllib.request', 'http.client', 'xml.sax.saxutils') "
            "if m in sys.modules))")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.path.join(root, "collections")))
    assert out.stdout.strip() == "[]"



def test_each_host_is_reduced_once_and_its_row_and_testcases_made_once(monkeypatch):
    """One typed record per host (record.from_result, once), its table cells unpacked once per table
    (record.row: Markdown and HTML), its JUnit testcases made once (render_junit.host_checks: the testsuite's
    counts come from the same cases it then writes)."""
    calls = {"from_result": 0, "row": 0, "host_checks": 0}

    def counted(module, name):
        real = getattr(module, name)

        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapper
    monkeypatch.setattr(document, "from_result", counted(document, "from_result"))
    doc = report_text.build(fleet(), WHEN)
    assert calls["from_result"] == 5
    for module in (render_markdown, render_html):
        monkeypatch.setattr(module, "row", counted(module, "row"))
    report_text.to_markdown(doc)
    report_text.to_html(doc)
    assert calls["row"] == 2 * 5
    monkeypatch.setattr(render_junit, "host_checks", counted(render_junit, "host_checks"))
    report_text.to_junit(doc)
    assert calls["host_checks"] == 5
