"""sandbox_profile through Ansible on localhost: every example, check/diff, hostile input."""
import glob
import json
import os
import subprocess

import pytest

from conftest import ROOT, ansible_env, ansible_tool, run_module

EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "manifests", "*.yml")))
HOST = {"python_executable": "/usr/bin/python3"}


@pytest.mark.parametrize("path", EXAMPLES, ids=[os.path.basename(p) for p in EXAMPLES])
def test_renders_every_example(path, tmp_path):
    res = run_module("metnos.sandbox.sandbox_profile", {"manifest_file": path, "host": HOST, "dest": str(tmp_path),
                                         "invocation": {"sender": "alice", "turn_id": "t1"},
                                         "fail_on_refusal": False})
    assert not res["failed"], res
    if os.path.basename(path) == "undo_last_turn.yml":
        assert res["decision"] == "refused" and res["refusal"] == "undo_exception_mismatch"
        return
    assert res["decision"] == "wrapped" and res["argv"][0].endswith("bwrap")
    assert res["changed"] is True
    name = res["executor"]
    with open(tmp_path / (name + ".args")) as handle:
        assert handle.read().splitlines() == res["argv"]
    again = run_module("metnos.sandbox.sandbox_profile", {"manifest_file": path, "host": HOST, "dest": str(tmp_path),
                                           "invocation": {"sender": "alice", "turn_id": "t1"}})
    assert again["changed"] is False


def test_undo_exception_pinned_runs_direct(tmp_path):
    """Issue 10 changed this test deliberately: the pinned exception now also needs the revision, and
    its digest is computed from the broker's files on disk (the manifest's own digest is not trusted
    alone), so the test plants the broker's files and pins the digest of those bytes."""
    import yaml

    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import undo
    broker = tmp_path / "executors" / "undo_last_turn"
    broker.mkdir(parents=True)
    (broker / "main.py").write_text("import restore\n")
    (broker / "restore.py").write_text("def undo():\n    pass\n")
    digest, problem = undo.executor_digest(str(broker), ["main.py", "restore.py"])
    assert problem is None
    with open(os.path.join(ROOT, "examples/manifests/undo_last_turn.yml")) as handle:
        manifest = dict(yaml.safe_load(handle), digest=digest)
    pinned = {"name": "undo_last_turn", "origin": "metnos/core", "owner": "metnos", "revision": 12,
              "capability": "system:undo", "files": ["main.py", "restore.py"], "digest": digest}
    host = dict(HOST, undo_exception=pinned, executors_dir=str(tmp_path / "executors"))
    res = run_module("metnos.sandbox.sandbox_profile", {"manifest": manifest, "host": host, "path": "/nonexistent"})
    assert res["decision"] == "direct" and "bwrap" not in res["argv"][0]
    (broker / "restore.py").write_text("def undo():\n    import os; os.system('id')\n")   # same manifest, new bytes
    res = run_module("metnos.sandbox.sandbox_profile", {"manifest": manifest, "host": host, "path": "/nonexistent"})
    assert res["failed"] and res["refusal"] == "undo_exception_mismatch" and "computed from" in res["msg"]


