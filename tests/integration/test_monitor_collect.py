"""The audit collects the continuous proof instead of proving again (opt-in), through the real metnos_audit
action and its payload on this machine: a fresh stored result is the host's result (monitor.collected), an
old one is not a pass (monitor_proof_stale), one that cannot be trusted is refused (monitor_result_unusable)
and the host is audited live; without the option the audit proves again and only reports the proof's age.
The stored result is written by a real monitor run here (no systemd on this machine: no timer, so the host
is not "monitored"; tests/system/test_monitor.py does it on real systemd hosts)."""
import json
import os
import re

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import proof
from conftest import run_module


@pytest.fixture(scope="module")
def stored(tmp_path_factory, bwrap_path):
    tmp = tmp_path_factory.mktemp("monitor")
    (tmp / "textfile").mkdir()
    config = tmp / "config.json"
    config.write_text(json.dumps({"schema": proof.CONFIG_SCHEMA, "audit": {"unit": "", "timeout": 30.0}}))
    status, record = proof.run(str(config), proof.Outputs(str(tmp / "textfile"), str(tmp / "last.json"),
                                                          lambda f: None))
    assert status == 0, record["audit"]["diagnostics"]
    return str(tmp / "last.json"), record


def audit(**args):
    return run_module("metnos.sandbox.metnos_audit", dict({"unit": ""}, **args))


def test_a_fresh_proof_is_collected_instead_of_proving_again(stored):
    path, record = stored
    res = audit(collect_monitor=True, monitor_result=path, monitor_max_age=3600)
    assert res["failed"] is False and res["verdict"] == record["verdict"]
    assert res["monitor"]["collected"] is True and res["monitor"]["stale"] is False
    assert res["monitor"]["proof"]["proven"] is True and res["monitor"]["monitored"] is False   # no timer here
    assert res["probe"]["checks"] == record["audit"]["probe"]["checks"]        # the stored proof, not a new one
    assert res["duration"] == record["audit"]["duration"]


@pytest.mark.rule("R-DIAG-3")
def test_an_old_proof_is_not_a_pass(stored):
    path, _record = stored
    res = audit(collect_monitor=True, monitor_result=path, monitor_max_age=0)
    assert res["verdict"] == "fail" and res["monitor"]["stale"] is True
    assert res["diagnostics"][0]["code"] == "monitor_proof_stale"


def test_without_the_option_the_audit_proves_again_and_reports_the_proofs_age(stored):
    path, record = stored
    res = audit(monitor_result=path)
    assert res["monitor"]["collected"] is False and res["monitor"]["proof"]["proven"] is True
    assert res["probe"]["passed"] is True and res["duration"] != record["audit"]["duration"]


def test_a_stored_result_from_the_future_is_refused_and_the_host_audited_live(stored, tmp_path):
    path, _record = stored
    doc = json.load(open(path))
    doc["finished"] += 86400          # would stay "fresh" for a day
    forged = tmp_path / "last.json"
    forged.write_text(json.dumps(doc))
    os.chmod(str(forged), 0o600)
    res = audit(collect_monitor=True, monitor_result=str(forged))
    assert res["monitor"]["collected"] is False and res["monitor"]["proof"] is None
    unusable = [d for d in res["diagnostics"] if d["code"] == "monitor_result_unusable"]
    assert unusable and re.search(r"its proof time is 86[34]\d\d s in the future", unusable[0]["message"])
    assert res["probe"]["passed"] is True                                       # proved live instead
