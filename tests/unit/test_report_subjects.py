"""Every report shows every finding with its subject (issue 53, item 2): three refused manifests on one host (a
readable name, only a file path, only a place in the list), two missing profiles, a drift, a context error and a
host-wide finding, rendered for real by the report's four writers (JSON, Markdown, JUnit, HTML) after a baseline;
no "None", no "(unnamed", no empty subject anywhere, each finding in the Markdown, the baseline table's rows match
its counts, and the gate's banner agrees with the hosts to act on. The findings are made by the audit's own
profile_states.findings over the entries host_audit.profile_drift makes."""
import datetime
import re
import xml.etree.ElementTree as ET

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import profile_states
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import (
    baseline,
    document,
    record,
    render_json,
)
from helpers import report_browser, report_text

WHEN = datetime.datetime(2026, 11, 30, 6, 0, tzinfo=datetime.timezone.utc)
LATER = WHEN + datetime.timedelta(days=1)
ENTRIES = [
    {"executor": "broken_yaml", "manifest": "/m/named.yml", "index": 1, "state": "refused",
     "refusal": "manifest_parse_error", "message": "expected ',' or ']' (line 2, column 1)"},
    {"executor": None, "manifest": "/m/broken.yml", "index": 2, "state": "refused",
     "refusal": "manifest_parse_error", "message": "expected ',' or ']'"},
    {"executor": None, "manifest": None, "index": 3, "state": "refused", "refusal": "manifest_invalid",
     "message": "name is missing"},
    {"executor": "notes", "state": "missing", "path": "/p/notes.args"},
    {"executor": "mail", "state": "missing", "path": "/p/mail.args"},
    {"executor": "status", "state": "drift", "path": "/p/status.args", "mounts": {"added": [], "removed": [],
                                                                                 "changed": []},
     "options": {"added": ["--unshare-net"], "removed": []}, "command_changed": False},
]
NARROW = "body{width:420px}"          # the page as a phone lays it out: narrow cells
OLD_RULE = NARROW + "code{white-space:normal;overflow-wrap:anywhere;word-break:normal}"      # before issue 53
SUBJECTS = ["broken_yaml", "/m/broken.yml", "manifest #3", "notes", "mail", "status"]


def audit(findings, verdict="fail"):
    return {"schema": "metnos-sandbox-audit/1", "verdict": verdict, "hostname": "h",
            "bwrap_facts": {"status": {"active": True}, "bwrap": {}, "userns": {}}, "service": None,
            "profiles": [dict(e) for e in ENTRIES],
            "probe": {"passed": True, "context": "direct", "checks": [{"name": "only_loopback", "ok": True}]},
            "diagnostics": list(findings)}


def every_format(doc):
    return {"json": render_json.to_json(doc),
            "markdown": report_text.to_markdown(doc), "junit": report_text.to_junit(doc),
            "html": re.sub(r"<script\b.*?</script>", "", report_text.to_html(doc), flags=re.S)}   # what is shown


def fleet(tmp_path, first, second, **kw):
    document.write_all(report_text.build(first, WHEN), str(tmp_path), latest=True)
    base = baseline.read(str(tmp_path / "latest.json"))
    return document.build_from_results(sorted(second.items()), LATER, baseline=base, **kw)


def test_every_finding_with_its_subject_in_every_format(tmp_path):
    twice = profile_states.findings([ENTRIES[4]])        # two manifests named mail: one key, one row
    findings = profile_states.findings(ENTRIES) + [diagnostics.make("unit_blocks_namespaces")] + twice
    assert [baseline.subject(d) for d in findings] == SUBJECTS + [None, "mail"]    # the canary: every subject made
    first = {"web-1": audit(findings[1:]), "web-2": audit([])}
    doc = fleet(tmp_path, first, {"web-1": audit(findings), "web-2": audit([])})
    for name, text in every_format(doc).items():
        assert not re.search(r"\bNone\b", text), (name, text[max(0, text.find("None") - 200):text.find("None") + 50])
        assert "(unnamed" not in text and "· ``" not in text and '"subject": ""' not in text, name
        for about in SUBJECTS:
            assert about in text, (name, about)
    md = report_text.to_markdown(doc)
    section = md.split("### `profile_refused`")[1].split("###")[0]
    assert [line.split(" · ")[1].split(":")[0] for line in section.splitlines() if line.startswith("- **web-1**")] == \
        ["`broken_yaml`", "`/m/broken.yml`", "`manifest #3`"], section
    assert "- **web-1** · `mail`: " in md and "- **web-1** · `notes`: " in md      # the second profile_missing too
    b = doc["baseline"]
    rows = [line for line in md.split("## Changes since the baseline")[1].split("\n\n")[2].splitlines()[2:]
            if line.startswith("| web-")]
    assert (b["new"], b["still"], b["resolved"]) == (1, 6, 0) and len(rows) == b["new"] + b["still"] + b["resolved"]
    assert "| web-1 | `profile_refused` | broken_yaml | error | NEW |" in rows, rows
    junit = ET.fromstring(report_text.to_junit(doc))
    assert all(c.get("name") for c in junit.iter("testcase"))


