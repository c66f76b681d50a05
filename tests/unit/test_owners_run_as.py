"""base/owners.py (who can change what root runs) and base/run_as.py (run it as its owner, dropped), issue 49
item 2, against real files: a user made here with useradd (removed after), real symlinks, a FIFO, a real ELF and
a real #! script. Runs as root (the machine's and CI's test user); skipped otherwise."""
import os
import shutil
import stat
import subprocess
import sys

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import owners, run_as
from helpers import real_user

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd"), reason="needs root and useradd")


@pytest.fixture(scope="module")
def user():
    """A real user, made for this module and removed after (tests/helpers/real_user.py)."""
    with real_user.made("mso") as made:
        yield made


@pytest.fixture
def tree(tmp_path):
    """A root-owned folder 0755 (tmp_path's parents are root's and not writable by others)."""
    top = tmp_path / "top"
    top.mkdir()
    os.chmod(str(tmp_path), 0o755)
    os.chmod(str(top), 0o755)
    return top


def _script(path, body="#!/bin/sh\necho ran\n", mode=0o755):
    path.write_text(body)
    os.chmod(str(path), mode)
    return str(path)


def _reasons(path):
    return [(problem.path, problem.reason) for problem in owners.problems(path)]


def test_root_owned_program_and_its_interpreter_pass(tree):
    assert owners.problems(sys.executable) == [] or os.stat(sys.executable).st_uid != 0
    assert owners.problems("/bin/sh") == []
    assert owners.interpreter(os.path.realpath("/bin/sh")).startswith("/lib")       # the ELF loader, read
    program = _script(tree / "prog")
    assert owners.problems(program) == []                     # the canary below differs by one chown only


def test_user_owned_program_folder_link_and_interpreter_fail(tree, user):
    name, uid, gid = user.name, user.uid, user.gid
    program = _script(tree / "prog")
    os.chown(program, uid, gid)
    assert _reasons(program) == [(program, "owned")]
    found = owners.problems(program)
    assert owners.owner(found) == uid and found[0].owner_name == name
    assert found[0].fix == "chown -h root:root %s" % program
    # a folder of the user's on the way, the file itself root's
    folder = tree / "bin"
    folder.mkdir()
    os.chown(str(folder), uid, gid)
    inner = _script(folder / "bwrap")
    assert _reasons(inner) == [(str(folder), "owned")]
    # a root-owned link in a root folder to the user's file: the target judged
    os.symlink(inner, str(tree / "link"))
    assert _reasons(str(tree / "link")) == [(str(folder), "owned")]
    # a user-owned link (its own folder root's) to a root file: the link judged
    root_file = _script(tree / "rootprog")
    os.symlink(root_file, str(tree / "userlink"))
    os.lchown(str(tree / "userlink"), uid, gid)
    assert _reasons(str(tree / "userlink")) == [(str(tree / "userlink"), "owned")]
    # a root script whose #! interpreter is the user's
    interp = _script(folder / "python", "#!/bin/sh\n")
    wrapper = _script(tree / "wrapper", "#!%s -I\n" % interp)
    assert _reasons(wrapper) == [(str(folder), "owned")]


@pytest.mark.parametrize("mode,gid,reason", [(0o775, 100, "group_writable"), (0o757, 0, "world_writable")])
def test_writable_folder_fails(tree, mode, gid, reason):
    folder = tree / "w"
    folder.mkdir()
    os.chown(str(folder), 0, gid)
    os.chmod(str(folder), mode)
    program = _script(folder / "prog")
    found = owners.problems(program)
    assert [(p.path, p.reason) for p in found] == [(str(folder), reason)]
    assert owners.owner(found) is None                       # nobody to run it as: not run at all
    subprocess.run(found[0].fix, shell=True, check=True)     # the fix runs as pasted and heals it
    assert owners.problems(program) == []


# (setfacl arguments on a root 0755 folder holding the program, refused?) - the user is the one made here
ACL_CASES = [
    (["-m", "u:{user}:rwx"], True),                  # a named user may write (the mask lets it)
    (["-m", "g:{user}:rwx"], True),                  # a named group (the user's own) may write
    (["-d", "-m", "u:{user}:rwx"], True),            # the default ACL: what root's new entries there get
    (["-m", "u:{user}:r-x"], False),                 # canary: a named reader only
    (["-m", "u:root:rwx"], False),                   # root named: root's alone still
    (["-m", "u:{user}:rwx,m::r-x"], False),          # the mask takes the entry's write away
]


@pytest.mark.skipif(not shutil.which("setfacl"), reason="needs setfacl (the acl package: scripts/host-packages.sh)")
@pytest.mark.parametrize("args,refused", ACL_CASES)
def testacl_entries_are_judged_not_only_the_mask(tree, user, args, refused):
    """A POSIX ACL set for real with setfacl: the entries are read from the xattrs (no getfacl) and each named
    user or group that may write is a problem naming it, whatever the mode's group bits say; the fix
    (setfacl -b) runs as pasted and heals it. Mutation run by hand: change_reasons without its ACL test: the
    three refused cases fail."""
    folder = tree / "acl"
    folder.mkdir()
    os.chmod(str(folder), 0o755)
    program = _script(folder / "prog")
    subprocess.run(["setfacl"] + [word.format(user=user.name) for word in args] + [str(folder)], check=True)
    found = owners.problems(program)
    if not refused:
        assert found == [], found
        return
    assert [(p.path, p.reason) for p in found] == [(str(folder), "acl")], found
    assert user.name in found[0].owner_name and found[0].fix == "setfacl -b %s" % folder
    assert owners.owner(found) is None                       # nobody to run it as: not run at all
    subprocess.run(found[0].fix, shell=True, check=True)
    assert owners.problems(program) == []


