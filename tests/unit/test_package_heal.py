"""What a killed package-manager run left, and its heal (host/package_heal.py; issue 52), with real files.

pacman cannot run here as a host (its real kill is tests/system/test_faults_packages.py's pacman case when its
image is there): the lock is planted as libalpm leaves it - a real /var/lib/pacman-like folder of root's, a db.lck
file made with O_EXCL - and held, or not, by a real live process with the file open (as libalpm holds it during a
transaction). dpkg's journal is planted as a killed dpkg leaves it (numbered files in an updates folder); dpkg's
real kill and heal are tests/system/test_faults_packages.py's. The dpkg-query answer is data here (a runner that
returns it), the only fake: this machine's package database is not touched.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import package_heal

HOLD = "import os, sys, time\nfd = os.open(sys.argv[1], os.O_WRONLY)\nprint('held', flush=True)\ntime.sleep(600)\n"


@pytest.fixture
def pacman_db(tmp_path):
    folder = tmp_path / "pacman"
    folder.mkdir(mode=0o755)
    os.chmod(str(folder), 0o755)
    lock = folder / "db.lck"
    os.close(os.open(str(lock), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o000))      # as libalpm makes it
    return {"pacman_lock": str(lock), "dpkg_updates": str(tmp_path / "updates"), "proc": "/proc"}


@pytest.fixture
def holder(pacman_db):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, pacman_db["pacman_lock"]], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()


def no_runner(argv):
    raise AssertionError("nothing is run for pacman: %s" % argv)


@pytest.mark.skipif(os.geteuid() != 0, reason="the lock is root's, as on a host")
def test_a_stale_pacman_lock_is_removed_and_said(pacman_db):
    """Canary: the lock is there and nothing holds it. Mutation (run): lock_holders() returning [] for every
    process makes test_a_held_lock_is_refused fail; stale_lock() without the folder check makes
    test_a_lock_root_must_not_touch_is_refused fail."""
    assert os.path.exists(pacman_db["pacman_lock"])
    assert package_heal.lock_holders(pacman_db["pacman_lock"]) == []
    left = package_heal.left_behind("pacman", no_runner, pacman_db)
    assert left == ["a stale pacman lock %s (no process holds it: a killed pacman left it)" % pacman_db["pacman_lock"]]
    assert os.path.exists(pacman_db["pacman_lock"])                              # asking changes nothing
    left, done = package_heal.heal("pacman", no_runner, pacman_db)
    assert done == ["removed the stale lock %s" % pacman_db["pacman_lock"]]
    assert not os.path.exists(pacman_db["pacman_lock"])
    assert package_heal.heal("pacman", no_runner, pacman_db) == ([], [])        # the next run: nothing


@pytest.mark.skipif(os.geteuid() != 0, reason="the lock is root's, as on a host")
def test_a_held_lock_is_refused(pacman_db, holder):
    """A live process with the lock open (a pacman running) is never robbed of it: refused, its pid named."""
    assert package_heal.lock_holders(pacman_db["pacman_lock"]) == [holder.pid]
    with pytest.raises(package_heal.HealError) as caught:
        package_heal.heal("pacman", no_runner, pacman_db)
    assert "held by pid %d" % holder.pid in str(caught.value)
    assert os.path.exists(pacman_db["pacman_lock"])
    holder.send_signal(signal.SIGKILL)                                  # the pacman killed: the lock is stale
    holder.wait()
    end = time.monotonic() + 10
    while package_heal.lock_holders(pacman_db["pacman_lock"]) and time.monotonic() < end:
        time.sleep(0.05)
    assert package_heal.heal("pacman", no_runner, pacman_db)[1] == ["removed the stale lock %s"
                                                                      % pacman_db["pacman_lock"]]


@pytest.mark.skipif(os.geteuid() != 0, reason="the lock is root's, as on a host")
@pytest.mark.parametrize("plant, words", [
    ("link", "is not root's regular file"),
    ("folder_writable", "in a folder only root can write"),
    ("fifo", "is not root's regular file"),
])
def test_a_lock_root_must_not_touch_is_refused(pacman_db, tmp_path, plant, words):
    lock = pacman_db["pacman_lock"]
    target = tmp_path / "elsewhere"
    target.write_text("someone's file")
    if plant == "link":
        os.unlink(lock)
        os.symlink(str(target), lock)
    elif plant == "fifo":
        os.unlink(lock)
        os.mkfifo(lock)
    else:
        os.chmod(os.path.dirname(lock), 0o777)
    with pytest.raises(package_heal.HealError) as caught:
        package_heal.heal("pacman", no_runner, pacman_db)
    assert words in str(caught.value) and "rm %s" % lock in str(caught.value)
    assert os.path.lexists(lock) and target.read_text() == "someone's file"


def test_no_lock_is_nothing(pacman_db):
    os.unlink(pacman_db["pacman_lock"])
    assert package_heal.left_behind("pacman", no_runner, pacman_db) == []


DPKG_STATES = [
    ("installed\tbash\n", []),
    ("installed\tbash\nunpacked\tbubblewrap\n", ["bubblewrap (unpacked)"]),
    ("half-configured\tbubblewrap\ntriggers-pending\tman-db\n", ["bubblewrap (half-configured)",
                                                                 "man-db (triggers-pending)"]),
    ("triggers-awaited\tlibc-bin:amd64\n", ["libc-bin:amd64 (triggers-awaited)"]),
    ("half-installed\tbubblewrap\n", []),            # reinstalled by apt, not finished by --configure -a
    ("config-files\tbubblewrap\nnot-installed\tfoo\n", []),
]


@pytest.mark.parametrize("stdout, unfinished", DPKG_STATES)
def test_dpkg_unfinished_states(stdout, unfinished):
    assert package_heal.dpkg_unfinished(stdout) == unfinished


def test_dpkg_journal_left_by_a_killed_dpkg_is_healed(tmp_path):
    """A journal planted as a killed dpkg leaves it (numbered entries, and dpkg's own tmp.i beside them); the
    heal runs dpkg --configure -a, which (here, the runner's answer) empties it."""
    updates = tmp_path / "updates"
    updates.mkdir()
    (updates / "0000").write_text("Package: bubblewrap\nStatus: install reinstreq half-installed\n")
    (updates / "tmp.i").write_text("#padding\n")
    paths = {"dpkg_updates": str(updates)}
    calls = []

    def runner(argv):
        calls.append(list(argv))
        if argv == package_heal.DPKG_HEAL:
            (updates / "0000").unlink()
            return 0, "", ""
        return 0, "installed\tbash\n", ""

    assert package_heal.dpkg_journal(str(updates)) == ["0000"]
    left, done = package_heal.heal("apt", runner, paths)
    assert left == ["dpkg's journal of an interrupted run (1 entry in %s)" % updates]
    assert done == ["ran dpkg --configure -a"]
    assert calls == [package_heal.DPKG_STATES, package_heal.DPKG_HEAL, package_heal.DPKG_STATES]
    assert package_heal.heal("apt", runner, paths) == ([], [])


def test_a_heal_that_leaves_something_names_the_command(tmp_path):
    def runner(argv):
        if argv == package_heal.DPKG_HEAL:
            return 1, "", "dpkg: error processing package bubblewrap (--configure)"
        return 0, "half-configured\tbubblewrap\n", ""

    with pytest.raises(package_heal.HealError) as caught:
        package_heal.heal("apt", runner, {"dpkg_updates": str(tmp_path / "none")})
    assert "still left: packages dpkg did not finish: bubblewrap (half-configured)" in str(caught.value)
    assert str(caught.value).endswith("Run it by hand: dpkg --configure -a")


def test_dnf_has_nothing_to_heal_and_an_unknown_manager_is_refused():
    assert package_heal.heal("dnf", no_runner) == ([], [])
    with pytest.raises(package_heal.HealError):
        package_heal.left_behind("zypper", no_runner)


def test_a_journal_beside_a_live_dpkg_is_left_to_it(tmp_path):
    """A journal while a real live process holds dpkg's lock-frontend open (apt running: its journal is its own
    work in progress) is not healed: the role's apt task waits for the lock. Canary: without the holder the same
    folder is healed."""
    updates = tmp_path / "updates"
    updates.mkdir()
    (updates / "0000").write_text("Package: bubblewrap\nStatus: install ok half-configured\n")
    lock = tmp_path / "lock-frontend"
    lock.write_text("")
    runner_calls = []

    def runner(argv):
        runner_calls.append(list(argv))
        return 0, "", ""

    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        assert package_heal.heal("apt", runner, {"dpkg_updates": str(updates)}) == ([], [])
        assert runner_calls == []
    finally:
        proc.kill()
        proc.wait()
    assert package_heal.left_behind("apt", runner, {"dpkg_updates": str(updates)}) == [
        "dpkg's journal of an interrupted run (1 entry in %s)" % updates]
