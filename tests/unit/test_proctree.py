"""Everything the probe's bwrap starts, accounted for (issue 20): the tree's judgement offline (deny by
default), and the direct context's child subreaper for real - a double-forked, setsid'd process with its
descriptors closed stays in the reaper's tree, an orphan that exits on its own is written down while it is
a zombie, the tree is killed whole, and a started process that dies leaving only its own kind behind ends
the run at once. (Plain sh and sleep here; the bwrap look-alikes are the probe matrix's rows.)"""
import os
import subprocess
import sys
import time
import uuid

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import procfs
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import proc_covers, proctree, reaper
from helpers import procs

NS = {"user": "user:[1]", "mnt": "mnt:[2]", "net": "net:[5]"}
BOX = {"user": "user:[11]", "mnt": "mnt:[12]", "net": "net:[15]"}
BWRAP = (254, 7)
PAYLOAD = ["/usr/bin/python3", "-I", "-S", "-c", "CODE", '{"token": "abc"}']


def exp(**kw):
    base = dict(pids={10, 11, 12}, bwrap_ids={BWRAP}, marker=proctree.marker("abc"), payload_argv=PAYLOAD,
                payload_ns=dict(BOX), reported=True, parent_ns=dict(NS))
    base.update(kw)
    return proctree.Expected(**base)


def seen(pid, phases, comm="sleep", exe=(254, 99), argv=("sleep", "60"), ns=NS):
    return [pid, [{"pid": pid, "comm": comm, "exe_id": list(exe), "argv": list(argv), "ns": dict(ns)}], list(phases)]


def kinds(report, **kw):
    return [(f["kind"], f["wording"]) for f in proctree.judge(report, exp(**kw))]


def test_only_what_the_probe_started_and_bwraps_own_pass():
    report = {"seen": [seen(10, ["during"], "bwrap", BWRAP), seen(12, ["checked"], "mp-abc", (254, 11), ns=BOX),
                       seen(13, ["during"], "bwrap", BWRAP)]}       # a setup helper of bwrap, gone by the check
    assert kinds(report) == []


def test_anything_else_is_unaccounted_beside_or_left():
    report = {"seen": [seen(20, ["checked"]), seen(21, ["after"]), seen(22, ["checked"], "bwrap", BWRAP)]}
    assert kinds(report) == [("unaccounted", "beside"), ("unaccounted", "left"), ("unaccounted", "beside")]


def test_a_copy_of_the_payload_is_found_by_its_marker_or_its_arguments():
    report = {"seen": [seen(30, ["checked"], "mp-abc", (254, 11), ("x",)),
                       seen(31, ["during"], "python3", (254, 11), ["metnos-copy"] + PAYLOAD[1:])]}
    found = proctree.judge(report, exp())
    assert [(f["kind"], f["outside"]) for f in found] == [("payload_outside", ["mnt", "net", "user"])] * 2


def test_without_a_verified_payload_only_an_unsandboxed_copy_counts():
    report = {"seen": [seen(30, ["checked"], "mp-abc", ns=BOX), seen(31, ["checked"], "mp-abc", ns=NS)]}
    assert kinds(report, payload_ns={}, reported=False) == [("payload_outside", "seen")]


def test_orphans_before_and_a_lost_reaper_are_findings():
    report = {"seen": [], "reaped": [{"reaped": 40, "comm": "mp-abc"}, {"reaped": 41, "comm": "sh"},
                                     {"reaped": 10, "comm": "bwrap"}],
              "before": [{"pid": 42, "comm": "sleep"}], "reaper": {"pid": 9, "subreaper": False}}
    assert kinds(report) == [("before", "before"), ("payload_outside", "orphaned"), ("unaccounted", "orphaned"),
                             ("unaccounted", "reaper")]
    assert kinds({"seen": [], "unreadable": True}) == [("unaccounted", "unreadable")]


def test_a_dead_bwraps_stuck_child_belongs_to_its_setup_failure():
    report = {"seen": [seen(13, ["checked", "after"], "bwrap", BWRAP)]}
    assert kinds(report, reported=False) == []
    assert kinds(report, reported=True) == [("unaccounted", "left")]


def _marker():
    return "301.%012d" % (uuid.uuid4().int % 10 ** 12)


