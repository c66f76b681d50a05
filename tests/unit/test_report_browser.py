"""The HTML report read in a real browser (headless Chromium): the gate and the hosts to act on come first,
each failing host's findings show their fix without a click, in a readable monospace block whose copy button
covers nothing and copies the commands; raw JSON only behind "details"; and every text node of the page
(the host details panel and every "details" opened) has a WCAG AA contrast (4.5:1) against the background it
is drawn on, as the browser computes them.

The audit results are built in the test (the shapes metnos_audit returns; a real fleet is the system test's,
tests/system/test_audit_fleet.py): what is real here is the page, the browser and its computed styles. The
check is shown to fail on the old light-on-light fix block (the mutation, run in the test itself)."""
import datetime
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import (
    baseline,
    report,
    report_html,
    waivers,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from helpers import report_text

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCREENSHOT = os.path.join(ROOT, "tests", "artifacts", "audit-report-failing-hosts.png")
WHEN = datetime.datetime(2026, 11, 30, 6, 0, tzinfo=datetime.timezone.utc)
CHROMIUM = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
            "--disable-component-update", "--disable-sync"]
# Run in the page after load: the facts the test asserts, as JSON in <pre id="metnos-check">.
HARNESS = r"""<script>
window.addEventListener('load', () => {
  const out = {};
  const visible = e => e.getClientRects().length > 0 && (!e.checkVisibility || e.checkVisibility());
  // Before any click: the gate first, the first failing host's fix laid out, raw JSON hidden in "details".
  const gate = document.getElementById('gate'), act = document.querySelector('section.host');
  out.gate = gate ? gate.textContent : null;
  out.gate_top = gate ? gate.getBoundingClientRect().top : null;
  out.first_host = act ? act.querySelector('h3').textContent : null;
  out.fix_visible = act ? Array.from(act.querySelectorAll('pre.cmd')).map(visible) : [];
  out.fix_top = act && act.querySelector('pre.cmd') ? act.querySelector('pre.cmd').getBoundingClientRect().top : null;
  out.raw_visible = Array.from(document.querySelectorAll('pre.raw')).filter(visible).length;
  out.raw_in_details = Array.from(document.querySelectorAll('pre.raw')).every(p => p.closest('details'));
  // The copy buttons: none overlaps the commands; a click selects (and copies) exactly the commands.
  out.overlaps = [];
  for (const b of document.querySelectorAll('section.host button.cp')) {
    const r = b.getBoundingClientRect(), p = b.closest('.fix').querySelector('pre.cmd').getBoundingClientRect();
    if (r.left < p.right && p.left < r.right && r.top < p.bottom && p.top < r.bottom) out.overlaps.push(b.outerHTML);
  }
  const first = document.querySelector('section.host button.cp');
  first.click();
  out.selected = window.getSelection().toString();
  out.commands = first.closest('.fix').querySelector('pre.cmd code').textContent;
  window.getSelection().removeAllRanges();
  // Everything open, then every text node measured.
  location.hash = '#h-' + encodeURIComponent(document.querySelector('section.host h3 a').textContent);
  window.dispatchEvent(new HashChangeEvent('hashchange'));
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const rgba = s => { const m = s.match(/rgba?\(([^)]+)\)/); if (!m) return null;
    const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, bottom) => {
    const a = top[3]; return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat([1]); };
  const background = e => { const layers = [];
    for (let n = e; n && n.nodeType === 1; n = n.parentElement) {
      const c = rgba(getComputedStyle(n).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } }
    let bg = [255, 255, 255, 1]; for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg); return bg; };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  out.measured = 0; out.failures = [];
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    const e = t.parentElement;
    if (!t.textContent.trim() || e.closest('script,style,option,#metnos-check') || !visible(e)) continue;
    const bg = background(e), fg = over(rgba(getComputedStyle(e).color), bg);
    const a = lum(fg), b = lum(bg), ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    out.measured++;
    if (ratio < 4.5) out.failures.push({text: t.textContent.trim().slice(0, 60), tag: e.tagName, cls: e.className,
                                        ratio: Math.round(ratio * 100) / 100, fg: fg.slice(0, 3), bg: bg.slice(0, 3)});
  }
  out.detail_shown = !document.getElementById('detail').hidden;
  const pre = document.createElement('pre'); pre.id = 'metnos-check'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def chromium():
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail("chromium is not installed (scripts/host-packages.sh installs it): the HTML report is checked "
                    "in a browser")
    return found


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
    old = report.write_all(report_text.build(yesterday, WHEN - datetime.timedelta(days=1)), tmp, latest=True)
    path = os.path.join(tmp, "waivers.yml")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(WAIVERS)
    return report.build_from_results(sorted(mixed_fleet().items()), WHEN, baseline=baseline.read(old["json"]),
                                     waivers=(path, waivers.read(path, WHEN.date())))


def drift():
    return diagnostics.make("profile_drift", executor="read_notes", path="/p/read_notes.args", added="[]", removed="[]")


def render(tmp, doc, css_extra=""):
    page = report_text.to_html(doc)
    if css_extra:
        page = page.replace("</style>", css_extra + "</style>", 1)
    path = os.path.join(tmp, "report.html")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(page)
    cut = page.rindex("</body>")
    test = os.path.join(tmp, "checked.html")
    with open(test, "w", encoding="utf-8") as handle:
        handle.write(page[:cut] + HARNESS + page[cut:])
    return path, test


def measure(tmp, test):
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
    dom = subprocess.run([chromium()] + CHROMIUM + ["--user-data-dir=" + profile, "--window-size=1400,1000",
                                                    "--dump-dom", "file://" + test],
                         capture_output=True, text=True, timeout=180).stdout
    match = re.search(r'<pre id="metnos-check">(.*?)</pre>', dom, re.S)
    assert match, dom[-2000:]
    return json.loads(match.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&amp;", "&"))


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
    os.makedirs(os.path.dirname(SCREENSHOT), exist_ok=True)
    subprocess.run([chromium()] + CHROMIUM + ["--user-data-dir=" + tempfile.mkdtemp(dir=str(tmp_path)),
                                              "--window-size=1400,1000", "--hide-scrollbars",
                                              "--screenshot=" + SCREENSHOT, "file://" + page],
                   capture_output=True, timeout=180)
    assert os.path.getsize(SCREENSHOT) > 20000


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
        with open(os.path.join(report_html.ASSETS, name), encoding="utf-8") as handle:
            assert handle.read() in page
    assert not hasattr(report, "_CSS") and not hasattr(report, "_JS")
