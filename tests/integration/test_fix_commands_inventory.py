"""The audit's fix commands carry the run's inventory (issue 54): a real failing run (an unreachable host
``ghost``: ssh to a closed port of this machine, refused at once, and a local alias audited for real), then the
report's commands for ghost pasted into a shell from another folder, as a reader does.

Without the run's ``-i`` the ping asks the checkout's default inventory and answers "Could not match supplied
host pattern" with exit status 0 (the canary below, the command as the codes write it); with it, the command
reaches ghost's entry and says what its hint says to check: the connection (UNREACHABLE). Both commands
of host_unreachable are read-only and run for real (the ping, then the audit limited to ghost)."""
import json
import os
import re
import shlex
import subprocess
import sys

from conftest import ansible_env
from helpers import failing_fleet


def pasted(command, cwd):
    """The command run by bash in ``cwd``, with the venv's tools on PATH and no ANSIBLE_INVENTORY."""
    env = dict((k, v) for k, v in ansible_env().items() if k != "ANSIBLE_INVENTORY")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_every_fix_command_of_an_unreachable_host_runs_against_the_runs_inventory(tmp_path):
    inventory = failing_fleet.inventory(tmp_path / "my fleet.yml")      # a space: the -i is quoted for the shell
    reports = tmp_path / "reports"
    failing_fleet.audit(inventory, reports)
    doc = failing_fleet.document(reports)
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


# Why a command that only looks cannot answer on this machine (None: it can, and must run).
def cannot_answer_here(command):
    if command.startswith(("systemctl", "journalctl")) and not os.path.isdir("/run/systemd/system"):
        return "systemd is not the init of this machine (a container)"
    if re.search(r"<[A-Za-z_][A-Za-z0-9_-]*>", command):
        return "a value only the reader has (<...>)"
    return None


# Commands whose exit status 1 means "nothing found" (a correct answer), not a failure to run.
NOTHING_FOUND = ("grep ", "systemd-detect-virt", "dpkg --verify ")


def test_every_command_of_a_real_failing_audit_runs_as_pasted_with_the_runs_inventory_and_limit(tmp_path):
    """Issue 54 item 4: a real failing audit limited to part of the fleet (``--limit 'ghost:alias-a'``: alias-b is
    in the inventory, not in the run), then EVERY command of every finding pasted into bash from another folder.
    A command that only looks (command_kind.kind "check") runs for real and answers (exit 0, or 1 for "nothing
    found"), unless this machine cannot answer it (said per command); a change ("fix") parses (bash -n), and
    each ansible/ansible-playbook change is run with --list-hosts: it reaches hosts of the run's inventory and
    limit only, never "Could not match" and never alias-b."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import command_kind
    inventory = failing_fleet.inventory(tmp_path / "fleet.yml", aliases=("alias-a", "alias-b"))
    reports = tmp_path / "reports"
    failing_fleet.audit(inventory, reports, "--limit", "ghost:alias-a", "-e", "metnos_audit_probe=false",
                        "-e", "metnos_audit_unit=metnos-absent.service")
    doc = failing_fleet.document(reports)
    assert doc["context"] == {"inventory": [str(inventory)], "limit": "ghost:alias-a"}, doc["context"]
    assert sorted(h["host"] for h in doc["hosts"]) == ["alias-a", "ghost"]
    commands = sorted(set(c for h in doc["hosts"] for d in h["diagnostics"] for c in d.get("remediation") or []))
    assert len(commands) >= 5, commands
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ran, not_here = [], {}
    for command in commands:
        parsed = pasted("bash -n -c %s" % shlex.quote(command), str(elsewhere))
        assert parsed.returncode == 0, (command, parsed.stderr)
        if command_kind.kind(command) == "check":
            why = cannot_answer_here(command)
            if why:
                not_here[command] = why
                continue
            done = pasted(command, str(elsewhere))
            ok = done.returncode == 0 or (done.returncode == 1 and command.startswith(NOTHING_FOUND))
            if command.startswith("ansible "):       # the ping of the unreachable host: it answers UNREACHABLE
                ok = "Could not match" not in done.stdout + done.stderr and " | " in done.stdout
            assert ok, (command, done.returncode, done.stdout[-2000:], done.stderr[-2000:])
            ran.append(command)
        elif command.split(" ", 1)[0] in ("ansible", "ansible-playbook"):
            listed = pasted(command + " --list-hosts", str(elsewhere))
            out = listed.stdout + listed.stderr
            assert listed.returncode == 0 and "Could not match" not in out, (command, out[-2000:])
            assert "alias-b" not in out and ("ghost" in out or "alias-a" in out), (command, out[-2000:])
            if command.startswith("ansible-playbook"):
                assert "--limit 'ghost:alias-a'" in command or "--limit 'ghost'" in command or \
                    "--limit 'alias-a'" in command, command
            ran.append(command)
    assert len(ran) >= 3, (ran, not_here)
    print("ran as pasted: %d; cannot answer here: %s" % (len(ran), json.dumps(not_here, indent=1)))