def test_a_detached_process_stays_in_the_reapers_tree_and_is_killed():
    """sh double-forks a sleep that calls setsid and closes its descriptors, then exits: the run still ends a
    moment later (nothing holds the pipes), the sleep was seen in the tree and after the started process
    exited, and the tree was killed - nothing is left on the host."""
    marker = _marker()
    script = "(setsid sh -c 'exec sleep %s' </dev/null >/dev/null 2>&1 &) ; echo started" % marker
    res = reaper.run_reaped(["sh", "-c", script], timeout=30)
    assert res["rc"] == 0 and res["stdout"] == "started\n" and res["duration"] < 10
    sleeps = [(pid, phases) for pid, history, phases in res["tree"]["seen"]
              if any(o.get("argv") == ["sleep", marker] for o in history)]
    assert sleeps and "after" in sleeps[0][1], res["tree"]
    assert res["tree"]["reaper"]["subreaper"] is True
    assert procs.left_after(marker) == []


def test_a_tree_the_reaper_saw_empty_is_not_searched_again_once_it_exited(monkeypatch):
    """The reaper reports its tree empty and exits: no kill pass reads every process for descendants of a pid
    that may already be another process's. A tree left behind (a detached sleep) is still killed."""
    kills = []
    real = reaper.kill_tree
    monkeypatch.setattr(reaper, "kill_tree", lambda *a, **k: kills.append(a) or real(*a, **k))
    res = reaper.run_reaped(["sh", "-c", "echo done"], timeout=30)
    assert res["rc"] == 0 and res["stdout"] == "done\n" and kills == []
    marker = _marker()
    res = reaper.run_reaped(["sh", "-c", "(setsid sh -c 'exec sleep %s' </dev/null >/dev/null 2>&1 &)" % marker],
                            timeout=30)
    assert len(kills) == 1 and procs.left_after(marker) == []


def test_an_orphan_that_exits_on_its_own_is_written_down_as_a_zombie():
    res = reaper.run_reaped(["sh", "-c", "(setsid sh -c 'exec sleep 0.3' &) ; sleep 1"], timeout=30)
    orphans = [r for r in res["tree"]["reaped"] if r.get("comm") == "sleep"]
    assert orphans and orphans[0]["uid"] == os.getuid(), res["tree"]["reaped"]


def test_a_dead_start_leaving_only_its_own_kind_ends_at_once():
    """The started process exits without the handshake, leaving a child that executes the same file (a setuid
    bwrap's stuck child): nothing left could report, so the run ends within LINGER, not at the timeout."""
    marker = _marker()
    sh = os.path.realpath("/bin/sh")
    st = os.stat(sh)
    res = reaper.run_reaped([sh, "-c", "(%s -c 'read line # %s' &) ; exit 1" % (sh, marker)], timeout=30,
                                  watching=reaper.Watching(watch=lambda data, pid: False,
                                                                 bwrap_ids={(st.st_dev, st.st_ino)}))
    assert res["timed_out"] is False and res["duration"] < 5 and res["rc"] == 1
    assert procs.left_after(marker) == []


def test_the_forked_reaper_passes_on_the_runs_descriptors_and_nothing_else_of_the_probes():
    """The reaper is a fork of the probe's process: bwrap's side sees its stdin, stdout, stderr, the status pipe and
    the descriptors it must keep - none of the probe's own (here an open file and a pipe of this process, one of
    them inheritable), and the reaper itself holds none of them either (a mutation that skips
    ``_close_all_but`` fails here). The run's environment is the one given, PATH lookup included."""
    planted = open("/dev/null", "rb")               # pylint: disable=consider-using-with
    pipe_r, pipe_w = os.pipe()
    os.set_inheritable(pipe_w, True)
    kept_r, kept_w = os.pipe()
    seen_by = {}

    def watch(data, pid):
        if not seen_by and "reaper" in data.get("control", b"").decode():
            reaper_pid = [r for r in reaper.control_records(data["control"]) if "reaper" in r][0]["reaper"]
            seen_by["reaper"] = sorted(int(fd) for fd in os.listdir("/proc/%d/fd" % reaper_pid))
        return False
    try:
        res = reaper.run_reaped(["sh", "-c", 'ls /proc/self/fd; echo "env=$METNOS_PROBE_ENV"; echo "fd=$1"', "sh",
                                       str(kept_w)], env={"PATH": "/usr/bin:/bin", "METNOS_PROBE_ENV": "given"},
                                      timeout=30, keep_fds=[kept_w], watching=reaper.Watching(watch=watch))
        lines = res["stdout"].split()
        fds = sorted(int(x) for x in lines if x.isdigit())
        assert res["rc"] == 0 and "env=given" in lines, res
        status_fd = fds[3] if len(fds) > 3 else None
        assert kept_w in fds and planted.fileno() not in fds and pipe_w not in fds and pipe_r not in fds, (fds, res)
        assert set(fds) - {0, 1, 2, kept_w, status_fd} <= {max(fds)}, fds       # ls's own directory descriptor
        held = seen_by.get("reaper")
        assert held is not None and planted.fileno() not in held and pipe_w not in held, seen_by
    finally:
        planted.close()
        for fd in (pipe_r, pipe_w, kept_r, kept_w):
            os.close(fd)


