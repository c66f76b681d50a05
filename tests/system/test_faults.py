"""Nothing lost, nothing half-applied (issue 52): the faults of the issue's acceptance, each run for real, each test
checking that nothing is lost or half-applied and that the next run says what it healed. Local-connection aliases
of this machine unless said.

- Ctrl-C: ansible-playbook runs the audit, one host hangs after the connection (its interpreter is a script that
  records its pid, starts a child and waits). Once the others have finished, SIGINT goes to ansible-playbook's
  process group, as a terminal sends it on Ctrl-C (the workers run in their own sessions: Ansible forwards it to
  them), and a second SIGINT follows at once. The run ends with status 99, and a whole report set is written: the
  hosts that finished with their results, the hung one host_interrupted, the gate failed
  (callback_plugins/audit_interrupt.py, enabled in the repository's ansible.cfg).
- A host that hangs after connecting, local: with metnos_audit_host_timeout=5 the run ends, the hung host is
  host_timeout in every report, the others' results are written, the gate fails, and the hung interpreter and its
  child are killed on the host (timeout(1): the whole process group). The task keyword ``timeout`` still bounds it.
- The same over podman: a real systemd container reached with containers.podman.podman (the message travels as
  the arguments of one command); the interpreter and its child are gone inside the container at the deadline:
  /bin/sh started them under timeout(1) (transport.argv_command).
- Reports never overwrite another run: two audits started together into one folder keep both sets, each run's
  printed paths holding its own hosts; a 2 MB tmpfs as the reports folder, filled so that the set cannot be
  written whole, leaves nothing of it, prints the fleet summary and fails the gate; what a killed run left (a lock
  no longer held, an incomplete set, hidden temp files) is removed at the next run and listed, while a set another
  live run is writing is kept; a destination that is a file is "not a folder".
- A lost sysctl apply (a run killed after the drop-in was written): the bwrap_host role against a real kernel
  sysctl. This machine's own user.max_user_namespaces is not writable here (a container: EACCES), so the role runs
  inside a user namespace of its own (unshare -U -r, entered with nsenter for each step), where the kernel keeps a
  separate, writable user.max_user_namespaces: the same sysctl(8), the same /proc/sys file. The first run writes
  the drop-in (into a temp folder) and applies it; the kernel's value is then set back, which is what a run killed
  after the file task left. The rerun - the file unchanged - compares the kernel's live value with the wanted one,
  applies the drop-in and says what it healed; the run after it changes nothing. No backup is left next to the
  drop-in (one that backup: true left is removed; an admin's other file is kept).
- Killed runs (issue 52's "site.yml killed at several points"): the whole run SIGKILLed when its output shows it
  reached a step (helpers/fault_runs.kill_run), then a rerun that heals and says so. The sysctl remediation, in the
  user namespace above, killed during the drop-in write, before the apply and after it: the rerun applies what was
  lost ("healed: the kernel held ..."), the run after changes nothing. playbooks/site.yml on this machine killed
  inside its profile render loop: the rerun writes every pair whole and names the temp file it removed. A kill during
  the package step (dpkg, the controller, pacman, dnf): tests/system/test_faults_packages.py. Not here yet: site.yml
  with the sysctl step on a podman host (a container's root cannot write user.max_user_namespaces here, even
  --privileged with a uid map: EACCES).

- A stored profile killed between its two files (a real SIGKILL at the second rename): the launcher installed
  from the tarball refuses it, the audit reports it, and the next render writes the pair again and says so,
  naming the executor. A 2 MB tmpfs as the profile folder: renders into it until it is full end with an error
  naming the folder, never a half-written pair, and the launcher still runs the previous complete pair. (The
  launcher and the executor: tests/helpers/stored_profiles.py, shared with tests/integration/
  test_stored_profile_exec.py.)
- A manifest rewritten in place during renders (a real editor process truncating and writing it, the folder a real
  user's): 150 renders, each either the render of a complete version of the file or refused as
  manifest_changed_while_read ("render again"); once the editor stops, the next render renders. (The user:
  tests/helpers/real_user.py; the versions and the editor: tests/helpers/rewritten_manifest.py, shared with
  tests/integration/test_safe_reads.py.)
"""
import glob
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import profile_states
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import safe_read
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import store
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import document
from conftest import ROOT, ansible_env, start_host, stop_host
from helpers import fault_runs, real_user, report_text, rewritten_manifest, stored_profiles
from helpers.ansible_run import ansible_tool
from helpers.fault_runs import alive, changed, inside, live, set_live
from helpers.stored_profiles import KILLER, host_of, render, run_stored


