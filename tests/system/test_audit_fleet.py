"""playbooks/audit.yml over a mixed fleet of real systemd hosts: a healthy Debian container,
containers with planted faults, one unreachable host. All four reports, the right verdict and
code per host, a non-zero exit, hosts left byte-identical (normal and --check runs), and the
HTML report rendered by headless Chromium (screenshot kept under tests/artifacts/)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from conftest import ROOT, ansible_env, start_host, stop_host
from helpers import report_browser

SLEEP = "ExecStart=/bin/sleep infinity\n"
FLEET = {
    "healthy": ("[Service]\nUser=metnos\n" + SLEEP, {}, "pass", None),
    "disabled": ("[Service]\nUser=metnos\nEnvironmentFile=/etc/metnos/env\n" + SLEEP,
                 {"/etc/metnos/env": "METNOS_SANDBOX=off\n"}, "fail", "sandbox_disabled_via_env"),
    "restricted": ("[Service]\nUser=metnos\nRestrictNamespaces=yes\n" + SLEEP, {}, "fail", "unit_blocks_namespaces"),
}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    hosts = {}
    try:
        for role, (unit, files, _v, _c) in FLEET.items():
            h = start_host("metnos-audit-%s" % role)
            hosts[role] = h
            h.install_unit("svc", unit, files)
            h.sh("mv /etc/systemd/system/metnos-svc.service /etc/systemd/system/metnos.service && "
                 "systemctl daemon-reload && systemctl start metnos.service")
        inv = tmp_path_factory.mktemp("inv") / "fleet.yml"
        lines = ["all:", "  vars:", "    ansible_connection: containers.podman.podman",
                 "    ansible_python_interpreter: /usr/bin/python3", "  hosts:"]
        for role, h in hosts.items():
            lines.append("    %s: {ansible_host: %s}" % (role, h.name))
        lines.append("    gone: {ansible_host: metnos-audit-does-not-exist}")
        inv.write_text("\n".join(lines) + "\n")
        yield hosts, str(inv)
    finally:
        for h in hosts.values():
            stop_host(h)


def run_audit(inv, dest, *extra):
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inv, "playbooks/audit.yml",
           "-e", "metnos_audit_dest=%s" % dest, "-e", "{\"metnos_audit_manifests\": []}"] + list(extra)
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ansible_env(), timeout=900)


def test_mixed_fleet_reports_and_gate(fleet, tmp_path):
    hosts, inv = fleet
    before = dict((role, h.snapshot()) for role, h in hosts.items())
    proc = run_audit(inv, str(tmp_path / "run1"))
    assert proc.returncode != 0, proc.stdout[-3000:]                       # the gate fails the run
    files = sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "run1" / "*")) if os.path.isfile(p)
                   and not os.path.islink(p))
    assert [f.split(".", 1)[1] for f in files] == ["html", "json", "junit.xml", "md"]
    links = sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "run1" / "*")) if os.path.islink(p))
    assert links == ["latest", "latest.html", "latest.json", "latest.junit.xml", "latest.md"]   # the next baseline
    doc = json.load(open(glob.glob(str(tmp_path / "run1" / "*.json"))[0]))
    assert doc["schema"] == "metnos-sandbox-audit-report/2"
    by_host = dict((h["host"], h) for h in doc["hosts"])
    for role, (_u, _f, verdict, code) in FLEET.items():
        assert by_host[role]["verdict"] == verdict, (role, by_host[role]["diagnostics"])
        codes = [d["code"] for d in by_host[role]["diagnostics"]]
        if code:
            assert code in codes, (role, codes)
        else:
            assert by_host[role]["probe"]["passed"] is True
    assert by_host["gone"]["verdict"] == "unreachable"
    assert [d["code"] for d in by_host["gone"]["diagnostics"]] == ["host_unreachable"]
    assert doc["totals"]["pass"] == 1 and doc["totals"]["fail"] == 2 and doc["totals"]["unreachable"] == 1
    # One finding once: the service check and the probe (which confirms the directive by experiment, with the
    # table's relaxation tried for real) report the same unit_blocks_namespaces; the host's report lists it once,
    # with the probe's fuller message.
    blocked = [d for d in by_host["restricted"]["diagnostics"] if d["code"] == "unit_blocks_namespaces"]
    assert len(blocked) == 1 and "The probe failed in this unit's context; found by experiment" in \
        blocked[0]["message"] and blocked[0]["message"].endswith("(tried for real)."), blocked
    junit = open(glob.glob(str(tmp_path / "run1" / "*.junit.xml"))[0]).read()
    assert 'classname="metnos.restricted" name="service_environment"><failure' in junit
    md = open(glob.glob(str(tmp_path / "run1" / "*.md"))[0]).read()
    assert "unit_blocks_namespaces" in md and "| healthy | PASS |" in md
    assert "1 hosts" not in proc.stdout and "4 hosts: 1 pass, 0 warn, 2 fail, 1 unreachable" in proc.stdout
    after = dict((role, h.snapshot()) for role, h in hosts.items())
    assert after == before                                                  # read-only: byte-identical
    check = run_audit(inv, str(tmp_path / "run2"), "--check")
    assert check.returncode != 0
    assert dict((role, h.snapshot()) for role, h in hosts.items()) == before
    shot(glob.glob(str(tmp_path / "run1" / "*.html"))[0])


def shot(html_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.fail("chromium is not installed (.ci/run installs it): the HTML report must be checked in a browser")
    art = os.path.join(ROOT, "tests", "artifacts")
    os.makedirs(art, exist_ok=True)
    png = os.path.join(art, "audit-report.png")
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          "--user-data-dir=/tmp/metnos-chromium", "--dump-dom", "file://" + html_path],
                         capture_output=True, text=True, timeout=120).stdout
    assert '<table id="hosts" ' in dom and "restricted" in dom and 'id="shown">4<' in dom   # JS ran
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--user-data-dir=/tmp/metnos-chromium", "--window-size=1400,900", "--screenshot=" + png,
                    "file://" + html_path], capture_output=True, timeout=120)
    assert os.path.getsize(png) > 10000
    # Without a click: the gate, the failing hosts first with the commands that fix them; every text readable.
    tmp = tempfile.mkdtemp(prefix="metnos-report-check-")
    _page, checked = report_browser.with_harness(open(html_path, encoding="utf-8").read(), tmp)
    out = report_browser.measure(tmp, checked)
    assert out["gate"].startswith("Gate FAILED") and "act on 3 host(s) first" in out["gate"], out["gate"]
    assert out["first_host"].startswith("fail ") and out["fix_visible"] and all(out["fix_visible"]), out
    assert out["overlaps"] == [] and out["selected"] == out["commands"] and out["raw_visible"] == 0
    assert out["failures"] == [], out["failures"]