def test_the_gate_banner_and_the_hosts_to_act_on_say_the_same():
    """fail_on new, a failing host whose findings are all still there: the gate passes, and the banner says one
    host is to act on (before: 'no host to act on' above 'Hosts to act on: 1 failing')."""
    findings = [diagnostics.make("unit_blocks_namespaces")]
    doc = report_text.build({"web-1": audit(findings), "web-2": audit([], "pass")}, WHEN)
    again = [record.findings_only(h) for h in doc["hosts"]]      # a report's records built again
    doc = document.build_from_hosts(again, baseline={"path": "b.json", "generated": "g", "hosts": {
        "web-1": {"unit_blocks_namespaces": {"code": "unit_blocks_namespaces"}}}}, fail_on="new")
    page = report_text.to_html(doc)
    assert doc["gate"]["failed"] is False and "Hosts to act on: 1 failing" in page
    assert "Gate passed</b> &mdash; 1 host(s) to act on below" in page and "no host to act on" not in page


def test_every_registered_code_with_a_subject_in_every_format():
    """Every code of the registry as a finding about its own subject, on one failing host: each format names each
    subject, and none says None, '(unnamed' or an empty subject."""
    findings = [diagnostics.make(code, subject="subject-of-%s" % code) for code in sorted(diagnostics.REGISTRY)]
    doc = report_text.build({"web-1": audit(findings)}, WHEN, warnings_as_failures=True)
    texts = every_format(doc)
    for name, text in texts.items():       # JUnit has failures only: its info findings are not expected there
        assert not re.search(r"\bNone\b", text), (name, text[max(0, text.find("None") - 200):text.find("None") + 50])
        assert "(unnamed" not in text and "· ``" not in text and '"subject": ""' not in text, name
        missing = [d["code"] for d in doc["hosts"][0]["diagnostics"] if d["details"]["subject"] not in text and
                   (name != "junit" or d["severity"] != "info")]
        assert not missing, (name, missing)
    shown = [d["code"] for d in doc["hosts"][0]["diagnostics"] if '<code>%s</code> <span class="subject">%s</span>' % (
        d["code"], d["details"]["subject"]) in texts["html"]]           # in its finding, not only in the raw record
    assert shown == [d["code"] for d in doc["hosts"][0]["diagnostics"] if d["severity"] != "info"]   # as laid out
    assert len(doc["hosts"][0]["diagnostics"]) >= len(diagnostics.REGISTRY) - 10, len(doc["hosts"][0]["diagnostics"])


def test_codes_never_wrap_mid_word_in_chromium(tmp_path):
    """Real headless Chromium lays the page out (tests/helpers/report_browser.py) 420 pixels wide: no inline code
    spans two lines, with every registered code on one host and in the table's narrow codes cell. The canary: the
    old rule (codes free to wrap anywhere) put back in the same page makes some wrap."""
    findings = [diagnostics.make(code, subject="subject-of-%s" % code) for code in sorted(diagnostics.REGISTRY)]
    page = report_text.to_html(report_text.build({"web-1": audit(findings), "web-2": audit([], "pass")}, WHEN))
    _path, test = report_browser.with_harness(page, str(tmp_path), css_extra=NARROW)
    out = report_browser.measure(str(tmp_path), test)
    assert out["measured"] > 100 and out["wrapped_codes"] == [], out["wrapped_codes"][:10]
    _path, test = report_browser.with_harness(page, str(tmp_path), css_extra=OLD_RULE)
    assert report_browser.measure(str(tmp_path), test)["wrapped_codes"], "the canary: the old rule wraps codes"


def test_the_detail_panel_shows_each_findings_subject_in_chromium(tmp_path):
    """Real headless Chromium opens the first failing host's detail panel (the harness follows its link): every
    finding there shows its subject (issue 53 item 4). The canary: the panel's subject left out
    (the script as it was) shows none."""
    findings = [diagnostics.make("profile_refused", executor="/m/broken.yml", subject="/m/broken.yml",
                                 refusal="manifest_parse_error", message_text="not YAML"),
                diagnostics.make("profile_missing", executor="notes", subject="notes", path="/p/notes.args"),
                diagnostics.make("bwrap_package_drift", majority="1", host="web-1", revision="2", majority_hosts=2,
                                 hosts=3)]
    doc = report_text.build({"web-1": audit(findings)}, WHEN)
    want = sorted("%s %s" % (d["code"], d["details"]["subject"]) for d in findings if d["details"].get("subject"))
    page = report_text.to_html(doc)
    _path, test = report_browser.with_harness(page, str(tmp_path))
    out = report_browser.measure(str(tmp_path), test)
    assert out["detail_shown"] and sorted(out["detail_subjects"]) == want, out["detail_subjects"]
    old = page.replace("d[6] != null ? el('span', {class: 'subject'}, data.m[d[6]]) : null,", "null,")
    _path, test = report_browser.with_harness(old, str(tmp_path))
    assert report_browser.measure(str(tmp_path), test)["detail_subjects"] == [], "the canary: no subject shown"
