"""The newcomer's two screens, kept as pictures (issue 54 item 8), in tests/artifacts/ (the CI's artefacts folder,
as tests/system/test_audit_fleet.py keeps its report screenshot):

- newcomer-summary.png (and .txt): the first screen of site.yml's summary in a real terminal - the playbook run
  in a tmux session of 160x48 with Ansible's colours, the pane captured as the terminal drew it (capture-pane
  -e: wrapped at its width, with its colour escapes), from the summary's task line, 48 lines, drawn by
  headless Chromium as a terminal shows it;
- newcomer-report.png: the HTML report of a failing audit (a local alias audited for real and an unreachable
  host, ``ghost``) in headless Chromium at 1400x1000.

Each is checked for what it must show before it is kept: one status() view, check:/fix: labels, no skipping
line; the report's gate. Check mode: nothing on this machine changes."""
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import ROOT, ansible_env
from helpers import failing_fleet, report_browser

ART = os.path.join(ROOT, "tests", "artifacts")
WIDTH, HEIGHT = 160, 48
SGR = re.compile(r"\x1b\[([0-9;]*)m")
COLOURS = {"30": "#000", "31": "#e06c75", "32": "#98c379", "33": "#e5c07b", "34": "#61afef", "35": "#c678dd",
           "36": "#56b6c2", "37": "#dcdfe4", "90": "#7f848e", "91": "#ff7b86", "92": "#b5e890", "93": "#ffd580",
           "94": "#8cc8ff", "95": "#e0a0ff", "96": "#7fe0ec", "97": "#fff"}


def terminal_html(text):
    """The captured pane (SGR colour escapes only: capture-pane -e) as an HTML page that looks like the terminal."""
    out, open_span = [], False
    position = 0
    for match in SGR.finditer(text):
        out.append(html.escape(text[position:match.start()]))
        position = match.end()
        if open_span:
            out.append("</span>")
            open_span = False
        codes = [c for c in match.group(1).split(";") if c]
        colour = next((COLOURS[c] for c in codes if c in COLOURS), None)
        if colour:
            out.append('<span style="color:%s%s">' % (colour, ";font-weight:bold" if "1" in codes else ""))
            open_span = True
    out.append(html.escape(text[position:]))
    if open_span:
        out.append("</span>")
    return ("<!doctype html><meta charset='utf-8'><body style='margin:0;background:#1e2127'><pre style='margin:0;"
            "padding:8px;color:#dcdfe4;font:13px/1.3 monospace;white-space:pre'>%s</pre>" % "".join(out))


def shoot(page_text, png):
    tmp = tempfile.mkdtemp(prefix="metnos-screen-")
    page = os.path.join(tmp, "page.html")
    with open(page, "w", encoding="utf-8") as handle:
        handle.write(page_text)
    report_browser.screenshot(tmp, page, png)
    shutil.rmtree(tmp, ignore_errors=True)
    assert os.path.getsize(png) > 10000, png
    return png


@pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed (scripts/host-packages.sh installs it)")
def test_the_summarys_first_screen_in_a_terminal(tmp_path):
    session = "metnos-newcomer-%d" % os.getpid()
    done = tmp_path / "done"
    env = ansible_env(ANSIBLE_FORCE_COLOR="1")
    exports = " ".join("%s=%s" % (k, shlex_quote(v)) for k, v in env.items() if k.startswith(("ANSIBLE_", "PATH")))
    command = "cd %s && env %s %s playbooks/site.yml --check -e metnos_sandbox_profile_dir=%s; touch %s" % (
        shlex_quote(ROOT), exports, shlex_quote(os.path.join(os.path.dirname(sys.executable), "ansible-playbook")),
        shlex_quote(str(tmp_path / "profiles")), shlex_quote(str(done)))
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(WIDTH), "-y", str(HEIGHT),
                    "bash", "--norc", "-c", command + "; sleep 600"], check=True)
    try:
        deadline = time.time() + 900
        while not done.exists() and time.time() < deadline:
            time.sleep(2)
        assert done.exists(), "site.yml did not end in 900 s"
        # as the terminal drew it (wrapped at its width: the picture), and joined (the checks read whole lines)
        captured = subprocess.run(["tmux", "capture-pane", "-p", "-e", "-S", "-", "-t", session],
                                  capture_output=True, text=True, check=True).stdout
        joined = subprocess.run(["tmux", "capture-pane", "-p", "-J", "-S", "-", "-t", session],
                                capture_output=True, text=True, check=True).stdout
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    lines = captured.splitlines()
    start = next(i for i, line in enumerate(lines) if "Summary of the host" in SGR.sub("", line))
    screen = "\n".join(lines[start:start + HEIGHT])
    plain = SGR.sub("", screen)
    os.makedirs(ART, exist_ok=True)
    with open(os.path.join(ART, "newcomer-summary.txt"), "w", encoding="utf-8") as handle:
        handle.write(plain + "\n")
    shoot(terminal_html(screen), os.path.join(ART, "newcomer-summary.png"))
    whole = SGR.sub("", joined)
    assert whole.count("active=") == 1 and "(a view, not a proof)" in plain, plain
    assert "check: grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status" in whole, whole[-3000:]
    assert "check: " in whole and "skipping:" not in whole, whole[-3000:]
    assert "verdict: " in whole


def test_the_html_report_of_a_failing_audit(tmp_path):
    reports = tmp_path / "reports"
    failing_fleet.audit(failing_fleet.inventory(tmp_path / "fleet.yml"), reports)
    page = failing_fleet.report(reports, "html")
    os.makedirs(ART, exist_ok=True)
    png = os.path.join(ART, "newcomer-report.png")
    report_browser.screenshot(str(tmp_path), page, png)
    assert os.path.getsize(png) > 10000
    with open(page, encoding="utf-8") as handle:
        _page, checked = report_browser.with_harness(handle.read(), str(tmp_path))
    out = report_browser.measure(str(tmp_path), checked)
    assert out["gate"].startswith("Gate FAILED"), out["gate"]


def shlex_quote(value):
    import shlex
    return shlex.quote(value)
