"""base/files.py, the toolkit's one atomic writer, against faults planted for real as root: a user made with
useradd whose home holds a symlink into a root-only folder, a regular file where a folder is expected, a FIFO
in place of a file read back, debris of a dead run.

Mutations run by hand (each made a test here fail, then was restored):
- trusted_folder() returning True (the user's link followed): test_a_users_link_is_never_followed fails,
  the canary file lands in the root-only folder;
- read_regular() without O_NONBLOCK: test_a_fifo_fails_at_once hangs (killed by its timeout thread);
- open_folder() raising FileExistsError (what os.makedirs said) for a regular file on the way:
  test_a_file_where_a_folder_is_expected fails.
"""
import os
import shutil
import stat
import tempfile
import threading
import time

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import files
from helpers import real_user


@pytest.fixture
def tree():
    root = tempfile.mkdtemp(prefix="metnos-files-", dir="/var/tmp")
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root)


@pytest.fixture
def user(tree):
    """A real user (useradd) with a real home below ``tree``, removed afterwards (tests/helpers/real_user.py)."""
    with real_user.made("mfw", home_below=tree) as made:
        yield made


def test_a_users_link_is_never_followed(tree, user):
    """The user links ~/.config/out to a root-only 0700 folder; root writing ~/.config/out/f is refused
    with LinkRefused naming the user, and nothing lands in the root-only folder (the canary: the same write
    into a root-owned link path, /var/run, is followed)."""
    secret = os.path.join(tree, "root-only")
    os.makedirs(secret, 0o700)
    config = os.path.join(user.home, ".config")
    os.makedirs(config)
    os.chown(config, user.uid, -1)
    os.symlink(secret, os.path.join(config, "out"))
    with pytest.raises(files.LinkRefused) as refused:
        files.replace(os.path.join(config, "out", "f.conf"), "written by root\n", create_mode=0o755)
    assert refused.value.path == os.path.join(config, "out") and refused.value.owner == user.name
    assert os.listdir(secret) == []
    # canary: a link in a folder only root writes (Debian's /var/run -> /run) is the system's own: followed
    name = "metnos-files-canary-%d" % os.getpid()
    try:
        assert os.path.islink("/var/run")
        files.replace(os.path.join("/var/run", name), "x")
        assert os.path.isfile(os.path.join("/run", name))
    finally:
        os.unlink(os.path.join("/run", name))


def test_a_file_where_a_folder_is_expected(tree):
    blocker = os.path.join(tree, "etc", "unit.service.d")
    os.makedirs(os.path.dirname(blocker))
    with open(blocker, "w") as handle:
        handle.write("a regular file\n")
    with pytest.raises(files.NotAFolder) as refused:
        files.replace(os.path.join(blocker, "zz.conf"), "x", create_mode=0o755)
    assert "not a directory" in str(refused.value) and refused.value.path == blocker
    assert refused.value.owner == "root"


def test_a_fifo_fails_at_once(tree):
    fifo = os.path.join(tree, "zz-metnos-sandbox.env")
    os.mkfifo(fifo)
    outcome = {}

    def read():
        try:
            files.read_regular(fifo)
        except files.NotRegular as exc:
            outcome["refused"] = exc

    worker = threading.Thread(target=read, daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(5)
    if worker.is_alive():             # unblock the mutation's hang: a writer opens the FIFO
        with open(fifo, "w"):
            pass
        worker.join(5)
    assert "refused" in outcome and time.monotonic() - started < 5
    assert "a FIFO" in str(outcome["refused"])
    # canary: a regular file there is read
    os.unlink(fifo)
    with open(fifo, "w") as handle:
        handle.write("PATH=/usr/bin\n")
    assert files.read_regular(fifo)[0] == "PATH=/usr/bin\n"


def test_the_write_is_exact_and_debris_of_a_dead_run_is_removed(tree):
    target = os.path.join(tree, "d", "f.conf")
    os.makedirs(os.path.dirname(target))
    old = os.path.join(tree, "d", ".f.conf.0123456789ab")
    fresh = os.path.join(tree, "d", ".g.conf.ba9876543210")
    other = os.path.join(tree, "d", ".notours")
    for path in (old, fresh, other):
        with open(path, "w") as handle:
            handle.write("debris\n")
    os.utime(old, (1, 1))
    os.utime(other, (1, 1))
    assert files.replace(target, ["a", "b\n"], 0o640) == [old]
    st = os.stat(target)
    assert stat.S_IMODE(st.st_mode) == 0o640 and open(target).read() == "ab\n"
    # a file of this run (fresh) and a name that is not the toolkit's (other) stay
    assert sorted(os.listdir(os.path.dirname(target))) == sorted([".g.conf.ba9876543210", ".notours", "f.conf"])
    # a link at the destination itself is replaced, its target untouched
    victim = os.path.join(tree, "victim")
    with open(victim, "w") as handle:
        handle.write("keep\n")
    os.unlink(target)
    os.symlink(victim, target)
    files.replace(target, "new\n")
    assert not os.path.islink(target) and open(victim).read() == "keep\n"
