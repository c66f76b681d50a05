"""Shared test fixtures: the core under its one import name (the collection's: scripts/core_path.py), helpers
to run Ansible for real."""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import core_path  # noqa: E402  the core under its one import name, the collection's

core_path.use_core()

from helpers.ansible_run import adhoc, ansible_env, ansible_tool  # noqa: E402,F401  (tests import them from here)


def run_module(module, args, prefix=(), env=None, check=False, diff=False):
    """Run one module on localhost through `ansible` and return its result dict (with the
    process's ``_rc`` and ``_stderr``)."""
    result, proc = adhoc("localhost", module, args or None, prefix=prefix, env=ansible_env(**(env or {})),
                         check=check, diff=diff)
    result["_rc"] = proc.returncode
    result["_stderr"] = proc.stderr
    return result


def run_playbook(playbook, *args, env=None):
    cmd = [ansible_tool("ansible-playbook"), playbook] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ansible_env(**(env or {})))


# ---------------------------------------------------------------- spec rule ids: one spelling
SPEC_RULES = os.path.join(ROOT, "docs", "spec-rules.yml")


def spec_rules():
    """[{id, title[, not_applicable]}] of docs/spec-rules.yml (the spec's rule ids, kept in the repo)."""
    import yaml
    with open(SPEC_RULES) as handle:
        return yaml.safe_load(handle)["rules"]


def pytest_addoption(parser):
    parser.addoption("--rule-map", metavar="PATH",
                     help="write {rule id: [test node ids]} of the collected rule markers as JSON "
                          "(scripts/gen-spec-coverage.py)")


def pytest_configure(config):
    config.addinivalue_line("markers", "rule(*ids): the spec rules (R-GROUP-N, docs/spec-rules.yml) the test "
                                       "checks; docs/spec-coverage.md lists the tests of each rule")


def pytest_collection_modifyitems(config, items):
    known = set(r["id"] for r in spec_rules())
    found, unknown = {}, set()
    for item in items:
        for mark in item.iter_markers("rule"):
            if not mark.args:
                unknown.add("%s: rule marker without an id" % item.nodeid)
            for rule in mark.args:
                if rule not in known:
                    unknown.add("%s: %r" % (item.nodeid, rule))
                found.setdefault(rule, []).append(item.nodeid)
    if unknown:
        raise pytest.UsageError("rule markers naming no rule of docs/spec-rules.yml (spelled R-GROUP-N):\n"
                                + "\n".join(sorted(unknown)))
    if config.getoption("--rule-map", None):
        with open(config.getoption("--rule-map"), "w") as handle:
            json.dump(found, handle, indent=1, sort_keys=True)


@pytest.fixture(scope="session")
def bwrap_path():
    path = shutil.which("bwrap")
    if not path:
        pytest.fail("bwrap is not installed: the test setup (.ci/run) installs bubblewrap")
    return path
