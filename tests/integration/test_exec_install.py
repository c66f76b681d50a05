"""metnos-sandbox-exec ships with the collection and the metnos_sandbox role installs it on the host
(roles/metnos_sandbox/tasks/exec.yml): from the collection installed out of the built tarball, the launcher, the
one file of the core it runs (descriptors.py) and release.json, root's, the launcher 0755, a link on PATH;
check mode writes nothing, a second run changes nothing, ``--version`` prints the release and the sha256 the
role reported, and metnos_sandbox_exec=false removes it all. The launcher runs the core of its own folder: the
checkout is never on its path."""
import hashlib
import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import owners
from helpers import installed_collection, real_user


def recap(output):
    match = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", output)
    assert match, output[-3000:]
    return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, match.groups())))


@pytest.fixture(scope="module")
def top():
    base = tempfile.mkdtemp(prefix="metnos-exec-install-", dir="/var/tmp")
    installed_collection.install(base)
    os.makedirs(os.path.join(base, "sbin"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def test_the_role_installs_the_shipped_launcher_and_removes_it(top):
    prefix, link = os.path.join(top, "lib", "metnos-sandbox-exec"), os.path.join(top, "sbin", "metnos-sandbox-exec")
    collection = os.path.join(top, "collections", "ansible_collections", "metnos", "sandbox")
    shipped_core = os.path.join(collection, "plugins", "module_utils", "metnos_sandbox", "profile", "descriptors.py")
    shipped_launcher = os.path.join(collection, "roles", "metnos_sandbox", "files", "metnos-sandbox-exec")

    check = installed_collection.run_exec_role(top, prefix, link, check=True)
    assert check.returncode == 0, check.stdout[-4000:] + check.stderr[-2000:]
    assert recap(check.stdout)["changed"] >= 1 and not os.path.lexists(prefix) and not os.path.lexists(link)

    first = installed_collection.run_exec_role(top, prefix, link)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    assert sorted(os.listdir(prefix)) == ["descriptors.py", "metnos-sandbox-exec", "release.json"]
    for name, mode in (("", 0o755), ("descriptors.py", 0o644), ("release.json", 0o644), ("metnos-sandbox-exec", 0o755)):
        info = os.stat(os.path.join(prefix, name))
        assert (info.st_uid, info.st_gid, info.st_mode & 0o7777) == (0, 0, mode), name
    assert os.readlink(link) == os.path.join(prefix, "metnos-sandbox-exec")
    assert _sha256(os.path.join(prefix, "descriptors.py")) == _sha256(shipped_core)
    with open(os.path.join(prefix, "metnos-sandbox-exec")) as handle:
        shebang, rest = handle.read().split("\n", 1)
    with open(shipped_launcher) as handle:
        assert shebang == "#!/usr/bin/python3 -IS" and rest == handle.read().split("\n", 1)[1]
    with open(os.path.join(prefix, "release.json")) as handle:
        release = json.load(handle)
    assert release["sha256"] == _sha256(shipped_core) and release["version"] in first.stdout
    assert "sha256 %s" % release["sha256"] in first.stdout          # the role reports what it installed

    said = subprocess.run([link, "--version"], capture_output=True, text=True, cwd="/", env={"PATH": "/usr/bin:/bin"})
    assert said.returncode == 0 and said.stdout.strip() == "metnos-sandbox-exec %s core sha256 %s" % (
        release["version"], release["sha256"]), said.stdout + said.stderr
    usage = subprocess.run([link], capture_output=True, text=True, cwd="/", env={"PATH": "/usr/bin:/bin"})
    assert usage.returncode == 2 and "usage: metnos-sandbox-exec --profile" in usage.stderr

    again = installed_collection.run_exec_role(top, prefix, link)
    assert again.returncode == 0 and recap(again.stdout)["changed"] == 0, again.stdout[-4000:]
    check = installed_collection.run_exec_role(top, prefix, link, check=True)
    assert check.returncode == 0 and recap(check.stdout)["changed"] == 0, check.stdout[-4000:]

    gone = installed_collection.run_exec_role(top, prefix, link, present=False, check=True)
    assert gone.returncode == 0 and recap(gone.stdout)["changed"] == 1 and os.path.exists(link)
    gone = installed_collection.run_exec_role(top, prefix, link, present=False)
    assert gone.returncode == 0 and recap(gone.stdout)["changed"] == 1, gone.stdout[-4000:]
    assert not os.path.lexists(prefix) and not os.path.lexists(link)
    gone = installed_collection.run_exec_role(top, prefix, link, present=False)
    assert gone.returncode == 0 and recap(gone.stdout)["changed"] == 0


def test_the_launcher_runs_only_the_core_of_its_own_folder(top):
    """Copied out of the collection (as a checkout's scripts/ once held it), it refuses instead of finding a
    core elsewhere."""
    collection = os.path.join(top, "collections", "ansible_collections", "metnos", "sandbox")
    alone = os.path.join(top, "alone")
    os.makedirs(alone)
    shutil.copy(os.path.join(collection, "roles", "metnos_sandbox", "files", "metnos-sandbox-exec"), alone)
    proc = subprocess.run(["/usr/bin/python3", os.path.join(alone, "metnos-sandbox-exec"), "--version"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "descriptors.py is missing" in proc.stderr, proc.stderr


def test_the_links_folder_is_made_root_s_or_named(top):
    """A missing link folder is made (root's, 0755) and the link put in it; a link folder that is a file fails the
    role naming it and the variable to set (it used to fail without naming it). Canary: the link really lands in
    the folder made. Mutation: without the role's 'make the link's folder' task the first run fails."""
    prefix = os.path.join(top, "lib-linkdir", "metnos-sandbox-exec")
    link = os.path.join(top, "made", "sbin", "metnos-sandbox-exec")
    proc = installed_collection.run_exec_role(top, prefix, link, check=True)         # check mode makes nothing
    assert proc.returncode == 0 and not os.path.lexists(os.path.join(top, "made")), proc.stdout[-4000:]
    proc = installed_collection.run_exec_role(top, prefix, link)
    assert proc.returncode == 0, proc.stdout[-4000:]
    info = os.stat(os.path.dirname(link))
    assert (info.st_uid, info.st_mode & 0o7777) == (0, 0o755) and os.readlink(link) == prefix + "/metnos-sandbox-exec"
    with open(os.path.join(top, "afile"), "w") as handle:
        handle.write("not a folder\n")
    proc = installed_collection.run_exec_role(top, prefix, os.path.join(top, "afile", "metnos-sandbox-exec"))
    assert proc.returncode != 0 and "its folder %s/afile is not a folder" % top in proc.stdout, proc.stdout[-3000:]
    assert "metnos_sandbox_exec_link" in proc.stdout


def test_an_interpreter_someone_else_can_change_is_refused(top):
    """metnos_sandbox_exec_python owned by the user nobody (planted for real): the role fails naming it and its
    owner, and installs nothing there. Canary: /usr/bin/python3 installs (the first test)."""
    python = os.path.join(top, "users-python3")
    shutil.copy("/usr/bin/python3", python)
    nobody = pwd.getpwnam("nobody")
    os.chown(python, nobody.pw_uid, nobody.pw_gid)
    prefix = os.path.join(top, "lib-python", "metnos-sandbox-exec")
    proc = installed_collection.run_exec_role(top, prefix, os.path.join(top, "sbin", "metnos-sandbox-exec-py"),
                                              extra_vars={"metnos_sandbox_exec_python": python})
    assert proc.returncode != 0 and "%s is owned by nobody" % python in proc.stdout, proc.stdout[-3000:]
    assert not os.path.lexists(prefix + "/metnos-sandbox-exec")


def test_a_venv_someone_else_can_change_is_refused(top):
    """The interpreter's pyvenv.cfg (read by Python beside the unresolved path or one folder up, -I -S or not) and
    the ``home`` it names are part of the program (issue 49): planted for real with a user made here, the role
    refuses each with launcher_python_not_roots, naming the component and its owner, with the chown that fixes
    it, and installs nothing. Canary: the same venv with root's pyvenv.cfg and home passes the same judgement."""
    with real_user.made("msoexec") as user:
        planted = {}
        for case in ("config", "home", "clean"):
            venv = os.path.join(top, "venv-" + case)
            os.makedirs(os.path.join(venv, "bin"))
            os.symlink("/usr/bin/python3", os.path.join(venv, "bin", "python3"))
            config = os.path.join(venv, "pyvenv.cfg")
            home = "/usr/bin"
            if case == "home":
                home = os.path.join(top, "users-home", "bin")
                os.makedirs(home)
                os.chown(os.path.dirname(home), user.uid, user.gid)
            with open(config, "w") as handle:
                handle.write("home = %s\ninclude-system-site-packages = false\n" % home)
            if case == "config":
                os.chown(config, user.uid, user.gid)
            planted[case] = (os.path.join(venv, "bin", "python3"), config if case == "config" else
                             os.path.dirname(home))
        assert owners.python_problems(planted["clean"][0]) == []       # canary: the clean venv passes
        for case in ("config", "home"):
            python, component = planted[case]
            prefix = os.path.join(top, "lib-" + case, "metnos-sandbox-exec")
            proc = installed_collection.run_exec_role(top, prefix, os.path.join(top, "sbin", "exec-" + case),
                                                      extra_vars={"metnos_sandbox_exec_python": python})
            out = proc.stdout.replace("\n", " ")
            assert proc.returncode != 0 and "launcher_python_not_roots" in out, proc.stdout[-3000:]
            assert "%s is owned by %s" % (component, user.name) in out, proc.stdout[-3000:]
            assert "chown -h root:root %s" % component in out, proc.stdout[-3000:]
            assert not os.path.lexists(prefix)
