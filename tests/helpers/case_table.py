"""Case tables as data, read by one runner (issue 55), in the style of community.general's UTHelper
(tests/unit/plugins/modules/uthelper.py there): a test file's cases live in the YAML file beside it, of the same
base name (tests/unit/test_install_plan.py -> tests/unit/test_install_plan.yaml):

    test_cases:
      - id: apt, installed                 # unique in its file: the pytest id and the name in a failure
        input: {...}                       # what the test hands the code
        output: {...}                      # what the code must answer

``params(__file__)`` gives one pytest parameter per case, ``check(case, got)`` compares an answer with the case's
output, and a failing case names its file and id."""
import os

import pytest
import yaml

from helpers.paths import ROOT

KEYS = {"id", "input", "output"}


def table_path(test_file):
    return os.path.splitext(os.path.abspath(test_file))[0] + ".yaml"


def load(test_file):
    """The cases of ``test_file``'s table, each with its ``file``; refused (ValueError) when a case lacks a key,
    has another, or repeats an id."""
    path = table_path(test_file)
    with open(path, encoding="utf-8") as handle:
        cases = yaml.safe_load(handle)["test_cases"]
    seen = set()
    for index, case in enumerate(cases):
        if not isinstance(case, dict) or set(case) != KEYS:
            raise ValueError("%s: case %d must have exactly %s" % (path, index, sorted(KEYS)))
        if case["id"] in seen:
            raise ValueError("%s: the id %r twice" % (path, case["id"]))
        seen.add(case["id"])
        case["file"] = os.path.relpath(path, ROOT)
    return cases


def params(test_file):
    """One pytest parameter per case of ``test_file``'s table, named by its id."""
    return [pytest.param(case, id=case["id"]) for case in load(test_file)]


def check(case, got):
    """``got`` is the case's output; else a failure naming the table's file and the case's id."""
    assert got == case["output"], "%s, case %r: got %r, want %r" % (case["file"], case["id"], got, case["output"])
