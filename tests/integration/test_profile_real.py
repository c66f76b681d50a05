"""Rendered argv run for real with bwrap on this host, as an unprivileged user, and checked
from inside by the probe payload: the command starts and sees exactly what the profile says.
Then deliberately weakened argvs, each caught by its own check (a probe that cannot fail is a
defect)."""
import os
import pwd
import shutil
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import payload, runners
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    host_context,
    manifest,
    renderer,
)
from helpers.fake_host import host_dict

NOBODY = pwd.getpwnam("nobody")
USER = {"name": "nobody", "uid": NOBODY.pw_uid, "gid": NOBODY.pw_gid}


@pytest.fixture(scope="module")
def tree():
    # Outside pytest's 0700 tmp dir so that `nobody` can reach the bind sources.
    root = tempfile.mkdtemp(prefix="metnos-real-", dir="/var/tmp")
    os.chmod(root, 0o755)
    for d in ["runtime", "executors/ex", "executors/other", "notes/sub", "reports", "integrations/cal",
              "integrations/other", "mail", "dialog/alice", "dialog/bob", "undo/t1", "undo/t2", "sheets"]:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for f in ["notes/a.md", "notes/sub/b.md", "mail/work.json", "mail/home.json", "executors/other/main.py"]:
        with open(os.path.join(root, f), "w") as handle:
            handle.write("x")
    for d in ["reports", "integrations/cal", "dialog/alice", "undo/t1", "sheets"]:
        os.chown(os.path.join(root, d), NOBODY.pw_uid, NOBODY.pw_gid)
    yield root
    shutil.rmtree(root)


def host(root):
    return host_context.HostContext(host_dict(root, python_prefix="/usr", python_package_roots=[], i18n_dbs=[],
                                   resources={"sheets": root + "/sheets"}, mail_credentials_dir=root + "/mail"))


CASES = {
    "strict": ([], {}),
    "notes_reader": (["fs:read:{r}/notes/**", "fs:write:{r}/reports"], {}),
    "narrowed_arg": (["fs:read:arg:path"], {"arguments": {"path": "sub/b.md"}}),
    "provider": (["provider:access:cal", "metnos:write:sheets"], {}),
    "mail": (["mail:read:work"], {}),
    "dialog_undo": (["dialog.user_input"], {"sender": "alice", "turn_id": "t1"}),
}


def render_case(root, name):
    caps, inv = CASES[name]
    data = {"name": "ex", "origin": "tests", "capabilities": [c.format(r=root) for c in caps],
            "arguments": {"path": {"within": [root + "/notes/**"]}}}
    if name == "dialog_undo":
        data["inverse"] = {"model": "restore_content"}
    prof = renderer.render(manifest.from_dict(data), host(root), inv)
    assert prof["decision"] == "wrapped", prof["diagnostics"]
    return prof


def probe(root, prof, argv=None):
    extra = [root + "/executors/other", root + "/integrations", root + "/mail", root + "/dialog",
             root + "/undo", root + "/notes", root + "/reports", root + "/sheets"]
    spec = payload.expectations(prof, extra_absent=extra)
    job = runners.RunSpec(argv=argv or prof["argv"], spec=spec, python="/usr/bin/python3")
    return spec, runners.run(job, user=USER)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_argv_runs_and_holds(tree, name):
    prof = render_case(tree, name)
    spec, verdict = probe(tree, prof)
    failed = [c for c in verdict["checks"] if not c["ok"]]
    assert verdict["passed"], (failed, verdict["stderr"], verdict["diagnostics"])
    assert verdict["observed_uid"] == NOBODY.pw_uid   # ran as the unprivileged user
    names = [c["name"] for c in verdict["checks"]]
    assert "parent_death_signal" in names and "no_pid_namespace" in names
    assert any(n.startswith("hidden:") for n in names)


def test_what_each_case_exposes(tree):
    _spec, v = probe(tree, render_case(tree, "mail"))
    hidden = [c["name"] for c in v["checks"] if c["name"].startswith("hidden:")]
    assert "hidden:%s/mail/home.json" % tree in hidden          # other account's credentials
    assert "hidden:%s/executors/other" % tree in hidden          # other executors' folders
    _spec, v = probe(tree, render_case(tree, "dialog_undo"))
    names = [c["name"] for c in v["checks"]]
    assert "writable:%s/dialog/alice" % tree in names and "hidden:%s/dialog/bob" % tree in names
    assert "writable:%s/undo/t1" % tree in names and "hidden:%s/undo/t2" % tree in names