def test_ctrl_c_writes_the_finished_hosts_and_marks_the_others_interrupted(tmp_path):
    inv, pids = fault_runs.hung_fleet(tmp_path)
    dest, out = tmp_path / "reports", tmp_path / "out"
    with open(str(out), "w") as handle:
        proc = subprocess.Popen(fault_runs.audit_command(inv, dest), stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT,
                                env=ansible_env(), start_new_session=True)     # its own group, as a job
    recorded = []
    try:
        fault_runs.wait_for(out, ["ok: [%s]" % name for name in fault_runs.FINISHED], proc,
                            after="TASK [Audit the host in one round trip")
        end = time.monotonic() + 60
        while not (pids.exists() and len(pids.read_text().split()) == 2) and time.monotonic() < end:
            time.sleep(0.1)
        recorded = [int(word) for word in pids.read_text().split()]
        assert len(recorded) == 2, recorded                         # canary: the hung host's interpreter does hang
        assert proc.poll() is None                                  # canary: the run is still waiting for it
        os.killpg(proc.pid, signal.SIGINT)                          # Ctrl-C
        time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)                          # and again, at once
        assert proc.wait(timeout=120) == 99, out.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in recorded:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    text = out.read_text()
    assert "User interrupted execution" in text
    assert "2 host(s) that finished, 1 host_interrupted" in text, text[-3000:]
    doc = json.load(open(str(dest / "latest.json")))
    hosts = dict((h["host"], h) for h in doc["hosts"])
    assert sorted(hosts) == ["fast-1", "fast-2", "hung"]
    assert [d["code"] for d in hosts["hung"]["diagnostics"]] == ["host_interrupted"], hosts["hung"]
    assert "hung: the run was interrupted" in hosts["hung"]["diagnostics"][0]["message"]
    for name in fault_runs.FINISHED:                                           # the finished hosts' own results
        assert hosts[name]["reachable"] and hosts[name]["verdict"] in ("pass", "warn"), hosts[name]
    assert doc["gate"]["failed"]
    for ext in ("md", "junit.xml", "html"):                         # the whole set, the finding in each
        assert "host_interrupted" in open(str(dest / ("latest." + ext))).read(), ext
    assert len(glob.glob(str(dest / "metnos-audit-*"))) == 4
    assert not [name for name in os.listdir(str(dest)) if name.startswith(".")]     # no temp debris


