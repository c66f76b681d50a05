"""Shared test fixtures: the core as ansible.module_utils.metnos_sandbox, helpers to run Ansible for real."""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import core_path  # noqa: E402  the core as ansible.module_utils.metnos_sandbox, its one import name

core_path.use_core()


def ansible_env(**extra):
    env = dict(os.environ)
    env.update({
        "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_DEPRECATION_WARNINGS": "0",
    })
    env.update(extra)
    return env


def _bin(name):
    here = os.path.join(os.path.dirname(sys.executable), name)
    return here if os.path.exists(here) else name


def run_module(module, args, prefix=(), env=None, check=False, diff=False):
    """Run one module on localhost through `ansible` and return its result dict.

    Parsed from the oneline callback: `localhost | SUCCESS => {json}`.
    """
    cmd = list(prefix) + [_bin("ansible"), "localhost", "-o", "-m", module]
    if args:
        cmd += ["-a", json.dumps(args)]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                          env=ansible_env(**(env or {})))
    for line in proc.stdout.splitlines():
        if line.startswith("localhost | ") and "=> {" in line:
            result = json.loads(line.split("=> ", 1)[1])
            result.setdefault("failed", "| FAILED" in line)
            result["_rc"] = proc.returncode
            result["_stderr"] = proc.stderr
            return result
    raise AssertionError("no result from ansible (rc=%s):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))


def run_playbook(playbook, *args, env=None):
    cmd = [_bin("ansible-playbook"), playbook] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ansible_env(**(env or {})))


@pytest.fixture(scope="session")
def bwrap_path():
    path = shutil.which("bwrap")
    if not path:
        pytest.fail("bwrap is not installed: the test setup (.ci/run) installs bubblewrap")
    return path
