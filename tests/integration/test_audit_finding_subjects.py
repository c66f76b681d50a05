"""A refused manifest is known by its subject from one audit to the next (issue 53, item 1): the real audit
playbook (playbooks/audit.yml) on this machine (a local-connection alias, the probe off) with real manifest files
that do not load - one with no readable name, one whose first line is ``name: broken_yaml`` - then run again with
the first one fixed (taken out of the list) and another nameless broken manifest added, the first run's report as
the baseline and ``metnos_audit_fail_on=new``. Before subjects, every nameless refusal had the one key
``profile_refused|(unnamed manifest)`` and the gate passed this new failure. Also: a stored baseline of schema /1
(written before subjects: ``(unnamed manifest)`` and no details.subject) still loads and compares."""
import json
import os
import sys

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import baseline, site_summary
from conftest import ROOT, run_module, run_playbook

BROKEN = "origin: [unclosed\ncapabilities: []\n"               # no name at all, not valid YAML
NAMED = "name: broken_yaml\norigin: [unclosed\n"              # a readable name, not valid YAML


def audit(tmp_path, manifests, *extra):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {"alias-a": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "metnos_audit_unit": "",
        "metnos_sandbox_profile_dir": str(tmp_path / "profiles"), "metnos_sandbox_manifests": manifests}}}}))
    return run_playbook(os.path.join(ROOT, "playbooks", "audit.yml"), "-i", str(inventory),
                        "-e", "metnos_audit_dest=%s" % (tmp_path / "reports"), "-e", "metnos_audit_probe=false",
                        *extra)


def refused(doc):
    return dict((d["details"]["subject"], d) for d in doc["hosts"][0]["diagnostics"] if d["code"] == "profile_refused")


def test_a_new_nameless_refusal_is_new_and_the_fixed_one_resolved(tmp_path):
    broken, named, another = (str(tmp_path / n) for n in ("broken.yml", "named.yml", "another.yml"))
    for path, text in ((broken, BROKEN), (named, NAMED), (another, BROKEN)):
        with open(path, "w") as handle:
            handle.write(text)
    first = audit(tmp_path, [broken, named])
    assert first.returncode != 0, first.stdout[-3000:]
    doc = json.load(open(str(tmp_path / "reports" / "latest.json")))
    found = refused(doc)
    assert sorted(found) == sorted([broken, "broken_yaml"]), found                 # the canary: both seen
    assert found[broken]["details"]["manifest"] == broken and found["broken_yaml"]["details"]["manifest"] == named
    assert "(unnamed" not in json.dumps(doc) and found["broken_yaml"]["message"].startswith("broken_yaml: ")
    base = str(tmp_path / "first.json")
    os.rename(os.path.realpath(str(tmp_path / "reports" / "latest.json")), base)
    again = audit(tmp_path, [named, another], "-e", "metnos_audit_baseline=%s" % base, "-e", "metnos_audit_fail_on=new")
    assert again.returncode != 0, again.stdout[-3000:]                            # a new failure fails the gate
    doc = json.load(open(str(tmp_path / "reports" / "latest.json")))
    host = doc["hosts"][0]
    assert host["change"] == {"profile_refused|broken_yaml": "still", "profile_refused|" + another: "new"}, host
    assert [(r["code"], r["subject"]) for r in host["resolved"]] == [("profile_refused", broken)], host["resolved"]
    assert (doc["baseline"]["new"], doc["baseline"]["still"], doc["baseline"]["resolved"]) == (1, 1, 1), doc["baseline"]
    assert doc["gate"]["failed"] is True and doc["gate"]["fail_on"] == "new"