def test_check_diff_shows_mount_changes_and_writes_nothing(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    dest = tmp_path / "profiles"
    base = {"name": "editor", "origin": "tests", "capabilities": ["fs:read:%s/**" % data]}
    first = run_module("metnos.sandbox.sandbox_profile", {"manifest": base, "host": HOST, "dest": str(dest)})
    assert first["changed"] and (dest / "editor.args").exists()
    before = (dest / "editor.args").read_text()
    mtime = (dest / "editor.args").stat().st_mtime_ns
    edited = dict(base, capabilities=["fs:write:%s/**" % data, "net:http"])
    host = dict(HOST, writable_roots=[str(data)])         # the admin allows writes there
    res = run_module("metnos.sandbox.sandbox_profile", {"manifest": edited, "host": host, "dest": str(dest)},
                     check=True)
    assert res["changed"] is True
    # What a reviewer sees with --check --diff (the callback prints the diff as a unified diff):
    shown = subprocess.run([ansible_tool("ansible"), "localhost", "-m", "metnos.sandbox.sandbox_profile",
                            "--check", "--diff", "-a",
                            json.dumps({"manifest": edited, "host": host, "dest": str(dest)})],
                           capture_output=True, text=True, cwd=ROOT, env=ansible_env()).stdout
    assert "-%s\n" % "--unshare-net" in shown
    assert "--ro-bind\n" in shown and "+--bind\n" in shown
    assert "-ro      %s  [R-CAP-FS]" % data in shown and "+rw      %s  [R-CAP-FS]" % data in shown
    assert "+network: host (net:http)" in shown
    assert (dest / "editor.args").read_text() == before
    assert (dest / "editor.args").stat().st_mtime_ns == mtime
    assert sorted(os.listdir(dest)) == ["editor.args", "editor.json"]   # no temp files left


def test_check_mode_new_dest_creates_nothing(tmp_path):
    dest = tmp_path / "new"
    res = run_module("metnos.sandbox.sandbox_profile",
                     {"manifest": {"name": "x", "origin": "o"}, "host": HOST, "dest": str(dest)},
                     check=True)
    assert res["changed"] is True and not dest.exists()


@pytest.mark.parametrize("manifest,code", [
    ({"name": "h1", "origin": "o", "capabilities": ["fs:write:/**"]}, "scope_too_broad"),
    ({"name": "h2", "origin": "o", "capabilities": ["fs:read:arg:p"], "arguments": {"p": {"within": ["/srv/x/**"]}}},
     "arg_escapes_scope"),
    ({"name": "h3", "origin": "o", "capabilities": ["fs:exec:/bin"]}, "capability_unknown"),
    ("name: h4\norigin: o\ncapabilities: [\"fs:read:/caf\\xe9\"]\n", None),
])
def test_hostile_manifests_refused_with_distinct_codes(manifest, code, tmp_path):
    args = {"manifest": manifest, "host": HOST, "invocation": {"arguments": {"p": "../../etc"}}}
    res = run_module("metnos.sandbox.sandbox_profile", args)
    if code is None:   # non-ASCII but valid UTF-8 text is fine: no crash either way
        assert "Traceback" not in str(res)
        return
    assert res["failed"] and res["decision"] == "refused" and res["refusal"] == code
    assert code in res["msg"] and "Traceback" not in str(res)


def test_symlink_out_of_scope_refused(tmp_path):
    scope = tmp_path / "scope"
    scope.mkdir()
    (scope / "escape").symlink_to("/etc")
    m = {"name": "h5", "origin": "o", "capabilities": ["fs:read:arg:p"],
         "arguments": {"p": {"within": [str(scope) + "/**"]}}}
    res = run_module("metnos.sandbox.sandbox_profile", {"manifest": m, "host": HOST,
                                         "invocation": {"arguments": {"p": "escape/passwd"}}})
    assert res["failed"] and res["refusal"] == "arg_symlink_escapes"


def test_non_utf8_manifest_file_refused(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_bytes(b"name: x\norigin: \xff\xfe\n")
    res = run_module("metnos.sandbox.sandbox_profile", {"manifest_file": str(bad), "host": HOST})
    assert res["failed"] and res["refusal"] == "manifest_not_utf8" and "Traceback" not in str(res)


def test_fail_closed_without_bwrap(tmp_path):
    res = run_module("metnos.sandbox.sandbox_profile", {"manifest": {"name": "x", "origin": "o"}, "host": HOST,
                                         "path": "/nonexistent", "dest": str(tmp_path)})
    assert res["failed"] and res["refusal"] == "executor_os_sandbox_unavailable"
    assert os.listdir(tmp_path) == []
    res = run_module("metnos.sandbox.sandbox_profile", {"manifest": {"name": "x", "origin": "o"}, "host": HOST,
                                         "environment": {"METNOS_SANDBOX": "off"}})
    assert res["refusal"] == "executor_os_sandbox_unavailable"


def test_bad_host_context_option():
    res = run_module("metnos.sandbox.sandbox_profile", {"manifest": {"name": "x", "origin": "o"},
                                                        "host": {"runtime_dri": "/x"}})
    assert res["failed"] and "runtime_dri" in res["msg"] and "Traceback" not in str(res)
