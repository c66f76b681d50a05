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
import subprocess
import tempfile
import threading
import time

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import files
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import prometheus
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


# (case, how the folder holding the link is planted, who owns the link; attack2 finding 3). "acl_users_link" is
# the attack itself (refused twice: group write bit of gid 0 shown by the ACL's mask, the link's owner); the others
# are refused by one judgement alone: "default_acl" by the ACL read through the O_PATH descriptor (a named user's
# default entry: what every entry made there gets, owners.acl_writers' judgement), "root_group" by no group write
# bit accepted for gid 0, "users_link" by the link's owner.
LINK_CASES = [
    ("acl_users_link", "acl", "user"),
    ("default_acl", "default_acl", "root"),
    ("root_group", "0775", "root"),
    ("users_link", "0755", "user_chowned"),
]


@pytest.mark.parametrize("case, folder_mode, link_owner", LINK_CASES, ids=[c[0] for c in LINK_CASES])
def test_a_link_in_a_folder_someone_else_can_write_is_never_followed(tree, user, case, folder_mode, link_owner):
    """attack2 finding 3, planted for real: a root:root folder holding ``out``, a link to a root-only 0700 folder.
    The user may write that folder through an ACL (``setfacl -m u:USER:rwx``: mode 0775, group root, so the mode
    alone looks root's) and swaps ``out`` for the link itself (as the user, setpriv); or the folder is 0775 with
    group root; or the link is the user's. Root's writes there (the monitor's textfile, files.replace) are refused
    with LinkRefused and nothing lands in the root-only folder. Canary: the same link in a 0755 root:root folder
    without an ACL, root's own, is followed. Mutations run by hand: trusted_folder passing no descriptor (ACL
    unread): default_acl's writes land, it fails; root_group=True: root_group fails; the link-owner check
    removed: users_link fails."""
    secret = os.path.join(tree, "root-only")
    os.makedirs(secret, 0o700)
    shared = os.path.join(tree, "shared")
    os.makedirs(shared)
    os.chmod(shared, 0o775 if folder_mode == "0775" else 0o755)
    os.makedirs(os.path.join(shared, "out"))
    link = os.path.join(shared, "out")
    if folder_mode == "acl":
        subprocess.run(["setfacl", "-m", "u:%s:rwx" % user.name, shared], check=True)
        assert stat.S_IMODE(os.stat(shared).st_mode) == 0o775 and os.stat(shared).st_gid == 0
    if folder_mode == "default_acl":
        subprocess.run(["setfacl", "-d", "-m", "u:%s:rwx" % user.name, shared], check=True)
        assert stat.S_IMODE(os.stat(shared).st_mode) == 0o755
    if link_owner == "user":
        swap = "mv %s %s.old && ln -s %s %s" % (link, link, secret, link)
        subprocess.run(["setpriv", "--reuid", str(user.uid), "--regid", str(user.gid), "--clear-groups", "sh", "-c",
                        swap], check=True)
        assert os.lstat(link).st_uid == user.uid
    else:
        os.rename(link, link + ".old")
        os.symlink(secret, link)
        if link_owner == "user_chowned":
            os.lchown(link, user.uid, user.gid)
    with pytest.raises(files.LinkRefused):
        prometheus.write(link, {"hostname": "h", "verdict": "pass", "proven": True})
    with pytest.raises(files.LinkRefused):
        files.replace(os.path.join(link, "f.conf"), "written by root\n")
    assert os.listdir(secret) == []
    # canary: the same link, root's, in a 0755 root:root folder without an ACL is followed
    subprocess.run(["setfacl", "-b", shared], check=True)
    os.chmod(shared, 0o755)
    os.unlink(link)
    os.symlink(secret, link)
    prometheus.write(link, {"hostname": "h", "verdict": "pass", "proven": True})
    assert os.listdir(secret) == [prometheus.FILE_NAME]
