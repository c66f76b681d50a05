"""The HTML report read in a real browser (headless Chromium): the gate and the hosts to act on come first,
each failing host's findings show their fix without a click, in a readable monospace block whose copy button
covers nothing and copies the commands; raw JSON only behind "details"; and every text node of the page
(the host details panel and every "details" opened) has a WCAG AA contrast (4.5:1) against the background it
is drawn on, as the browser computes them.

The audit results are built in the test (the shapes metnos_audit returns; a real fleet is the system test's,
tests/system/test_audit_fleet.py): what is real here is the page, the browser and its computed styles. The
check is shown to fail on the old light-on-light fix block (the mutation, run in the test itself)."""
import datetime
import os

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import (
    baseline,
    document,
    html_parts,
    waivers,
)
from helpers import report_browser, report_text
from helpers.paths import ROOT

SCREENSHOT = os.path.join(ROOT, "tests", "artifacts", "audit-report-failing-hosts.png")
WHEN = datetime.datetime(2026, 11, 30, 6, 0, tzinfo=datetime.timezone.utc)


def audit(verdict="pass", codes=(), probe=True, revision="0.8.0-2+deb12u1"):
    return {"schema": "metnos-sandbox-audit/1", "verdict": verdict, "hostname": "h",
            "bwrap_facts": {"status": {"active": True},
                            "bwrap": {"path": "/usr/bin/bwrap", "version": "0.8.0",
                                      "package": {"name": "bubblewrap", "revision": revision}},
                            "userns": {"max_user_namespaces": 1, "smoke_test": {"ran": True, "passed": True}}},
            "service": {"unit": "metnos.service", "mode": "systemd", "verdict": verdict, "user": {"name": "metnos"},
                        "status": {"active": True}, "environment": {"PATH": "/usr/bin:/bin"}},
            "profiles": [], "probe": {"passed": probe, "context": "systemd transient unit",
                                      "checks": [{"name": "only_loopback", "ok": probe}]},
            "diagnostics": [c if isinstance(c, dict) else diagnostics.make(c) for c in codes]}


def mixed_fleet():
    """Failing, unreachable, warning and passing hosts; one finding waived, one new since the baseline."""
    return {"db-1": audit("fail", ["unit_blocks_namespaces"], probe=False),
            "db-2": audit("fail", ["unit_blocks_namespaces"], probe=False),
            "web-1": audit(), "web-2": audit(revision="0.8.0-2"),
            "web-3": audit(revision="0.8.0-2"),
            "cache-1": {"unreachable": True, "msg": "ssh: connect to host cache-1 port 22: Connection timed out"}}


WAIVERS = """\
- code: bwrap_package_drift
  host: web-3
  justification: "web-3 keeps the older bubblewrap until its kernel upgrade (CHG-1234)"
  approved_by: ops-lead@example.org
  expires: 2027-01-31
- code: unit_blocks_namespaces
  host: "mail-*"
  justification: "the mail hosts were retired"
  approved_by: ops-lead@example.org
  expires: 2026-11-20
"""


def full_report(tmp):
    """The mixed fleet with a waiver file (one finding waived, one waiver expired) and yesterday's report as the
    baseline (db-1's finding still there, db-2's new, web-1's profile drift resolved)."""
    yesterday = dict(mixed_fleet(), **{"db-2": audit(), "web-1": audit("fail", [drift()])})
    old = document.write_all(report_text.build(yesterday, WHEN - datetime.timedelta(days=1)), tmp, latest=True)
    with open(os.path.join(tmp, "waivers.yml"), "w", encoding="utf-8") as handle:
        handle.write(WAIVERS)
    here = os.getcwd()
    os.chdir(tmp)           # the file named as an admin would (-e metnos_audit_waivers=waivers.yml): a stable page
    try:
        return document.build_from_results(sorted(mixed_fleet().items()), WHEN, baseline=baseline.read(old["json"]),
                                           waivers=("waivers.yml", waivers.read("waivers.yml", WHEN.date())))
    finally:
        os.chdir(here)


def drift():
    return diagnostics.make("profile_drift", executor="read_notes", path="/p/read_notes.args", added="[]", removed="[]")


def render(tmp, doc, css_extra=""):
    return report_browser.with_harness(report_text.to_html(doc), tmp, css_extra)


def measure(tmp, test):
    return report_browser.measure(tmp, test)


def test_html_report_reads_in_a_browser(tmp_path):
    """Every badge (new, still, resolved, waived, expired) and the fleet findings are on the page measured."""
    doc = full_report(str(tmp_path))
    page, test = render(str(tmp_path), doc)
    for badge in ("new", "still", "resolved", "waived", "expired"):
        assert '<span class="badge %s">' % badge in open(page).read(), badge
    out = measure(str(tmp_path), test)
    assert out["gate"].startswith("Gate FAILED") and "act on 3 host(s) first" in out["gate"], out["gate"]
    assert out["gate_top"] < 200                                                 # the first thing read
    assert out["first_host"].startswith("fail db-1"), out["first_host"]
    assert out["fix_visible"] and all(out["fix_visible"]) and out["fix_top"] < 1000   # in the first screen
    assert out["raw_visible"] == 0 and out["raw_in_details"]
    assert out["overlaps"] == []
    assert out["selected"] == out["commands"] and "RestrictNamespaces=" in out["commands"]
    assert out["detail_shown"] and out["measured"] > 100
    assert out["failures"] == [], out["failures"]
    assert os.path.getsize(report_browser.screenshot(str(tmp_path), page, SCREENSHOT)) > 20000


def test_contrast_check_catches_light_commands_on_a_light_bar(tmp_path):
    """The mutation, in the test: the old rule (a light code bar under the commands' light text) put back."""
    doc = full_report(str(tmp_path))
    _page, test = render(str(tmp_path), doc, css_extra="pre code{background:#eef0f3}")
    out = measure(str(tmp_path), test)
    bad = [f for f in out["failures"] if f["tag"] == "CODE" and "RestrictNamespaces" in f["text"]]
    assert bad and all(f["ratio"] < 1.5 for f in bad), out["failures"]


def test_gate_passed_is_said_first():
    page = report_text.to_html(report_text.build({"web-1": audit()}, WHEN))
    assert '<div class="gate passed" id="gate" role="status"><b>Gate passed</b> &mdash; no host to act on' in page
    assert '<section class="host' not in page


def test_style_and_script_are_files_of_their_own():
    """report.css and report.js ship in the core's report_assets/ and are inlined when a report is written."""
    page = report_text.to_html(report_text.build({"web-1": audit()}, WHEN))
    for name in ("report.css", "report.js"):
        with open(os.path.join(html_parts.ASSETS, name), encoding="utf-8") as handle:
            assert handle.read() in page
    assert not hasattr(document, "_CSS") and not hasattr(document, "_JS")