def weaken(argv, drop=(), add=(), replace=None):
    out = [a for a in argv if a not in drop]
    if replace:
        i = out.index(replace[0])
        out[i:i + len(replace[0:1])] = [replace[1]]
    sep = out.index("--")
    return out[:sep] + list(add) + out[sep:]


@pytest.mark.parametrize("how,check", [
    ("drop_unshare_net", "net_namespace_private"),
    ("bind_home", "hidden:"),
    ("ro_made_writable", "read_only:%s/notes"),
    ("host_tmp", "fresh_tmpfs:/tmp"),
])
def test_weakened_profiles_are_caught(tree, how, check):
    """A capability profile (read + write grants) weakened; the strict profile's full matrix is in
    test_probe_matrix.py. A read-only bind made writable is caught by its mount flags although
    nobody may not write there (the old probe took that EACCES for proof)."""
    prof = render_case(tree, "notes_reader")
    argv = list(prof["argv"])
    if how == "drop_unshare_net":
        argv = weaken(argv, drop=["--unshare-net"])
    elif how == "bind_home":
        os.makedirs("/home", exist_ok=True)
        argv = weaken(argv, add=["--ro-bind", "/home", "/home", "--ro-bind", "/root", "/root"])
    elif how == "ro_made_writable":
        i = argv.index(tree + "/notes")
        assert argv[i - 1] == "--ro-bind"
        argv[i - 1] = "--bind"
    elif how == "host_tmp":
        i = argv.index("--tmpfs")
        argv[i:i + 2] = ["--bind", "/tmp", "/tmp"]
    _spec, verdict = probe(tree, prof, argv)
    assert verdict["passed"] is False, verdict
    failed = [c["name"] for c in verdict["checks"] if not c["ok"]]
    assert any(f.startswith(check.replace("%s", tree)) for f in failed), (failed, verdict["stderr"])
    codes = [d["code"] for d in verdict["diagnostics"]]
    assert set(codes) == {"probe_check_failed"}


def test_refused_write_is_not_proof(tree):
    """A writable grant the user cannot write to (EACCES) fails as not writable; a hidden path that
    only permissions hide (lstat EACCES) is 'not proven', never 'hidden'."""
    prof = render_case(tree, "notes_reader")
    os.chown(tree + "/reports", 0, 0)
    secret = tree + "/reports/private"
    os.makedirs(secret + "/inner", exist_ok=True)
    os.chmod(secret, 0o700)
    try:
        spec = payload.expectations(prof)
        spec["absent"] = [secret + "/inner"]
        verdict = runners.run(runners.RunSpec(argv=prof["argv"], spec=spec, python="/usr/bin/python3"), user=USER)
    finally:
        os.chown(tree + "/reports", NOBODY.pw_uid, NOBODY.pw_gid)
        shutil.rmtree(secret)
    checks = dict((c["name"], c) for c in verdict["checks"])
    assert checks["writable:%s/reports" % tree]["ok"] is False
    assert checks["writable:%s/reports" % tree]["observed"]["inside"] == "error:EACCES"
    hidden = checks["hidden:%s/inner" % secret]
    assert hidden["ok"] is False and "not proven: lstat gave error:EACCES" in hidden["observed"]["problems"]
    assert verdict["passed"] is False


def test_hanging_payload_is_killed_at_timeout(tree):
    """The payload's interpreter hangs (with a background child): the whole process group is killed.
    Its sleeps carry a duration no other process uses, so only this test's processes are counted."""
    import time
    import uuid

    from helpers import procs
    marker = "119.%012d" % (uuid.uuid4().int % 10 ** 12)
    hang = os.path.join(tree, "executors/ex/hang")
    with open(hang, "w") as handle:
        handle.write("#!/bin/sh\nsleep %s &\necho background=$! >&2\nsleep %s\n" % (marker, marker))
    os.chmod(hang, 0o755)
    prof = render_case(tree, "strict")
    start = time.time()
    verdict = runners.run(runners.RunSpec(argv=prof["argv"], spec=payload.expectations(prof), python=hang, timeout=2),
                          user=USER)
    assert time.time() - start < 15
    assert verdict["passed"] is False and verdict["timed_out"] is True
    # the fake interpreter's background sleeps ran beside the payload: each is found (issue 20), then killed
    codes = [d["code"] for d in verdict["diagnostics"]]
    assert codes[0] == "probe_timeout" and set(codes[1:]) == {"probe_process_unaccounted"}, codes
    assert "background=" in verdict["stderr"], verdict["stderr"]      # the background child was running
    left = procs.left_after(marker)
    assert left == [], "processes left behind: %s" % left
