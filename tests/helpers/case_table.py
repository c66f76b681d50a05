"""Case tables as data, read by one runner (issue 55), in the style of community.general's UTHelper
(tests/unit/plugins/modules/uthelper.py there): the cases live in YAML files under tests/unit/cases/, one per
table, named after the test file that runs them (tests/unit/test_install_plan.py -> cases/test_install_plan.yaml)
or after the corpus several tests share (cases/hostile_manifests.yaml):

    test_cases:
      - id: apt, installed                 # unique in its file: the pytest id and the name in a failure
        input: {...}                       # what the test hands the code
        output: {...}                      # what the code must answer

``params(name)`` gives one pytest parameter per case, ``check(case, got)`` compares an answer with the case's
output, and a failing case names its file and id.

Hostile input is often big or repetitive (a 10 MB manifest, 129 capabilities); a table writes it with four
tags instead of spelling it out (each builds plain data at load time, nothing is evaluated):

    !times {count: 3, each: ab}                       -> "ababab" (a list repeats as a list)
    !join [a, !times {count: 2, each: b}, c]          -> "abbc" (strings or lists, joined)
    !series {count: 3, each: "n{}", step: 2}          -> ["n0", "n2", "n4"] ("join: ', '" makes one string;
                                                          "each" is a str.format template of the number)
    !keys {count: 2, each: "a{}", value: 1}           -> {"a0": 1, "a1": 1}

and bytes as YAML's own ``!!binary``."""
import copy
import os

import yaml

from helpers.paths import ROOT

KEYS = {"id", "input", "output"}
CASES = os.path.join(ROOT, "tests", "unit", "cases")


class CaseLoader(yaml.SafeLoader):
    """YAML's safe loader with the four tags above."""


def _fields(loader, node, required, optional=()):
    found = loader.construct_mapping(node, deep=True)
    if not set(required) <= set(found) <= set(required) | set(optional):
        raise yaml.constructor.ConstructorError(None, None, "%s takes %s (optional %s), got %s" % (
            node.tag, sorted(required), sorted(optional), sorted(found)), node.start_mark)
    return found


def _times(loader, node):
    found = _fields(loader, node, ("count", "each"))
    if isinstance(found["each"], list):        # each item its own object (no YAML alias when written again)
        return [copy.deepcopy(item) for _number in range(found["count"]) for item in found["each"]]
    return found["each"] * found["count"]


def _join(loader, node):
    parts = loader.construct_sequence(node, deep=True)
    return sum(parts, []) if parts and isinstance(parts[0], list) else "".join(parts)


def _series(loader, node):
    found = _fields(loader, node, ("count", "each"), ("step", "join"))
    items = [found["each"].format(number * found.get("step", 1)) for number in range(found["count"])]
    return found["join"].join(items) if "join" in found else items


def _keys(loader, node):
    found = _fields(loader, node, ("count", "each", "value"))
    return dict((found["each"].format(number), copy.deepcopy(found["value"])) for number in range(found["count"]))


for _tag, _build in (("!times", _times), ("!join", _join), ("!series", _series), ("!keys", _keys)):
    CaseLoader.add_constructor(_tag, _build)


def table_path(name):
    """The table of ``name``: a test file's path (its base name) or a table's own name."""
    base = os.path.splitext(os.path.basename(name))[0]
    return os.path.join(CASES, base + ".yaml")


def load(name):
    """The cases of ``name``'s table, each with its ``file``; refused (ValueError) when a case lacks a key,
    has another, or repeats an id."""
    path = table_path(name)
    with open(path, encoding="utf-8") as handle:
        cases = yaml.load(handle, Loader=CaseLoader)["test_cases"]      # a safe loader with four tags
    seen = set()
    for index, case in enumerate(cases):
        if not isinstance(case, dict) or set(case) != KEYS:
            raise ValueError("%s: case %d must have exactly %s" % (path, index, sorted(KEYS)))
        if case["id"] in seen:
            raise ValueError("%s: the id %r twice" % (path, case["id"]))
        seen.add(case["id"])
        case["file"] = os.path.relpath(path, ROOT)
    return cases


def params(name, marks=None):
    """One pytest parameter per case of ``name``'s table, named by its id (``marks(case)``: its marks)."""
    import pytest
    return [pytest.param(case, id=case["id"], marks=marks(case) if marks else ()) for case in load(name)]


def failure(case, got, want):
    return "%s, case %r: got %r, want %r" % (case["file"], case["id"], got, want)


def check(case, got):
    """``got`` is the case's output; else a failure naming the table's file and the case's id."""
    assert got == case["output"], failure(case, got, case["output"])
