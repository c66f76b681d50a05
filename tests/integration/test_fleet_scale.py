"""Past one controller, on engines that exist: ansible-pull from a local git repository, and the AWX
job-slicing recipe (docs/audit-report.md), each followed by scripts/merge-audit-reports.py.

Hosts are local-connection aliases of this machine: every audit runs the real payload (bwrap smoke
test, probe) here. AWX itself cannot run on this machine: what job slicing does to a playbook run -
the same job template run once per slice, each with its share of the inventory and its own
awx_job_id - is reproduced with `--limit` and the extra variables AWX sets, and the recipe's
metnos_audit_dest expression is used verbatim.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

from conftest import ROOT, ansible_env

BIN = os.path.dirname(sys.executable)
MERGE = [sys.executable, os.path.join(ROOT, "scripts", "merge-audit-reports.py")]
# The recipe's destination, as documented for the job template's extra variables.
AWX_DEST = "{{ metnos_audit_root }}/{{ awx_workflow_job_id | default(awx_job_id) }}/slice-{{ awx_job_id }}"


def git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"] + list(args),
                   cwd=cwd, check=True, capture_output=True)


def local_repo(tmp_path):
    """A git repository holding this checkout's files (tracked ones, as they are now)."""
    repo = tmp_path / "repo"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        src = os.path.join(ROOT, name)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(str(repo / name)), exist_ok=True)
            shutil.copy2(src, str(repo / name))
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "fleet audit", cwd=repo)
    return repo


def reports(directory):
    return sorted(glob.glob(os.path.join(str(directory), "**", "metnos-audit-*.json"), recursive=True))


def test_ansible_pull_on_three_hosts_then_merge(tmp_path):
    """Each host pulls the repository and audits itself (its own ansible-pull, its own checkout and
    one-host report); the reports are merged into one fleet report."""
    repo = local_repo(tmp_path)
    env = ansible_env()
    env.pop("ANSIBLE_CONFIG")      # the pulled checkout's own ansible.cfg is the one that counts
    for host in ("pull-a", "pull-b", "pull-c"):
        proc = subprocess.run(
            [os.path.join(BIN, "ansible-pull"), "-U", "file://%s" % repo, "-C", "main",
             "-d", str(tmp_path / "checkout" / host), "-i", "localhost,%s," % host, "-l", host, "-c", "local",
             "-e", "ansible_python_interpreter=/usr/bin/python3", "-e", "metnos_audit_dest=%s" % (tmp_path / host),
             "-e", '{"metnos_audit_manifests": []}', "playbooks/audit.yml"],
            capture_output=True, text=True, env=env, timeout=300, cwd=str(tmp_path))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert "1 hosts: 0 pass, 1 warn" in proc.stdout or "1 hosts: 1 pass" in proc.stdout, proc.stdout[-2000:]
    one_host = reports(tmp_path / "pull-a") + reports(tmp_path / "pull-b") + reports(tmp_path / "pull-c")
    assert len(one_host) == 3
    merged = subprocess.run(MERGE + [str(tmp_path / "fleet")] + one_host, capture_output=True, text=True)
    assert merged.returncode == 0, merged.stdout + merged.stderr        # warnings only: the gate passes
    doc = json.load(open(reports(tmp_path / "fleet")[0]))
    assert [h["host"] for h in doc["hosts"]] == ["pull-a", "pull-b", "pull-c"]
    assert doc["totals"]["hosts"] == 3 and doc["totals"]["unreachable"] == 0
    assert all(h["probe"]["passed"] and h["cpu"] > 0 for h in doc["hosts"])


def test_awx_job_slicing_recipe_then_merge(tmp_path):
    """Three slices of a six-host inventory, as AWX runs them (one job per slice, same workflow id),
    with the recipe's metnos_audit_dest; the merge sees every host once and gates the whole fleet."""
    hosts = ["web-%d" % i for i in range(6)]
    inv = tmp_path / "inventory.yml"
    inv.write_text("all:\n  hosts:\n" + "".join(
        "    %s: {ansible_connection: local, ansible_python_interpreter: /usr/bin/python3}\n" % h for h in hosts)
        + "    gone: {ansible_connection: ssh, ansible_host: 192.0.2.1, ansible_ssh_common_args: "
          "'-o ConnectTimeout=2'}\n")
    slices = [hosts[0:2] + ["gone"], hosts[2:4], hosts[4:6]]
    for index, share in enumerate(slices):
        proc = subprocess.run(
            [os.path.join(BIN, "ansible-playbook"), "-i", str(inv), "playbooks/audit.yml", "-l", ",".join(share),
             "-e", "metnos_audit_root=%s" % (tmp_path / "artifacts"), "-e", "awx_workflow_job_id=700",
             "-e", "awx_job_id=%d" % (701 + index), "-e", "metnos_audit_dest=%s" % AWX_DEST,
             "-e", '{"metnos_audit_manifests": []}'],
            capture_output=True, text=True, env=ansible_env(), timeout=300, cwd=ROOT)
        assert proc.returncode == (2 if "gone" in share else 0), proc.stdout[-3000:]   # a slice gates its share
    parts = reports(tmp_path / "artifacts" / "700")
    assert [os.path.basename(os.path.dirname(p)) for p in parts] == ["slice-701", "slice-702", "slice-703"]
    merged = subprocess.run(MERGE + [str(tmp_path / "fleet")] + parts, capture_output=True, text=True)
    assert merged.returncode == 1, merged.stdout + merged.stderr          # the fleet gate: "gone" is unreachable
    doc = json.load(open(reports(tmp_path / "fleet")[0]))
    assert sorted(h["host"] for h in doc["hosts"]) == sorted(hosts + ["gone"])
    assert doc["totals"]["unreachable"] == 1 and doc["totals"]["hosts"] == 7
    assert "1 hosts: " not in merged.stdout and "7 hosts: " in merged.stdout
