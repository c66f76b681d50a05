"""A host without Python is reported as such by the fleet audit (host_no_python, with a raw-module
fix), not as an unreachable host: a real systemd container whose Python was removed, next to a
host that does not exist."""
import glob
import json
import os
import subprocess
import sys

from conftest import ROOT, ansible_env, start_host, stop_host


def test_audit_names_a_host_without_python(tmp_path):
    h = start_host("metnos-nopy")
    try:
        h.sh("rm -f /usr/bin/python3* /usr/bin/python /usr/local/bin/python3*")
        inv = tmp_path / "inv.yml"
        inv.write_text("all:\n  vars:\n    ansible_connection: containers.podman.podman\n"
                       "    ansible_python_interpreter: /usr/bin/python3\n  hosts:\n"
                       "    bare: {ansible_host: %s}\n    gone: {ansible_host: metnos-nopy-does-not-exist}\n" % h.name)
        cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inv),
               "playbooks/audit.yml", "-e", "metnos_audit_dest=%s" % (tmp_path / "out"),
               "-e", '{"metnos_audit_manifests": []}']
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ansible_env(), timeout=600)
    finally:
        stop_host(h)
    assert proc.returncode != 0
    doc = json.load(open(glob.glob(str(tmp_path / "out" / "*.json"))[0]))
    hosts = dict((x["host"], x) for x in doc["hosts"])
    assert [d["code"] for d in hosts["bare"]["diagnostics"]] == ["host_no_python"], hosts["bare"]
    assert hosts["bare"]["verdict"] == "fail" and "ansible.builtin.raw" in hosts["bare"]["diagnostics"][0][
        "remediation"][0]
    assert [d["code"] for d in hosts["gone"]["diagnostics"]] == ["host_unreachable"]
    assert "Unknown error" not in proc.stdout
