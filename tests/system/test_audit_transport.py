"""The audit's transport on real systemd hosts (issue 22): playbooks/audit.yml over podman against
- ``noisy``: a host whose interpreter is a wrapper that prints a stray ``{`` and a forged JSON result
  on stdout before it runs python3 (what a login banner, a MOTD or a shell rc file does), set as its
  ansible_python_interpreter: the audit takes the framed result, not the first ``{``;
- ``elsewhere``: a host without /usr/bin/python3 (its interpreter moved to /usr/local/bin) and no
  ansible_python_interpreter: found by Ansible's own discovery, as for any module, not host_no_python;
then, in a second ansible-playbook run, the report task alone over the same two hosts: refused with
audit_report_no_results (its results lived in the first run), never host_unreachable."""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, ansible_env, start_host, stop_host

UNIT = "[Service]\nUser=metnos\nExecStart=/bin/sleep infinity\n"
NOISY = "#!/bin/sh\necho '{'\necho '{\"schema\": \"metnos-sandbox-audit/1\", \"verdict\": \"forged\"}'\n" \
        "exec /usr/bin/python3 \"$@\"\n"
REPORT_ONLY = """- hosts: all
  gather_facts: false
  tasks:
    - name: The report alone, in a run that audited nothing
      metnos.sandbox.metnos_audit_report:
        hosts: "{{ ansible_play_hosts_all }}"
        dest: %s
      register: report
      run_once: true
      delegate_to: localhost
      ignore_errors: true
    - name: Keep what it returned
      ansible.builtin.copy:
        content: "{{ report | to_json }}"
        dest: %s
        mode: "0600"
      run_once: true
      delegate_to: localhost
"""


def _playbook(path, inv, *extra):
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inv, path] + list(extra)
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ansible_env(), timeout=900)


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    started = {}
    try:
        for role in ("noisy", "elsewhere"):
            h = start_host("metnos-i22b-%s" % role)
            started[role] = h
            h.install_unit("svc", UNIT)
            h.sh("mv /etc/systemd/system/metnos-svc.service /etc/systemd/system/metnos.service && "
                 "systemctl daemon-reload && systemctl start metnos.service")
        started["noisy"].write("/usr/local/bin/noisy-python", NOISY, mode="0755")
        started["elsewhere"].sh("for f in /usr/bin/python3*; do mv \"$f\" /usr/local/bin/; done; "
                                "test ! -e /usr/bin/python3 && command -v python3")
        inv = tmp_path_factory.mktemp("inv") / "hosts.yml"
        inv.write_text("all:\n  vars:\n    ansible_connection: containers.podman.podman\n  hosts:\n"
                       "    noisy: {ansible_host: %s, ansible_python_interpreter: /usr/local/bin/noisy-python}\n"
                       "    elsewhere: {ansible_host: %s, metnos_sandbox_host: {python_executable: %s}}\n" % (
                           started["noisy"].name, started["elsewhere"].name,
                           started["elsewhere"].sh("readlink -f \"$(command -v python3)\"").stdout.strip()))
        yield started, str(inv)
    finally:
        for h in started.values():
            stop_host(h)


def test_framed_result_discovered_interpreter_and_a_report_in_another_run(hosts, tmp_path):
    started, inv = hosts
    first = _playbook("playbooks/audit.yml", inv, "-e", "metnos_audit_dest=%s" % (tmp_path / "run1"),
                      "-e", '{"metnos_audit_manifests": []}')
    doc = json.load(open(glob.glob(str(tmp_path / "run1" / "*.json"))[0]))
    by_host = dict((h["host"], h) for h in doc["hosts"])
    for role in ("noisy", "elsewhere"):
        codes = [d["code"] for d in by_host[role]["diagnostics"]]
        assert by_host[role]["reachable"] is True, (role, codes, first.stdout[-3000:])
        assert by_host[role]["verdict"] == "pass", (role, by_host[role]["diagnostics"])
    assert first.returncode == 0, first.stdout[-3000:]
    assert by_host["noisy"]["hostname"] == started["noisy"].name          # the real result, not the forged one
    for role in ("noisy", "elsewhere"):     # the compiled core kept for the next audit: root's alone
        kept = started[role].sh("stat -c '%u %a %h' /run/metnos-audit /run/metnos-audit/*.code").stdout.split("\n")
        assert kept[:2] == ["0 700 2", "0 600 1"], (role, kept)

    kept = tmp_path / "report-result.json"
    second = _playbook(str(_write(tmp_path / "report.yml", REPORT_ONLY % (tmp_path / "run2", kept))), inv)
    assert kept.exists(), second.stdout[-3000:]
    report = json.loads(kept.read_text())
    assert report.get("failed") is True and report.get("code") == "audit_report_no_results", report
    assert "host_unreachable" not in second.stdout and not os.path.exists(str(tmp_path / "run2"))
    assert "elsewhere, noisy" in report["msg"]


def _write(path, text):
    path.write_text(text)
    return path
