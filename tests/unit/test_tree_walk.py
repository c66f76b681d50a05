"""The one walker (base/tree_walk.py, and its copy in profile/descriptors.py, the launcher's file that imports
nothing of the core), on real trees: a folder swapped for a symbolic link, or vanished, between its listing and
its open stops the walk as "changed" (deterministic here: the walker is a generator, the swap is made between
the entry it yields and the open that follows); the bounds; the source of the two copies equal."""
import inspect
import os
import shutil
import socket
import stat
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import tree_walk
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import channels, descriptors
from helpers import forked


@pytest.fixture()
def top():
    base = tempfile.mkdtemp(prefix="metnos-tree-")
    os.makedirs(os.path.join(base, "top", "sub", "deeper"))
    os.mkdir(os.path.join(base, "elsewhere"))
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(os.path.join(base, "elsewhere", "other.sock"))
    try:
        yield os.path.join(base, "top")
    finally:
        listener.close()
        shutil.rmtree(base)


def test_the_launchers_copy_is_the_same_walker():
    for name in ("Stopped", "_open_below", "_open_listed", "_listed", "tree"):
        assert inspect.getsource(getattr(descriptors, name)) == inspect.getsource(getattr(tree_walk, name)), name
    assert descriptors.MAX_WALK_DEPTH == tree_walk.MAX_WALK_DEPTH and descriptors.WALK_FLAGS == tree_walk.WALK_FLAGS


def _swap_at(top, name, how):
    """Walk ``top``; when the entry ``name`` is yielded (listed, not yet opened), apply ``how`` to it."""
    seen = []
    with pytest.raises(tree_walk.Stopped) as stopped:
        for path, _info in tree_walk.tree(top, [100]):
            seen.append(path)
            if os.path.basename(path) == name:
                how(path)
    return stopped.value, seen


@pytest.mark.parametrize("how", [
    pytest.param(lambda p: (os.rename(p, p + ".old"), os.symlink(os.path.join(os.path.dirname(os.path.dirname(p)),
                                                                              "elsewhere"), p)), id="link"),
    pytest.param(lambda p: shutil.rmtree(p), id="vanished"),
    pytest.param(lambda p: (os.rename(p, p + ".old"), os.mkdir(p)), id="another-folder"),
])
def test_a_swapped_or_vanished_folder_stops_the_walk_as_changed(top, how):
    stopped, seen = _swap_at(top, "sub", how)
    assert stopped.why == "changed" and stopped.folder == os.path.join(top, "sub")
    assert not [p for p in seen if p.endswith("other.sock")]


def test_channels_walk_and_channels_below_refuse_a_change(top):
    os.rename(os.path.join(top, "sub"), os.path.join(top, "sub.old"))
    os.symlink(os.path.join(os.path.dirname(top), "elsewhere"), os.path.join(top, "sub"))
    assert descriptors.channels_below([top]) == []          # a link is never followed
    walked = channels.walk(top, [100])
    assert walked.stop is None and walked.found == []


def test_the_bounds(top):
    walked = channels.walk(top, [1])
    assert walked.stop == "entries"
    assert channels.bound_refusal("fs:read", walked, 1)["code"] == "channel_walk_bound"
    deep = top
    for _level in range(tree_walk.MAX_WALK_DEPTH + 1):
        deep = os.path.join(deep, "d")
        os.mkdir(deep)
    walked = channels.walk(top, [10000])
    assert walked.stop == "deep"
    assert "%d folders deep" % tree_walk.MAX_WALK_DEPTH in channels.bound_refusal("fs:read", walked, 1)["message"]
    with pytest.raises(descriptors.Stopped):
        descriptors.channels_below([top])


def test_passing_skips_a_swapped_folder_and_goes_on(top):
    """group_files' mode: a swapped folder is passed (never entered, never followed), the rest is still walked."""
    os.mkdir(os.path.join(top, "zz-after"))
    seen = []
    for path, _info in tree_walk.tree(top, [100], passing=True):
        seen.append(path)
        if os.path.basename(path) == "sub":
            os.rename(path, path + ".old")
            os.symlink(os.path.join(os.path.dirname(top), "elsewhere"), path)
    assert not [p for p in seen if p.endswith("other.sock") or "/sub/" in p]
    assert os.path.join(top, "zz-after") in seen or os.path.join(top, "sub.old") in seen