def test_a_stored_schema_1_baseline_without_subjects_still_loads(tmp_path):
    """A report of schema /1 as main at ad221f9 wrote it (a nameless refusal keyed '(unnamed manifest)')."""
    stored = {"schema": "metnos-sandbox-audit-report/1", "generated": "2026-12-01T00:00:00Z", "hosts": [
        {"host": "alias-a", "verdict": "fail", "reachable": True, "diagnostics": [
            {"code": "profile_refused", "severity": "error", "title": "A manifest is refused",
             "message": "(unnamed manifest): the manifest is refused (manifest_parse_error): ...",
             "details": {"executor": "(unnamed manifest)", "refusal": "manifest_parse_error"}},
            {"code": "unit_not_found", "severity": "warning", "title": "t", "message": "m", "details": {}}]}]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(stored))
    base = baseline.read(str(path))
    assert sorted(base["hosts"]["alias-a"]) == ["profile_refused|(unnamed manifest)", "unit_not_found"]
    now = [{"host": "alias-a", "verdict": "fail", "reachable": True, "diagnostics": [
        {"code": "profile_refused", "severity": "error", "details": {"executor": "/m/a.yml", "subject": "/m/a.yml"}},
        {"code": "unit_not_found", "severity": "warning", "details": {}}]}]
    counts = baseline.compare(now, base)
    assert (counts["new"], counts["still"], counts["resolved"]) == (1, 1, 1), counts
    assert now[0]["change"] == {"profile_refused|/m/a.yml": "new", "unit_not_found": "still"}


def test_two_manifests_of_one_name_are_a_finding_naming_both(tmp_path):
    """Two real copies of the read_notes example under two file names: before, 'missing notes' twice and no word
    of why; now the second is profile_name_duplicate naming both places, and the first alone is compared."""
    example = open(os.path.join(ROOT, "examples", "manifests", "read_notes.yml")).read()
    paths = [str(tmp_path / n) for n in ("a.yml", "b.yml")]
    for path in paths:
        with open(path, "w") as handle:
            handle.write(example)
    proc = audit(tmp_path, paths)
    assert proc.returncode != 0, proc.stdout[-3000:]
    host = json.load(open(str(tmp_path / "reports" / "latest.json")))["hosts"][0]
    assert [(p["executor"], p["state"]) for p in host["profiles"]] == [("read_notes", "missing"),
                                                                       ("read_notes", "duplicate")], host["profiles"]
    (dup,) = [d for d in host["diagnostics"] if d["code"] == "profile_name_duplicate"]
    assert dup["severity"] == "error" and dup["details"]["subject"] == "read_notes", dup
    assert "manifest #1 of the host's list and manifest #2 of the host's list both render to " in dup["message"]
    assert "one profile file for two manifests" in dup["message"]
    assert dup["message"].split(" both render to ")[1].startswith(str(tmp_path / "profiles" / "read_notes.args"))
    assert [d["code"] for d in host["diagnostics"]].count("profile_missing") == 1


def test_the_role_says_when_a_second_manifest_wrote_over_the_first(tmp_path):
    """The role renders each manifest with the real sandbox_profile module (one call per loop item); two files of
    one executor name write one profile. The role's summary (site_summary.profiles_section over the loop's results,
    each with its item as Ansible registers it) fails with profile_name_duplicate naming both files."""
    example = open(os.path.join(ROOT, "examples", "manifests", "read_notes.yml")).read()
    results = []
    for name in ("a.yml", "b.yml"):
        path = str(tmp_path / name)
        with open(path, "w") as handle:
            handle.write(example)
        res = run_module("metnos.sandbox.sandbox_profile", {"manifest_file": path, "dest": str(tmp_path / "profiles"),
                                                            "host": {"writable_roots": ["/var/lib/metnos"]}})
        assert res["_rc"] == 0 and res["decision"] in ("wrapped", "direct"), res
        results.append(dict(res, item=path))
    section = site_summary.profiles_section(results)
    (dup,) = [d for d in section["diagnostics"] if d["code"] == "profile_name_duplicate"]
    assert section["verdict"] == "fail" and dup["details"]["subject"] == "read_notes", section
    assert dup["message"].startswith("read_notes: %s and %s both render to " % (tmp_path / "a.yml", tmp_path / "b.yml"))
