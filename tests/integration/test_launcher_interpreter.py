"""metnos-sandbox-exec, started by root, re-checks the interpreter it runs on before it loads its core (issue 49,
item 5: launcher_python_unsafe), planted for real: the shipped launcher and its core copied into a root 0755
folder (as the role installs them), run by root with interpreters a user made here with useradd (removed after)
can change - a venv whose pyvenv.cfg is the user's (Python read it at start), the user's own copy of the
interpreter, and a venv whose folder is a sticky 1777 one (anyone may create the pyvenv.cfg Python would read).
Each is refused with exit 2, the code, the component and its owner named, and the fix. Canary: the same venv
with root's pyvenv.cfg runs ``--version``.

Mutation run by hand: interpreter_unsafe returning None at once: every refused case fails (the launcher prints
its version)."""
import os
import shutil
import subprocess
import tempfile

import pytest

from helpers import real_user

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd"), reason="needs root and useradd")

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCHER = os.path.join(HERE, "roles", "metnos_sandbox", "files", "metnos-sandbox-exec")
CORE = os.path.join(HERE, "module_utils", "metnos_sandbox", "profile", "descriptors.py")

# (case, the component the refusal names, relative to the case's folder; None: the canary, which runs)
CASES = [
    ("users_pyvenv_cfg", "venv/pyvenv.cfg"),
    ("users_interpreter", "venv/bin/python3"),
    ("sticky_venv_folder", "venv/bin"),
    ("roots_venv", None),
]


@pytest.fixture(scope="module")
def installed():
    top = tempfile.mkdtemp(prefix="metnos-launcher-python-", dir="/var/tmp")
    os.chmod(top, 0o755)
    lib = os.path.join(top, "lib")
    os.makedirs(lib)
    shutil.copy(LAUNCHER, os.path.join(lib, "metnos-sandbox-exec"))
    shutil.copy(CORE, os.path.join(lib, "descriptors.py"))
    with open(os.path.join(lib, "release.json"), "w") as handle:
        handle.write('{"version": "test"}\n')
    with real_user.made("msolpy") as user:
        yield top, user
    shutil.rmtree(top, ignore_errors=True)


def _plant(folder, case, user):
    """The case's venv below ``folder``: bin/python3 (a link to the host's, or the user's copy) and pyvenv.cfg."""
    venv_bin = os.path.join(folder, "venv", "bin")
    os.makedirs(venv_bin)
    python = os.path.join(venv_bin, "python3")
    if case == "users_interpreter":
        shutil.copy("/usr/bin/python3", python)
        os.chown(python, user.uid, user.gid)
    else:
        os.symlink("/usr/bin/python3", python)
    config = os.path.join(folder, "venv", "pyvenv.cfg")
    with open(config, "w") as handle:
        handle.write("home = /usr/bin\ninclude-system-site-packages = false\n")
    if case == "users_pyvenv_cfg":
        os.chown(config, user.uid, user.gid)
    if case == "sticky_venv_folder":
        os.chmod(venv_bin, 0o1777)
    return python


@pytest.mark.parametrize("case,named", CASES)
def test_the_launcher_refuses_an_interpreter_root_does_not_own_alone(installed, case, named):
    top, user = installed
    folder = os.path.join(top, case)
    python = _plant(folder, case, user)
    proc = subprocess.run([python, "-IS", os.path.join(top, "lib", "metnos-sandbox-exec"), "--version"],
                          capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    if named is None:
        assert proc.returncode == 0 and proc.stdout.startswith("metnos-sandbox-exec test core sha256 "), proc
        return
    component = os.path.join(folder, named)
    assert proc.returncode == 2 and "launcher_python_unsafe" in proc.stderr, proc
    owner = user.name if case != "sticky_venv_folder" else "root"
    assert "and %s is owned by %s (uid " % (component, owner) in proc.stderr, proc.stderr
    assert "fix: chown root:root %s && chmod go-w %s" % (component, component) in proc.stderr, proc.stderr
    assert proc.stdout == ""
