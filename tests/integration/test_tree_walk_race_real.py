"""attack2 finding 2, for real: a real user swaps a folder of its own and a symbolic link to a root-only 0700
folder holding a socket (renameat2 RENAME_EXCHANGE, tests/helpers/exchange_racer.py, as that user) while root
walks the user's folder again and again with the three walkers (descriptors.channels_below, channels.walk,
groups.group_files) and writes the stored profile's text (store.documents). The root-only names never
appear in any result nor in the profile: a swap is a refusal (Stopped "changed": channel_walk_changed, a
StoreError), never a listing and never another exception. Canary: the old walk by name (queued after
is_dir(follow_symlinks=False), scandir'ed by path) lists the root-only socket within the same loop."""
import os
import shutil
import socket
import stat
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import tree_walk
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import channels, descriptors, store
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import groups
from helpers import real_user

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (useradd, a root-only folder)")
PYTHON = "/usr/bin/python3"          # the racer runs as the user: the packaged interpreter, stdlib only
RACER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers", "exchange_racer.py")
ROUNDS = 3000
SOCKET_NAME = "root-only-admin-api.sock"
FILE_NAME = "root-only-group-readable.txt"


def old_walk_by_name(folder):
    """The walk before the fix (descriptors.channels_below as merged in int2): the canary."""
    found, todo = [], [folder]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                todo.append(entry.path)
            elif not entry.is_file(follow_symlinks=False) and not entry.is_symlink():
                found.append(entry.path)
    return found


@pytest.fixture()
def raced():
    """(user, data folder): data/sub (the user's folder) and data/swap (its link to the root-only folder) are
    being exchanged by the user for as long as the test runs."""
    base = tempfile.mkdtemp(prefix="metnos-race-")
    os.chmod(base, 0o755)
    with real_user.made("mrace") as user:
        secret = os.path.join(base, "secret")
        os.mkdir(secret, 0o700)
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(os.path.join(secret, SOCKET_NAME))
        with open(os.path.join(secret, FILE_NAME), "w") as handle:
            handle.write("root's\n")
        os.chown(os.path.join(secret, FILE_NAME), 0, user.gid)
        os.chmod(os.path.join(secret, FILE_NAME), 0o640)
        data = os.path.join(base, "data")
        os.makedirs(os.path.join(data, "sub", "deeper"))
        os.symlink(secret, os.path.join(data, "swap"))
        for folder, _dirs, _files in os.walk(data):
            os.lchown(folder, user.uid, user.gid)
        os.lchown(os.path.join(data, "swap"), user.uid, user.gid)
        shutil.copy(RACER, os.path.join(base, "racer.py"))
        os.chmod(os.path.join(base, "racer.py"), 0o644)
        racer = subprocess.Popen(["setpriv", "--reuid=%d" % user.uid, "--regid=%d" % user.gid, "--clear-groups",
                                  PYTHON, "-I", os.path.join(base, "racer.py"), data, "sub", "swap", "300"],
                                 stdout=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"})
        try:
            yield user, data
        finally:
            racer.kill()
            racer.wait()
            listener.close()
            shutil.rmtree(base)


def granted(data):
    """The mounts of a profile granting ``data``."""
    return [{"kind": "ro", "src": data, "dest": data,
             "provenance": [{"rule": "R-CAP-FS", "source": "fs:read:%s/**" % data}]}]


def _stored_text(data):
    result = {"argv": ["/usr/bin/bwrap"], "diagnostics": [], "decision": "wrapped", "mounts": granted(data)}
    try:
        return store.documents(result).json
    except store.StoreError as exc:
        assert "changed while searched" in str(exc)
        return ""


def test_root_never_lists_the_root_only_folder_through_the_users_swap(raced):
    user, data = raced
    canary = changed = launcher_changed = 0
    leaks = []
    for _round in range(ROUNDS):
        canary += any(SOCKET_NAME in path for path in old_walk_by_name(data))
        try:
            leaks += [p for p in descriptors.channels_below([data]) if "root-only" in p]
        except descriptors.Stopped as exc:
            assert exc.why == "changed", exc
            changed += 1
        walked = channels.walk(data, [channels.MAX_WALK_ENTRIES])
        leaks += [f.path for f in walked.found if "root-only" in f.path]
        assert walked.stop in (None, "changed"), walked
        if walked.stop == "changed":
            assert channels.bound_refusal("fs:read", walked, 1)["code"] == "channel_walk_changed"
        grouped = groups.group_files([user.gid], (data,))
        leaks += [g.path for g in grouped.found if "root-only" in g.path]
        text = _stored_text(data)
        if "root-only" in text:
            leaks.append(text)
        try:                                # the launcher's search again (a profile that recorded no channel)
            descriptors.recheck_channels({"channels": [], "mounts": granted(data)}, "/etc/x.json")
        except descriptors.Refused as exc:
            assert exc.code == descriptors.CHANGED and "render again" in str(exc), exc
            launcher_changed += 1
    print("rounds %d: the old walk by name listed the root-only socket %d times; the walk by descriptor stopped "
          "as changed %d times (channels_below), the launcher refused %d times as changed, nothing listed it"
          % (ROUNDS, canary, changed, launcher_changed))
    assert canary > 0, "the swap never won against the old walk: the test proves nothing"
    assert changed > 0, "the walk by descriptor never met a swap: the test proves nothing"
    assert not leaks


def test_the_walker_is_the_launchers_own():
    """base/tree_walk.py is descriptors.py's walker (the launcher's file imports nothing of the core)."""
    assert tree_walk.WALK_FLAGS & os.O_NOFOLLOW and tree_walk.WALK_FLAGS == descriptors.WALK_FLAGS
    assert stat.S_IFSOCK in descriptors.CHANNEL_TYPES
