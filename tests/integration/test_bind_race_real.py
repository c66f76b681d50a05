"""Sources that cannot move, raced for real: a data folder that others can write (the service user, a
concurrent sandbox of the same executor) is swapped for a symbolic link to a folder the manifest
does not grant - the mail credential store, say - and back, as fast as a thread can, while the
rendered profile runs in real bwrap again and again, as root and as nobody, through the launcher
that opens its descriptors (descriptors.py). No run ever reads or writes the other folder: each
either runs on the very folder judged or stops (the launcher's bind_source_moved, bwrap's "Race
condition binding dirfd"). With the sources bound by path instead (the stability rule mutated away,
as main rendered them), the same swap made once between rendering and running hands the sandbox the
other folder: the evidence that the rule is needed, read from inside and looked up on the host.
"""
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    descriptors,
    host_context,
    mountmodel,
    renderer,
)
from helpers import trees
from helpers.fake_host import host_dict

ACTIVE = {"bwrap_available": True, "bwrap_path": shutil.which("bwrap") or "/usr/bin/bwrap",
          "disabled_via_env": False, "active": True}
RUNS = 25                       # per user; the swapper turns around many times per run
PAYLOAD = r'''
import json, os, sys
spec = json.loads(sys.argv[1])
out = {}
try:
    with open(os.path.join(spec["read"], "file")) as handle:
        out["read"] = handle.read()
except OSError as exc:
    out["read"] = exc.strerror
try:
    with open(os.path.join(spec["write"], spec["token"]), "w") as handle:
        handle.write("x")
    out["write"] = "written"
except OSError as exc:
    out["write"] = exc.strerror
sys.stdout.write(json.dumps(out))
'''


@pytest.fixture
def tree():
    base = tempfile.mkdtemp(prefix="metnos-race-", dir="/var/tmp")
    os.chmod(base, 0o755)
    for rel, mode in (("data", 0o777), ("data/pub", 0o777), ("data/w", 0o777), ("store", 0o755),
                      ("store/mail", 0o777)):
        os.makedirs(os.path.join(base, rel), exist_ok=True)
        os.chmod(os.path.join(base, rel), mode)
    for rel, text in (("data/pub/file", "public"), ("store/file", "oauth-refresh-token")):
        with open(os.path.join(base, rel), "w") as handle:
            handle.write(text)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def render(base):
    host = host_dict(base, writable_roots=[base + "/data"])
    manifest = {"name": "ex", "origin": "t",
                "capabilities": ["fs:read:%s/data/pub" % base, "fs:write:%s/data/w" % base]}
    return renderer.render_safe(manifest, host_context.HostContext(host), {}, ACTIVE)


class Swapper(object):
    """Swaps data/pub and data/w for links to the store and back, until stopped."""

    def __init__(self, base):
        self.base, self.turns, self.stop = base, 0, False
        self.thread = threading.Thread(target=self.run, daemon=True)

    def swap(self, name, target):
        path = os.path.join(self.base, "data", name)
        os.rename(path, path + ".judged")
        os.symlink(target, path)
        return path

    def back(self, path):
        os.unlink(path)
        os.rename(path + ".judged", path)

    def run(self):
        while not self.stop:
            swapped = [self.swap("pub", self.base + "/store"), self.swap("w", self.base + "/store/mail")]
            for path in swapped:
                self.back(path)
            self.turns += 1
            time.sleep(0.001 * (self.turns % 4))       # unmoved for a moment too: runs pass the launcher and race bwrap


def _run(prof, base, user, token):
    spec = {"read": base + "/data/pub", "write": base + "/data/w", "token": token}
    try:
        return trees.run_inside(prof["argv"], PAYLOAD, spec, user, descriptors=prof["descriptors"])
    except AssertionError as exc:                   # the launcher or bwrap stopped: nothing ran
        text = str(exc)
        return {"stopped": "bind_source_moved" if "bind_source_moved" in text else
                "race" if "Race condition" in text else text[:200]}


