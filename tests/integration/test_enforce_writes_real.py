"""metnos_service_env state=enforce (issue 49, items 2-5), faults planted for real as root and the module run
through ansible: a user made with useradd whose home is real, the user-scope drop-in folder a real symlink into
a root-only folder, a user unit linked to a root 0600 unit, a FIFO in place of the PATH file, a root service
whose ExecStart= runs a program the user owns. Each test has its canary (the same run without the fault does
write) and checks nothing landed where it must not.

Mutations run by hand (each made its test fail, then was restored):
- library/metnos_service_env.py ``_writer`` returning None (root writes in user scope): test_user_scope_*
  fails (the canary's files are root's, not the user's; the linked folder is refused with another code);
- enforce_write.check_readable returning at once: test_user_unit_linked_to_a_root_only_unit fails (the token
  lands in the user's drop-in);
- enforce_write.check_exec_lines returning at once: test_root_service_exec_of_a_users_program fails;
- enforce_write.check_exec_lines without its _check_scripts call: test_root_service_runs_a_users_script fails
  (the drop-in is written);
- enforce_write._check_command not judging the command a wrapper runs: test_root_service_attack_shapes_are_refused
  fails (``env -u /bin/true <user's program>`` refused by another check, not as enforce_exec_not_roots);
- files.read_regular without O_NONBLOCK: test_a_fifo_in_place_of_the_path_file hangs until its timeout;
- enforce_write.dropin_mode ignoring the unit file's mode, or the module comparing content only (not the
  mode): test_root_only_unit_text_stays_root_only_* fails.
"""
import json
import os
import shlex
import shutil
import subprocess
import tempfile

import pytest

from conftest import adhoc
from helpers import real_user

MODULE = "metnos.sandbox.metnos_service_env"
TOKEN = "metnos-canary-token-49"


@pytest.fixture
def tree():
    root = tempfile.mkdtemp(prefix="metnos-enforce-", dir="/var/tmp")
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root)


@pytest.fixture
def user(tree):
    """A real user (useradd) with a real home below ``tree``, removed afterwards (tests/helpers/real_user.py)."""
    with real_user.made("mew", home_below=tree) as made:
        yield made


