"""A mixed fleet in one report, each host at its containment level, none counted as isolated that is not (issue 45,
acceptance; R-SCOPE-4): playbooks/audit.yml through the real metnos_audit action, its payload and the real probe
on this machine.

- ``server`` and ``linux-device`` (metnos_sandbox_placement: device) are this machine (local-connection aliases),
  audited for real: bwrap, the real probe, the report. (The Linux device profile itself - PID namespace, its own
  process group - is proven by its own probe tests, issue 45 item 1; here the device is a Linux host whose probe
  ran.)
- ``mac-standin`` and ``win-standin`` are stand-ins: no macOS or Windows host can exist on this Linux build
  machine (nor in its containers, which share its kernel), so their facts (ansible_system, ansible_os_family,
  ansible_distribution_version, as Ansible's setup gathers them there) are set in the inventory. The action reads
  those facts as it would gathered ones and runs nothing on those hosts; their records, levels and findings are
  the real action's.
"""
import glob
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT, ansible_env, ansible_tool, run_playbook

pytestmark = pytest.mark.rule("R-SCOPE-4")

NEEDS_CONTAINER = {"manifest": {"name": "needs_container", "origin": "metnos", "capabilities": [],
                                "min_containment": "appcontainer"}}
PLAIN = {"manifest": {"name": "plain", "origin": "metnos", "capabilities": []}}


