"""Ansible run for real from the tests: its environment and the parser of the oneline callback's
result (``HOST | SUCCESS => {json}``). Shared by tests/conftest.py (localhost) and
tests/system/conftest.py (podman hosts)."""
import json
import os
import subprocess
import sys

from helpers.paths import ROOT


def ansible_env(**extra):
    """os.environ plus this checkout's ansible.cfg, its collections (the checkout as metnos.sandbox, then the
    test-only ones) and no colours or deprecation noise; ``extra`` wins."""
    env = dict(os.environ)
    env.update({
        "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": os.pathsep.join([os.path.join(ROOT, "collections"),
                                                     os.path.join(ROOT, ".ansible", "collections")]),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_DEPRECATION_WARNINGS": "0",
    })
    env.update(extra)
    return env


def ansible_tool(name):
    """An Ansible command from the running venv (its bin directory), else from PATH."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    return here if os.path.exists(here) else name


def adhoc(pattern, module, args, options=(), prefix=(), env=None, check=False, diff=False, timeout=None):
    """Run one module through `ansible PATTERN -o` and return (result dict, process).

    The result is parsed from the oneline callback; ``failed`` is set from the status word when the
    module did not say. Raises AssertionError (with the output) when no result line came."""
    cmd = list(prefix) + [ansible_tool("ansible"), pattern] + list(options) + ["-o", "-m", module]
    if args is not None:
        cmd += ["-a", json.dumps(args)]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env or ansible_env(), timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith(pattern + " | ") and "=> {" in line:
            result = json.loads(line.split("=> ", 1)[1])
            result.setdefault("failed", "| FAILED" in line)
            return result, proc
    raise AssertionError("no result from ansible (rc=%s):\n%s\n%s" % (proc.returncode, proc.stdout[-3000:],
                                                                     proc.stderr[-3000:]))
