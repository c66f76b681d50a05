"""The bootstrap's stamp holds (issue 54 item 6): make puts $(VENV)/bin first on PATH, so from the second ``make``
call on, ``python3`` was the venv's own interpreter, the stamp's key (the interpreter's path and version, the
locks) changed, and pip ran again. A real venv (``python -m venv --without-pip``, nothing installed: the venv the
engineers share is never touched; ``--print-stamp`` installs nothing) made from the interpreter the bootstrap
picks, then put first on PATH as make does (the canary: python3 on that PATH is the venv's): the stamp the
bootstrap looks for is the same, and the interpreter it picks is not the venv's."""
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOOTSTRAP = os.path.join(ROOT, "scripts", "bootstrap.sh")


def stamp(venv, path, python=None):
    env = dict(os.environ, METNOS_VENV=venv, PATH=path)
    env.pop("METNOS_PYTHON", None)
    if python:
        env["METNOS_PYTHON"] = python
    proc = subprocess.run(["bash", BOOTSTRAP, "--print-stamp"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip(), proc.stderr.strip().rsplit(" ", 1)[-1]


def test_the_stamp_is_the_same_with_the_venv_first_on_path(tmp_path):
    venv = str(tmp_path / "venv")
    first, python = stamp(venv, os.environ["PATH"])
    subprocess.run([python, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    with_venv = os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"]
    second, picked = stamp(venv, with_venv)
    assert picked == python and second == first, (first, second, python, picked)
    assert shutil.which("python3", path=with_venv).startswith(venv + "/")     # the canary: make's PATH
    # the key is the installation's, whoever runs it: the venv's own python (METNOS_PYTHON) keys the same stamp
    assert stamp(venv, with_venv, python=os.path.join(venv, "bin", "python3"))[0] == first