@pytest.mark.rule("R-SEC-1")
def test_a_symlink_swap_raced_against_the_real_run_never_sees_more(tree):
    prof = render(tree)
    assert prof["decision"] == "wrapped" and len(prof["descriptors"]) == 2, prof["diagnostics"]
    assert "--ro-bind-fd" in prof["argv"] and "--bind-fd" in prof["argv"]
    swapper = Swapper(tree)
    swapper.thread.start()
    seen = {}
    try:
        for i in range(RUNS * 2):
            user = None if i % 2 == 0 else "nobody"
            token = uuid.uuid4().hex
            got = _run(prof, tree, user, token)
            key = got.get("stopped") or "ran"
            seen[key] = seen.get(key, 0) + 1
            assert got.get("read") in (None, "public"), (user, got)          # never the store's file
            assert not os.path.exists(os.path.join(tree, "store/mail", token)), (user, got)   # nor written there
    finally:
        swapper.stop = True
        swapper.thread.join(10)
    assert swapper.turns > RUNS, swapper.turns                  # the folders really moved meanwhile
    assert set(seen) <= {"ran", "bind_source_moved", "race"}, seen
    assert seen.get("ran"), seen                                # and the judged folders were used when unmoved


@pytest.mark.rule("R-SEC-1")
def test_bound_by_path_the_same_swap_hands_over_the_store(tree, monkeypatch):
    monkeypatch.setattr(mountmodel, "unstable_folder", lambda path, stats: None)      # the mutation: by path, as main
    weak = render(tree)
    assert weak["decision"] == "wrapped" and not weak["descriptors"], weak["diagnostics"]
    swapper = Swapper(tree)
    for user in (None, "nobody"):
        swapped = [swapper.swap("pub", tree + "/store"), swapper.swap("w", tree + "/store/mail")]
        token = uuid.uuid4().hex
        try:
            got = _run(weak, tree, user, token)
        finally:
            for path in swapped:
                swapper.back(path)
        # from inside: the store's file is read and written; from outside: the write is in the store
        assert got["read"] == "oauth-refresh-token" and got["write"] == "written", (user, got)
        assert os.path.exists(os.path.join(tree, "store/mail", token)), user


SWAP_AFTER_OPEN = r'''
import json, os, sys
ns = {"__name__": "metnos_descriptors"}
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), ns)
words, descs = json.loads(sys.argv[2]), json.loads(sys.argv[3])
ns["install"](words, descs)                         # opened and proven: the judged folders ...
for name, target in (("pub", sys.argv[4] + "/store"), ("w", sys.argv[4] + "/store/mail")):
    path = os.path.join(sys.argv[4], "data", name)
    os.rename(path, path + ".judged")               # ... are moved away and links put in their place
    os.symlink(target, path)
os.execv(words[0], words)
'''


@pytest.mark.rule("R-SEC-1")
def test_swapped_once_the_launcher_holds_them_the_judged_folders_are_mounted(tree):
    """The window the race test hits only by chance, taken deterministically: the swap right after the
    launcher opened the descriptors and before bwrap mounts them. bwrap mounts the objects judged (where
    they now are), never what the links lead to."""

    prof = render(tree)
    script = os.path.join(tree, "swap.py")
    with open(script, "w") as handle:
        handle.write(SWAP_AFTER_OPEN)
    for user in (None, "nobody"):
        token = uuid.uuid4().hex
        sep = prof["argv"].index("--")
        words = prof["argv"][:sep + 1] + ["/usr/bin/python3", "-c", PAYLOAD, json.dumps(
            {"read": tree + "/data/pub", "write": tree + "/data/w", "token": token})]
        cmd = ["/usr/bin/python3", "-I", "-S", script, descriptors.__file__, json.dumps(words),
               json.dumps(prof["descriptors"]),
               tree]
        if user:
            cmd = ["setpriv", "--reuid=%s" % user, "--regid=nogroup", "--clear-groups"] + cmd
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        finally:
            for name in ("pub", "w"):
                path = os.path.join(tree, "data", name)
                if os.path.islink(path):
                    os.unlink(path)
                    os.rename(path + ".judged", path)
        assert proc.returncode == 0, (user, proc.stderr)
        assert json.loads(proc.stdout) == {"read": "public", "write": "written"}, (user, proc.stdout)
        assert os.path.exists(os.path.join(tree, "data/w", token))                   # the judged folder, outside
        assert not os.path.exists(os.path.join(tree, "store/mail", token)), user
