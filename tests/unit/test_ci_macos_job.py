"""The users' CI workflow has a job on a macOS runner that audits the runner itself and expects containment level
none with its reason (issue 45 item 4; R-SCOPE-4). Read from the workflow file itself: the job, its runner, the
playbook it runs (facts first, then the audit, connection local) and the check of the report. The job's commands
run here on Linux in tests/integration/test_audit_containment_levels.py (a macOS runner cannot exist here)."""
import os
import shlex

import pytest
import yaml

from conftest import ROOT

pytestmark = pytest.mark.rule("R-SCOPE-4")


def job():
    with open(os.path.join(ROOT, ".github", "workflows", "ci.yml")) as handle:
        return yaml.safe_load(handle)["jobs"]["macos-audit"]


def test_the_job_runs_on_macos_and_audits_the_runner_itself():
    found = job()
    assert found["runs-on"].startswith("macos-")
    runs = [step["run"] for step in found["steps"] if "run" in step]
    install, audit, check = runs
    assert "--require-hashes" in install and "requirements.txt" in install       # the locked dependencies
    words = shlex.split(audit.split("||")[0])
    assert words[0] == ".venv/bin/ansible-playbook" and words[-1] == "tests/ci/audit-self.yml"
    assert words[words.index("-i") + 1] == "localhost," and words[words.index("-c") + 1] == "local"
    assert shlex.split(check) == [".venv/bin/python", "scripts/check-containment.py", "reports/latest.json",
                                  "localhost", "none"]
    assert any("metnos_audit_dest=$PWD/reports" in w for w in words)


def test_the_playbook_gathers_facts_then_runs_the_audit():
    with open(os.path.join(ROOT, "tests", "ci", "audit-self.yml")) as handle:
        plays = yaml.safe_load(handle)
    assert plays[0]["gather_facts"] is True and plays[0]["hosts"] == "all"
    imported = plays[1]["ansible.builtin.import_playbook"]
    assert os.path.realpath(os.path.join(ROOT, "tests", "ci", imported)) == os.path.realpath(
        os.path.join(ROOT, "playbooks", "audit.yml"))
