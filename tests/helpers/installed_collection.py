"""The collection as a user installs it: the tarball of ``make collection`` (dist/metnos-sandbox-X.Y.Z.tar.gz,
built here when missing) installed offline with ``ansible-galaxy collection install`` into a temporary path,
and Ansible run in a user's environment (no ANSIBLE_* of the checkout's make, a project's own ansible.cfg, a
private ANSIBLE_HOME, the installed collections only). Also: the launcher of stored profiles installed on this
host by the metnos_sandbox role of that installed collection (``install_exec``)."""
import json
import os
import subprocess
import sys

import yaml

from helpers.ansible_run import ansible_tool
from helpers.paths import ROOT


def version():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)["version"]


def tarball():
    """dist's tarball of galaxy.yml's version (make integration builds it; built here when missing)."""
    path = os.path.join(ROOT, "dist", "metnos-sandbox-%s.tar.gz" % version())
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "build-collection.py")], check=True,
                       capture_output=True)
    return path


def user_env(top, **extra):
    """A user's environment: no ANSIBLE_* of the checkout's make, the project's own ansible.cfg, a private
    ANSIBLE_HOME, the installed collections only."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("ANSIBLE_"))
    env.update(ANSIBLE_CONFIG=os.path.join(top, "project", "ansible.cfg"), ANSIBLE_HOME=os.path.join(top, "home"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(top, "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_DEPRECATION_WARNINGS="0")
    env.update(extra)
    return env


def install(top):
    """Install the tarball into ``top``/collections from a project of its own in ``top``/project; return the
    installed collection's folder."""
    project = os.path.join(top, "project")
    os.makedirs(project, exist_ok=True)
    with open(os.path.join(project, "ansible.cfg"), "w") as handle:
        handle.write("[defaults]\ninventory = localhost,\ninject_facts_as_vars = False\n"
                     "retry_files_enabled = False\n")
    proc = subprocess.run([ansible_tool("ansible-galaxy"), "collection", "install", "--offline", "-p",
                           os.path.join(top, "collections"), tarball()], capture_output=True, text=True,
                          cwd=project, env=user_env(top))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return os.path.join(top, "collections", "ansible_collections", "metnos", "sandbox")


EXEC_PLAY = """- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: metnos.sandbox.metnos_sandbox
        tasks_from: "{{ 'exec' if want else 'exec_absent' }}"
      vars:
        metnos_sandbox_exec_prefix: "{{ prefix }}"
        metnos_sandbox_exec_link: "{{ link }}"
"""


def run_exec_role(top, prefix, link, present=True, check=False, extra_vars=None):
    """The role's install (or removal) of metnos-sandbox-exec from the installed collection in ``top``; the
    finished process (its stdout: the play's output). ``extra_vars``: more role variables, as extra vars."""
    play = os.path.join(top, "project", "exec.yml")
    with open(play, "w") as handle:
        handle.write(EXEC_PLAY)
    extra = json.dumps(dict(extra_vars or {}, prefix=prefix, link=link, want=present))
    cmd = [ansible_tool("ansible-playbook"), play, "-e", extra] + (["--check", "--diff"] if check else [])
    return subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.join(top, "project"),
                          env=user_env(top))
