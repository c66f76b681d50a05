"""The pieces of issue 19 alone, on real trees in a tmp dir: bounded resolution (paths.Resolver equal to
os.path.realpath where the kernel resolves, refusing where it would not, without recursion), the
mount model (mountmodel.violations: bwrap's mount table walked in argv order), stability
(mountmodel.unstable_folder / replaceable), the launcher's race-free opening (descriptors), the
renderer's use of them (descriptor binds, writable roots, pseudo-filesystems from a mount table,
installation discovery) and the final check's (e). Real bwrap runs of all this:
tests/integration/test_hostile_bwrap_real.py and test_bind_race_real.py."""
import json
import os
import random
import stat
import subprocess
import time

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics, paths
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    descriptors,
    host_context,
    invariants,
    mountmodel,
    mounts,
    python_roots,
    renderer,
    undo,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile.manifest import from_dict
from helpers.fake_host import host_dict

ACTIVE = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}


# ---------------------------------------------------------------- bounded resolution

def _random_tree(root, rng):
    for d in ("a/x", "b/x"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    targets = ["a", "../a", "b/x", "/etc", "..", ".", root + "/c", "c", "d/x", "nope", "x/../..", root, "/"]
    for name in ("c", "d", "a/l", "b/x/m", "a/x/n"):
        os.symlink(rng.choice(targets), os.path.join(root, name))


@pytest.mark.rule("R-CAP-FS")
def test_resolver_equals_realpath_where_the_kernel_resolves(tmp_path):
    rng = random.Random(19)
    for trial in range(120):
        root = str(tmp_path / ("t%d" % trial))
        os.makedirs(root)
        _random_tree(root, rng)
        resolver = paths.Resolver()
        for rel in ("c", "d", "a/l", "b/x/m/y", "a/x/n/..", "c/x/../l", "d/x/y", "nope/../c", "a/l/l/l"):
            path = os.path.join(root, rel)
            try:
                got = resolver.resolve(path)
            except paths.Unresolvable as exc:
                assert exc.why == "links"
                with pytest.raises(OSError):            # the kernel does not resolve it either (ELOOP)
                    os.stat(path)
                continue
            assert got == os.path.realpath(path), (rel, os.readlink(os.path.join(root, "c")))


@pytest.mark.rule("R-CAP-FS")
def test_resolver_has_the_kernels_link_limit_and_no_recursion(tmp_path):
    previous = str(tmp_path / "target")
    os.mkdir(previous)
    for i in range(1000):
        link = str(tmp_path / ("l%d" % i))
        os.symlink(previous, link)
        previous = link
    with pytest.raises(paths.Unresolvable) as info:
        paths.Resolver().resolve(previous)                  # CPython's realpath: RecursionError
    assert info.value.why == "links"
    assert paths.Resolver().resolve(str(tmp_path / "l39")) == str(tmp_path / "target")       # 40 links
    os.stat(str(tmp_path / "l39"))
    with pytest.raises(paths.Unresolvable):
        paths.Resolver().resolve(str(tmp_path / "l40"))     # 41 links
    with pytest.raises(OSError):
        os.stat(str(tmp_path / "l40"))


@pytest.mark.rule("R-SCOPE-1")
def test_resolver_shares_work_and_has_a_budget(tmp_path):
    chain = tmp_path / "chain"
    chain.mkdir()
    for i in range(1000):
        os.symlink("l%d" % (i + 1) if i < 999 else "..", str(chain / ("l%d" % i)))
    resolver = paths.Resolver()
    start = time.process_time()
    for i in range(0, 1000, 8):                          # 125 paths into one long chain
        try:
            resolver.resolve(str(chain / ("l%d" % i)))
        except paths.Unresolvable:
            pass
    assert time.process_time() - start < 1.0
    with pytest.raises(paths.Unresolvable) as info:
        paths.Resolver(steps=10).resolve(str(tmp_path / "a/b/c/d/e/f/g/h/i/j/k"))
    assert info.value.why == "budget"
    os.symlink("x" * 200 + "/" + "y" * 200, str(tmp_path / "long"))
    with pytest.raises(paths.Unresolvable) as info:
        paths.Resolver().resolve(str(tmp_path / "long") + ("/" + "z" * 250) * 20)
    assert info.value.why == "long"


class _StackOnly(paths.Resolver):
    """The resolver without its plain-component fast path: every component through _walk's stack."""

    def _walk_plain(self, path, pos, current, links):
        return self._walk(path, current, links, paths.stack(path, pos, path[pos:].split("/")))


def _answer(resolver, path):
    try:
        return resolver.resolve(path)
    except paths.Unresolvable as exc:
        return ("unresolvable", exc.why, exc.path)


@pytest.mark.rule("R-CAP-FS")
def test_resolver_fast_path_is_the_stack_walk(tmp_path):
    """Resolver.resolve walks plain components without a stack (the renderer's common case, for speed):
    on random trees with links, '', '.', '..' and budgets, one resolver asked many paths gives the same
    answers, refusals, remaining budget and kept work as the stack walk alone."""
    rng = random.Random(1919)
    root = str(tmp_path)
    for d in ("a/b/c", "b", "c/a"):
        os.makedirs(os.path.join(root, d))
    for target, name in (("a/b", "l1"), ("../c", "a/l2"), (root + "/a", "a/b/l3"), ("l4", "l4"), ("l1/../c", "b/l1")):
        os.symlink(target, os.path.join(root, name))
    for i in range(45):
        os.symlink("ch%d" % (i + 1) if i < 44 else "a", os.path.join(root, "ch%d" % i))
    names = ["a", "b", "c", "l1", "l2", "l3", "l4", "", ".", "..", "nope", "ch0", "ch5", "ch20"]
    stats = mountmodel.Stats()
    for trial in range(400):
        steps = rng.choice([paths.MAX_STEPS, 25, 6])
        lstat = stats.lstat if trial % 2 else None
        fast, slow = paths.Resolver(steps=steps, lstat=lstat), _StackOnly(steps=steps, lstat=lstat)
        for _ in range(rng.randint(1, 6)):
            rest = "/".join(rng.choice(names) for _ in range(rng.randint(0, 6)))
            path = rng.choice([root + "/" + rest, root + "/" + rest + "/", "/" + rest, root])
            assert _answer(fast, path) == _answer(slow, path), path
            assert (fast.steps, fast._full, fast._done, fast._target) == \
                (slow.steps, slow._full, slow._done, slow._target), path


# ---------------------------------------------------------------- stability

@pytest.mark.rule("R-SEC-1")
def test_replaceable_by_owner_mode_and_sticky(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    entry = folder / "e"
    entry.mkdir()
    for mode, owner, want in ((0o755, 0, False), (0o775, 0, True), (0o757, 0, True), (0o1777, 0, False),
                              (0o755, 1000, True), (0o1777, 1000, True)):
        os.chmod(str(folder), mode)
        os.chown(str(folder), owner, 0)
        assert mountmodel.replaceable(os.lstat(str(folder)), os.lstat(str(entry))) is want, (oct(mode), owner)
    os.chmod(str(folder), 0o1777)
    os.chown(str(folder), 0, 0)
    os.chown(str(entry), 1000, 0)                       # sticky protects root's own entries only
    assert mountmodel.replaceable(os.lstat(str(folder)), os.lstat(str(entry))) is True
    os.chown(str(entry), 0, 0)
    os.chmod(str(folder), 0o755)
    assert mountmodel.unstable_folder(str(entry),
                                      mountmodel.Stats()) is None       # /tmp/pytest-of-root: root's, sticky
    os.chmod(str(folder), 0o777)
    assert mountmodel.unstable_folder(str(entry), mountmodel.Stats()) == str(folder)


# ---------------------------------------------------------------- the mount model

def _ops(*ops):
    return [mountmodel.Op(*o) for o in ops]


@pytest.mark.rule("R-SEC-1")
def test_model_refuses_a_destination_that_is_not_its_source_or_passes_a_symlink(tmp_path):
    d = str(tmp_path)
    os.makedirs(d + "/data/x")
    os.symlink("x", d + "/data/l")
    assert mountmodel.violations(_ops(("tmpfs", None, "/tmp"), ("ro", d + "/data", d + "/data"),
                                      ("rw", d + "/data/x", d + "/data/x"))) == []
    found = mountmodel.violations(_ops(("ro", d + "/data", d + "/data"), ("rw", d + "/data/x", d + "/data/l")))
    assert [f.kind for f in found] == ["differs"] and "not its destination" in found[0].text
    found = mountmodel.violations(_ops(("ro", d + "/data", d + "/data"), ("rw", d + "/data/l", d + "/data/l")))
    assert [f.kind for f in found] == ["differs"] and "symbolic link inside the new root" in found[0].text
    found = mountmodel.violations(_ops(("symlink", "usr/bin", "/bin"), ("ro", "/bin/sh", "/bin/sh")))
    assert "--symlink" in found[0].text
    found = mountmodel.violations(_ops(("proc", None, "/proc"), ("ro", "/proc/1", "/proc/1")))
    assert "--proc" in found[0].text
    found = mountmodel.violations(_ops(("ro", d + "/data", d + "/data"), ("rw", d + "/data/nope/y", d
                                                                          + "/data/nope/y")))
    assert "would create it" in found[0].text
    found = mountmodel.violations(_ops(("rw", d + "/data", d + "/data"), ("symlink", "x", d + "/data/s")))
    assert "inside the folder mounted" in found[0].text


@pytest.mark.rule("R-SEC-1")
def test_model_refuses_a_nested_destination_others_can_move(tmp_path):
    d = str(tmp_path)
    os.makedirs(d + "/data/a/w")
    os.chmod(d + "/data", 0o755)
    ops = _ops(("ro", d + "/data", d + "/data", True), ("rw", d + "/data/a/w", d + "/data/a/w", True))
    assert mountmodel.violations(ops) == []
    os.chmod(d + "/data", 0o777)                         # data/a can now be replaced by a link
    assert [f.kind for f in mountmodel.violations(ops)] == ["unstable"]
    direct = _ops(("ro", d + "/data", d + "/data", True), ("rw", d + "/data/a", d + "/data/a", True))
    assert mountmodel.violations(direct) == []                   # the last component: bwrap's own descriptor check


# ---------------------------------------------------------------- the launcher

@pytest.mark.rule("R-SEC-1")
def test_open_judged_follows_no_link_and_proves_the_object(tmp_path):
    d = str(tmp_path)
    os.makedirs(d + "/data/pub")
    os.makedirs(d + "/secret")
    want = descriptors.identity(d + "/data/pub", 100, os.lstat(d + "/data/pub"))
    fd = descriptors.open_judged(want)
    assert os.fstat(fd).st_ino == want["ino"]
    os.close(fd)
    os.rename(d + "/data/pub", d + "/data/pub.judged")
    os.symlink(d + "/secret", d + "/data/pub")           # the last component swapped for a link
    with pytest.raises(descriptors.Moved):
        descriptors.open_judged(want)
    os.unlink(d + "/data/pub")
    os.mkdir(d + "/data/pub")                            # another folder at the judged path
    with pytest.raises(descriptors.Moved, match="not the object judged"):
        descriptors.open_judged(want)
    os.rmdir(d + "/data/pub")
    os.rename(d + "/data", d + "/data.judged")
    os.symlink(d + "/data.judged", d + "/data")          # a component on the way swapped for a link
    with pytest.raises(descriptors.Moved, match="no longer a folder"):
        descriptors.open_judged(dict(want, path=d + "/data/pub.judged"))


@pytest.mark.rule("R-SEC-1")
def test_install_puts_only_declared_descriptors_on_their_numbers(tmp_path):
    d = str(tmp_path)
    os.makedirs(d + "/w")
    want = descriptors.identity(d + "/w", 100, os.lstat(d + "/w"))
    words = ["bwrap", "--bind-fd", "100", d + "/w", "--", "true"]
    assert descriptors.install(words, [want]) == [100]
    assert os.fstat(100).st_ino == want["ino"] and os.get_inheritable(100)
    with pytest.raises(descriptors.Moved, match="already open"):
        descriptors.install(words, [want])
    os.close(100)
    assert descriptors.install(["bwrap", "--", "true"], [want]) == []          # not bound by this argv: not opened
    with pytest.raises(descriptors.Moved):
        descriptors.install(words, [dict(want, fd=7)])                          # not a number a profile declares
    assert descriptors.launcher_words(words, "/usr/bin/python3", []) == words
    wrapped = descriptors.launcher_words(words, "/usr/bin/python3", [want])
    assert wrapped[:4] == ["/usr/bin/python3", "-I", "-S", "-c"] and wrapped[-len(words):] == words
    assert json.loads(wrapped[5]) == [want]


# ---------------------------------------------------------------- the renderer and the final check

def _tree(tmp_path, data_mode=0o755):
    root = str(tmp_path / "m")
    for rel in ("runtime", "venv/lib", "executors/ex", "data/w", "data/r", "outside", "py/bin"):
        os.makedirs(os.path.join(root, rel))
    os.chmod(root + "/data", data_mode)
    return root, host_dict(root, writable_roots=[root + "/data"])


def _render(host, caps, status=ACTIVE):
    return renderer.render_safe({"name": "ex", "origin": "t", "capabilities": caps}, host_context.HostContext(host), {},
                                status)


@pytest.mark.rule("R-SEC-1")
def test_movable_sources_are_bound_by_descriptor_with_fixed_numbers(tmp_path):
    root, host = _tree(tmp_path, 0o777)
    prof = _render(host, ["fs:read:%s/data/r" % root, "fs:write:%s/data/w" % root])
    assert prof["decision"] == "wrapped", prof["diagnostics"]
    argv = prof["argv"]
    assert argv[argv.index(root + "/data/r") - 2:][:3] == ["--ro-bind-fd", "100", root + "/data/r"]
    assert argv[argv.index(root + "/data/w") - 2:][:3] == ["--bind-fd", "101", root + "/data/w"]
    assert [(d["fd"], d["path"], d["ino"]) for d in prof["descriptors"]] == [
        (100, root + "/data/r", os.lstat(root + "/data/r").st_ino),
        (101, root + "/data/w", os.lstat(root + "/data/w").st_ino)]
    assert _render(host, ["fs:read:%s/data/r" % root, "fs:write:%s/data/w" % root])["argv"] == argv
    os.chmod(root + "/data", 0o755)
    assert "--ro-bind-fd" not in _render(host, ["fs:read:%s/data/r" % root])["argv"]      # only root can move it


@pytest.mark.rule("R-SEC-1")
def test_without_descriptor_binds_a_movable_source_is_refused(tmp_path, monkeypatch):
    root, host = _tree(tmp_path, 0o777)
    monkeypatch.setattr(bwrap, "help_features", lambda path: frozenset(["--bind", "--ro-bind"]))
    prof = _render(host, ["fs:read:%s/data/r" % root])
    assert prof["refusal"] == "bind_source_unstable" and "no --bind-fd" in prof["diagnostics"][0]["message"]
    monkeypatch.setattr(bwrap, "help_features", lambda path: None)
    assert "unknown" in _render(host, ["fs:read:%s/data/r" % root])["diagnostics"][0]["message"]
    assert _render(host, [])["decision"] == "wrapped"            # nothing movable: no descriptor needed


@pytest.mark.rule("R-CAP-FS")
def test_writes_only_inside_the_writable_roots(tmp_path):
    root, host = _tree(tmp_path)
    assert _render(host, ["fs:write:%s/data/w" % root])["decision"] == "wrapped"
    prof = _render(host, ["fs:write:%s/outside" % root])
    assert prof["refusal"] == "scope_outside_writable_roots"
    assert root + "/data" in prof["diagnostics"][0]["message"]           # the refusal names the roots
    assert _render(dict(host, writable_roots=[]), ["fs:write:%s/data/w" % root])["refusal"] == \
        "scope_outside_writable_roots"
    assert _render(host, ["fs:read:%s/outside" % root])["decision"] == "wrapped"


@pytest.mark.rule("R-BASE-4")
def test_the_interpreter_installation_and_bwrap_folder_are_read_only(tmp_path):
    root, host = _tree(tmp_path)
    host = dict(host, writable_roots=[root], python_installation=[root + "/py"])
    assert _render(host, ["fs:write:%s/py/bin" % root])["refusal"] == "scope_too_broad"
    os.symlink("/usr/bin/bwrap", root + "/data/bwrap")
    own_bwrap = dict(ACTIVE, bwrap_path=root + "/data/bwrap")           # the folder as found and resolved
    prof = _render(host, ["fs:write:%s/data/w" % root], own_bwrap)
    assert prof["refusal"] == "scope_too_broad" and "bwrap binary's folder" in prof["diagnostics"][0]["message"]
    found = python_roots.discover_python("/usr/bin/python3", bwrap.default_runner)
    assert os.path.dirname(os.path.realpath("/usr/bin/python3")) in found.installation and found.roots


@pytest.mark.rule("R-BASE-2")
def test_pseudo_filesystems_from_the_mount_table(tmp_path, monkeypatch):
    root, host = _tree(tmp_path)
    table = mounts.MountTable([(b"0:5", "/", "/", "ext4"), (b"0:99", "/", root + "/data/w/cg", "cgroup2")])
    monkeypatch.setattr(mounts.MountTable, "read", classmethod(lambda cls, path=None, limit=None: table))
    for scope in ("data/w", "data", "data/w/cg", "data/w/cg/x"):
        prof = _render(host, ["fs:write:%s/%s" % (root, scope)])
        assert prof["refusal"] == "scope_pseudo_filesystem", (scope, prof["diagnostics"])
    # a read grant above it binds the cgroup tree along: not a plain tree, refused as unjudged (issue 50)
    assert _render(host, ["fs:read:%s/data/w" % root])["refusal"] == "channel_filesystem_unjudged"
    assert _render(host, ["fs:write:%s/data/r" % root])["decision"] == "wrapped"


@pytest.mark.rule("R-BASE-4")
def test_host_context_grants_obey_the_file_rules(tmp_path):
    root, host = _tree(tmp_path)
    os.makedirs(root + "/creds/mail")
    with open(root + "/data/secret", "w") as handle:
        handle.write("s")
    os.link(root + "/data/secret", root + "/creds/mail/bob.json")
    prof = _render(host, ["mail:read:bob"])
    assert prof["refusal"] == "host_path_refused" and "hard links" in prof["diagnostics"][0]["message"]
    os.mkfifo(root + "/data/fifo")
    prof = _render(dict(host, resources={"f": root + "/data/fifo"}), ["metnos:read:f"])
    assert prof["refusal"] == "host_path_refused" and "FIFO" in prof["diagnostics"][0]["message"]


@pytest.mark.rule("R-FAIL-2")
def test_the_undo_brokers_files_have_one_name(tmp_path):
    folder = tmp_path / "undo_last_turn"
    folder.mkdir()
    (folder / "main.py").write_text("x")
    assert undo.executor_digest(str(folder), ["main.py"]).problem is None
    os.link(str(folder / "main.py"), str(tmp_path / "second"))
    assert "hard links" in undo.executor_digest(str(folder), ["main.py"]).problem


@pytest.mark.rule("R-ARG-1")
def test_dot_components_in_argument_values_are_refused(tmp_path):
    root, host = _tree(tmp_path)
    manifest = {"name": "ex", "origin": "t", "capabilities": ["fs:read:arg:p"],
                "arguments": {"p": {"within": [root + "/data/**"]}}}
    for value, want in (("r", "wrapped"), ("w/../r", "scope_not_normalized"), ("./r", "scope_not_normalized"),
                        ("r/", "scope_not_normalized"), ("w//x", "scope_not_normalized")):
        prof = renderer.render_safe(manifest, host_context.HostContext(host), {"arguments": {"p": value}}, ACTIVE)
        assert (prof["refusal"] or prof["decision"]) == want, (value, prof["diagnostics"])


@pytest.mark.rule("R-SCOPE-1")
def test_messages_are_valid_utf8_whatever_they_quote():
    diag = diagnostics.make("scope_symlink_refused", wording="symlink", fill={"access": "read-only", "path": "/x",
                                                                              "real": "/etc/\udcff", "problem": "p"},
                            field="f")
    json.dumps(diag).encode("utf-8")
    assert "\\udcff" in diag["message"]
    assert diagnostics.utf8_safe({"a\udcff": ["b\ud800", 1]}) == {"a\\udcff": ["b\\ud800", 1]}


@pytest.mark.rule("R-SEC-1")
def test_final_check_verifies_descriptors_against_the_host(tmp_path):
    root, host = _tree(tmp_path, 0o777)
    prof = _render(host, ["fs:read:%s/data/r" % root])
    ctx = host_context.HostContext(host)
    manifest = from_dict({"name": "ex", "origin": "t", "capabilities": ["fs:read:%s/data/r" % root]})
    own = root + "/executors/ex"
    assert invariants.check_invariants(prof["argv"], manifest, ctx, {}, own, prof["descriptors"]) == []
    os.rename(root + "/data/r", root + "/data/r.judged")
    os.mkdir(root + "/data/r")
    found = invariants.check_invariants(prof["argv"], manifest, ctx, {}, own, prof["descriptors"])
    assert any("not the object judged" in v for v in found), found
    assert stat.S_ISDIR(os.lstat(root + "/data/r").st_mode)


@pytest.mark.rule("R-DIAG-3")
def test_asking_a_hanging_interpreter_is_bounded(tmp_path):
    """The probe discovers the interpreter's roots and installation like every face; an interpreter that
    hangs (and leaves a child holding its pipes) is killed with its whole session, and nothing is found."""
    script = tmp_path / "python"
    token = "metnos-i19-%d" % os.getpid()
    script.write_text("#!/bin/sh\nexec -a %s sleep 60 &\nsleep 60\n" % token)
    os.chmod(str(script), 0o755)
    start = time.monotonic()
    found = python_roots.discover_python(str(script), bwrap.bounded_runner(1.0))
    assert (found.roots, found.installation) == ([], []) and time.monotonic() - start < 10
    assert subprocess.run(["pgrep", "-f", token], capture_output=True).returncode == 1     # nothing left behind
