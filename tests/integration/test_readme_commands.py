"""Every command the README marks runnable (a fenced ```sh block right after ``<!-- runnable -->``) runs as
written, in order, with bash -euo pipefail, in a fresh temporary folder outside the checkout, against the
tarball ``make collection`` builds (``make install-collection``).

Nothing makes it pass by accident: the blocks run with the venv's bin folder taken off PATH (a block that
says ``ansible-galaxy`` instead of the venv's path fails with "command not found"), with no ANSIBLE_* variable
of the checkout's make, from a folder outside the checkout (where the checkout's ansible.cfg cannot answer
"Nothing to do"), and the test then checks that the collection really landed in that folder."""
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import ROOT

MARK = re.compile(r"<!-- runnable -->\n```sh\n(.*?)```", re.S)


def runnable_blocks(text):
    return [block for block in MARK.findall(text)]


def user_path():
    venv_bins = {os.path.realpath(os.path.join(ROOT, ".venv", "bin"))}
    return ":".join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(":")
                    if p and os.path.realpath(p) not in venv_bins and not p.startswith(ROOT))


@pytest.fixture
def away():
    top = tempfile.mkdtemp(prefix="metnos-readme-")
    assert not os.path.realpath(top).startswith(os.path.realpath(ROOT) + os.sep)
    yield top
    shutil.rmtree(top, ignore_errors=True)


def run_blocks(blocks, top):
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV", "MAKE")))
    env.update(PATH=user_path(), METNOS=ROOT, HOME=top)
    for index, block in enumerate(blocks):
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=top, env=env, capture_output=True,
                              text=True, timeout=900)
        assert proc.returncode == 0, "README block %d failed (rc %d):\n%s\n--- stdout\n%s\n--- stderr\n%s" % (
            index + 1, proc.returncode, block, proc.stdout[-3000:], proc.stderr[-3000:])


def test_every_runnable_readme_block_runs_as_written(away):
    with open(os.path.join(ROOT, "README.md")) as handle:
        blocks = runnable_blocks(handle.read())
    assert len(blocks) >= 2, "the README marks no runnable blocks"
    run_blocks(blocks, away)
    installed = os.path.join(away, "my-project", "collections", "ansible_collections", "metnos", "sandbox")
    assert os.path.isfile(os.path.join(installed, "MANIFEST.json")), os.listdir(away)
    assert os.path.isfile(os.path.join(installed, "roles", "metnos_sandbox", "files", "metnos-sandbox-exec"))


def test_a_bare_tool_name_fails_without_the_venv(away):
    """What the README said before: ``ansible-galaxy`` unnamed is not found once the venv is off PATH."""
    with pytest.raises(AssertionError, match="command not found|rc 127"):
        run_blocks(["ansible-galaxy --version\n"], away)
