"""Drive the bwrap_host role on a package-manager test host, one ansible-playbook run per step.

A step is what a sysadmin does: one run of the role (tests/system/pkghost_role.yml), in check mode or not,
with some variables; its result is the run's exit status and output, the PLAY RECAP's changed
count, the role's own record of what it read and decided, and what the host looks like afterwards
(read by the test with the host's real tools)."""
import json
import os
import re
import subprocess
import uuid

from helpers.ansible_run import ansible_tool
from helpers.paths import ROOT

PLAYBOOK = os.path.join(ROOT, "tests", "system", "pkghost_role.yml")
GERMAN = {"LC_ALL": "de_DE.UTF-8", "LANG": "de_DE.UTF-8", "LANGUAGE": "de"}


class Step(object):
    def __init__(self, name, proc, record):
        self.name, self.rc, self.out, self.record = name, proc.returncode, proc.stdout + proc.stderr, record
        recap = re.findall(r"^\S+\s+: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", proc.stdout, re.M)
        self.changed = int(recap[0][0]) if recap else None
        self.failed = self.rc != 0
        self.after = {}

    def msg(self):
        """The failure's message, as the role's task gave it ('' when the run did not fail)."""
        return (self.record or {}).get("failure", "")

    def __repr__(self):
        return "<step %s rc=%s changed=%s record=%r>\n%s" % (self.name, self.rc, self.changed, self.record,
                                                             self.out[-4000:])


class RoleHost(object):
    """One test host and the role runs made on it, in order."""

    def __init__(self, host, tmpdir, env, manager, **defaults):
        self.host, self.tmpdir, self.env, self.steps = host, str(tmpdir), env, {}
        self.defaults = dict(bwrap_host_package_manager=manager, bwrap_host_check=False, **defaults)
        self.inventory = os.path.join(self.tmpdir, "inventory-%s.json" % host.name)
        with open(self.inventory, "w") as f:
            json.dump({"all": {"hosts": {host.name: {}}, "vars": {
                "ansible_connection": "containers.podman.podman",
                "ansible_python_interpreter": "/usr/bin/python3"}}}, f)

    def role(self, name, check=False, **role_vars):
        record = os.path.join(self.tmpdir, "record-%s-%s.json" % (name, uuid.uuid4().hex[:6]))
        extra = dict(self.defaults, metnos_test_record=record, metnos_test_ambient=GERMAN)
        extra.update(role_vars)
        extra_file = record + ".vars.json"
        with open(extra_file, "w") as f:
            json.dump(extra, f)
        argv = [ansible_tool("ansible-playbook"), "-i", self.inventory, PLAYBOOK,
                "-e", "@" + extra_file] + (["--check"] if check else [])
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=self.env, timeout=900)
        rec = None
        if os.path.exists(record):
            with open(record) as f:
                rec = json.load(f)
        step = Step(name, proc, rec)
        self.steps[name] = step
        return step

    def sh(self, script, check=True):
        return self.host.sh(script, check=check)
