"""What metnos_audit returns to Ansible (issue 22, item 6): the whole record by default, a summary with
result=summary (what playbooks/audit.yml asks for, so that Ansible sends back and keeps far less per host),
through the real action and its payload on this machine. The summary is the record's verdict and codes, and
the record itself is still in the run's spool for metnos_audit_report (here the report is built from the
summary run's spool and holds the whole record)."""
import json
import os
import sys

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import transport
from conftest import ROOT, run_module, run_playbook

PLAY = """
- name: The audit's two result shapes
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Whole record (the default)
      metnos.sandbox.metnos_audit: {unit: "", probe: false}
      register: full
    - name: Summary
      metnos.sandbox.metnos_audit: {unit: "", probe: false, result: summary}
      register: brief
    - name: Reports from this run's spool (the record the summary task kept)
      metnos.sandbox.metnos_audit_report: {hosts: [localhost], dest: "%(out)s/reports"}
    - name: Keep both
      ansible.builtin.copy:
        dest: "%(out)s/results.json"
        mode: "0600"
        content: "{{ shapes | to_json }}"
      vars:
        shapes: {full: "{{ full }}", brief: "{{ brief }}"}
"""


def test_the_summary_is_the_records_verdict_and_codes_and_the_spool_keeps_the_record(tmp_path):
    play = tmp_path / "play.yml"
    play.write_text(PLAY % {"out": tmp_path})
    proc = run_playbook(str(play), "-i", "localhost,", "-c", "local", "-e",
                        "ansible_python_interpreter=%s" % sys.executable)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = json.loads((tmp_path / "results.json").read_text())
    full, brief = got["full"], got["brief"]
    assert {"bwrap_facts", "service", "profiles", "probe", "diagnostics", "monitor"} <= set(full)
    assert not {"bwrap_facts", "service", "profiles", "probe", "diagnostics", "monitor"} & set(brief)
    assert set(transport.SUMMARY_KEYS) | {"codes", "counts"} <= set(brief)
    assert brief["verdict"] == full["verdict"] and brief["schema"] == full["schema"]
    assert brief["codes"] == [d["code"] for d in full["diagnostics"]]
    assert sum(brief["counts"].values()) == len(full["diagnostics"])
    assert len(json.dumps(brief)) * 10 < len(json.dumps(full))
    (report_path,) = (tmp_path / "reports").glob("metnos-audit-*.json")
    report = json.loads(report_path.read_text())
    host = report["hosts"][0]
    assert host["verdict"] == brief["verdict"] and [d["code"] for d in host["diagnostics"]] == brief["codes"]
    assert host["bwrap"] is not None            # the whole record, from the spool


def test_an_unknown_shape_is_refused():
    res = run_module("metnos.sandbox.metnos_audit", {"unit": "", "result": "tiny"})
    assert res.get("failed") is True and "result" in res.get("msg", ""), res




VARS_PLAY = """
- name: The audit's options from the host's variables
  hosts: all
  gather_facts: false
  vars:
    metnos_audit_probe: false
  tasks:
    - name: Audit with from_vars
      metnos.sandbox.metnos_audit: {from_vars: true}
      register: audited
    - name: Keep it
      ansible.builtin.copy:
        dest: "%(out)s/from-vars.json"
        mode: "0600"
        content: "{{ audited | to_json }}"
"""


def _vars_run(tmp_path, *extra):
    play = tmp_path / "vars.yml"
    play.write_text(VARS_PLAY % {"out": tmp_path})
    manifest = os.path.join(ROOT, "examples", "manifests", "read_notes.yml")
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps({"all": {"hosts": {"h1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "metnos_sandbox_unit": "", "metnos_sandbox_manifests": [manifest],
        "metnos_sandbox_profile_dir": "{{ '%s' }}" % (tmp_path / "profiles"),   # a template: templated by the action
        "metnos_sandbox_writable_roots": ["/srv/data"], "metnos_sandbox_host": {"runtime_dir": "/srv/rt"}}}}}))
    return run_playbook(str(play), "-i", str(inv), *extra)


def test_from_vars_reads_the_roles_variables_and_the_play_knobs(tmp_path):
    proc = _vars_run(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = json.loads((tmp_path / "from-vars.json").read_text())
    assert got["service"] is None and got["probe"] is None          # unit "" and metnos_audit_probe false
    assert [(p["executor"], p["path"]) for p in got["profiles"]] == [
        ("read_notes", str(tmp_path / "profiles" / "read_notes.args"))]
    assert got["profiles"][0]["state"] == "missing"


def test_from_vars_values_are_validated_like_the_tasks_own(tmp_path):
    proc = _vars_run(tmp_path, "-e", "metnos_audit_probe=maybe")
    assert proc.returncode != 0 and "probe" in proc.stdout and "maybe" in proc.stdout, proc.stdout[-3000:]