def _plant_channels(top):
    """A socket, a FIFO and a device node (this machine's /dev/null's numbers) below ``top``, beside files, links
    (one to a socket outside ``top``: never followed) and nested folders; returns the listeners and the
    channels' paths."""
    deeper = os.path.join(top, "sub", "deeper")
    listeners = [socket.socket(socket.AF_UNIX)]
    listeners[0].bind(os.path.join(deeper, "daemon.sock"))
    os.mkfifo(os.path.join(top, "sub", "pipe"))
    os.mknod(os.path.join(deeper, "null"), 0o600 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
    for name in ("a.txt", "sub/b.py", "sub/deeper/c.so"):
        with open(os.path.join(top, name), "w") as handle:
            handle.write("x")
    os.symlink(os.path.join(os.path.dirname(top), "elsewhere", "other.sock"), os.path.join(top, "sub", "to-other"))
    os.symlink("sub", os.path.join(top, "loop"))
    return listeners, sorted(os.path.join(top, p) for p in ("sub/pipe", "sub/deeper/daemon.sock", "sub/deeper/null"))


def _full(top, budget=100):
    return sorted(p for p, info in tree_walk.tree(top, [budget]) if channels.kind_of(info.st_mode))


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a device node needs root")
def test_special_only_finds_what_the_full_walk_finds(top):
    """The channel search's mode (issue 52's cost): the listing's type tells folders, files and links apart, so
    only the rest is lstat'ed; the channels found are the full walk's, in the core and in the launcher's copy;
    the budget counts every entry as before."""
    listeners, planted = _plant_channels(top)
    try:
        assert _full(top) == planted                          # the canary: the full walk sees every planted one
        found = sorted(p for p, _info in tree_walk.tree(top, [100], special_only=True))
        assert found == planted
        assert sorted(descriptors.channels_below([top])) == planted
        assert channels.walk(top, [100]).found == [channels.Found(p, channels.kind_of(os.lstat(p).st_mode))
                                                   for p in sorted(planted, key=_walk_order(top))]
        full_budget, fast_budget = [100], [100]
        list(tree_walk.tree(top, full_budget))
        list(tree_walk.tree(top, fast_budget, special_only=True))
        assert full_budget == fast_budget
    finally:
        for listener in listeners:
            listener.close()


def _walk_order(top):
    order = [p for p, _info in tree_walk.tree(top, [100])]
    return order.index


def _socket_listed_before(folder, name):
    """A socket in ``folder`` that its listing gives before the entry ``name`` (listing order is the filesystem's):
    the special-only walk yields it while ``name`` is listed and not yet opened."""
    for number in range(64):
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(os.path.join(folder, "s%02d.sock" % number))
        order = [entry.name for entry in os.scandir(folder)]
        if order.index("s%02d.sock" % number) < order.index(name):
            return listener
        listener.close()
        os.unlink(os.path.join(folder, "s%02d.sock" % number))
    pytest.skip("no socket name this filesystem lists before %s" % name)


@pytest.mark.parametrize("how", [
    pytest.param(lambda p: (os.rename(p, p + ".old"), os.symlink(os.path.join(os.path.dirname(os.path.dirname(p)),
                                                                              "elsewhere"), p)), id="link"),
    pytest.param(lambda p: shutil.rmtree(p), id="vanished"),
])
def test_special_only_stops_on_a_folder_swapped_or_vanished_after_its_listing(top, how):
    """A folder listed, then swapped for a link or removed before the walk opens it: "changed", never followed."""
    listener = _socket_listed_before(top, "sub")
    try:
        seen = []
        with pytest.raises(tree_walk.Stopped) as stopped:
            for path, _info in tree_walk.tree(top, [100], special_only=True):
                seen.append(path)
                if path.endswith(".sock") and os.path.dirname(path) == top:
                    how(os.path.join(top, "sub"))
        assert stopped.value.why == "changed" and stopped.value.folder == os.path.join(top, "sub")
        assert not [p for p in seen if p.endswith("other.sock")]
    finally:
        listener.close()


def _walk_in_own_mounts(top, mounted):
    """In a child in a mount namespace of its own: ``mounted`` (a folder holding a socket) bind-mounted on top/sub
    (a mount point: its listing shows the covered folder's inode, so the fast proof fails and the lstat one is
    used), then both walks (and the launcher's); the child's answer (forked.answer_of_child)."""

    def walk_over_the_mount():
        os.unshare(os.CLONE_NEWNS)
        subprocess.run(["mount", "--make-rprivate", "/"], check=True)
        subprocess.run(["mount", "--bind", mounted, os.path.join(top, "sub")], check=True)
        return [sorted(p for p, _i in tree_walk.tree(top, [100], special_only=True)), _full(top),
                sorted(descriptors.channels_below([top]))]
    return forked.answer_of_child(walk_over_the_mount)


@pytest.mark.skipif(os.geteuid() != 0 or not hasattr(os, "unshare"), reason="a mount namespace needs root")
def test_special_only_enters_a_mount_point_proved_by_its_lstat(top):
    mounted = tempfile.mkdtemp(prefix="metnos-mounted-")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(os.path.join(mounted, "on-mount.sock"))
    try:
        fast, full, launcher = _walk_in_own_mounts(top, mounted)
        assert fast == full == launcher == [os.path.join(top, "sub", "on-mount.sock")]
    finally:
        listener.close()
        shutil.rmtree(mounted)
