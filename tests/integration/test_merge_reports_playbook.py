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

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics as base_diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import report
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
    return report.write_all(report.build_from_hosts(hosts, generated=stamp), directory, stamp="h%02d" % hour)


def _host(name, verdict):
    """A host record as the report keeps it: an unreachable host carries host_unreachable (every verdict is
    decided from the findings, base/verdicts.py)."""
    diagnostics = [base_diagnostics.make("host_unreachable", host=name,
                                         why="unreachable")] if verdict == "unreachable" else []
    return {"host": name, "verdict": verdict, "reachable": verdict != "unreachable", "diagnostics": diagnostics}


def _merge(top, *extra):
    cmd = [ansible_tool("ansible-playbook"), "metnos.sandbox.merge_reports"] + list(extra)
    return subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.join(top, "project"),
                          env=installed_collection.user_env(top))


def test_the_playbook_merges_gates_and_refuses(top):
    collected = os.path.join(top, "collected")
    _report(os.path.join(collected, "a"), [_host("web1", "pass"), _host("web2", "unreachable")], 1)
    _report(os.path.join(collected, "b"), [_host("web2", "pass")], 2)          # web2 audited again, later
    out = os.path.join(top, "fleet")
    proc = _merge(top, "-e", "merge_dest=%s" % out, "-e", "merge_glob=%s/*/*.json" % collected)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    with open(glob.glob(os.path.join(out, "*.json"))[0]) as handle:
        doc = json.load(handle)
    assert [(h["host"], h["verdict"]) for h in doc["hosts"]] == [("web1", "pass"), ("web2", "pass")]
    assert sorted(os.path.basename(p).split(".", 1)[1] for p in glob.glob(os.path.join(out, "*"))) == \
        ["html", "json", "junit.xml", "md"]

    listing = os.path.join(top, "list.txt")
    with open(listing, "w") as handle:
        handle.write(glob.glob(os.path.join(collected, "a", "*.json"))[0] + "\n")
    proc = _merge(top, "-e", "merge_dest=%s" % os.path.join(top, "fleet-a"), "-e", "merge_list=%s" % listing)
    assert proc.returncode != 0 and "1 host(s) failing the sandbox audit" in proc.stdout, proc.stdout[-3000:]

    proc = _merge(top, "-e", "merge_dest=%s" % os.path.join(top, "fleet-bad"), "-e",
                  "merge_glob=%s/a/*" % collected)                               # the .md, .html next to it
    assert proc.returncode != 0 and "audit_merge_input_invalid" in proc.stdout, proc.stdout[-3000:]
    assert not os.path.exists(os.path.join(top, "fleet-bad"))