def test_the_forked_reaper_runs_bwrap_as_the_user_and_refuses_a_missing_folder():
    """As another user: the ids taken with no supplementary group; a cwd that does not exist is refused before
    anything is forked, as Popen refused it."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run as another user")
    res = reaper.run_reaped(["sh", "-c", "id -u; id -g; id -G"], user={"uid": 65534, "gid": 65534}, timeout=30)
    assert res["rc"] == 0 and res["stdout"].split() == ["65534", "65534", "65534"], res
    res = reaper.run_reaped(["sh", "-c", "true"], cwd="/nonexistent-metnos-folder", timeout=30)
    assert res["rc"] == 127 and res["setup_failed"] is True and res["pid"] is None, res
    res = reaper.run_reaped(["metnos-no-such-program"], timeout=30)
    assert res["rc"] == 127 and "bwrap: execvp metnos-no-such-program" in res["stderr"], res


def test_a_reaper_that_cannot_be_forked_is_a_setup_failure_that_leaks_no_descriptor(monkeypatch):
    """fork(2) failing (EAGAIN: a host at its process limit; mocked here, root is not held to RLIMIT_NPROC): the run
    is refused like a bwrap that cannot be executed, and every pipe made for it is closed."""
    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")
    before = sorted(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(reaper.os, "fork", no_fork)
    res = reaper.run_reaped(["sh", "-c", "true"], timeout=30,
                                  watching=reaper.Watching(watch=lambda data, pid: False))
    assert res["rc"] == 127 and res["setup_failed"] is True and "Resource temporarily unavailable" in res["stderr"]
    assert sorted(os.listdir("/proc/self/fd")) == before


def test_a_kill_before_the_reapers_session_exists_still_kills_it():
    """The forked reaper has no session of its own until its first step (setsid): a kill that comes first finds no
    process group, so the reaper's own pid is killed (a child of this process, not reaped yet: it cannot be another
    process). Here a forked child that never calls setsid stands for it (removing that kill leaves it running)."""
    pid = os.fork()
    if pid == 0:        # pragma: no cover
        time.sleep(30)
        os._exit(0)
    proc = reaper.Forked(pid, None, open(os.devnull, "rb"), open(os.devnull, "rb"))
    try:
        reaper.Reaped(proc, proctree.Ledger(), set()).kill()
        assert proc.wait(timeout=5) == -9
    finally:
        proc.stdout.close()
        proc.stderr.close()
        if proc.returncode is None:
            os.kill(pid, 9)
            proc.wait()


def test_the_reaper_imports_nothing_from_the_runs_working_directory(tmp_path):
    """The run's cwd may be a folder the service's user writes: a ``_ctypes.py`` there is never imported, even by
    an interpreter with the current folder on sys.path (``python -c``); the reaper's C calls are made before any
    fork (a mutation that builds them in the reaper, after its chdir, runs the planted module as root)."""
    run_dir, clean = tmp_path / "run", tmp_path / "clean"
    run_dir.mkdir()
    clean.mkdir()
    marker = tmp_path / "imported"
    (run_dir / "_ctypes.py").write_text("open(%r, 'w').write('x')\nraise ImportError('planted')\n" % str(marker))
    code = ("import sys; from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import "
            "reaper as RP; res = RP.run_reaped(['sh', '-c', 'echo ok'], cwd=sys.argv[1], timeout=30); "
            "print(res['rc'], res['stdout'].strip())")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", code, str(run_dir)], cwd=str(clean), capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, PYTHONPATH=os.path.join(root, "collections")))
    assert proc.returncode == 0 and proc.stdout.split() == ["0", "ok"], (proc.stdout, proc.stderr)
    assert not marker.exists()


def test_the_reaper_finds_a_program_on_path_only_and_says_why_it_could_not_start(tmp_path):
    """execvp's rules: a bare name found on no PATH entry is not run from the working directory; an argv the kernel
    cannot take (a NUL byte) ends as a setup failure that says why, never back in the probe's code."""
    fake = tmp_path / "metnos-fake-bwrap"
    fake.write_text("#!/bin/sh\necho ran\n")
    fake.chmod(0o755)
    res = reaper.run_reaped(["metnos-fake-bwrap"], cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin"}, timeout=30)
    assert res["rc"] == 127 and res["stdout"] == "", res
    assert "bwrap: execvp metnos-fake-bwrap: No such file or directory" in res["stderr"], res
    res = reaper.run_reaped(["sh", "-c", "echo a\0b"], timeout=30)
    assert res["rc"] == 127 and res["setup_failed"] is True and "null" in res["stderr"], res


def test_an_orphan_with_a_name_that_is_not_utf8_is_still_written_down():
    """A process may set any bytes as its name: the orphan's record keeps its uid, parent and cgroup, and the name
    with the bytes replaced (before, one undecodable name blanked the whole record)."""
    script = "(setsid sh -c 'printf \"\\377mp\" > /proc/$$/comm; sleep 0.3; true' &) ; sleep 1"
    res = reaper.run_reaped(["sh", "-c", script], timeout=30)
    orphans = [r for r in res["tree"]["reaped"] if r.get("comm") == "\ufffdmp"]
    assert orphans and orphans[0]["uid"] == os.getuid() and "cgroup" in orphans[0], res["tree"]["reaped"]


def test_cgroup_of_this_process_is_found():
    dirs = proctree.unit_cgroup_dirs(os.getpid())
    if not dirs:
        pytest.skip("no cgroup v2 or name=systemd hierarchy mounted here")
    assert os.getpid() in (proctree.cgroup_pids(dirs[0]) or [])


def test_proc_covers_are_what_access_says_for_the_caller():
    """The question bwrap asks (access(W_OK)), asked as root and as nobody, against what bwrap did (measured
    with 0.8.0 and 0.12.0: root gets read-only covers of /proc/irq and /proc/bus, nobody none)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to ask as another user")
    root = proc_covers.expected(0, 0)
    assert root["covers"] == [n for n in proc_covers.COVER_NAMES if os.access("/proc/" + n, os.W_OK)]
    assert "sys" not in root["covers"]               # procfs refuses write access to /proc/sys itself
    assert proc_covers.expected(65534, 65534)["covers"] == []


def test_proc_covers_judged_from_the_payloads_mount_table():
    proc = {"id": "1", "parent": "0", "dev": "0:21", "root": "/", "mountpoint": "/proc", "opts": ["rw"],
            "fstype": "proc", "source": "proc", "superopts": ["rw"]}
    cover = dict(proc, id="2", parent="1", root="/irq", mountpoint="/proc/irq", opts=["ro"])
    exp_root = {"asked": {"sys": "not writable", "irq": "writable"}, "covers": ["irq"]}
    assert proc_covers.judge([proc, cover], "/proc", proc, exp_root, [proc]) == []
    assert "no read-only cover" in proc_covers.judge([proc], "/proc", proc, exp_root, [proc])[0]
    rw = dict(cover, opts=["rw"])
    assert "not bwrap's read-only cover" in proc_covers.judge([proc, rw], "/proc", proc, exp_root, [proc])[0]
    exp_nobody = {"asked": {"sys": "not writable", "irq": "not writable"}, "covers": []}
    assert "does not make" in proc_covers.judge([proc, rw], "/proc", proc, exp_nobody, [proc])[0]
    assert proc_covers.judge([proc, rw], "/proc", proc, exp_nobody, [proc,
                                                                     rw]) == []     # the parent's own, bound along
    assert "not proven" in proc_covers.judge([proc], "/proc", proc, None, [proc])[0]
    assert procfs.is_error("error:x")


def test_marker_fits_comm():
    assert len(proctree.marker("0123456789ab")) <= 15 and proctree.marker("abc") == "mp-abc"
    time.sleep(0)


def test_the_beacon_names_who_reaches_it_and_not_a_sandbox_with_its_own_network():
    """A process in the probe's network namespace that reaches the beacon is held and written down (its pid
    from SO_PEERCRED, then its details); the same code in a new network namespace cannot reach it."""
    import subprocess
    import sys
    beacon = proctree.Beacon("t0k")
    code = ("import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_STREAM)\n"
            "try:\n s.connect('\\0'+sys.argv[1]); print(s.recv(1).decode())\n"
            "except OSError as e: print('refused', e.errno)\n")
    try:
        child = subprocess.Popen([sys.executable, "-c", code, beacon.name], stdout=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while child.poll() is None and time.time() < deadline:     # the probe's pump serves it with each poll
            beacon.serve()
            time.sleep(0.05)
        near = subprocess.CompletedProcess(child.args, child.returncode, child.stdout.read(), "")
        child.stdout.close()
        if os.geteuid() == 0:
            far = subprocess.run(["unshare", "--net", sys.executable, "-c", code, beacon.name], capture_output=True,
                                 text=True, timeout=30)
            assert far.stdout.startswith("refused"), far
    finally:
        peers = beacon.close()
    assert near.stdout.strip() == "k"
    assert len(peers) == 1 and peers[0]["argv"][-1] == beacon.name and peers[0]["exe_id"], peers


def test_a_beacon_peer_that_is_not_the_verified_payload_is_a_copy_outside():
    peer = {"pid": 50, "comm": "python3", "exe_id": [254, 11], "argv": ["metnos-sync"], "ns": dict(NS)}
    assert kinds({"seen": [], "beacon": [peer]}) == [("payload_outside", "beacon")]
    assert kinds({"seen": [], "beacon": [dict(peer, pid=12)]}) == []     # the sandboxed payload (host network)


TREE = r"""
import subprocess, sys, threading, time
kids = []
started = threading.Event()
def from_a_thread():
    kids.append(subprocess.Popen(["sleep", "30"]))
    started.set()
    time.sleep(30)          # alive: its child stays on its own list (a dead thread's go to the main thread's)
