"""The one walker (base/tree_walk.py, and its copy in profile/descriptors.py, the launcher's file that imports
nothing of the core), on real trees: a folder swapped for a symbolic link, or vanished, between its listing and
its open stops the walk as "changed" (deterministic here: the walker is a generator, the swap is made between
the entry it yields and the open that follows); the bounds; the source of the two copies equal."""
import inspect
import os
import shutil
import socket
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import tree_walk
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import channels, descriptors


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
    for name in ("Stopped", "_open_below", "tree"):
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