def test_a_run_that_ends_normally_writes_one_set(tmp_path):
    """The callback writes nothing when the play's own report task returned (no second set, exit status 0)."""
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    fast-1: {ansible_connection: local, ansible_python_interpreter: %s}\n"
                   % sys.executable)
    dest = tmp_path / "reports"
    proc = subprocess.run(fault_runs.audit_command(inv, dest), capture_output=True, text=True, cwd=ROOT,
                          env=ansible_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "host_interrupted" not in proc.stdout
    assert len(glob.glob(str(dest / "metnos-audit-*"))) == 4


def test_a_hung_podman_host_is_killed_in_the_container_at_its_deadline(tmp_path):
    host = start_host("metnos-fault")
    try:
        host.write("/usr/local/bin/hang-python",
                   fault_runs.HANG % {"pids": "/run/hang-pids", "python": "/usr/bin/python3"}, mode="0755")
        inv = tmp_path / "hosts.yml"
        inv.write_text("all:\n  hosts:\n    hung: {ansible_connection: containers.podman.podman, ansible_host: %s, "
                       "ansible_python_interpreter: /usr/local/bin/hang-python}\n" % host.name)
        dest = tmp_path / "reports"
        start = time.monotonic()
        proc = subprocess.run(fault_runs.audit_command(inv, dest) + ["-e", "metnos_audit_host_timeout=5"],
                              capture_output=True, text=True, cwd=ROOT, env=ansible_env(), timeout=300)
        took = time.monotonic() - start
        assert proc.returncode != 0 and took < 120, (took, proc.stdout[-3000:])
        recorded = host.sh("cat /run/hang-pids").stdout.split()
        assert len(recorded) == 2, recorded                        # canary: it did hang, with a child
        living = host.sh("for pid in %s; do grep -qv ' Z ' /proc/$pid/stat 2>/dev/null && echo $pid; done; true"
                         % " ".join(recorded)).stdout.split()
        assert living == [], living                                # killed in the container, its child too
        doc = json.load(open(str(dest / "latest.json")))
        assert [d["code"] for d in doc["hosts"][0]["diagnostics"]] == ["host_timeout"], doc["hosts"][0]
    finally:
        stop_host(host)


def test_a_hung_host_is_host_timeout_and_the_others_are_reported(tmp_path):
    inv, pids = fault_runs.hung_fleet(tmp_path)
    dest = tmp_path / "reports"
    start = time.monotonic()
    proc = subprocess.run(fault_runs.audit_command(inv, dest) + ["-e", "metnos_audit_host_timeout=5"],
                          capture_output=True, text=True, cwd=ROOT, env=ansible_env(), timeout=300)
    took = time.monotonic() - start
    assert proc.returncode != 0, proc.stdout[-3000:]                     # the gate fails on the hung host
    assert took < 120, took
    recorded = [int(line) for line in pids.read_text().split()]
    assert len(recorded) == 2, recorded                                  # canary: the interpreter did hang
    assert not [pid for pid in recorded if alive(pid)], recorded         # killed on the host, its child too
    doc = json.load(open(str(dest / "latest.json")))
    hosts = dict((h["host"], h) for h in doc["hosts"])
    assert [d["code"] for d in hosts["hung"]["diagnostics"]] == ["host_timeout"], hosts["hung"]
    assert "no audit result within 5 s" in hosts["hung"]["diagnostics"][0]["message"]
    assert hosts["fast-1"]["reachable"] and hosts["fast-2"]["reachable"]
    assert hosts["fast-1"]["verdict"] in ("pass", "warn") and hosts["fast-2"]["verdict"] in ("pass", "warn")
    for ext in ("md", "junit.xml", "html"):                               # a finding in every report
        assert "host_timeout" in open(str(dest / ("latest." + ext))).read(), ext
    assert "host_timeout" in proc.stdout                                 # and in the fleet summary
    assert len(glob.glob(str(dest / "metnos-audit-*"))) == 4


TASK_TIMEOUT = """- hosts: all
  gather_facts: false
  tasks:
    - metnos.sandbox.metnos_audit:
        deadline: 120
        probe: false
        unit: ""
      timeout: 3
"""


def test_the_task_keyword_timeout_still_bounds_the_audit(tmp_path):
    """The action's own alarm never hides Ansible's (the task keyword ``timeout``, a SIGALRM in the same worker):
    the shorter one ends the hung host's task."""
    pids, hang = fault_runs.hanging_interpreter(tmp_path)
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    hung: {ansible_connection: local, ansible_python_interpreter: %s}\n" % hang)
    play = tmp_path / "play.yml"
    play.write_text(TASK_TIMEOUT)
    start = time.monotonic()
    proc = subprocess.run([ansible_tool("ansible-playbook"), str(play), "-i", str(inv)], capture_output=True,
                          text=True, cwd=ROOT, env=ansible_env(), timeout=300)
    took = time.monotonic() - start
    assert proc.returncode != 0 and took < 60, (took, proc.stdout[-3000:])
    assert "Timed out after 3 second" in proc.stdout or "host_timeout" in proc.stdout, proc.stdout[-3000:]
    for pid in [int(line) for line in pids.read_text().split()]:       # the hung command is not left behind
        if alive(pid):
            os.kill(pid, 9)


def test_two_audits_into_one_folder_keep_both_sets(tmp_path):
    dest = tmp_path / "reports"
    runs = [fault_runs.start_audit(fault_runs.inventory(tmp_path / ("hosts-%s.yml" % side),
                                                        ["%s-%d" % (side, i) for i in range(3)]), str(dest))
            for side in ("left", "right")]
    outs = [run.communicate(timeout=600) for run in runs]
    for run, (out, err) in zip(runs, outs):
        assert run.returncode == 0, out[-3000:] + err[-2000:]
    names = sorted(os.path.basename(p) for p in glob.glob(str(dest / "metnos-audit-*")))
    assert len(names) == 8, names                                          # two whole sets: nothing overwritten
    for side, (out, _err) in zip(("left", "right"), outs):
        doc = json.load(open(fault_runs.printed_json(out)))
        assert [h["host"] for h in doc["hosts"]] == ["%s-%d" % (side, i) for i in range(3)], side
    latest = json.load(open(str(dest / "latest.json")))                    # one whole set, whichever came last
    assert os.path.samefile(str(dest / "latest.md"), str(dest / "latest" / "report.md"))
    assert latest["totals"]["hosts"] == 3
    assert not [n for n in os.listdir(str(dest)) if n.startswith(".")]    # no lock, no temp file left


def test_same_stamp_twice_in_one_folder_both_kept(tmp_path):
    """The names of two runs differ even with one stamp (the run id): a stamp of a second no longer decides."""
    first = document.write_all(report_text.build({"a": {}}), str(tmp_path), stamp="20261207T120000Z", latest=True)
    second = document.write_all(report_text.build({"b": {}}), str(tmp_path), stamp="20261207T120000Z", latest=True)
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


def test_a_full_reports_folder_leaves_no_partial_set(small_tmpfs):
    doc = report_text.build(fault_runs.big_fleet())
    sizes = dict((ext, len("".join(render(doc)).encode())) for ext, render in document.RENDERERS)
    assert sizes["json"] < 300000 and sizes["html"] > 8192, sizes
    filler = fault_runs.fill(small_tmpfs, sizes["json"] + 8192)             # the JSON fits, the set does not
    with pytest.raises(document.ReportWriteError) as caught:
        document.write_all(doc, str(small_tmpfs), latest=True)
    assert "not written whole" in str(caught.value)
    assert sorted(os.listdir(str(small_tmpfs))) == ["filler"]    # no partial set, no temp file, no lock
    filler.unlink()
    paths = document.write_all(doc, str(small_tmpfs), latest=True)
    assert sorted(paths) == ["html", "json", "junit.xml", "md"]


def test_debris_of_killed_runs_removed_and_a_live_run_kept(tmp_path):
    dest = tmp_path
    dead = "metnos-audit-20261207T100000000001Z-deadbeef"
    (dest / ("." + dead + document.LOCK)).write_text("")                         # its lock, nobody holds it
    (dest / (dead + ".json")).write_text("{}")                               # an incomplete set
    (dest / ("." + dead + ".md.0123456789ab")).write_text("half")           # its temp file
    old = dest / ".metnos-audit-20261101T000000Z.html.00112233aabb"         # an older toolkit's temp file
    old.write_text("x" * 4096)
    os.utime(str(old), (time.time() - 7200, time.time() - 7200))
    fresh = dest / ".metnos-audit-20261207T120000Z.html.00112233aabc"       # too young to be judged: kept
    fresh.write_text("x")
    live = "metnos-audit-20261207T110000000001Z-0badc0de"                  # a run writing now: its lock held
    (dest / ("." + live + document.LOCK)).write_text("")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               "fd = os.open(sys.argv[1], os.O_RDONLY)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
                               "print('held', flush=True)\ntime.sleep(60)\n",
                               str(dest / ("." + live + document.LOCK))], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        (dest / (live + ".json")).write_text("{}")
        (dest / ("." + live + ".md.0123456789ab")).write_text("writing")
        (dest / "runs" / "broken").mkdir(parents=True)
        removed = document.remove_debris(str(dest))
    finally:
        holder.kill()
        holder.wait()
    assert sorted(removed) == sorted(["." + dead + document.LOCK, dead + ".json", "." + dead + ".md.0123456789ab",
                                      old.name, os.path.join("runs", "broken")]), removed
    assert sorted(os.listdir(str(dest))) == sorted(["." + live + document.LOCK, live + ".json",
                                                    "." + live + ".md.0123456789ab", fresh.name, "runs"])


