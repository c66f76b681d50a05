"""Nothing lost, nothing half-applied (issue 52), each fault for real.

Ctrl-C: ansible-playbook runs the audit on local-connection aliases of this machine, one of which hangs after the
connection (its interpreter is a script that records its pid, starts a child and waits). Once the others have
finished, SIGINT goes to ansible-playbook's process group, as a terminal sends it on Ctrl-C (the workers run in
their own sessions: Ansible forwards it to them), and a second SIGINT follows at once. The run ends with status 99,
and a whole report set is written: the hosts that finished with their results, the hung one host_interrupted,
the gate failed (callback_plugins/audit_interrupt.py, enabled in the repository's ansible.cfg).

A hung host over podman: a real systemd container reached with containers.podman.podman (the message travels as
the arguments of one command, no shell of Ansible's), its interpreter the same hanging script. Past
metnos_audit_host_timeout the host is host_timeout and the interpreter and its child are gone inside the
container: /bin/sh started them under timeout(1), which killed their process group (transport.argv_command).
"""
import glob
import json
import os
import signal
import subprocess
import sys
import time

from conftest import ROOT, ansible_env, start_host, stop_host
from helpers.ansible_run import ansible_tool

AUDIT = os.path.join(ROOT, "playbooks", "audit.yml")
HANG = """#!/bin/sh
echo $$ > %(pids)s
sleep 600 &
echo $! >> %(pids)s
wait
exec %(python)s "$@"
"""
FINISHED = ("fast-1", "fast-2")
QUIET = ["-e", "metnos_audit_probe=false", "-e", '{"metnos_audit_manifests": [], "metnos_audit_unit": ""}']


def audit_command(inv, dest):
    return [ansible_tool("ansible-playbook"), AUDIT, "-i", str(inv), "-e", "metnos_audit_dest=%s" % dest] + QUIET


def hung_fleet(tmp_path):
    """An inventory of two plain aliases and one whose interpreter hangs; the file its pids are written to."""
    pids = tmp_path / "pids"
    hang = tmp_path / "hang-python"
    hang.write_text(HANG % {"pids": pids, "python": sys.executable})
    hang.chmod(0o755)
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n" + "".join(
        "    %s: {ansible_connection: local, ansible_python_interpreter: %s}\n" % (name, python)
        for name, python in ((FINISHED[0], sys.executable), ("hung", hang), (FINISHED[1], sys.executable))))
    return inv, pids


def wait_for(path, words, proc, seconds=120):
    """Until the file holds every word (the play's output), or fail with what it holds."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and proc.poll() is None:
        text = path.read_text() if path.exists() else ""
        if all(word in text for word in words):
            return
        time.sleep(0.2)
    raise AssertionError("never saw %s: %s" % (words, path.read_text()[-3000:] if path.exists() else ""))


def test_ctrl_c_writes_the_finished_hosts_and_marks_the_others_interrupted(tmp_path):
    inv, pids = hung_fleet(tmp_path)
    dest, out = tmp_path / "reports", tmp_path / "out"
    with open(str(out), "w") as handle:
        proc = subprocess.Popen(audit_command(inv, dest), stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT,
                                env=ansible_env(), start_new_session=True)     # its own group, as a job
    recorded = []
    try:
        wait_for(out, ["ok: [%s]" % name for name in FINISHED], proc)
        end = time.monotonic() + 60
        while not (pids.exists() and len(pids.read_text().split()) == 2) and time.monotonic() < end:
            time.sleep(0.1)
        recorded = [int(word) for word in pids.read_text().split()]
        assert len(recorded) == 2, recorded                         # canary: the hung host's interpreter does hang
        assert proc.poll() is None                                  # canary: the run is still waiting for it
        os.killpg(proc.pid, signal.SIGINT)                          # Ctrl-C
        time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)                          # and again, at once
        assert proc.wait(timeout=120) == 99, out.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in recorded:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    text = out.read_text()
    assert "User interrupted execution" in text
    assert "2 host(s) that finished, 1 host_interrupted" in text, text[-3000:]
    doc = json.load(open(str(dest / "latest.json")))
    hosts = dict((h["host"], h) for h in doc["hosts"])
    assert sorted(hosts) == ["fast-1", "fast-2", "hung"]
    assert [d["code"] for d in hosts["hung"]["diagnostics"]] == ["host_interrupted"], hosts["hung"]
    assert "hung: the run was interrupted" in hosts["hung"]["diagnostics"][0]["message"]
    for name in FINISHED:                                           # the finished hosts' own results
        assert hosts[name]["reachable"] and hosts[name]["verdict"] in ("pass", "warn"), hosts[name]
    assert doc["gate"]["failed"]
    for ext in ("md", "junit.xml", "html"):                         # the whole set, the finding in each
        assert "host_interrupted" in open(str(dest / ("latest." + ext))).read(), ext
    assert len(glob.glob(str(dest / "metnos-audit-*"))) == 4
    assert not [name for name in os.listdir(str(dest)) if name.startswith(".")]     # no temp debris


def test_a_run_that_ends_normally_writes_one_set(tmp_path):
    """The callback writes nothing when the play's own report task returned (no second set, exit status 0)."""
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    fast-1: {ansible_connection: local, ansible_python_interpreter: %s}\n"
                   % sys.executable)
    dest = tmp_path / "reports"
    proc = subprocess.run(audit_command(inv, dest), capture_output=True, text=True, cwd=ROOT, env=ansible_env(),
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "host_interrupted" not in proc.stdout
    assert len(glob.glob(str(dest / "metnos-audit-*"))) == 4


def test_a_hung_podman_host_is_killed_in_the_container_at_its_deadline(tmp_path):
    host = start_host("metnos-fault")
    try:
        host.write("/usr/local/bin/hang-python", HANG % {"pids": "/run/hang-pids", "python": "/usr/bin/python3"},
                   mode="0755")
        inv = tmp_path / "hosts.yml"
        inv.write_text("all:\n  hosts:\n    hung: {ansible_connection: containers.podman.podman, ansible_host: %s, "
                       "ansible_python_interpreter: /usr/local/bin/hang-python}\n" % host.name)
        dest = tmp_path / "reports"
        start = time.monotonic()
        proc = subprocess.run(audit_command(inv, dest) + ["-e", "metnos_audit_host_timeout=5"], capture_output=True,
                              text=True, cwd=ROOT, env=ansible_env(), timeout=300)
        took = time.monotonic() - start
        assert proc.returncode != 0 and took < 120, (took, proc.stdout[-3000:])
        recorded = host.sh("cat /run/hang-pids").stdout.split()
        assert len(recorded) == 2, recorded                        # canary: it did hang, with a child
        living = host.sh("for pid in %s; do grep -qv ' Z ' /proc/$pid/stat 2>/dev/null && echo $pid; done; true"
                         % " ".join(recorded)).stdout.split()
        assert living == [], living                                # killed in the container, its child too
        doc = json.load(open(str(dest / "latest.json")))
        assert [d["code"] for d in doc["hosts"][0]["diagnostics"]] == ["host_timeout"], doc["hosts"][0]
    finally:
        stop_host(host)
