"""The one reader of the case tables (tests/helpers/case_table.py): its four tags build plain data, a table with a
case of other keys, a repeated id or a tag with unknown fields is refused, and a hostile corpus' case with an input
key its reader does not know is refused too (a typo would silently drop the key: a different manifest)."""
import pytest
import yaml

from corpus.hostile_manifests import Entry
from helpers import case_table


def read(text):
    return yaml.load(text, Loader=case_table.CaseLoader)


@pytest.mark.parametrize("text, value", [
    ("!times {count: 3, each: ab}", "ababab"),
    ("!times {count: 2, each: [{a: 1}]}", [{"a": 1}, {"a": 1}]),
    ("!join [a, !times {count: 2, each: b}, c]", "abbc"),
    ("!join [[a], !times {count: 2, each: [b]}]", ["a", "b", "b"]),
    ("!series {count: 3, each: 'n{}', step: 2}", ["n0", "n2", "n4"]),
    ("!series {count: 3, each: 'k{:02d}', join: ', '}", "k00, k01, k02"),
    ("!keys {count: 2, each: 'a{}', value: {w: [x]}}", {"a0": {"w": ["x"]}, "a1": {"w": ["x"]}}),
    ("? !times {count: 3, each: k}\n: 1\n", {"kkk": 1}),
])
def test_the_tags_build_plain_data(text, value):
    assert read(text) == value


def test_repeated_items_are_not_one_object():
    """What a tag repeats is copied: a test that changes one case's data changes no other."""
    built = read("!keys {count: 2, each: 'a{}', value: {w: [x]}}")
    built["a0"]["w"].append("y")
    assert built["a1"] == {"w": ["x"]}


@pytest.mark.parametrize("text", ["!times {count: 3}", "!series {count: 3, each: x, sep: ','}",
                                  "!keys {count: 1, each: a, value: 1, extra: 2}", "!eval 1"])
def test_a_tag_with_other_fields_is_refused(text):
    with pytest.raises(yaml.YAMLError):
        read(text)


@pytest.mark.parametrize("cases, problem", [
    ("[{id: a, input: 1}]", "must have exactly"),
    ("[{id: a, input: 1, output: 2, mock: 3}]", "must have exactly"),
    ("[{id: a, input: 1, output: 2}, {id: a, input: 1, output: 3}]", "the id 'a' twice"),
])
def test_a_table_of_other_shape_is_refused(tmp_path, monkeypatch, cases, problem):
    monkeypatch.setattr(case_table, "CASES", str(tmp_path))
    (tmp_path / "table.yaml").write_text("test_cases: %s\n" % cases)
    with pytest.raises(ValueError, match=problem):
        case_table.load("table")


@pytest.mark.parametrize("given", [{"rule": "R", "manifest": {}, "invokation": {}},
                                   {"rule": "R", "text": "x", "manifest": {}}, {"rule": "R"}])
def test_a_hostile_case_with_an_unknown_or_missing_input_is_refused(given):
    case = {"id": "x", "input": given, "output": "manifest_invalid", "file": "tests/unit/cases/t.yaml"}
    with pytest.raises(ValueError, match="tests/unit/cases/t.yaml, case 'x'"):
        Entry.fields(case)