def test_a_full_reports_folder_fails_the_gate_after_the_summary(tmp_path, small_tmpfs):
    """The playbook on a full reports folder: the fleet summary printed, the gate failed with the write error,
    nothing of the set kept; the next run (space freed, a killed run's debris planted) writes and says what it
    removed."""
    inv = fault_runs.inventory(tmp_path / "hosts.yml", ["alias-a", "alias-b"])
    filler = fault_runs.fill(small_tmpfs, 0)
    run = fault_runs.start_audit(inv, str(small_tmpfs))
    out, err = run.communicate(timeout=600)
    assert run.returncode != 0, out[-3000:]
    assert "2 hosts: " in out and "cannot write the reports to %s" % small_tmpfs in out, out[-3000:] + err[-2000:]
    assert sorted(os.listdir(str(small_tmpfs))) == ["filler"]
    filler.unlink()
    dead = "metnos-audit-20261207T100000000001Z-deadbeef"
    (small_tmpfs / ("." + dead + document.LOCK)).write_text("")
    (small_tmpfs / (dead + ".md")).write_text("half")
    run = fault_runs.start_audit(inv, str(small_tmpfs))
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
        document.write_all(report_text.build({"a": {}}), str(dest), latest=True)
    assert "is not a folder (it is a file)" in str(caught.value) and str(dest) in str(caught.value)
    link = tmp_path / "link"
    link.symlink_to(dest)
    with pytest.raises(NotADirectoryError) as caught:
        document.write_all(report_text.build({"a": {}}), str(link))
    assert "is not a folder (it is a link)" in str(caught.value)
    assert sorted(os.listdir(str(tmp_path))) == ["link", "reports"] and dest.read_text() == "an admin's file"