worker = threading.Thread(target=from_a_thread, daemon=True)
worker.start()
started.wait()
kids.append(subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"]))
time.sleep(0.5)
print("ready", flush=True)
time.sleep(30)
"""


def test_the_walk_down_the_kernels_lists_finds_what_the_scan_of_every_parent_finds():
    """The periodic poll walks the kernel's lists of children (/proc/PID/task/TID/children) instead of asking
    every process of the host for its parent: on a real tree (a child started by a thread, which only that
    thread's list holds; a shell with two children of its own) both find the same processes."""
    import subprocess
    import sys
    root = subprocess.Popen([sys.executable, "-I", "-S", "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert root.stdout.readline() == "ready\n"
        scanned = proctree.descendants(root.pid)
        walked = proctree.descendants(root.pid, exhaustive=False)
        assert len(scanned) == 4 and walked == scanned, (scanned, walked)
    finally:
        reaper.kill_tree(root.pid, "/proc", include_root=True)
        root.wait()


def test_without_the_kernels_lists_the_walk_falls_back_to_every_parent(tmp_path):
    """A kernel built without CONFIG_PROC_CHILDREN has the task folders but no children files. That kernel
    cannot be booted here: a /proc made of files stands in for it (stat files, task folders, no lists).
    The walk then asks every process for its parent, as the exhaustive scan does."""
    def stat(pid, ppid):
        (tmp_path / str(pid) / "task" / str(pid)).mkdir(parents=True)
        (tmp_path / str(pid) / "stat").write_text("%d (x) S %d %s\n" % (pid, ppid, " ".join(["0"] * 40)))
    for pid, ppid in ((100, 1), (101, 100), (102, 101), (200, 1)):
        stat(pid, ppid)
    assert proctree.descendants(100, str(tmp_path),
                                exhaustive=False) == [101, 102] == proctree.descendants(100, str(tmp_path))
