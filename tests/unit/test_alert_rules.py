"""The shipped Prometheus rules (monitoring/prometheus/): `promtool check rules` and their unit tests with
`promtool test rules` (the real promtool, Debian's prometheus package); each rule weakened one way makes its
tests fail, so the tests can fail. The metric names the rules use are the ones the monitor writes."""
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import prometheus
from helpers.paths import ROOT

RULES = os.path.join(ROOT, "monitoring", "prometheus", "metnos-sandbox.rules.yml")
TESTS = os.path.join(ROOT, "monitoring", "prometheus", "metnos-sandbox.rules.test.yml")


def promtool(*args, cwd=None):
    tool = shutil.which("promtool")
    if not tool:
        pytest.fail("promtool is missing: apt-get install --no-install-recommends prometheus (make test does)")
    proc = subprocess.run([tool] + list(args), capture_output=True, text=True, cwd=cwd, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def test_rules_are_valid_and_their_tests_pass():
    rc, out = promtool("check", "rules", RULES)
    assert rc == 0 and "SUCCESS: 4 rules found" in out, out
    rc, out = promtool("test", "rules", TESTS)
    assert rc == 0 and "SUCCESS" in out, out


def test_the_rules_use_the_monitors_metric_names():
    import yaml
    exprs = [r["expr"] for g in yaml.safe_load(open(RULES))["groups"] for r in g["rules"]]
    used = set(re.findall(r"\bmetnos_sandbox_[a-z_]+", " ".join(exprs)))
    assert len(used) == 3
    assert used <= set(name for name, _help in prometheus.METRICS), used


@pytest.mark.parametrize("rule,weakened", [
    ("MetnosSandboxNotProven", ("metnos_sandbox_proven == 0", "metnos_sandbox_proven < 0")),
    ("MetnosSandboxProofStale", ("> 3600", "> 36000")),
    ("MetnosSandboxProofMissing", ("unless metnos_sandbox_last_run_timestamp_seconds",
                                   "unless max_over_time(metnos_sandbox_last_run_timestamp_seconds[1d])")),
    ("MetnosSandboxBwrapVersionDrift", ("topk by (os) (1,", "topk (1,")),
])
def test_a_weakened_rule_fails_its_tests(tmp_path, rule, weakened):
    text = open(RULES).read()
    assert weakened[0] in text
    shutil.copy(TESTS, str(tmp_path / "t.yml"))
    (tmp_path / "metnos-sandbox.rules.yml").write_text(text.replace(weakened[0], weakened[1]))
    rc, out = promtool("test", "rules", "t.yml", cwd=str(tmp_path))
    assert rc != 0 and rule in out, out


def test_the_monitoring_doc_names_every_metric_alert_message_id_and_variable():
    import yaml

    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import journald
    doc = open(os.path.join(ROOT, "docs", "monitoring.md")).read()
    alerts = [r["alert"] for g in yaml.safe_load(open(RULES))["groups"] for r in g["rules"]]
    defaults = yaml.safe_load(open(os.path.join(ROOT, "roles", "metnos_sandbox", "defaults", "main.yml")))
    names = [name for name, _help in prometheus.METRICS] + alerts + [journald.RUN_ID,
                                                                     journald.CHANGED_ID] + \
        [k for k in defaults if k.startswith("metnos_sandbox_monitor")]
    assert [n for n in names if not re.search(r"[`=\s]%s\b" % re.escape(n), doc)] == []
    shown = yaml.safe_load(re.search(r"```yaml\n(metnos_sandbox_monitor: .*?)```", doc, re.S).group(1))
    assert shown == dict((k, v) for k, v in defaults.items() if k.startswith("metnos_sandbox_monitor"))
