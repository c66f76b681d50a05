"""The interpreter root runs is more than its file (attack report findings 1 and 6), planted for real: a user
made here with useradd (removed after) writes a ``pyvenv.cfg`` whose ``home =`` leads Python to a standard
library the user owns, whose ``encodings`` package (imported by every Python at start, ``-I -S`` or not) leaves
a marker named by the uid that ran it. Proven from outside: after root asks the interpreter
(python_roots.discover_python, what sandbox_profile runs), no marker of uid 0.

- A sticky folder (1777, root's) holding a root bin/python -> /usr/bin/python3: the user creates pyvenv.cfg
  one folder above the link (owners.problems passes it: the sticky folder is accepted on the way).
- A root-owned ``--copies`` venv whose root-owned pyvenv.cfg names a user-owned install as ``home``.
- owner() on a root-owned 0777 (not sticky) folder holding the user's wrapper: no one user to run it as.

Each with its canary (the same interpreter run by root directly leaves a uid-0 marker; the 0755 folder gives
the owner). Mutations run by hand (each made tests below fail): base/owners.py python_problems without its
_venv_problems call (the sticky and the --copies tests failed); owner() back to ignoring every reason but
``owned``/``unknown`` (the sticky test and the 0777 case failed)."""
import os
import shutil
import subprocess

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import owners
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import python_roots
from conftest import run_module
from helpers import real_user

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd"), reason="needs root and useradd")

SYSTEM_PYTHON = os.path.realpath("/usr/bin/python3")
STDLIB = os.path.basename(SYSTEM_PYTHON)          # python3.11 on Debian 12: the stdlib folder it looks for
ENCODINGS = ("import posix\n"
             "posix.close(posix.open(%r + '/enc.%%d.%%d' %% (posix.getuid(), posix.getpid()), "
             "posix.O_WRONLY | posix.O_CREAT, 0o644))\n")


class VenvPlant(real_user.Plant):
    """The test's tree (real_user.Plant: root's 0755 under /var/tmp, a markers folder everyone may write) and the
    user, who can be given an install of its own."""

    def evil_install(self, folder):
        """A user-owned install: ``folder``/bin, and lib/pythonX.Y with the landmark os.py and the marker's
        encodings package (made as the user, as the attacker would)."""
        package = os.path.join(folder, "lib", STDLIB, "encodings")
        os.makedirs(package)
        os.makedirs(os.path.join(folder, "bin"))
        open(os.path.join(folder, "lib", STDLIB, "os.py"), "w").close()
        with open(os.path.join(package, "__init__.py"), "w") as handle:
            handle.write(ENCODINGS % self.marks)
        subprocess.run(["chown", "-R", "%d:%d" % (self.uid, self.gid), folder], check=True)
        return os.path.join(folder, "bin")


@pytest.fixture(scope="module")
def plant():
    with real_user.planted("msv", "metnos-venvcfg-", VenvPlant) as made:
        yield made


@pytest.fixture
def fresh(plant):
    plant.clear()
    yield plant
    plant.clear()


def _as_user(plant, argv):
    subprocess.run(["setpriv", "--reuid", str(plant.uid), "--regid", str(plant.gid), "--clear-groups"] + argv,
                   check=True)


def _sticky_plant(plant):
    """Variant A: top/sticky (1777, root's), sticky/bin (root's 0755) with python -> /usr/bin/python3; the user
    makes sticky/evil and sticky/pyvenv.cfg naming it."""
    sticky = plant.path("sticky")
    os.makedirs(os.path.join(sticky, "bin"))
    os.chmod(sticky, 0o1777)
    python = os.path.join(sticky, "bin", "python")
    os.symlink(SYSTEM_PYTHON, python)
    home = plant.evil_install(os.path.join(sticky, "evil"))
    config = os.path.join(sticky, "pyvenv.cfg")
    _as_user(plant, ["sh", "-c", 'printf "home = %s\\n" "$1" > "$2"', "sh", home, config])
    return python


