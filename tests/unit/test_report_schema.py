"""Reports carry a schema version; a /1 report and baseline (what main wrote before issue 53, kept as files made
with main's own code at 463a547: report_fixtures/make_schema1.py) still load, migrated to /2 (report/schema.py,
docs/audit-report.md "Schema versions")."""
import json
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import (
    baseline,
    document,
    merge,
    schema,
)

HERE = os.path.join(os.path.dirname(__file__), "report_fixtures")
BASELINE_1 = os.path.join(HERE, "schema1-baseline.json")
REPORT_1 = os.path.join(HERE, "schema1-report.json")


def stored(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def test_the_stored_files_are_schema_1_as_main_wrote_them():
    """The canary: the files are what /1 allowed - a host failing on its probe's flag with no finding."""
    doc = stored(REPORT_1)
    assert doc["schema"] == schema.FIRST and document.SCHEMA == schema.CURRENT != schema.FIRST
    flagged = [h for h in doc["hosts"] if h["host"] == "probe-flag"][0]
    assert flagged["verdict"] == "fail" and flagged["diagnostics"] == [] and flagged["probe"]["passed"] is False


def test_a_schema_1_report_merges_with_the_verdicts_it_gave():
    doc = stored(REPORT_1)
    merged = merge.merged([REPORT_1])
    assert merged["schema"] == schema.CURRENT
    then = dict((h["host"], h["verdict"]) for h in doc["hosts"])
    now = dict((h["host"], h["verdict"]) for h in merged["hosts"])
    assert now == then == {"gone": "unreachable", "probe-flag": "fail", "waived": "fail"}
    flagged = [h for h in merged["hosts"] if h["host"] == "probe-flag"][0]
    assert [(d["code"], d["details"]["check"]) for d in flagged["diagnostics"]] == [("probe_check_failed",
                                                                                     "probe_passed")]
    assert "schema /1" in flagged["diagnostics"][0]["message"]
    assert merged["gate"]["failed"] is True and merged["totals"]["fail"] == 2


def test_a_schema_1_baseline_gates_a_schema_2_run():
    base = baseline.read(BASELINE_1)
    assert sorted(base["hosts"]) == ["gone", "probe-flag", "waived"]
    assert sorted(base["hosts"]["probe-flag"]) == ["probe_check_failed"]    # migrated: said once (a host-wide key)
    run = stored(REPORT_1)
    hosts = [h for h in merge.read_report(REPORT_1)[1]]
    doc = document.build_from_hosts(hosts, baseline=base, fail_on="new")
    assert doc["schema"] == schema.CURRENT
    changes = dict((h["host"], h.get("change")) for h in doc["hosts"])
    assert changes["probe-flag"] == {"probe_check_failed": "still"}
    assert changes["waived"] == {"profile_refused|/m/new.yml": "new"}
    assert doc["gate"]["failed"] is True and run["schema"] == schema.FIRST


@pytest.mark.parametrize("version", ["metnos-sandbox-audit-report/0", "metnos-sandbox-audit-report/3", None])
def test_an_unknown_schema_is_refused_by_name(tmp_path, version):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(dict(stored(REPORT_1), schema=version)))
    with pytest.raises(merge.MergeError, match="is not metnos-sandbox-audit-report/1 or metnos-sandbox-audit-report/2"):
        merge.read_report(str(path))
    with pytest.raises(baseline.BaselineError, match="not an audit report of schema"):
        baseline.read(str(path))


def test_a_current_report_is_not_migrated():
    doc = dict(stored(REPORT_1), schema=schema.CURRENT)
    assert schema.upgrade(doc)["hosts"] == doc["hosts"]
