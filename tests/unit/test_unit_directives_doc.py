"""The directive table (docs/unit-directives.md) against the measurement (docs/unit-directives.json)
and the code: every directive measured to break bwrap has a registered code that names it, the
offline check finds it from the unit lines alone, no measured-harmless directive is flagged as an
error, and the generated document has not drifted."""
import json
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import restrictions, systemd_unit
from helpers import faces
from helpers.paths import ROOT

with open(os.path.join(ROOT, "docs", "unit-directives.json")) as _handle:
    DATA = json.load(_handle)
ROWS = [(release, DATA[release]["bubblewrap"], row) for release in sorted(DATA) for row in DATA[release]["rows"]]


def _gen():
    return faces.load("scripts/gen-unit-directives-doc.py", "gen")


def _errors(row, bwrap_version):
    settings = systemd_unit.settings_from_text("[Service]\n%s\n" % "\n".join(row["lines"]))
    return [d for d in restrictions.restriction_diagnostics(settings, "metnos.service", {"version": bwrap_version})
            if d["severity"] == diagnostics.ERROR]


def test_measured_on_both_releases():
    assert {"debian12", "debian13"} <= set(DATA)
    assert DATA["debian12"]["systemd"] == 252 and DATA["debian13"]["systemd"] == 257
    assert len(DATA["debian12"]["rows"]) >= 40


@pytest.mark.parametrize("release,bwrap,row", [r for r in ROWS if r[2]["verdict"] == "breaks"],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_every_breaking_directive_has_a_code_the_offline_check_finds(release, bwrap, row):
    code = restrictions.DIRECTIVE_CODES.get(row["directive"])
    assert code and code == row["code"] and code in diagnostics.REGISTRY, (release, row["row"])
    found = _errors(row, bwrap)
    assert [d["code"] for d in found] == [code], (release, row["row"], found)
    assert found[0]["details"]["directive"] == row["directive"]


@pytest.mark.parametrize("release,bwrap,row", [r for r in ROWS if r[2]["verdict"] == "works"],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_no_error_for_a_directive_measured_to_work(release, bwrap, row):
    assert _errors(row, bwrap) == [], (release, row["row"])


def test_every_code_matches_a_measured_break_or_a_documented_condition():
    breaking = set(r["code"] for _rel, _bw, r in ROWS if r["verdict"] == "breaks")
    assert set(restrictions.DIRECTIVE_CODES.values()) == breaking
    for code, (directive, condition) in restrictions.CONDITIONAL_CODES.items():
        assert code in diagnostics.REGISTRY and directive and condition


def test_not_measurable_is_never_reported_as_working():
    for _release, _bwrap, row in ROWS:
        if row["in_effect"] is not True:
            assert row["verdict"] != "works", row


def test_table_is_generated_from_the_measurement():
    with open(os.path.join(ROOT, "docs", "unit-directives.md")) as handle:
        assert handle.read() == _gen().render(DATA), \
            "docs/unit-directives.md drifted: python scripts/gen-unit-directives-doc.py > docs/unit-directives.md"
