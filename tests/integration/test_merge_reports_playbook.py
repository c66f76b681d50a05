"""The report merge ships with the collection: ``ansible-playbook metnos.sandbox.merge_reports`` from the collection
installed out of the built tarball (the recipe of docs/audit-report.md, nothing of the checkout on any path) merges
reports written by the audit's own writer, gates the merged fleet with its exit status, and refuses a file that is
not a JSON report (audit_merge_input_invalid) before writing anything."""
import datetime
import glob
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.diagnostics import make
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import document
from helpers import installed_collection
from helpers.ansible_run import ansible_tool


@pytest.fixture(scope="module")
def top():
    base = tempfile.mkdtemp(prefix="metnos-merge-")
    installed_collection.install(base)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _report(directory, hosts, hour):
    stamp = datetime.datetime(2026, 12, 1, hour, tzinfo=datetime.timezone.utc)
    os.makedirs(directory, exist_ok=True)
    return document.write_all(document.build_from_hosts(hosts, generated=stamp), directory, stamp="h%02d" % hour)


def _host(name, verdict):
    """A host record as a report is built from (findings only: build_from_hosts decides its verdict from them);
    an unreachable host carries host_unreachable."""
    diagnostics = [make("host_unreachable", host=name,
                        why="unreachable")] if verdict == "unreachable" else []
    return {"host": name, "reachable": verdict != "unreachable", "diagnostics": diagnostics}


def _merge(top, *extra):
    """The recipe as the playbook's head and docs/audit-report.md write it: ``-i localhost,``."""
    cmd = [ansible_tool("ansible-playbook"), "-i", "localhost,", "metnos.sandbox.merge_reports"] + list(extra)
    return subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.join(top, "project"),
                          env=installed_collection.user_env(top))


def test_the_playbook_merges_gates_and_refuses(top):
    collected = os.path.join(top, "collected")
    _report(os.path.join(collected, "a"), [_host("web1", "pass"), _host("web2", "unreachable")], 1)
    _report(os.path.join(collected, "b"), [_host("web2", "pass")], 2)          # web2 audited again, later
    out = os.path.join(top, "fleet")
    proc = _merge(top, "-e", "merge_dest=%s" % out, "-e", "merge_glob=%s/*/*.json" % collected)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "[WARNING]" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr     # issue 54: no empty hosts
    with open(glob.glob(os.path.join(out, "metnos-audit-*.json"))[0]) as handle:
        doc = json.load(handle)
    assert [(h["host"], h["verdict"]) for h in doc["hosts"]] == [("web1", "pass"), ("web2", "pass")]
    assert sorted(os.path.basename(p).split(".", 1)[1] for p in glob.glob(os.path.join(out, "metnos-audit-*"))) == \
        ["html", "json", "junit.xml", "md"]
    with open(os.path.join(out, "latest.json")) as handle:       # issue 54: the merge's latest, as the audit's
        assert json.load(handle)["hosts"] == doc["hosts"]

    listing = os.path.join(top, "list.txt")
    with open(listing, "w") as handle:
        handle.write(glob.glob(os.path.join(collected, "a", "*.json"))[0] + "\n")
    proc = _merge(top, "-e", "merge_dest=%s" % os.path.join(top, "fleet-a"), "-e", "merge_list=%s" % listing)
    assert proc.returncode != 0 and "1 host(s) failing the sandbox audit" in proc.stdout, proc.stdout[-3000:]

    proc = _merge(top, "-e", "merge_dest=%s" % os.path.join(top, "fleet-bad"), "-e",
                  "merge_glob=%s/a/*" % collected)                               # the .md, .html next to it
    assert proc.returncode != 0 and "audit_merge_input_invalid" in proc.stdout, proc.stdout[-3000:]
    assert not os.path.exists(os.path.join(top, "fleet-bad"))


def test_a_merge_without_a_baseline_shows_no_slices_badges(top):
    """Issue 54 item 5: each slice compared itself with its own baseline (a new finding on web3, a resolved one);
    the merge has no baseline, so no host keeps a change or resolved block and no format shows the badges."""
    slice_dir = os.path.join(top, "badges")
    finding = make("unit_not_found", unit="metnos.service", scope="system")
    host = {"host": "web3", "reachable": True, "diagnostics": [finding]}      # findings only: its verdict is warn
    before = {"path": "x", "generated": "2026-11-30T00:00:00+00:00", "hosts": {"web3": {}}}
    stamp = datetime.datetime(2026, 12, 1, 5, tzinfo=datetime.timezone.utc)
    os.makedirs(slice_dir)
    sliced = document.build_from_hosts([host], generated=stamp, baseline=before)
    assert sliced["hosts"][0]["change"], sliced["hosts"][0]                  # the canary: the slice has badges
    document.write_all(sliced, slice_dir, stamp="h05")
    out = os.path.join(top, "fleet-badges")
    proc = _merge(top, "-e", "merge_dest=%s" % out, "-e", "merge_glob=%s/*.json" % slice_dir)
    assert proc.returncode == 0, proc.stdout[-3000:]
    with open(os.path.join(out, "latest.json")) as handle:
        doc = json.load(handle)
    assert "change" not in doc["hosts"][0] and "resolved" not in doc["hosts"][0] and "baseline" not in doc
    with open(glob.glob(os.path.join(out, "metnos-audit-*.html"))[0]) as handle:
        page = handle.read()
    assert "unit_not_found" in page and '<span class="badge new">' not in page, page[-2000:]