def as_user(user, path, text=None, mode=0o644):
    """Make ``path`` (and its folders below the home) the user's, as the user would have."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if text is not None:
        with open(path, "w") as handle:
            handle.write(text)
        os.chmod(path, mode)
    current = path if text is not None else os.path.dirname(path)
    while current.startswith(user.home):
        os.lchown(current, user.uid, user.gid)
        current = os.path.dirname(current)


def user_args(user):
    return {"unit": "metnos.service", "scope": "user", "user": user.name, "mode": "disk", "state": "enforce",
            "daemon_reload": False}


def run(args, **kwargs):
    out, proc = adhoc("localhost", MODULE, args, timeout=120, **kwargs)
    return out


def test_user_scope_writes_as_the_user_and_never_through_its_link(tree, user):
    units = os.path.join(user.home, ".config/systemd/user")
    as_user(user, os.path.join(units, "metnos.service"), "[Service]\nExecStart=/bin/true\n")
    secret = os.path.join(tree, "root-only")
    os.makedirs(secret, 0o700)
    os.symlink(secret, os.path.join(units, "metnos.service.d"))
    as_user(user, os.path.join(units, "metnos.service.d"))
    out = run(user_args(user))
    # the link is refused when the drop-in folder is listed (attack report finding 7), before anything is written
    assert out["failed"] and out["code"] == "unit_file_link_refused", out
    assert os.path.join(units, "metnos.service.d") in out["msg"], out
    assert os.listdir(secret) == []
    # canary: the user's own folder gets the drop-in and the PATH file, written by the user
    os.unlink(os.path.join(units, "metnos.service.d"))
    out = run(user_args(user))
    assert out["changed"] and not out.get("failed"), out
    folder = os.path.join(units, "metnos.service.d")
    for name in ("zz-metnos-sandbox.conf", "zz-metnos-sandbox.env"):
        assert os.stat(os.path.join(folder, name)).st_uid == user.uid
    assert os.stat(folder).st_uid == user.uid
    # a second run changes nothing (idempotent), a changed file is backed up: the user's own file
    assert not run(user_args(user))["changed"]
    with open(os.path.join(folder, "zz-metnos-sandbox.env"), "a") as handle:
        handle.write("# edited\n")
    out = run(user_args(user))
    assert out["dropin"]["env_file_backup"] and os.stat(out["dropin"]["env_file_backup"]).st_uid == user.uid


def test_user_unit_linked_to_a_root_only_unit(tree, user):
    """The user's unit is a link to a root 0600 unit whose ExecStart= carries a token: enforce would copy the
    line (rewritten: env's METNOS_SANDBOX=0 dropped) into the user's 0644 drop-in. The link, in a folder the user
    controls, is never followed (base/safe_read.py): refused with unit_file_link_refused naming the link, its owner
    and the target's; no drop-in is written and the token is in no file the user can read."""
    units = os.path.join(user.home, ".config/systemd/user")
    hidden = os.path.join(tree, "root-units", "metnos.service")
    os.makedirs(os.path.dirname(hidden), 0o755)
    with open(hidden, "w") as handle:
        handle.write("[Service]\nExecStart=/usr/bin/env METNOS_SANDBOX=0 /bin/sleep %s\n" % TOKEN)
    os.chmod(hidden, 0o600)
    as_user(user, os.path.join(units, "x"))
    link = os.path.join(units, "metnos.service")
    os.symlink(hidden, link)
    os.lchown(link, user.uid, user.gid)
    out = run(user_args(user))
    assert out["failed"] and out["code"] == "unit_file_link_refused", out
    assert out["refused"]["path"] == link and out["refused"]["target_owner"].startswith("root "), out["refused"]
    assert TOKEN not in json.dumps(out)
    assert not os.path.exists(os.path.join(units, "metnos.service.d"))
    # canary: the same unit as the user's own regular file gets its line rewritten into the drop-in
    os.unlink(link)
    with open(hidden) as source, open(link, "w") as handle:
        handle.write(source.read())
    os.chown(link, user.uid, user.gid)
    out = run(user_args(user))
    assert out["changed"] and not out.get("failed"), out
    with open(os.path.join(units, "metnos.service.d", "zz-metnos-sandbox.conf")) as handle:
        assert "ExecStart=/usr/bin/env /bin/sleep %s" % TOKEN in handle.read()


def _system_unit(tree, text):
    path = os.path.join(tree, "etc/systemd/system/metnos.service")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def system_args(tree):
    return {"unit": "metnos.service", "mode": "disk", "root": tree, "state": "enforce", "daemon_reload": False}


def test_a_fifo_in_place_of_the_path_file(tree):
    _system_unit(tree, "[Service]\nExecStart=/bin/true\n")
    folder = os.path.join(tree, "etc/systemd/system/metnos.service.d")
    os.makedirs(folder)
    os.mkfifo(os.path.join(folder, "zz-metnos-sandbox.env"))
    out = run(system_args(tree))
    assert out["failed"] and out["code"] == "enforce_file_not_regular", out
    assert "a FIFO" in out["refused"]["reason"] and out["refused"]["owner"] == "root"
    assert sorted(os.listdir(folder)) == ["zz-metnos-sandbox.env"]
    # canary: with a regular file there, enforce writes both files
    os.unlink(os.path.join(folder, "zz-metnos-sandbox.env"))
    out = run(system_args(tree))
    assert out["changed"] and sorted(os.listdir(folder)) == ["zz-metnos-sandbox.conf", "zz-metnos-sandbox.env"]


def test_a_file_where_the_dropin_folder_is_expected(tree):
    _system_unit(tree, "[Service]\nExecStart=/bin/true\n")
    with open(os.path.join(tree, "etc/systemd/system/metnos.service.d"), "w") as handle:
        handle.write("not a folder\n")
    out = run(system_args(tree))
    assert out["failed"] and out["code"] == "enforce_path_not_a_folder", out
    assert "not a directory" in out["refused"]["reason"]


def test_root_service_exec_of_a_users_program(tree, user):
    """A root service (no User=) whose ExecStart= env-prefix enforce rewrites: the program it runs is the
    user's script. Root writing that line into the drop-in would run the user's code as root: refused,
    naming the script and its owner; nothing written."""
    os.makedirs(os.path.join(tree, "usr/bin"))
    shutil.copy("/usr/bin/env", os.path.join(tree, "usr/bin/env"))      # the image's own env(1): root's
    tool = os.path.join(user.home, "bin", "tool")
    as_user(user, tool, "#!/bin/sh\nexec /bin/sleep infinity\n", 0o755)
    _system_unit(tree, "[Service]\nExecStart=/usr/bin/env METNOS_SANDBOX=0 /%s\n" % os.path.relpath(tool, tree))
    folder = os.path.join(tree, "etc/systemd/system/metnos.service.d")
    out = run(system_args(tree))
    assert out["failed"] and out["code"] == "enforce_exec_not_roots", out
    assert out["refused"]["owner"] == user.name and out["refused"]["path"].startswith(user.home), out
    assert out["refused"]["fix"].startswith("chown -h root:root ")
    assert not os.path.exists(folder)
    # canary: the same line with a program only root can change is written
    shutil.copy("/bin/sleep", os.path.join(tree, "usr/bin/sleep"))
    _system_unit(tree, "[Service]\nExecStart=/usr/bin/env METNOS_SANDBOX=0 /usr/bin/sleep infinity\n")
    out = run(system_args(tree))
    assert out["changed"] and not out.get("failed"), out


def test_root_service_runs_a_users_script(tree, user):
    """A root service whose ExecStart= gives root's own interpreter (the image's /bin/sh and env(1), root's) a
    script the user owns: root writing that line would run the user's script as root at the next start. Refused
    with enforce_script_not_roots, naming the script and its owner, nothing written. Canaries: the same line with
    root's script is written; ``python3 -I -c`` with root's script's path as text is written too (attack2
    finding 5: a user's path anywhere in a root-run line is refused, enforce_exec_word_not_roots, so the old
    canary with the user's path as ``-c``'s text is refused now, asserted below). (A shell's line that sets
    METNOS_SANDBOX is not rewritten by enforce at all, so python3 it is.)"""
    for name in ("usr/bin/env", "usr/bin/python3"):
        os.makedirs(os.path.dirname(os.path.join(tree, name)), exist_ok=True)
        shutil.copy("/" + name, os.path.join(tree, name))
    script = os.path.join(user.home, "run.py")
    as_user(user, script, "import time\ntime.sleep(3600)\n", 0o644)
    relative = "/" + os.path.relpath(script, tree)
    folder = os.path.join(tree, "etc/systemd/system/metnos.service.d")
    _system_unit(tree, "[Service]\nExecStart=/usr/bin/env METNOS_SANDBOX=0 /usr/bin/python3 -u %s\n" % relative)
    out = run(system_args(tree))
    assert out["failed"] and out["code"] == "enforce_script_not_roots", out
    assert out["refused"]["owner"] == user.name and out["refused"]["path"] == script, out
    assert out["refused"]["fix"] == "chown -h root:root %s" % user.home, out     # the first component found
    assert not os.path.exists(folder)
    _system_unit(tree, "[Service]\nExecStart=/usr/bin/env METNOS_SANDBOX=0 /usr/bin/python3 -I -c 'import sys' %s\n"
                 % relative)
    out = run(system_args(tree))
    assert out["failed"] and out["code"] == "enforce_exec_word_not_roots", out
    roots = os.path.join(tree, "usr/bin/run.py")
    shutil.copy(script, roots)
    os.chown(roots, 0, 0)
    for line in ("/usr/bin/env METNOS_SANDBOX=0 /usr/bin/python3 -u /usr/bin/run.py",
                 "/usr/bin/env METNOS_SANDBOX=0 /usr/bin/python3 -I -c 'import sys' /usr/bin/run.py"):
        _system_unit(tree, "[Service]\nExecStart=%s\n" % line)
        out = run(system_args(tree))
        assert out["changed"] and not out.get("failed"), out


def test_root_only_unit_text_stays_root_only_in_a_system_dropin(tree):
    """A system unit 0600 (root-only) whose ExecStart= line enforce rewrites: the drop-in that carries the line
    (and its token) is 0600; the canary: the same unit readable by all gives a 0644 drop-in."""
    os.makedirs(os.path.join(tree, "usr/bin"))
    for program in ("env", "sleep"):
        shutil.copy("/usr/bin/" + program, os.path.join(tree, "usr/bin", program))
    _system_unit(tree, "[Service]\nUser=nobody\nExecStart=/usr/bin/env METNOS_SANDBOX=0 /usr/bin/sleep %s\n" % TOKEN)
    unit = os.path.join(tree, "etc/systemd/system/metnos.service")
    dropin = os.path.join(tree, "etc/systemd/system/metnos.service.d/zz-metnos-sandbox.conf")
    os.chmod(unit, 0o600)
    out = run(system_args(tree))
    assert out["changed"] and not out.get("failed"), out
    with open(dropin) as handle:
        assert TOKEN in handle.read()
    assert os.stat(dropin).st_mode & 0o777 == 0o600
    os.chmod(unit, 0o644)
    out = run(system_args(tree))
    assert out["changed"] and os.stat(dropin).st_mode & 0o777 == 0o644
    os.chmod(unit, 0o600)             # the same text, the unit closed again: the drop-in's mode follows
    out = run(system_args(tree))
    assert out["changed"] and os.stat(dropin).st_mode & 0o777 == 0o600
    assert not run(system_args(tree))["changed"]


# attack2 finding 5: shapes of a root-run ExecStart= that ran a user's file as root past the old deny-list.
# (the line, the refusal's code); {evil} is the user's program, {rc} the user's shell rc file, image paths.
ATTACK_SHAPES = [
    ("/usr/bin/env -u /bin/true {evil}", "enforce_exec_not_roots"),
    ("/bin/bash --rcfile {rc} -i /usr/local/bin/x.sh", "enforce_script_not_roots"),
    ("/usr/bin/env BASH_ENV={rc} /bin/bash /usr/local/bin/x.sh", "enforce_exec_env_refused"),
    ("/usr/bin/env -S{evil}", "enforce_exec_option_refused"),
    ("/usr/bin/env --split-string={evil}", "enforce_exec_option_refused"),
    ("/usr/bin/nice {evil}", "enforce_exec_not_roots"),
    ("/usr/bin/timeout 5 {evil}", "enforce_exec_not_roots"),
    ("/usr/bin/setpriv --reuid 0 {evil}", "enforce_exec_not_roots"),
    ("/bin/sh -c {evil}", "enforce_exec_word_not_roots"),
    ("/usr/bin/python3 -m evilmod", "enforce_exec_option_refused"),
]


def test_root_service_attack_shapes_are_refused(tree, user):
    """Each shape of attack2 finding 5 in a root service's ExecStart= that enforce writes into the drop-in
    (beside a line it rewrites), naming a real user's file: refused with its own code, nothing written, and the
    marker the user's code writes when it runs is absent. Canary that the shapes are real: the first three run by
    root on this host (the tree's paths) do run the user's code as uid 0 (the marker appears); and the line of a
    normal Metnos unit (root's env, python3 and script) is written."""
    for name in ("usr/bin/env", "usr/bin/python3", "usr/bin/nice", "usr/bin/timeout", "usr/bin/setpriv",
                 "bin/sh", "bin/bash", "bin/true", "usr/bin/sleep"):
        os.makedirs(os.path.dirname(os.path.join(tree, name)), exist_ok=True)
        shutil.copy("/" + name, os.path.join(tree, name))
    marker = os.path.join(tree, "ran-as-root")
    evil = os.path.join(user.home, "evil")
    rc = os.path.join(user.home, "rc")
    as_user(user, evil, "#!/bin/sh\nid -u > %s\n" % marker, 0o755)
    as_user(user, rc, "id -u > %s\n" % marker, 0o644)
    as_user(user, os.path.join(user.home, "evilmod.py"), "import os\nos.system('id -u > %s')\n" % marker, 0o644)
    noop = os.path.join(tree, "usr/local/bin/x.sh")
    os.makedirs(os.path.dirname(noop))
    with open(noop, "w") as handle:
        handle.write("true\n")
    image = {"evil": "/" + os.path.relpath(evil, tree), "rc": "/" + os.path.relpath(rc, tree)}
    host = {"evil": evil, "rc": rc}
    for shape in ATTACK_SHAPES[:3]:         # canary: the shape really runs the user's code as root
        line = shape[0]
        words = shlex.split(line.format(**host).replace("/usr/local/bin/x.sh", noop))
        subprocess.run(words, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=20, check=False)
        with open(marker) as handle:
            assert handle.read().strip() == "0", line
        os.unlink(marker)
    folder = os.path.join(tree, "etc/systemd/system/metnos.service.d")
    rewritten = "ExecStart=/usr/bin/env METNOS_SANDBOX=0 /usr/bin/sleep 1\n"
    for line, code in ATTACK_SHAPES:
        _system_unit(tree, "[Service]\nType=oneshot\nWorkingDirectory=/%s\n%sExecStart=%s\n"
                     % (os.path.relpath(user.home, tree), rewritten, line.format(**image)))
        out = run(system_args(tree))
        assert out["failed"] and out["code"] == code, (line, out)
        assert out["refused"]["path"] and out["refused"]["fix"], out
        if code in ("enforce_exec_not_roots", "enforce_script_not_roots", "enforce_exec_word_not_roots"):
            assert out["refused"]["owner"] == user.name, out
        assert not os.path.exists(folder) and not os.path.exists(marker), line
    # canary: a normal Metnos line (root's env, python3 and script) is written
    script = os.path.join(tree, "usr/local/bin/serve.py")
    with open(script, "w") as handle:
        handle.write("import time\n")
    _system_unit(tree, "[Service]\nType=oneshot\n%sExecStart=/usr/bin/env python3 -I /usr/local/bin/serve.py\n"
                 % rewritten)
    out = run(system_args(tree))
    assert out["changed"] and not out.get("failed"), out
    assert not os.path.exists(marker)
