"""docs/spec-coverage.md is generated (scripts/gen-spec-coverage.py, `make docs`): each rule of
docs/spec-rules.yml -> codes, tests (@pytest.mark.rule) or the reason it does not apply. The
committed file must equal the generator's output, and no rule may be missing."""
import os
import re

import pytest

from conftest import ROOT, spec_rules
from helpers import faces


@pytest.fixture(scope="module")
def generated():
    module = faces.load("scripts/gen-spec-coverage.py", "gen_cov")
    return module.render(module.rules(), module.marked_tests())


def test_committed_doc_matches_the_generator(generated):
    with open(os.path.join(ROOT, "docs", "spec-coverage.md")) as handle:
        assert handle.read() == generated, \
            "docs/spec-coverage.md drifted: python scripts/gen-spec-coverage.py > docs/spec-coverage.md (make docs)"


def test_every_rule_is_covered_or_not_applicable(generated):
    assert "| MISSING |" not in generated and "## Problems" not in generated, generated.split("## Problems")[-1]


def test_rule_list_is_spelled_one_way():
    ids = [r["id"] for r in spec_rules()]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"R-[A-Z]+-([0-9]+|[A-Z]+)", i) for i in ids), ids
    assert all(r["title"] for r in spec_rules())


def test_no_rule_spelled_in_a_test_name():
    """R_SEC_2-style test names are gone: the rule is a marker (@pytest.mark.rule("R-SEC-2"))."""
    found = []
    for base, _dirs, names in os.walk(os.path.join(ROOT, "tests")):
        for name in names:
            if name.endswith(".py"):
                with open(os.path.join(base, name)) as handle:
                    found += re.findall(r"def test_r_[a-z]+_\w+", handle.read(), re.I)
    assert not found, found
