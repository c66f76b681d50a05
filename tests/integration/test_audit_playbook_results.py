"""What a play that imports playbooks/audit.yml reads afterwards (issue 22, item 6): each host's verdict from the
report task's registered result (metnos_audit_report.verdicts), the same as the JSON report's, and no per-host
registered result (a register is a Jinja expression that every forked worker compiles and renders again: ~7 ms
of the controller's CPU per host). Hosts are local-connection aliases of this machine, each audited for real
(bwrap smoke test, service environment, probe)."""
import glob
import json
import os
import sys

from conftest import ROOT, run_playbook

PLAY = """
- name: The audit, as a play of another playbook imports it
  ansible.builtin.import_playbook: %(audit)s

- name: What the importing playbook reads afterwards
  hosts: all
  gather_facts: false
  tasks:
    - name: Keep it
      ansible.builtin.copy:
        dest: "%(out)s/after.json"
        mode: "0600"
        content: "{{ {'verdicts': metnos_audit_report.verdicts, 'registered': ansible_play_hosts_all
                     | map('extract', hostvars) | selectattr('metnos_audit_result', 'defined') | list | length}
                     | to_json }}"
      delegate_to: localhost
      run_once: true
"""


def test_an_importing_play_reads_each_hosts_verdict_from_the_report_task(tmp_path):
    play = tmp_path / "site.yml"
    play.write_text(PLAY % {"audit": os.path.join(ROOT, "playbooks", "audit.yml"), "out": tmp_path})
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n" + "".join(
        "    %s: {ansible_connection: local, ansible_python_interpreter: %s}\n" % (name, sys.executable)
        for name in ("alias-a", "alias-b")))
    proc = run_playbook(str(play), "-i", str(inventory), "-e", "metnos_audit_dest=%s" % (tmp_path / "reports"),
                        "-e", '{"metnos_audit_manifests": []}')
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    after = json.loads((tmp_path / "after.json").read_text())
    (report,) = glob.glob(str(tmp_path / "reports" / "metnos-audit-*.json"))
    doc = json.load(open(report))
    assert after["verdicts"] == dict((h["host"], h["verdict"]) for h in doc["hosts"]), (after, doc["totals"])
    assert sorted(after["verdicts"]) == ["alias-a", "alias-b"]
    assert set(after["verdicts"].values()) <= {"pass", "warn"}, after
    assert after["registered"] == 0, after
