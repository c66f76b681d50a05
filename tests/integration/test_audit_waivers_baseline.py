"""Waivers and the baseline through the real audit playbook (issue 42 items 4 and 5): playbooks/audit.yml on this
machine (a local-connection alias, audited for real) with a real finding planted - a service unit that does not
exist (unit_not_found, a warning; warnings count as failures here) - then run again with a waiver file, with the
first run's latest.json as the baseline and fail_on new, and with a bad waiver file."""
import datetime
import glob
import json
import os
import sys

from conftest import ROOT, run_playbook


def audit(tmp_path, *extra):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    alias-a: {ansible_connection: local, ansible_python_interpreter: %s}\n"
                         % sys.executable)
    return run_playbook(os.path.join(ROOT, "playbooks", "audit.yml"), "-i", str(inventory),
                        "-e", "metnos_audit_dest=%s" % (tmp_path / "reports"), "-e", '{"metnos_audit_manifests": []}',
                        "-e", "metnos_audit_unit=metnos-absent-%d.service" % os.getpid(),
                        "-e", "metnos_audit_probe=false", "-e", "metnos_audit_warnings_as_failures=true", *extra)


def latest(tmp_path):
    return json.load(open(str(tmp_path / "reports" / "latest.json")))


def test_waivers_and_the_baseline_through_the_playbook(tmp_path):
    first = audit(tmp_path)
    assert first.returncode != 0, first.stdout[-3000:]                        # unit_not_found fails the gate
    doc = latest(tmp_path)
    assert "unit_not_found" in [d["code"] for d in doc["hosts"][0]["diagnostics"]]
    waivers = tmp_path / "waivers.yml"
    expires = (datetime.datetime.now(datetime.timezone.utc).date() + datetime.timedelta(days=30)).isoformat()
    waivers.write_text("- code: unit_not_found\n  host: 'alias-*'\n  justification: the service is installed next "
                       "quarter (CHG-42)\n  approved_by: ops-lead@example.org\n  expires: %s\n" % expires)
    (tmp_path / "textfile").mkdir()
    waived = audit(tmp_path, "-e", "metnos_audit_waivers=%s" % waivers,
                   "-e", "metnos_audit_textfile_dir=%s" % (tmp_path / "textfile"))
    assert waived.returncode == 0, waived.stdout[-3000:]
    prom = (tmp_path / "textfile" / "metnos_sandbox_audit.prom").read_text()
    assert 'metnos_sandbox_audit_waived_findings{code="unit_not_found"} 1\n' in prom
    assert 'state="active"} %d\n' % (30 * 86400) in prom
    host = latest(tmp_path)["hosts"][0]
    assert [(w["code"], w["justification"], w["days_left"]) for w in host["waived"]] == [
        ("unit_not_found", "the service is installed next quarter (CHG-42)", 30)]
    assert "waived: 1 finding(s) by 1 waiver(s)" in waived.stdout
    baseline = str(tmp_path / "reports" / "latest.json")
    again = audit(tmp_path, "-e", "metnos_audit_baseline=%s" % baseline, "-e", "metnos_audit_fail_on=new")
    assert again.returncode == 0, again.stdout[-3000:]                 # the finding was there before: not new
    doc = latest(tmp_path)
    assert doc["hosts"][0]["change"]["unit_not_found"] == "still" and doc["gate"]["fail_on"] == "new"
    assert audit(tmp_path, "-e", "metnos_audit_baseline=%s" % baseline).returncode != 0       # fail_on any
    reports = sorted(glob.glob(str(tmp_path / "reports" / "metnos-audit-*.json")))
    waivers.write_text(waivers.read_text() + "  expiry: tomorrow\n")
    refused = audit(tmp_path, "-e", "metnos_audit_waivers=%s" % waivers)
    assert refused.returncode != 0 and "audit_waiver_field_unknown" in refused.stdout, refused.stdout[-3000:]
    assert "waiver #1 has the unknown field 'expiry'" in refused.stdout
    assert sorted(glob.glob(str(tmp_path / "reports" / "metnos-audit-*.json"))) == reports      # nothing written
