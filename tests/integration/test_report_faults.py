"""Reports never overwrite another run (issue 52 item 2), for real: two audits (ansible-playbook, local-connection
aliases of this machine) started together into one folder keep both sets, each run's printed paths holding its own
hosts; a 2 MB tmpfs as the reports folder, filled so that the set cannot be written whole, leaves nothing of it,
prints the fleet summary and fails the gate; what a killed run left (a lock no longer held, an incomplete set,
hidden temp files) is removed at the next run and listed, while a set another live run is writing is kept."""
import glob
import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import report
from conftest import ROOT, ansible_env, ansible_tool
from helpers import report_text

AUDIT = os.path.join(ROOT, "playbooks", "audit.yml")


def inventory(path, names):
    path.write_text("all:\n  hosts:\n" + "".join(
        "    %s: {ansible_connection: local, ansible_python_interpreter: %s}\n" % (name, sys.executable)
        for name in names))
    return str(path)


def start_audit(inv, dest, *extra):
    cmd = [ansible_tool("ansible-playbook"), AUDIT, "-i", inv, "-e", "metnos_audit_dest=%s" % dest,
           "-e", "metnos_audit_probe=false", "-e", '{"metnos_audit_manifests": [], "metnos_audit_unit": ""}'] + list(
        extra)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=ansible_env())


def printed_json(stdout):
    """The JSON report's path as the run printed it (the fleet summary's "reports written ..." line)."""
    for word in stdout.replace('"', " ").replace(",", " ").split():
        if word.endswith(".json") and "metnos-audit-" in word:
            return word
    raise AssertionError("no report path printed:\n" + stdout[-3000:])


def test_two_audits_into_one_folder_keep_both_sets(tmp_path):
    dest = tmp_path / "reports"
    runs = [start_audit(inventory(tmp_path / ("hosts-%s.yml" % side), ["%s-%d" % (side, i) for i in range(3)]),
                        str(dest)) for side in ("left", "right")]
    outs = [run.communicate(timeout=600) for run in runs]
    for run, (out, err) in zip(runs, outs):
        assert run.returncode == 0, out[-3000:] + err[-2000:]
    names = sorted(os.path.basename(p) for p in glob.glob(str(dest / "metnos-audit-*")))
    assert len(names) == 8, names                                          # two whole sets: nothing overwritten
    for side, (out, _err) in zip(("left", "right"), outs):
        doc = json.load(open(printed_json(out)))
        assert [h["host"] for h in doc["hosts"]] == ["%s-%d" % (side, i) for i in range(3)], side
    latest = json.load(open(str(dest / "latest.json")))                    # one whole set, whichever came last
    assert os.path.samefile(str(dest / "latest.md"), str(dest / "latest" / "report.md"))
    assert latest["totals"]["hosts"] == 3
    assert not [n for n in os.listdir(str(dest)) if n.startswith(".")]    # no lock, no temp file left


def test_same_stamp_twice_in_one_folder_both_kept(tmp_path):
    """The names of two runs differ even with one stamp (the run id): a stamp of a second no longer decides."""
    first = report.write_all(report_text.build({"a": {}}), str(tmp_path), stamp="20261207T120000Z", latest=True)
    second = report.write_all(report_text.build({"b": {}}), str(tmp_path), stamp="20261207T120000Z", latest=True)
    assert set(first.values()).isdisjoint(second.values())
    assert [h["host"] for h in json.load(open(first["json"]))["hosts"]] == ["a"]      # canary: A's set is A's
    assert [h["host"] for h in json.load(open(second["json"]))["hosts"]] == ["b"]
    assert [h["host"] for h in json.load(open(str(tmp_path / "latest.json")))["hosts"]] == ["b"]


@pytest.fixture
def small_tmpfs(tmp_path):
    """A real 2 MB tmpfs mounted as the reports folder (root: this machine's tests run as root)."""
    mount = tmp_path / "reports"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def fill(folder, leave):
    """Fill ``folder``'s filesystem until ``leave`` bytes stay free (a real full disk)."""
    stat = os.statvfs(str(folder))
    size = stat.f_bavail * stat.f_frsize - leave
    with open(str(folder / "filler"), "wb") as handle:
        handle.write(b"\0" * size)
    return folder / "filler"


def big_fleet():
    return dict(("host-%03d" % i, {"unreachable": True, "msg": "x" * 200}) for i in range(200))


