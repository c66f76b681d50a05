"""PATH lookup, --help feature parsing, json-status parsing and binary facts (real files)."""
import os
import shutil
import stat
import subprocess
import uuid

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import (
    bwrap,
    bwrap_errors,
    bwrap_run,
    facts,
    package_owner,
)
from helpers import procs

HELP_080 = """usage: bwrap [OPTIONS...] [--] COMMAND [ARGS...]

    --help                       Print this help
    --version                    Print version
    --args FD                    Parse NUL-separated args from FD
    --unshare-all                Unshare every namespace we support by default
    --unshare-user               Create new user namespace (may be automatically implied if not setuid)
    --unshare-user-try           Create new user namespace if possible else continue by skipping it
    --unshare-ipc                Create new ipc namespace
    --unshare-net                Create new network namespace
    --unshare-uts                Create new uts namespace
    --die-with-parent            Kills with SIGKILL child process (COMMAND) when bwrap or bwrap's parent dies.
    --json-status-fd FD          Write container status to FD as multiple JSON documents
"""


def test_parse_features_from_help_text():
    feats = bwrap.parse_features(HELP_080)
    assert "--unshare-user" in feats and "--json-status-fd" in feats
    assert "--disable-userns" not in feats
    assert "--ro-bind" in bwrap.missing_features(feats)


def test_parse_features_real_binary(bwrap_path):
    out = subprocess.run([bwrap_path, "--help"], capture_output=True, text=True).stdout
    feats = bwrap.parse_features(out)
    assert bwrap.missing_features(feats) == []
    assert "--bind-fd" in feats  # Debian 12's 0.8.0 backport: why --version is not trusted


def test_parse_version():
    assert bwrap.parse_version("bubblewrap 0.8.0\n") == "0.8.0"
    assert bwrap.parse_version("bubblewrap 0.12.0") == "0.12.0"
    assert bwrap.version_tuple("0.12.0") > bwrap.version_tuple("0.8.0")
    assert bwrap.parse_version("garbage") is None


