"""A real failing audit of a small fleet, the preamble of tests/integration/test_newcomer_screens.py and
tests/integration/test_fix_commands_inventory.py: an unreachable host ``ghost`` (ssh to a closed port of this machine,
refused at once) and local aliases audited for real, playbooks/audit.yml run over them, its report found."""
import glob
import json
import os
import sys

from conftest import ROOT, run_playbook

GHOST = ("    ghost: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 1, ansible_user: nobody,\n"
         "            ansible_ssh_common_args: '-o ConnectTimeout=5 -o BatchMode=yes'}\n")


def inventory(path, aliases=("alias-a",)):
    """``path`` written as the fleet's inventory: ghost, then each alias a local connection (this interpreter)."""
    path.write_text("all:\n  hosts:\n" + GHOST + "".join(
        "    %s: {ansible_connection: local, ansible_python_interpreter: %s}\n" % (alias, sys.executable)
        for alias in aliases))
    return path


def audit(fleet, reports, *options):
    """playbooks/audit.yml over the inventory ``fleet`` (no manifests), its reports in ``reports``; the run must fail
    (ghost is unreachable). ``options``: more of ansible-playbook's (--limit, -e)."""
    proc = run_playbook(os.path.join(ROOT, "playbooks", "audit.yml"), "-i", str(fleet), *options,
                        "-e", "metnos_audit_dest=%s" % reports, "-e", '{"metnos_audit_manifests": []}')
    assert proc.returncode != 0, proc.stdout[-3000:]
    return proc


def report(reports, ext):
    """The one report of the run in ``reports`` with extension ``ext`` (json, html)."""
    (path,) = glob.glob(os.path.join(str(reports), "metnos-audit-*." + ext))
    return path


def document(reports):
    """The run's JSON report, loaded."""
    with open(report(reports, "json")) as handle:
        return json.load(handle)