def test_a_mixed_fleet_reports_each_level_and_counts_only_the_proven(tmp_path):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "metnos_audit_unit": "",
             "metnos_sandbox_manifests": []}
    hosts = {
        "server": dict(local),
        "linux-device": dict(local, metnos_sandbox_placement="device"),
        "mac-standin": dict(local, metnos_sandbox_placement="device", ansible_system="Darwin",
                            ansible_os_family="Darwin", metnos_sandbox_manifests=[NEEDS_CONTAINER, PLAIN]),
        "win-standin": dict(local, metnos_sandbox_placement="device", ansible_system="Win32NT",
                            ansible_os_family="Windows", ansible_distribution_version="10.0.19045.0",
                            metnos_sandbox_manifests=[NEEDS_CONTAINER]),
        "win7-standin": dict(local, metnos_sandbox_placement="device", ansible_system="Win32NT",
                             ansible_os_family="Windows", ansible_distribution_version="6.1.7601.65536",
                             metnos_sandbox_manifests=[NEEDS_CONTAINER, PLAIN]),
    }
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    reports = tmp_path / "reports"
    (tmp_path / "textfile").mkdir()
    proc = run_playbook(os.path.join(ROOT, "playbooks", "audit.yml"), "-i", str(inventory),
                        "-e", "metnos_audit_dest=%s" % reports, "-e", "metnos_audit_textfile_dir=%s" % (
                            tmp_path / "textfile"))
    out = proc.stdout
    assert proc.returncode != 0 and "host(s) failing the sandbox audit" in out, out[-4000:]    # macOS: none

    doc = json.load(open(str(reports / "latest.json")))
    by_host = dict((h["host"], h) for h in doc["hosts"])
    level = dict((name, (h["containment"]["placement"], h["containment"]["platform"], h["containment"]["level"],
                         h["containment"]["proven"])) for name, h in by_host.items())
    assert level == {
        "server": ("server", "linux", "bubblewrap", True),
        "linux-device": ("device", "linux", "bubblewrap", True),
        "mac-standin": ("device", "macos", "none", False),
        "win-standin": ("device", "windows", "appcontainer", False),
        "win7-standin": ("device", "windows", "job_object", False),
    }, (level, out[-3000:])
    assert by_host["server"]["probe"]["passed"] is True and by_host["linux-device"]["probe"]["passed"] is True
    # Only the proven count as isolated: the report's total, and every face agrees.
    assert doc["totals"]["isolated"] == 2 and doc["totals"]["hosts"] == 5
    codes = dict((name, sorted(d["code"] for d in h["diagnostics"] if d["code"].startswith("containment")))
                 for name, h in by_host.items())
    assert codes == {"server": [], "linux-device": [], "mac-standin": ["containment_none"],
                     "win-standin": ["containment_declared"], "win7-standin": ["containment_declared"]}, codes
    verdicts = dict((name, h["verdict"]) for name, h in by_host.items())
    assert verdicts["mac-standin"] == "fail" and verdicts["win-standin"] == verdicts["win7-standin"] == "warn"
    assert "no native containment module" in by_host["mac-standin"]["containment"]["reason"]
    assert "NT 6.2" in by_host["win7-standin"]["containment"]["reason"]
    # Per device, the executors refused (their minimum is above the level) or run downgraded there.
    listed = dict((name, [(e["executor"], e["outcome"]) for e in h["containment"]["executors"]])
                  for name, h in by_host.items())
    assert listed == {"server": [], "linux-device": [], "win-standin": [],
                      "mac-standin": [("needs_container", "refused"), ("plain", "downgraded")],
                      "win7-standin": [("needs_container", "refused"), ("plain", "downgraded")]}, listed

    (md_path,) = glob.glob(str(reports / "metnos-audit-*.md"))
    md = open(md_path).read()
    assert "**2 of 5 host(s)**" in md
    for row in ("| server | server | linux | bubblewrap | yes |",
                "| linux-device | device | linux | bubblewrap | yes |",
                "| mac-standin | device | macos | none | no |",
                "| win-standin | device | windows | appcontainer | no |",
                "| win7-standin | device | windows | job_object | no |"):
        assert row in md, row
    (junit_path,) = glob.glob(str(reports / "metnos-audit-*.junit.xml"))
    text = ET.parse(junit_path).getroot().find("testsuite/system-out").text
    assert "mac-standin: containment: none on a macos device; not counted as isolated" in text, text
    assert "server: containment: bubblewrap (proven) on a linux server; isolated" in text, text
    (html_path,) = glob.glob(str(reports / "metnos-audit-*.html"))
    page = open(html_path).read()
    assert "appcontainer (declared, not proven)</td>" in page and "job_object (declared, not proven)</td>" in page
    prom = (tmp_path / "textfile" / "metnos_sandbox_audit.prom").read_text()
    assert ('metnos_sandbox_containment_level{host="mac-standin",level="none",platform="macos",placement="device",'
            'proven="false"} 1\n') in prom, prom
    assert 'metnos_sandbox_audit_isolated_hosts{isolated="true"} 2\n' in prom
    # The users' CI check (scripts/check-containment.py) on this report: the macOS stand-in is at none with its
    # reason and fails the gate; the proven server is not at none.
    assert check(reports / "latest.json", "mac-standin", "none").returncode == 0
    wrong = check(reports / "latest.json", "server", "none")
    assert wrong.returncode == 1 and "server is at level bubblewrap, not none" in wrong.stdout, wrong.stdout
    assert "win7-standin is at level job_object, not appcontainer" in check(
        reports / "latest.json", "win7-standin", "appcontainer").stdout


def check(report, host, level):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "check-containment.py"), str(report), host,
                           level], capture_output=True, text=True, timeout=120)


def test_the_macos_jobs_commands_here(tmp_path):
    """The macOS job's own playbook and check (.github/workflows/ci.yml, macos-audit), run on this Linux machine as
    written (-i localhost, -c local): the facts it gathers say Linux, so the payload runs, the probe proves
    bubblewrap, and the check that expects none fails saying so; expecting bubblewrap passes."""
    reports = tmp_path / "reports"
    proc = subprocess.run([ansible_tool("ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", "ansible_python_interpreter=%s" % sys.executable,
                           "-e", "metnos_audit_dest=%s" % reports,
                           "-e", "metnos_audit_unit=", os.path.join(ROOT, "tests", "ci", "audit-self.yml")],
                          capture_output=True, text=True, cwd=ROOT, env=ansible_env(), timeout=900)
    assert (reports / "latest.json").exists(), proc.stdout[-4000:]
    here = check(reports / "latest.json", "localhost", "none")
    assert here.returncode == 1 and "localhost is at level bubblewrap, not none" in here.stdout, here.stdout
    assert check(reports / "latest.json", "localhost", "bubblewrap").returncode == 0, proc.stdout[-3000:]