def test_a_lost_apply_is_healed_by_the_rerun(tmp_path):
    holder = subprocess.Popen(["unshare", "--user", "--map-root-user", "sleep", "600"])
    try:
        heal_run(holder, tmp_path)
    finally:
        holder.kill()
        holder.wait()


# (the task ansible-playbook has started when it is killed, whether the rerun must apply the sysctl)
KILL_POINTS = [
    ("Write the sysctl drop-in that enables unprivileged user namespaces", True),     # the file being written
    ("Read the user-namespace sysctls the kernel holds now", True),                   # written, not applied
    ("Read the sysctls again", False),                                                # applied
]


@pytest.mark.parametrize("task, lost", KILL_POINTS, ids=["during-write", "before-apply", "after-apply"])
def test_a_run_killed_at_each_step_is_healed_by_the_rerun(tmp_path, task, lost):
    """ansible-playbook SIGKILLed (the whole run, as the OOM killer or a stopped container would) when
    its output shows it started ``task``, its workers with it (helpers.fault_runs.kill_run). The
    rerun applies what the kill lost, says so ("healed: the kernel held ..."), and leaves the drop-in whole; the
    run after it changes nothing. Canary: at the kill the kernel still holds the old value where the apply was
    lost. Mutation: the apply task's ``when`` on the drop-in's change (what the handler did) leaves the kernel's
    value old after the rerun and this test fails."""
    holder = subprocess.Popen(["unshare", "--user", "--map-root-user", "sleep", "600"])
    try:
        time.sleep(0.2)
        before, wanted = live(holder), 15000
        assert before != wanted
        play = tmp_path / "play.yml"
        play.write_text(fault_runs.SYSCTL_PLAY)
        drop_in = tmp_path / "sysctl.d" / "99-zz-metnos-bwrap.conf"
        drop_in.parent.mkdir()
        playbook = [ansible_tool("ansible-playbook"), str(play), "-e", "bwrap_host_sysctl_remediation=true",
                    "-e", "bwrap_host_sysctl_file=%s" % drop_in, "-e", "bwrap_host_max_user_namespaces=%d" % wanted]
        out = tmp_path / "killed.out"
        with open(str(out), "w") as handle:
            proc = subprocess.Popen(["nsenter", "--user", "--target", str(holder.pid)] + playbook, stdout=handle,
                                    stderr=subprocess.STDOUT, cwd=ROOT, env=ansible_env(), start_new_session=True)
        try:
            fault_runs.wait_for(out, ["TASK [metnos.sandbox.bwrap_host : %s" % task], proc)
        finally:
            fault_runs.kill_run(proc, str(drop_in))
        assert (live(holder) == before) is lost, out.read_text()[-2000:]     # canary: where the apply was lost
        rerun = inside(holder, *playbook)
        assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-2000:]
        assert live(holder) == wanted, rerun.stdout[-3000:]
        said = "healed: the kernel held user.max_user_namespaces=%d (wanted %d)" % (before, wanted)
        assert (said in rerun.stdout) is lost, rerun.stdout[-3000:]
        assert drop_in.read_text().count("user.max_user_namespaces = %d" % wanted) == 1
        assert sorted(os.listdir(str(drop_in.parent))) == [drop_in.name]     # no temp file of the kill left
        third = inside(holder, *playbook)
        assert third.returncode == 0 and changed(third.stdout) == 0, third.stdout[-3000:]
    finally:
        holder.kill()
        holder.wait()


