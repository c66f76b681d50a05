"""Validate before acting (issue 42, item 7): both roles' variables are validated on the controller before any task
touches the host (playbooks/site.yml's first task, metnos.sandbox.metnos_role_vars), and the audit's variables
by the audit's action before anything is sent to the host, each refusal naming the variable, the value and the
choices in one message - no argument-spec dump. Real ansible-playbook runs against this machine."""
import json
import os
import sys

from conftest import ROOT, run_playbook

SITE = os.path.join(ROOT, "playbooks", "site.yml")
LOCAL = ["-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable]


def test_site_refuses_a_bad_variable_of_either_role_before_any_host_task():
    proc = run_playbook(SITE, *LOCAL, "-e", "metnos_sandbox_service_env_state=enforced",
                        "-e", "bwrap_host_state=latests")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "value of metnos_sandbox_service_env_state must be one of: validate, enforce, got: enforced " \
           "(role metnos.sandbox.metnos_sandbox)" in out, out[-3000:]
    assert "value of bwrap_host_state must be one of: present, latest, got: latests (role metnos.sandbox.bwrap_host)" \
        in out, out[-3000:]
    assert "TASK [metnos.sandbox.bwrap_host" not in out and "TASK [metnos.sandbox.metnos_sandbox" not in out, out
    assert "argument_spec_data" not in out and "description" not in out, out[-3000:]    # no spec dump
    assert len(out) < 4000, len(out)


def test_valid_variables_pass_the_validation(tmp_path):
    play = tmp_path / "play.yml"
    play.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n    - name: Validate\n"
                    "      metnos.sandbox.metnos_role_vars: {roles: [bwrap_host, metnos_sandbox]}\n")
    proc = run_playbook(str(play), *LOCAL, "-e", json.dumps({
        "metnos_sandbox_service_env_state": "enforce", "bwrap_host_state": "latest",
        "metnos_sandbox_manifests": ["/x.yml", {"file": "/y.yml"}], "metnos_sandbox_probe_timeout": "30"}))
    assert proc.returncode == 0, proc.stdout[-3000:]
    proc = run_playbook(str(play), *LOCAL, "-e", json.dumps({"metnos_sandbox_probe_timeout": "soon"}))
    assert proc.returncode != 0 and "metnos_sandbox_probe_timeout" in proc.stdout and "soon" in proc.stdout, \
        proc.stdout[-3000:]


def test_the_audit_names_the_variable_the_user_set(tmp_path):
    proc = run_playbook(os.path.join(ROOT, "playbooks", "audit.yml"), *LOCAL, "-e", "metnos_audit_probe=maybe",
                        "-e", "metnos_sandbox_unit_scope=sys", "-e", "metnos_audit_dest=%s" % (tmp_path / "r"))
    out = proc.stdout
    assert proc.returncode != 0, out[-3000:]
    assert "value of metnos_sandbox_unit_scope must be one of: system, user, got: sys" in out, out[-3000:]
    assert "argument 'metnos_audit_probe' is of type str" in out and "'maybe'" in out, out[-3000:]
    assert "nothing was run on the host" in out
