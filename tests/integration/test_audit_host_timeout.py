"""No host blocks the fleet (issue 52 item 4), for real: three local-connection aliases of this machine, one whose
interpreter hangs after the connection (ansible_python_interpreter is a script that records its pid, starts a
child and sleeps). With metnos_audit_host_timeout=5 the run ends, the hung host is host_timeout in every report,
the others' results are written, the gate fails, and the hung interpreter and its child are killed on the host
(timeout(1): the whole process group)."""
import glob
import json
import os
import subprocess
import sys
import time

from conftest import ROOT, ansible_env, ansible_tool

AUDIT = os.path.join(ROOT, "playbooks", "audit.yml")
HANG = """#!/bin/sh
echo $$ > %(pids)s
sleep 600 &
echo $! >> %(pids)s
wait
exec %(python)s "$@"
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as handle:        # a zombie is dead: its parent has not reaped it yet
        return handle.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_hung_host_is_host_timeout_and_the_others_are_reported(tmp_path):
    pids = tmp_path / "pids"
    hang = tmp_path / "hang-python"
    hang.write_text(HANG % {"pids": pids, "python": sys.executable})
    hang.chmod(0o755)
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n" + "".join(
        "    %s: {ansible_connection: local, ansible_python_interpreter: %s}\n" % (name, python)
        for name, python in (("fast-1", sys.executable), ("hung", hang), ("fast-2", sys.executable))))
    dest = tmp_path / "reports"
    start = time.monotonic()
    proc = subprocess.run([ansible_tool("ansible-playbook"), AUDIT, "-i", str(inv), "-e", "metnos_audit_dest=%s" % dest,
                           "-e", "metnos_audit_probe=false", "-e", "metnos_audit_host_timeout=5",
                           "-e", '{"metnos_audit_manifests": [], "metnos_audit_unit": ""}'],
                          capture_output=True, text=True, cwd=ROOT, env=ansible_env(), timeout=300)
    took = time.monotonic() - start
    assert proc.returncode != 0, proc.stdout[-3000:]                     # the gate fails on the hung host
    assert took < 120, took
    recorded = [int(line) for line in pids.read_text().split()]
    assert len(recorded) == 2, recorded                                  # canary: the interpreter did hang
    assert not [pid for pid in recorded if alive(pid)], recorded         # killed on the host, its child too
    doc = json.load(open(str(dest / "latest.json")))
    hosts = dict((h["host"], h) for h in doc["hosts"])
    assert [d["code"] for d in hosts["hung"]["diagnostics"]] == ["host_timeout"], hosts["hung"]
    assert "no audit result within 5 s" in hosts["hung"]["diagnostics"][0]["message"]
    assert hosts["fast-1"]["reachable"] and hosts["fast-2"]["reachable"]
    assert hosts["fast-1"]["verdict"] in ("pass", "warn") and hosts["fast-2"]["verdict"] in ("pass", "warn")
    for ext in ("md", "junit.xml", "html"):                               # a finding in every report
        assert "host_timeout" in open(str(dest / ("latest." + ext))).read(), ext
    assert "host_timeout" in proc.stdout                                 # and in the fleet summary
    assert len(glob.glob(str(dest / "metnos-audit-*"))) == 4


TASK_TIMEOUT = """- hosts: all
  gather_facts: false
  tasks:
    - metnos.sandbox.metnos_audit:
        deadline: 120
        probe: false
        unit: ""
      timeout: 3
"""


def test_the_task_keyword_timeout_still_bounds_the_audit(tmp_path):
    """The action's own alarm never hides Ansible's (the task keyword ``timeout``, a SIGALRM in the same worker):
    the shorter one ends the hung host's task."""
    pids = tmp_path / "pids"
    hang = tmp_path / "hang-python"
    hang.write_text(HANG % {"pids": pids, "python": sys.executable})
    hang.chmod(0o755)
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    hung: {ansible_connection: local, ansible_python_interpreter: %s}\n" % hang)
    play = tmp_path / "play.yml"
    play.write_text(TASK_TIMEOUT)
    start = time.monotonic()
    proc = subprocess.run([ansible_tool("ansible-playbook"), str(play), "-i", str(inv)], capture_output=True,
                          text=True, cwd=ROOT, env=ansible_env(), timeout=300)
    took = time.monotonic() - start
    assert proc.returncode != 0 and took < 60, (took, proc.stdout[-3000:])
    assert "Timed out after 3 second" in proc.stdout or "host_timeout" in proc.stdout, proc.stdout[-3000:]
    for pid in [int(line) for line in pids.read_text().split()]:       # the hung command is not left behind
        if alive(pid):
            os.kill(pid, 9)