def test_a_pyvenv_cfg_in_a_sticky_folder_never_runs_as_root(fresh):
    python = _sticky_plant(fresh)
    try:
        subprocess.run([python, "-I", "-S", "-c", "pass"], check=False, capture_output=True)
        assert fresh.marks_of() == {0: 1}, "canary: root running it directly ran the user's encodings"
        fresh.clear()
        assert owners.problems(python) == [], "the old judgement passed it"
        reasons = {(p.path, p.reason) for p in owners.python_problems(python)}
        assert (fresh.path("sticky"), "world_writable") in reasons, reasons
        assert (fresh.path("sticky", "pyvenv.cfg"), "owned") in reasons, reasons
        found = python_roots.discover_python(python, bwrap.default_runner)
        assert found.ran_as == -1 and found.problems
        rendered = run_module("metnos.sandbox.sandbox_profile", {
            "dest": None, "fail_on_refusal": False, "host": {"python_executable": python},
            "manifest": {"name": "editor", "origin": "tests", "capabilities": []}})
        assert "profile_python_not_run" in {d["code"] for d in rendered["diagnostics"]}, rendered
        assert fresh.marks_of() == {}
    finally:
        shutil.rmtree(fresh.path("sticky"))


def test_a_root_venv_whose_home_is_the_users_runs_as_the_user_not_root(fresh):
    venv = fresh.path("copies")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--copies", "--without-pip", venv], check=True)
    python = os.path.join(venv, "bin", "python3")
    try:
        assert python_roots.discover_python(python, bwrap.default_runner).ran_as == 0, "canary: a plain root venv"
        assert owners.python_problems(python) == []
        home = fresh.evil_install(fresh.path("install"))
        with open(os.path.join(venv, "pyvenv.cfg")) as handle:
            lines = [line for line in handle if not line.startswith("home")]
        with open(os.path.join(venv, "pyvenv.cfg"), "w") as handle:
            handle.write("home = %s\n" % home + "".join(lines))
        subprocess.run([python, "-I", "-S", "-c", "pass"], check=False, capture_output=True)
        assert fresh.marks_of() == {0: 1}, "canary: root running it directly ran the user's encodings"
        fresh.clear()
        assert owners.problems(python) == [], "the old judgement passed it"
        assert {p.uid for p in owners.python_problems(python)} == {fresh.uid}
        found = python_roots.discover_python(python, bwrap.default_runner)
        assert found.ran_as == fresh.uid
        assert fresh.marks_of() == {fresh.uid: 1}
    finally:
        shutil.rmtree(venv)
        shutil.rmtree(fresh.path("install"), ignore_errors=True)


@pytest.mark.parametrize("mode, owner_expected", [(0o755, True), (0o777, False)])
def test_owner_is_none_when_a_folder_others_can_write_stands_beside_owned(fresh, mode, owner_expected):
    """A root-owned folder holding the user's wrapper: 0755 (canary) gives the user; 0777 (not sticky) gives no
    one (a third user could swap the folder while root runs it by path), and nothing runs."""
    folder = fresh.path("open")
    os.mkdir(folder)
    os.chmod(folder, mode)
    script = os.path.join(folder, "python3")
    with open(script, "w") as handle:
        handle.write('#!/bin/sh\n: > %s/enc.$(id -u).$$\nexec /usr/bin/python3 "$@"\n' % fresh.marks)
    os.chmod(script, 0o755)
    os.chown(script, fresh.uid, fresh.gid)
    try:
        found = owners.problems(script)
        assert {p.reason for p in found} == ({"owned"} if owner_expected else {"owned", "world_writable"})
        assert owners.owner(found) == (fresh.uid if owner_expected else None)
        ran = python_roots.discover_python(script, bwrap.default_runner)
        assert ran.ran_as == (fresh.uid if owner_expected else -1)
        assert fresh.marks_of() == ({fresh.uid: 1} if owner_expected else {})
    finally:
        shutil.rmtree(folder)
