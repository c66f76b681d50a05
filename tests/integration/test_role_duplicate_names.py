"""Two manifests of one executor name: the role writes neither profile (issue 53, item 4). The role's profile
tasks (roles/metnos_sandbox/tasks/profiles.yml, included for real by a playbook on a local-connection alias, the
real sandbox_profile module writing into a temporary profile directory) get two real copies of the read_notes
example under two file names and the system_status example. Before, the second copy was written over the
first's read_notes.args and the summary only said so afterwards; now read_notes.args is not written, the other
profile is (the canary: the role does write), and the section's profile_name_duplicate names both files and
says nothing was written."""
import json
import os
import sys

from conftest import ROOT, run_playbook

PLAY = """- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: metnos.sandbox.metnos_sandbox
        tasks_from: profiles
    - ansible.builtin.copy:
        content: "{{ metnos_sandbox_profiles | metnos.sandbox.sandbox_profiles_section(metnos_sandbox_manifest_names)
                     | to_json }}"
        dest: "%s"
      delegate_to: localhost
"""


def test_two_manifests_of_one_name_write_neither_profile(tmp_path):
    paths = []
    for name, example in (("a.yml", "read_notes"), ("b.yml", "read_notes"), ("c.yml", "system_status")):
        paths.append(str(tmp_path / name))
        with open(os.path.join(ROOT, "examples", "manifests", example + ".yml")) as source:
            (tmp_path / name).write_text(source.read())
    profiles = tmp_path / "profiles"
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {"alias-a": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "metnos_sandbox_profile_dir": str(profiles), "metnos_sandbox_manifests": paths,
        "metnos_sandbox_writable_roots": ["/var/lib/metnos"]}}}}))
    section_file = tmp_path / "section.json"
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAY % section_file)
    proc = run_playbook(str(playbook), "-i", str(inventory))
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert sorted(os.listdir(str(profiles))) == ["system_status.args", "system_status.json"], os.listdir(str(profiles))
    section = json.loads(section_file.read_text())
    (dup,) = [d for d in section["diagnostics"] if d["code"] == "profile_name_duplicate"]
    assert section["verdict"] == "fail" and dup["details"]["subject"] == "read_notes", section
    assert dup["message"] == ("read_notes: %s and %s both render to %s/read_notes.args: neither is written (nothing "
                              "was written for read_notes by this run; a profile already there is left as it was)."
                              % (paths[0], paths[1], profiles)), dup["message"]