def test_an_acl_that_cannot_be_parsed_is_a_problem(tree):
    """A malformed access ACL xattr cannot be planted (the kernel checks it); the parser is fed its bytes."""
    assert owners.acl_entries(b"\x02\x00\x00\x00" + b"\x01" * 7) is None
    assert owners.acl_entries(b"\x01\x00\x00\x00") is None
    assert owners.acl_entries(b"\x02\x00\x00\x00") == []


def test_sticky_world_writable_folder_passes_root_entries(tree):
    folder = tree / "sticky"
    folder.mkdir()
    os.chmod(str(folder), 0o1777)
    assert owners.problems(_script(folder / "prog")) == []


def test_missing_fifo_and_loop_are_unknown(tree):
    assert _reasons(str(tree / "absent")) == [(str(tree / "absent"), "unknown")]
    os.mkfifo(str(tree / "fifo"))
    assert _reasons(str(tree / "fifo")) == [(str(tree / "fifo"), "unknown")]
    assert owners.interpreter(str(tree / "fifo")) is None    # opened O_NONBLOCK: no wait
    os.symlink("b", str(tree / "a"))
    os.symlink("a", str(tree / "b"))
    assert ("unknown" in [reason for _path, reason in _reasons(str(tree / "a"))])
    assert _reasons("relative/bwrap") == [("relative/bwrap", "unknown")]
    by_env = _script(tree / "by-env", "#!/usr/bin/env python3\n")
    assert _reasons(by_env) == [(by_env, "unknown")]                 # the interpreter is found on a PATH


def test_run_as_drops_to_the_user(user, tmp_path):
    uid, gid = user.uid, user.gid
    ran = run_as.run(["sh", "-c", "id -u; id -g; grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status; env"],
                     uid, gid, env={"EXTRA": "1"})
    lines = run_as.text(ran.stdout).splitlines()
    assert ran.rc == 0 and lines[:2] == [str(uid), str(gid)]
    assert all(line.split()[1] == "0000000000000000" for line in lines[2:7])
    assert sorted(line.split("=")[0] for line in lines[7:]) == ["EXTRA", "LANG", "LANGUAGE", "LC_ALL", "PATH", "PWD"]
    with pytest.raises(ValueError):
        run_as.environment({"BAD NAME": "x"})


def test_run_as_bounds_time_and_output(user):
    uid, gid = user.uid, user.gid
    ran = run_as.run(["sh", "-c", "head -c 300000 /dev/zero; sleep 30"], uid, gid, timeout=1.5, limit=1000)
    assert (ran.rc, ran.timed_out, ran.truncated, len(ran.stdout)) == (124, True, True, 1000)
    # a child left behind holding the pipes does not keep the run alive
    ran = run_as.run(["sh", "-c", "sleep 30 & echo done"], uid, gid, timeout=20)
    assert (ran.rc, ran.stdout, ran.timed_out) == (0, b"done\n", False)
    assert run_as.run(["/nonexistent"], uid, gid).rc != 0
    assert run_as.command(["x"], 4000000, 4000000)[5] == "--clear-groups"
    assert run_as.command(["x"], uid, gid)[5] == "--init-groups"


def test_run_as_cannot_read_roots_file(user, tmp_path):
    uid, gid = user.uid, user.gid
    secret = tmp_path / "secret"
    secret.write_text("TOKEN\n")
    os.chmod(str(secret), stat.S_IRUSR)
    os.chmod(str(tmp_path), 0o755)
    ran = run_as.run(["cat", str(secret)], uid, gid)
    assert ran.rc != 0 and b"TOKEN" not in ran.stdout
    assert run_as.run(["cat", str(secret)], 0, 0).stdout == b"TOKEN\n"      # canary: root's own run reads it


def test_as_root_asks_only_when_this_process_is_root(tree, user, monkeypatch):
    """as_root(): what root must not run itself; another user (os.geteuid patched: the test runs as root) drops
    nothing and is asked nothing."""
    program = _script(tree / "prog")
    os.chown(program, user.uid, user.gid)
    assert [p.reason for p in owners.as_root(program)] == ["owned"]
    monkeypatch.setattr(os, "geteuid", lambda: user.uid)
    assert owners.as_root(program) == []


def _identity(_arg):
    return ("%s %s %s" % (os.getresuid(), os.getresgid(), sorted(os.getgroups()))).encode()


def _sleeps(seconds):
    import time
    time.sleep(seconds)
    return b"woke"


def test_call_drops_to_the_user_and_ends_at_its_deadline(user):
    """run_as.call, the drop for root's own code (enforce's user-scope job, the folders a user's interpreter
    names): the child has exactly the user's ids and the groups given, and a child that does not answer is
    killed at the deadline (b""), with the canary that the same child answers when given the time. Mutation run
    by hand: call's deadline set 100 s away: the 30 s sleeper answers (b"woke") and the test fails."""
    import time
    uid, gid = user.uid, user.gid
    assert run_as.call(uid, gid, _identity, None).decode() == "(%d, %d, %d) (%d, %d, %d) []" % (
        uid, uid, uid, gid, gid, gid)
    started = time.monotonic()
    assert run_as.call(uid, gid, _sleeps, 30, timeout=1.0) == b""
    assert time.monotonic() - started < 10
    assert run_as.call(uid, gid, _sleeps, 0.1, timeout=10.0) == b"woke"
