"""The audit's fix commands carry the run's inventory (issue 54): a real failing run (an unreachable host
``ghost``: ssh to a closed port of this machine, refused at once, and a local alias audited for real), then the
report's commands for ghost pasted into a shell from another folder, as a reader does.

Without the run's ``-i`` the ping asks the checkout's default inventory and answers "Could not match supplied
host pattern" with exit status 0 (the canary below, the command as the codes write it); with it, the command
reaches ghost's entry and says what its hint says to check: the connection (UNREACHABLE). Both commands
of host_unreachable are read-only and run for real (the ping, then the audit limited to ghost)."""
import glob
import json
import os
import subprocess
import sys

from conftest import ROOT, ansible_env, run_playbook


def pasted(command, cwd):
    """The command run by bash in ``cwd``, with the venv's tools on PATH and no ANSIBLE_INVENTORY."""
    env = dict((k, v) for k, v in ansible_env().items() if k != "ANSIBLE_INVENTORY")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_every_fix_command_of_an_unreachable_host_runs_against_the_runs_inventory(tmp_path):
    inventory = tmp_path / "my fleet.yml"      # a space: the -i is quoted for the shell
    inventory.write_text(
        "all:\n  hosts:\n"
        "    ghost: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 1, ansible_user: nobody,\n"
        "            ansible_ssh_common_args: '-o ConnectTimeout=5 -o BatchMode=yes'}\n"
        "    alias-a: {ansible_connection: local, ansible_python_interpreter: %s}\n" % sys.executable)
    reports = tmp_path / "reports"
    proc = run_playbook(os.path.join(ROOT, "playbooks", "audit.yml"), "-i", str(inventory),
                        "-e", "metnos_audit_dest=%s" % reports, "-e", '{"metnos_audit_manifests": []}')
    assert proc.returncode != 0, proc.stdout[-3000:]
    (report,) = glob.glob(str(reports / "metnos-audit-*.json"))
    with open(report) as handle:
        doc = json.load(handle)
    assert doc["context"] == {"inventory": [str(inventory)]}, doc.get("context")
    ghost = [h for h in doc["hosts"] if h["host"] == "ghost"][0]
    (unreachable,) = [d for d in ghost["diagnostics"] if d["code"] == "host_unreachable"]
    quoted = "-i '%s'" % inventory
    ping, audit = unreachable["remediation"]
    assert ping == "ansible %s 'ghost' -m ansible.builtin.ping" % quoted, ping
    assert audit.startswith("ansible-playbook %s metnos.sandbox.audit --limit 'ghost'" % quoted), audit
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # the canary: the command as the codes write it, without the run's inventory, matches no host
    bare = pasted("ansible 'ghost' -m ansible.builtin.ping", str(elsewhere))
    assert "Could not match supplied host pattern" in bare.stdout + bare.stderr, bare.stdout + bare.stderr
    done = pasted(ping, str(elsewhere))
    assert "Could not match" not in done.stdout + done.stderr
    assert "ghost | UNREACHABLE" in done.stdout and done.returncode != 0, done.stdout + done.stderr
    again = pasted(audit + " -e metnos_audit_dest=%s" % (tmp_path / "again"), str(elsewhere))
    assert "Could not match" not in again.stdout + again.stderr
    assert again.returncode != 0 and "ghost" in again.stdout and "alias-a" not in again.stdout, again.stdout[-3000:]
    # every command of every finding of the run names the inventory, once
    for host in doc["hosts"]:
        for diag in host["diagnostics"]:
            for command in diag["remediation"]:
                if command.split(" ", 1)[0] in ("ansible", "ansible-playbook"):
                    assert command.count(quoted) == 1, (diag["code"], command)