def test_site_killed_while_rendering_profiles_is_healed_by_the_rerun(tmp_path):
    """playbooks/site.yml on this machine (localhost, as tests/integration/test_site.py runs it: real bwrap, the
    example manifests) SIGKILLed while its render loop runs (after three profiles of the loop were reported), its
    workers with it (a worker runs the whole loop alone: helpers.fault_runs.kill_run). Then what a write killed
    between its temp file and the rename leaves (a temp file of read_notes' .json, older than the run) is planted
    beside the pairs. The rerun renders every profile, removes that debris and says so naming the executor, and
    leaves every pair whole and no temp file; the run after has nothing left to heal (not "changed=0": a third
    run on this shared machine was seen rendering system_status's profile again, not studied). Canary: the kill
    came before the loop ended (fewer than the nine pairs on disk). Mutation: store.write without the debris it
    removed in ``healed`` fails this test."""
    profiles = tmp_path / "profiles"
    out = tmp_path / "killed.out"
    with open(str(out), "w") as handle:
        proc = subprocess.Popen(fault_runs.site_command(profiles), stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT,
                                env=ansible_env(), start_new_session=True)
    try:
        fault_runs.wait_for(out, ["TASK [metnos.sandbox.metnos_sandbox : Render the bwrap profile"], proc, seconds=300)
        end = time.monotonic() + 120
        while out.read_text().split("Render the bwrap profile")[-1].count("(item=") < 3 and time.monotonic() < end:
            time.sleep(0.05)
    finally:
        fault_runs.kill_run(proc, str(profiles))
    pairs = glob.glob(str(profiles / "*.json"))
    assert len(pairs) < 9, (pairs, out.read_text()[-2000:])                   # canary: killed inside the loop
    debris = profiles / ".read_notes.json.0123456789ab"
    debris.write_text('{"half": ')
    os.utime(str(debris), (time.time() - 60, time.time() - 60))
    rerun = subprocess.run(fault_runs.site_command(profiles), capture_output=True, text=True, cwd=ROOT,
                           env=ansible_env(), timeout=900)
    assert rerun.returncode == 0, rerun.stdout[-4000:] + rerun.stderr[-2000:]
    assert "profiles: 9 wrapped" in rerun.stdout, rerun.stdout[-4000:]
    assert ": removed what an interrupted write left: %s" % debris in rerun.stdout, rerun.stdout[-4000:]
    names = os.listdir(str(profiles))
    assert not [name for name in names if name.startswith(".")], names
    assert len([name for name in names if name.endswith(".json")]) == 9, names
    for name in names:
        if name.endswith(".json"):
            assert store.pair_problem(str(profiles), name[:-5]) is None, name
    third = subprocess.run(fault_runs.site_command(profiles), capture_output=True, text=True, cwd=ROOT,
                           env=ansible_env(), timeout=900)
    assert third.returncode == 0, third.stdout[-4000:]
    assert "removed what an interrupted write left" not in third.stdout, third.stdout[-4000:]   # healed once
    assert "re-rendered the mismatched pair" not in third.stdout, third.stdout[-4000:]


def heal_run(holder, tmp_path):
    time.sleep(0.2)
    before = live(holder)
    wanted = 15000
    assert before != wanted
    play = tmp_path / "play.yml"
    play.write_text(fault_runs.SYSCTL_PLAY)
    drop_in = tmp_path / "sysctl.d" / "99-zz-metnos-bwrap.conf"
    drop_in.parent.mkdir()
    backup = drop_in.parent / (drop_in.name + ".4242.2026-12-01@10:00:00~")     # what backup: true used to leave
    backup.write_text("user.max_user_namespaces = 1\n")
    admins = drop_in.parent / (drop_in.name + ".orig~")                       # not the role's: kept
    admins.write_text("")
    playbook = [ansible_tool("ansible-playbook"), str(play), "-e", "bwrap_host_sysctl_remediation=true",
                "-e", "bwrap_host_sysctl_file=%s" % drop_in, "-e", "bwrap_host_max_user_namespaces=%d" % wanted]
    first = inside(holder, *playbook)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert live(holder) == wanted                                       # applied by the first run
    assert "user.max_user_namespaces = %d" % wanted in drop_in.read_text()
    set_live(holder, before)                                            # the apply a killed run lost
    assert live(holder) == before                                       # canary: the kernel holds the old value
    second = inside(holder, *playbook)
    assert second.returncode == 0, second.stdout[-3000:]
    assert live(holder) == wanted, second.stdout[-3000:]                # healed although the file did not change
    assert "healed: the kernel held user.max_user_namespaces=%d (wanted %d)" % (before, wanted) in second.stdout
    third = inside(holder, *playbook)
    assert third.returncode == 0 and changed(third.stdout) == 0, third.stdout[-3000:]
    assert sorted(os.listdir(str(drop_in.parent))) == [drop_in.name, admins.name]   # no backup piled up or left


shipped = stored_profiles.shipped      # the launcher's fixtures, defined once in tests/helpers/stored_profiles.py
stored = stored_profiles.stored


