"""The HTML audit report read by headless Chromium: a harness injected into a copy of the page measures, after
load, what a reader gets - the gate and the first host to act on, whether the fixes are laid out, the copy
buttons (overlap, what a click selects), raw JSON kept behind "details", and the WCAG contrast of every text node
against the background the browser computes for it (every "details" opened and a host's panel shown first).
Used by tests/unit/test_report_browser.py and the system tests' mixed fleet (tests/system/test_audit_fleet.py)."""
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

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
  if (first) {
    first.click();
    out.selected = window.getSelection().toString();
    out.commands = first.closest('.fix').querySelector('pre.cmd code').textContent;
    window.getSelection().removeAllRanges();
  }
  // Everything open, then every text node measured.
  if (act) {
    location.hash = '#h-' + encodeURIComponent(act.querySelector('h3 a').textContent);
    window.dispatchEvent(new HashChangeEvent('hashchange'));
  }
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
    if (ratio < 4.5) out.failures.push({text: t.textContent.trim().slice(0, 200), tag: e.tagName, cls: e.className,
                                        ratio: Math.round(ratio * 100) / 100, fg: fg.slice(0, 3), bg: bg.slice(0, 3)});
  }
  // Codes never wrap mid-word: an inline code laid out on two lines has two boxes.
  out.wrapped_codes = Array.from(document.querySelectorAll('code')).filter(c => !c.closest('pre') && visible(c) &&
    c.getClientRects().length > 1).map(c => c.textContent.slice(0, 80));
  out.detail_shown = !document.getElementById('detail').hidden;
  out.detail_subjects = Array.from(document.querySelectorAll('#detail .finding .subject')).filter(visible)
    .map(s => s.closest('p').querySelector('code').textContent + ' ' + s.textContent);
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


def with_harness(page, tmp, css_extra=""):
    """(the page's path, the harnessed copy's path) of HTML text ``page`` written in ``tmp``."""
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
    """What the harness found in the page at ``test`` (a dict)."""
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
    dom = subprocess.run([chromium()] + CHROMIUM + ["--user-data-dir=" + profile, "--window-size=1400,1000",
                                                    "--dump-dom", "file://" + test],
                         capture_output=True, text=True, timeout=180).stdout
    match = re.search(r'<pre id="metnos-check">(.*?)</pre>', dom, re.S)
    assert match, dom[-2000:]
    return json.loads(match.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&amp;", "&"))


def screenshot(tmp, page, png):
    os.makedirs(os.path.dirname(png), exist_ok=True)
    subprocess.run([chromium()] + CHROMIUM + ["--user-data-dir=" + tempfile.mkdtemp(dir=tmp),
                                              "--window-size=1400,1000", "--hide-scrollbars",
                                              "--screenshot=" + png, "file://" + page],
                   capture_output=True, timeout=180)
    return png