def test_which_follows_execvp_order_and_flags_relative(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    fake = tmp_path / "b" / "bwrap"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    path = "%s:%s" % (tmp_path / "a", tmp_path / "b")
    assert bwrap.which("bwrap", path) == str(fake)
    assert bwrap.which("bwrap", "/nonexistent") is None
    # an empty entry is the current directory, as for execvp
    assert bwrap.which("bwrap", ":/nonexistent", cwd=str(tmp_path / "b")) == str(fake)
    assert [e["index"] for e in bwrap.unsafe_entries(":/usr/bin:.:bin")] == [0, 2, 3]


def test_which_resolves_dotdot_after_a_symlink_as_execvp_does(tmp_path):
    """Planted: PATH entry <tmp>/link/../bin, where link points to <tmp>/real/sub. The kernel resolves '..' after
    the link, so execvp runs <tmp>/real/bin/bwrap; the lexical parent would be <tmp>/bin/bwrap, a look-alike
    planted there. which() names the file execvp really runs (asked here by running it; mutation: resolving
    the entry with normpath alone names the look-alike)."""
    for where, said in (("real/bin", "kernel"), ("bin", "lexical")):
        (tmp_path / where).mkdir(parents=True)
        fake = tmp_path / where / "bwrap"
        fake.write_text("#!/bin/sh\necho %s\n" % said)
        fake.chmod(0o755)
    (tmp_path / "real" / "sub").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real" / "sub")
    path = "%s/link/../bin" % tmp_path
    ran = subprocess.run(["bwrap"], env={"PATH": path}, capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "kernel"
    assert bwrap.which("bwrap", path) == str(tmp_path / "real" / "bin" / "bwrap")
    assert bwrap.which("bwrap", "%s/real/./bin//" % tmp_path) == str(tmp_path / "real" / "bin" / "bwrap")


def test_which_skips_non_executable(tmp_path):
    f = tmp_path / "bwrap"
    f.write_text("x")
    f.chmod(0o644)
    assert bwrap.which("bwrap", str(tmp_path)) is None


def test_json_status_stream():
    data = b'{ "child-pid": 5, "mnt-namespace": 1 }\n{ "exit-code": 7 }\n'
    assert bwrap_run.parse_json_status(data) == {"child-pid": 5, "mnt-namespace": 1, "exit-code": 7}
    assert "exit-code" not in bwrap_run.parse_json_status(b'{ "child-pid": 5 }')


def test_setup_failure_told_apart_from_payload_failure(bwrap_path):
    """Real bwrap: a bad bind is a setup failure, `exit 7` is a payload failure."""
    setup = bwrap_run.run_bwrap([bwrap_path, "--ro-bind", "/nonexistent", "/", "--json-status-fd",
                         "{status_fd}", "true"])
    assert setup["rc"] == 1 and setup["setup_failed"]
    assert bwrap_errors.classify(setup["stderr"], 1)["cause"] == "source_missing"
    payload = bwrap_run.run_bwrap([bwrap_path, "--ro-bind", "/", "/", "--json-status-fd", "{status_fd}",
                           "sh", "-c", "exit 7"])
    assert payload["rc"] == 7 and not payload["setup_failed"]
    assert payload["json_status"]["exit-code"] == 7


def test_timeout_kills_process_group(bwrap_path):
    res = bwrap_run.run_bwrap([bwrap_path, "--ro-bind", "/", "/", "--json-status-fd", "{status_fd}",
                       "sh", "-c", "sleep 30 & sleep 30"], timeout=1.0)
    assert res["timed_out"] and not res["setup_failed"]
    assert res["duration"] < 10


def test_leftover_holding_the_pipes_is_killed_not_waited_for():
    """The started process exits leaving a process of its group that holds its stdout and stderr (a
    look-alike's decoy, a background child): the run ends a moment later, without waiting for the timeout,
    and the leftover is killed. (Plain sh, no bwrap: this is the reader's behaviour.)"""
    marker = "299.%012d" % (uuid.uuid4().int % 10 ** 12)
    res = bwrap_run.run_bwrap(["sh", "-c", "(sleep %s; :) & echo said" % marker], status_fd=False, timeout=60)
    assert res["rc"] == 0 and res["timed_out"] is False and res["left_behind"] is True
    assert res["stdout"] == "said\n"
    assert procs.left_after(marker) == []


def test_payload_still_running_is_waited_for_until_it_reports():
    """The started process exits before the payload it left running has reported (a look-alike that does not
    wait for its command): the handshake is not cut short - the payload reports, is let go, and nothing
    is killed."""
    seen = []

    def watch(data, _pid):
        if b"REPORT" in data["stdout"]:
            seen.append(True)
        return bool(seen)

    script = "exec 3<&0; (sleep %s; echo REPORT; read line <&3) & exit 0" % (bwrap_run.LINGER + 0.5)
    res = bwrap_run.run_bwrap(["sh", "-c", script], status_fd=False, timeout=60, watch=watch)
    assert seen and res["stdout"] == "REPORT\n"
    assert res["timed_out"] is False and res["left_behind"] is False


def test_setuid_copy_is_reported(tmp_path, bwrap_path):
    """A real setuid copy of bwrap (F5) and a copy owned by a normal user."""
    tmp_path.chmod(0o755)
    copy = tmp_path / "bwrap"
    shutil.copy(bwrap_path, copy)
    os.chmod(copy, 0o4755)
    info = bwrap.file_facts(str(copy))
    assert info["setuid"] is True and info["mode"] == "4755"
    diags = facts.binary_diagnostics(dict(info, version="0.12.0", missing_features=[], package={}))
    codes = [d["code"] for d in diags]
    assert "bwrap_setuid" in codes and "bwrap_not_packaged" in codes
    assert "refuses setuid" in [d for d in diags if d["code"] == "bwrap_setuid"][0]["message"]
    os.chown(copy, 65534, 65534)
    os.chmod(copy, 0o775)
    codes = [d["code"] for d in facts.binary_diagnostics(dict(bwrap.file_facts(str(copy)), version="0.8.0",
                                                              missing_features=[], package={}))]
    assert "bwrap_not_root_owned" in codes


def test_world_writable_parent_is_reported(tmp_path, bwrap_path):
    tmp_path.chmod(0o777)
    copy = tmp_path / "bwrap"
    shutil.copy(bwrap_path, copy)
    problems = bwrap.file_facts(str(copy))["ownership_problems"]
    assert any("writable by group or others" in p for p in problems)
    assert stat.S_IMODE(os.stat(tmp_path).st_mode) == 0o777


def test_package_facts_real(bwrap_path):
    """On whatever distro runs the tests (Debian here; a Fedora or Arch laptop too): the answer
    must equal what that package manager itself says about the package."""
    pkg = package_owner.package_facts(bwrap_path)
    assert pkg["manager"] in ("dpkg", "rpm", "pacman") and pkg["name"] and pkg["revision"]
    own = {"dpkg": ["dpkg-query", "-W", "-f=${Version}", pkg["name"]],
           "rpm": ["rpm", "-q", "--qf", "%{EPOCHNUM}:%{VERSION}-%{RELEASE}", pkg["name"]],
           "pacman": ["pacman", "-Q", pkg["name"]]}[pkg["manager"]]
    said = subprocess.run(own, capture_output=True, text=True, env=dict(os.environ, LC_ALL="C")).stdout.strip()
    said = said.split()[-1] if pkg["manager"] == "pacman" else said
    assert pkg["revision"] == (said[2:] if said.startswith("0:") else said)