@pytest.mark.rule("R-SCOPE-3")
def test_a_profile_killed_between_its_two_files_is_refused_reported_and_healed(stored, shipped):
    """A real SIGKILL at the second rename of store.write (the .args of a wider render written, the .json still
    the old one): the launcher refuses it (profile_pair_mismatch; before, it ran the old .json's argv) and the
    audit's reader says so (store.pair_problem, which profile_drift turns into the finding). The next render
    writes the pair again, removes the killed write's temp file, and says both, naming the executor. Canary:
    before the kill both say the pair is one. Mutation: read_stored() without the digest comparison runs the
    half-written profile and this test fails (run when the test was in test_stored_profile_exec.py); without
    the mismatch message in store.write's healed it fails too."""
    assert store.pair_problem(stored + "/profiles", "ex") is None
    wider = stored_profiles.wider_result(stored)
    killed = subprocess.run([sys.executable, KILLER, stored + "/profiles", stored + "/wider.json"],
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with open(stored + "/profiles/ex.args") as handle:
        assert handle.read().splitlines() == wider["argv"]          # the .args is the new one, the .json the old
    problem = store.pair_problem(stored + "/profiles", "ex")
    assert problem and "ex.args" in problem, problem
    debris = [stored + "/profiles/" + name for name in os.listdir(stored + "/profiles") if name.startswith(".")]
    assert len(debris) == 1 and ".ex.json." in debris[0], debris       # the killed write's temp .json
    os.utime(debris[0], (time.time() - 60, time.time() - 60))          # older than the next run, as it would be
    (entry,) = stored_profiles.audit_states(stored, stored + "/profiles", ["fs:write:%s/data" % stored])
    assert entry["state"] == "half_written", entry          # was in_sync: the .args is today's render
    (finding,) = profile_states.findings([entry])
    assert finding["code"] == "profile_pair_mismatch" and "ex.json" in finding["message"], finding
    for user in (None, "nobody"):
        proc = run_stored(stored, user, launcher=shipped)
        assert proc.returncode == 1 and "profile_pair_mismatch" in proc.stderr, (user, proc.stderr)
        assert not os.path.exists(stored + "/data/w/out")
    again = render(stored, host_of(stored), run_as="nobody")         # the next run: the narrow grant again
    assert again["_rc"] == 0 and again["changed"], again
    assert again["healed"][0] == "ex: re-rendered the mismatched pair (%s)" % problem, again.get("healed")
    assert again["healed"][1:] == ["ex: removed what an interrupted write left: %s" % name for name in debris]
    assert not [name for name in os.listdir(stored + "/profiles") if name.startswith(".")]
    assert store.pair_problem(stored + "/profiles", "ex") is None
    proc = run_stored(stored, "nobody", launcher=shipped)
    assert proc.returncode == 0 and open(stored + "/data/w/out").read() == "ran", proc.stderr
    quiet = render(stored, host_of(stored), run_as="nobody")         # healed once: the run after says nothing
    assert not quiet["changed"] and "healed" not in quiet, quiet


@pytest.fixture
def small_profile_folder(stored):
    """A real 2 MB tmpfs mounted as the profile folder, the fixture's pair rendered into it first."""
    folder = stored + "/small"
    os.makedirs(folder)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", folder], check=True)
    try:
        first = render(stored, host_of(stored), run_as="nobody", dest=folder)
        assert first["_rc"] == 0 and first["changed"], first
        yield folder
    finally:
        subprocess.run(["umount", folder], check=True)


def test_a_full_profile_folder_names_it_and_keeps_the_previous_pair(stored, shipped, small_profile_folder):
    """Executors rendered into a 2 MB tmpfs until it is full (pairs as the role writes them, with store.write),
    then ``ex`` rendered wider by the module with room for its new .args and not its .json: each failing render
    ends with an error naming the folder, leaves no half-written pair and no temp file, and the launcher still
    runs ``ex``'s previous complete pair. Canary: with room, the same render does replace the pair. Mutation:
    store.write without _put_back leaves the .args new and the .json old (profile_pair_mismatch) and this test
    fails."""
    folder = small_profile_folder
    before = dict((suffix, open(folder + "/ex" + suffix).read()) for suffix in (".args", ".json"))
    wider = stored_profiles.wider_result(stored)
    args_text, json_text, _doc = store.documents(wider)
    assert fault_runs.pages(json_text) > fault_runs.pages(args_text), (len(args_text), len(json_text))
    written = 0
    with pytest.raises(store.StoreError) as caught:
        for number in range(2000):
            store.write(folder, dict(wider, executor="other-%04d" % number))
            written += 1
    assert 50 < written < 2000, written                            # many profiles rendered into it
    assert "the profile folder %s is full (No space left on device)" % folder in str(caught.value), caught.value
    assert "nothing half-written" in str(caught.value)
    names = sorted(os.listdir(folder))
    assert not [name for name in names if name.startswith(".")], names      # no temp file left
    assert not os.path.exists("%s/other-%04d.args" % (folder, written))      # the failed pair: nothing of it
    for name in names:                                                        # the pairs that fit are whole
        if name.endswith(".json"):
            assert store.pair_problem(folder, name[:-5]) is None, name
    for number in range(10):                                        # room for ex's new .args and not its .json
        for suffix in (".args", ".json"):
            os.unlink("%s/other-%04d%s" % (folder, number, suffix))
    stat = os.statvfs(folder)
    with open(folder + "/filler", "wb") as handle:
        handle.write(b"\0" * ((stat.f_bavail - fault_runs.pages(args_text)) * stat.f_frsize))
    assert os.statvfs(folder).f_bavail == fault_runs.pages(args_text), os.statvfs(folder).f_bavail
    res = render(stored, host_of(stored), run_as="nobody", capabilities=["fs:write:%s/data" % stored], dest=folder)
    assert res["_rc"] != 0 and res.get("code") == "dest_unwritable", res
    assert "cannot write %s/ex.json: the profile folder %s is full" % (folder, folder) in res["msg"], res["msg"]
    assert "nothing half-written, the previous pair (if any) is still the one used" in res["msg"], res["msg"]
    assert dict((suffix, open(folder + "/ex" + suffix).read()) for suffix in (".args", ".json")) == before
    assert not [name for name in os.listdir(folder) if name.startswith(".")]
    proc = run_stored(stored, "nobody", launcher=shipped, profile=folder + "/ex.json")
    assert proc.returncode == 0 and open(stored + "/data/w/out").read() == "ran", proc.stderr
    os.unlink(folder + "/filler")
    res = render(stored, host_of(stored), run_as="nobody", capabilities=["fs:write:%s/data" % stored], dest=folder)
    assert res["_rc"] == 0 and res["changed"], res                 # canary: with room, the wider pair is written
    assert open(folder + "/ex.args").read() == args_text and store.pair_problem(folder, "ex") is None


@pytest.fixture(scope="module")
def editor():
    with real_user.made("mtnf") as user:
        yield user


@pytest.fixture
def manifest_folder(editor, tmp_path):
    """A root 0755 folder with the editor's own manifest folder in it (root reads what someone else controls)."""
    root = tmp_path / "place"
    root.mkdir()
    os.chmod(str(root), 0o755)
    os.chmod(str(tmp_path), 0o755)
    folder = root / "manifests"
    folder.mkdir()
    os.chown(str(folder), editor.uid, editor.gid)
    return str(root), str(folder)


def test_a_manifest_rewritten_during_renders_is_never_rendered_half_written(manifest_folder):
    """Mutation (run when this test was in tests/integration/test_safe_reads.py): safe_read without the
    before/after fstat comparison writes profiles of truncated text and this test fails."""
    root, folder = manifest_folder
    path = os.path.join(folder, "ex.yml")
    texts = rewritten_manifest.versions(root)
    expected = {}
    for text in texts:        # the render of each complete version, read while nothing writes
        with open(path, "wb") as handle:
            handle.write(text)
        time.sleep(safe_read.SETTLE_SECONDS * 2)
        prof = rewritten_manifest.render(path, root)
        assert prof["decision"] == "wrapped", prof["diagnostics"]
        expected[json.dumps(prof["argv"])] = text
    dest = os.path.join(root, "profiles")
    os.mkdir(dest, 0o700)
    stop = multiprocessing.Event()       # the editor is another process, as it would be
    writer = multiprocessing.Process(target=rewritten_manifest.rewrite_in_place, args=(path, texts, stop))
    writer.start()
    seen = {"rendered": 0, "changed": 0}
    try:
        for _ in range(150):
            prof = rewritten_manifest.render(path, root)
            if prof["decision"] == "refused":
                error = [d for d in prof["diagnostics"] if d["severity"] == "error"][0]
                assert error["code"] == "manifest_changed_while_read", prof["diagnostics"]
                assert "render again" in error["message"], error["message"]
                seen["changed"] += 1
                continue
            store.write(dest, prof)
            with open(os.path.join(dest, "ex.args")) as handle:
                written = handle.read().splitlines()
            assert json.dumps(written) in expected, written       # the render of a complete version, nothing else
            seen["rendered"] += 1
    finally:
        stop.set()
        writer.join()
    assert seen["changed"] > 0 and seen["rendered"] > 0, seen     # the race was met, and renders still happen
    time.sleep(safe_read.SETTLE_SECONDS * 2)
    prof = rewritten_manifest.render(path, root)                     # the next render, the file quiet: rendered
    assert prof["decision"] == "wrapped" and json.dumps(prof["argv"]) in expected, prof["diagnostics"]
    store.write(dest, prof)
    assert store.pair_problem(dest, "ex") is None
