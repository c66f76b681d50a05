"""report/merge.py: reports written by document.write_all for real, merged back; the newest record of a host wins,
every file that is not an audit report is refused (audit_merge_input_invalid) before anything is merged."""
import datetime
import json
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.diagnostics import make
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import document, merge


def _report(directory, hosts, when):
    stamp = datetime.datetime(2026, 12, 1, when, tzinfo=datetime.timezone.utc)
    doc = document.build_from_hosts([dict(h) for h in hosts], generated=stamp)
    os.makedirs(directory, exist_ok=True)
    return document.write_all(doc, str(directory), stamp="h%02d" % when)


def _host(name, verdict="pass", diagnostics=()):
    """A host record as a report is built from (findings only: build_from_hosts decides its verdict from them);
    an unreachable host carries host_unreachable."""
    if verdict == "unreachable":
        diagnostics = list(diagnostics) + [make("host_unreachable", host=name, why="unreachable")]
    return {"host": name, "reachable": verdict != "unreachable", "diagnostics": list(diagnostics)}


def test_every_host_once_the_newest_record_wins(tmp_path):
    old = _report(tmp_path / "a", [_host("web1"), _host("web2", "unreachable")], 1)
    new = _report(tmp_path / "b", [_host("web2")], 2)
    for order in ([new["json"], old["json"]], [old["json"], new["json"]]):
        doc = merge.merged(order)
        assert [(h["host"], h["verdict"]) for h in doc["hosts"]] == [("web1", "pass"), ("web2", "pass")], order
        assert doc["totals"]["hosts"] == 2 and not doc["gate"]["failed"]
    doc = merge.merged([old["json"]])
    assert doc["gate"]["failed"] and doc["totals"]["unreachable"] == 1


@pytest.mark.parametrize("kind", ["md", "html", "junit.xml", "other schema", "bad record", "missing", "empty list"])
def test_what_is_not_a_report_is_refused(tmp_path, kind):
    good = _report(tmp_path / "a", [_host("web1")], 1)
    bad = str(tmp_path / "bad.json")
    if kind in ("md", "html", "junit.xml"):
        bad = good[kind]
    elif kind == "other schema":
        with open(bad, "w") as handle:
            json.dump({"schema": "something/2", "hosts": []}, handle)
    elif kind == "bad record":
        with open(bad, "w") as handle:
            json.dump({"schema": document.SCHEMA, "hosts": [{"host": "x"}]}, handle)
    paths = [] if kind == "empty list" else [good["json"], bad]
    with pytest.raises(merge.MergeError) as caught:
        merge.merged(paths)
    assert (bad in str(caught.value)) or kind == "empty list"
    diag = make(merge.CODE, fill={"reason": str(caught.value)})
    assert diag["code"] == "audit_merge_input_invalid" and str(caught.value) in diag["message"]


def test_a_list_file_names_the_reports(tmp_path):
    one = _report(tmp_path / "a", [_host("web1")], 1)
    two = _report(tmp_path / "b", [_host("web2")], 2)
    listing = tmp_path / "list.txt"
    listing.write_text("%s\n\n  %s  \n" % (one["json"], two["json"]))
    assert merge.paths_from_list(str(listing)) == [one["json"], two["json"]]
    assert merge.merged(merge.paths_from_list(str(listing)))["totals"]["hosts"] == 2


def test_patterns_name_the_reports_and_an_empty_one_is_refused(tmp_path):
    one = _report(tmp_path / "slice-1", [_host("web1")], 1)
    two = _report(tmp_path / "slice-2", [_host("web2")], 2)
    assert merge.paths_from_patterns([str(tmp_path / "slice-*" / "*.json")]) == [one["json"], two["json"]]
    with pytest.raises(merge.MergeError, match="no file matches"):
        merge.paths_from_patterns([str(tmp_path / "slice-*" / "*.json"), str(tmp_path / "nowhere" / "*.json")])