def test_a_full_reports_folder_leaves_no_partial_set(small_tmpfs):
    doc = report_text.build(big_fleet())
    sizes = dict((ext, len("".join(render(doc)).encode())) for ext, render in report.RENDERERS)
    assert sizes["json"] < 300000 and sizes["html"] > 8192, sizes
    filler = fill(small_tmpfs, sizes["json"] + 8192)             # the JSON fits, the set does not
    with pytest.raises(report.ReportWriteError) as caught:
        report.write_all(doc, str(small_tmpfs), latest=True)
    assert "not written whole" in str(caught.value)
    assert sorted(os.listdir(str(small_tmpfs))) == ["filler"]    # no partial set, no temp file, no lock
    filler.unlink()
    paths = report.write_all(doc, str(small_tmpfs), latest=True)
    assert sorted(paths) == ["html", "json", "junit.xml", "md"]


def test_debris_of_killed_runs_removed_and_a_live_run_kept(tmp_path):
    dest = tmp_path
    dead = "metnos-audit-20261207T100000000001Z-deadbeef"
    (dest / ("." + dead + report.LOCK)).write_text("")                         # its lock, nobody holds it
    (dest / (dead + ".json")).write_text("{}")                               # an incomplete set
    (dest / ("." + dead + ".md.0123456789ab")).write_text("half")           # its temp file
    old = dest / ".metnos-audit-20261101T000000Z.html.00112233aabb"         # an older toolkit's temp file
    old.write_text("x" * 4096)
    os.utime(str(old), (time.time() - 7200, time.time() - 7200))
    fresh = dest / ".metnos-audit-20261207T120000Z.html.00112233aabc"       # too young to be judged: kept
    fresh.write_text("x")
    live = "metnos-audit-20261207T110000000001Z-0badc0de"                  # a run writing now: its lock held
    (dest / ("." + live + report.LOCK)).write_text("")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               "fd = os.open(sys.argv[1], os.O_RDONLY)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
                               "print('held', flush=True)\ntime.sleep(60)\n",
                               str(dest / ("." + live + report.LOCK))], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        (dest / (live + ".json")).write_text("{}")
        (dest / ("." + live + ".md.0123456789ab")).write_text("writing")
        (dest / "runs" / "broken").mkdir(parents=True)
        removed = report.remove_debris(str(dest))
    finally:
        holder.kill()
        holder.wait()
    assert sorted(removed) == sorted(["." + dead + report.LOCK, dead + ".json", "." + dead + ".md.0123456789ab",
                                      old.name, os.path.join("runs", "broken")]), removed
    assert sorted(os.listdir(str(dest))) == sorted(["." + live + report.LOCK, live + ".json",
                                                    "." + live + ".md.0123456789ab", fresh.name, "runs"])


def test_a_full_reports_folder_fails_the_gate_after_the_summary(tmp_path, small_tmpfs):
    """The playbook on a full reports folder: the fleet summary printed, the gate failed with the write error,
    nothing of the set kept; the next run (space freed, a killed run's debris planted) writes and says what it
    removed."""
    inv = inventory(tmp_path / "hosts.yml", ["alias-a", "alias-b"])
    filler = fill(small_tmpfs, 0)
    run = start_audit(inv, str(small_tmpfs))
    out, err = run.communicate(timeout=600)
    assert run.returncode != 0, out[-3000:]
    assert "2 hosts: " in out and "cannot write the reports to %s" % small_tmpfs in out, out[-3000:] + err[-2000:]
    assert sorted(os.listdir(str(small_tmpfs))) == ["filler"]
    filler.unlink()
    dead = "metnos-audit-20261207T100000000001Z-deadbeef"
    (small_tmpfs / ("." + dead + report.LOCK)).write_text("")
    (small_tmpfs / (dead + ".md")).write_text("half")
    run = start_audit(inv, str(small_tmpfs))
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0, out[-3000:] + err[-2000:]
    assert "removed what earlier runs left in %s: .%s.lock %s.md" % (small_tmpfs, dead, dead) in out, out[-3000:]
    assert len(glob.glob(str(small_tmpfs / "metnos-audit-*"))) == 4


def test_a_destination_that_is_a_file_is_named_not_a_folder(tmp_path):
    """Item 6: a reports destination that is a regular file (or a link to one) is refused as "not a folder",
    naming it, never "File exists"; nothing is written beside it."""
    dest = tmp_path / "reports"
    dest.write_text("an admin's file")
    with pytest.raises(NotADirectoryError) as caught:
        report.write_all(report_text.build({"a": {}}), str(dest), latest=True)
    assert "is not a folder (it is a file)" in str(caught.value) and str(dest) in str(caught.value)
    link = tmp_path / "link"
    link.symlink_to(dest)
    with pytest.raises(NotADirectoryError) as caught:
        report.write_all(report_text.build({"a": {}}), str(link))
    assert "is not a folder (it is a link)" in str(caught.value)
    assert sorted(os.listdir(str(tmp_path))) == ["link", "reports"] and dest.read_text() == "an admin's file"
