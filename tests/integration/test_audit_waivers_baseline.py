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
    assert refused.returncode != 0, refused.stdout[-3000:]
    assert "waiver #1 has the unknown field 'expiry': did you mean expires?" in refused.stdout, refused.stdout[-3000:]
    # Issue 54: a refused waiver file no longer throws the hosts' audit away: one more report set, marked, gate failed
    written = sorted(glob.glob(str(tmp_path / "reports" / "metnos-audit-*.json")))
    assert len(written) == len(reports) + 1, (reports, written)
    doc = latest(tmp_path)
    assert doc["gate"]["failed"] and doc["gate"]["inputs_refused"] == [str(waivers)], doc["gate"]
    assert [d["code"] for d in doc["findings"]] == ["audit_waiver_field_unknown"]
    assert doc["hosts"][0]["reachable"] and "waived" not in doc["hosts"][0]


WAIVER = ("- code: {code}\n  host: 'alias-*'\n  justification: {justification}\n  approved_by: ops-lead@example.org\n"
          "  expires: {expires}\n")


def test_every_waiver_problem_in_one_pass_and_the_reports_still_written(tmp_path):
    """Issue 54 item 2: three waivers, five problems of four kinds (a field typo, a code typo hidden behind a bad
    justification, a host pattern, a date) in ONE run, with did-you-mean for the field and the code; the path
    given relative is shown absolute (from the working directory, the checkout here); the reports are written,
    marked (gate.inputs_refused, the problems as fleet findings in every format), and the gate fails."""
    expires = (datetime.datetime.now(datetime.timezone.utc).date() + datetime.timedelta(days=30)).isoformat()
    folder = tmp_path / "admin"
    folder.mkdir()
    second = WAIVER.format(code="unit_not_found", justification="later", expires="2026-02-30")
    (folder / "waivers.yml").write_text(
        WAIVER.format(code="unit_not_fund", justification="''", expires=expires) + "  expiry: soon\n"
        + second.replace("'alias-*'", "'a b'"))
    relative = os.path.relpath(str(folder / "waivers.yml"), ROOT)     # run_playbook runs in the checkout
    proc = audit(tmp_path, "-e", "metnos_audit_waivers=%s" % relative)
    out = proc.stdout
    assert proc.returncode != 0, out[-3000:]
    absolute = str(folder / "waivers.yml")
    for expected in ("waiver #1 has the unknown field 'expiry': did you mean expires?",
                     "waiver #1, field justification: '' is not a non-empty one-line text",
                     "waiver #1: 'unit_not_fund' is not a registered diagnostic code: did you mean unit_not_found?",
                     "waiver #2: host 'a b' is not an inventory name or pattern",
                     "waiver #2: expires '2026-02-30' is not a date written YYYY-MM-DD"):
        assert "the waiver file (%s): %s" % (absolute, expected) in out, (expected, out[-4000:])
    assert "NOT COUNTED AS ASKED: %s refused (5 problem(s))" % absolute in out, out[-3000:]
    assert "refused: %s" % absolute in out, out[-3000:]          # the gate's message
    doc = latest(tmp_path)
    assert doc["gate"]["failed"] and doc["gate"]["inputs_refused"] == [absolute]
    assert len(doc["findings"]) == 5 and doc["hosts"][0]["host"] == "alias-a"
    markdown = open(glob.glob(str(tmp_path / "reports" / "metnos-audit-*.md"))[0]).read()
    html = open(glob.glob(str(tmp_path / "reports" / "metnos-audit-*.html"))[0]).read()
    assert "audit_waiver_code_unknown" in markdown and "audit_waiver_code_unknown" in html


def test_a_bad_baseline_still_writes_the_reports_and_fails_the_gate(tmp_path):
    bad = tmp_path / "old.json"
    bad.write_text("{not json")
    proc = audit(tmp_path, "-e", "metnos_audit_baseline=%s" % bad, "-e", "metnos_audit_warnings_as_failures=false")
    assert proc.returncode != 0, proc.stdout[-3000:]
    doc = latest(tmp_path)
    assert doc["gate"]["inputs_refused"] == [str(bad)] and doc["gate"]["failed"]
    assert [d["code"] for d in doc["findings"]] == ["audit_baseline_unreadable"] and "baseline" not in doc
    assert "the baseline (%s): not JSON" % bad in proc.stdout, proc.stdout[-3000:]
