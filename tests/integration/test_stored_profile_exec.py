"""What a stored profile can promise about a later run (docs/profile-invariants.md): sandbox_profile
writes <executor>.json/.args; metnos-sandbox-exec - as the metnos_sandbox role of the collection installed
from the built tarball puts it on this host (tests/helpers/installed_collection.py), never the checkout's
file - runs the .json for real as root and as nobody, opening its descriptors race-free; once a
descriptor-bound folder is replaced after rendering it refuses (bind_source_moved) and nothing runs;
the .args run as a plain argv stops at bwrap's setup
(the descriptor is not open) instead of mounting whatever the path now names."""
import json
import os
import pty
import shutil
import subprocess
import tempfile

import pytest

from conftest import run_module
from helpers import installed_collection
from helpers.fake_host import host_dict

MAIN = "import sys\nopen(sys.argv[1] if len(sys.argv) > 1 else '%s/data/w/out', 'w').write('ran')\n"


@pytest.fixture(scope="module")
def shipped():
    """The launcher installed by the role from the installed tarball, in a folder the user nobody can traverse."""
    top = tempfile.mkdtemp(prefix="metnos-exec-", dir="/var/tmp")
    os.chmod(top, 0o755)
    installed_collection.install(top)
    link = os.path.join(top, "sbin", "metnos-sandbox-exec")
    os.makedirs(os.path.dirname(link))
    proc = installed_collection.run_exec_role(top, os.path.join(top, "lib", "metnos-sandbox-exec"), link)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    yield link
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def stored():
    base = tempfile.mkdtemp(prefix="metnos-st-", dir="/var/tmp")
    os.chmod(base, 0o755)
    for rel in ("executors/ex", "data/w", "profiles"):
        os.makedirs(os.path.join(base, rel))
    os.chmod(base + "/data", 0o777)
    os.chmod(base + "/data/w", 0o777)
    with open(base + "/executors/ex/main.py", "w") as handle:
        handle.write(MAIN % base)
    host = host_dict(base, writable_roots=[base + "/data"], python_executable="/usr/bin/python3")
    res = run_module("metnos.sandbox.sandbox_profile", {"manifest": {"name": "ex", "origin": "t",
                                                      "capabilities": ["fs:write:%s/data/w" % base]},
                                         "host": host, "dest": base + "/profiles", "discover_python_roots": False})
    assert res["decision"] == "wrapped" and res["descriptors"], res.get("diagnostics")
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _exec(base, user, *argv, launcher=None):
    cmd = list(argv) or [launcher, "--profile", base + "/profiles/ex.json"]
    if user:
        cmd = ["setpriv", "--reuid=%s" % user, "--regid=nogroup", "--clear-groups"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


@pytest.mark.rule("R-SEC-1")
def test_a_stored_profile_runs_through_the_helper_and_only_on_the_objects_judged(stored, shipped):
    with open(stored + "/profiles/ex.json") as handle:
        doc = json.load(handle)
    assert [d["path"] for d in doc["descriptors"]] == [stored + "/data/w"]
    for user in (None, "nobody"):
        proc = _exec(stored, user, launcher=shipped)
        assert proc.returncode == 0, (user, proc.stderr)
        with open(stored + "/data/w/out") as handle:
            assert handle.read() == "ran"
        os.unlink(stored + "/data/w/out")
    with open(stored + "/profiles/ex.args") as handle:
        plain = handle.read().splitlines()
    proc = _exec(stored, None, *plain)               # the .args alone: the descriptor is not open
    assert proc.returncode != 0 and "/proc/self/fd/100" in proc.stderr, proc.stderr
    os.rename(stored + "/data/w", stored + "/data/w.judged")
    os.mkdir(stored + "/data/w")                      # another folder where the judged one was
    os.chmod(stored + "/data/w", 0o777)
    for user in (None, "nobody"):
        proc = _exec(stored, user, launcher=shipped)
        assert proc.returncode == 1 and "bind_source_moved" in proc.stderr, (user, proc.stderr)
        assert os.listdir(stored + "/data/w") == [] and os.listdir(stored + "/data/w.judged") == []


TIOCSTI_MAIN = """import fcntl, termios
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"#")
    said = "typed into the terminal"
except OSError as exc:
    said = "refused %%d" %% exc.errno
open('%s/data/w/out', 'w').write(said)
"""


def test_a_stored_profile_run_from_a_terminal_cannot_type_into_it(stored, shipped):
    """Planted: an admin's shell on a pty runs metnos-sandbox-exec as a job (a process-group leader, the pty its
    controlling terminal), and the executor pushes a character into that terminal with TIOCSTI - what the shell
    would read and run as root once bwrap exits (CVE-2017-5226; the spec's argv has no --new-session). The
    launcher leaves the terminal first (a session of its own), so the ioctl is refused, and the launcher exits
    as the sandbox did (mutation: without leave_terminal() the character is typed)."""
    legacy = "/proc/sys/dev/tty/legacy_tiocsti"
    if os.path.exists(legacy) and open(legacy).read().strip() == "0":
        pytest.skip("this kernel refuses TIOCSTI to every process (dev.tty.legacy_tiocsti=0)")
    with open(stored + "/executors/ex/main.py", "w") as handle:
        handle.write(TIOCSTI_MAIN % stored)
    pid, terminal = pty.fork()
    if pid == 0:                               # pragma: no cover - the session leader, as a login shell
        try:
            job = os.fork()
            if job == 0:
                os.setpgid(0, 0)
                os.execv(shipped, [shipped, "--profile", stored + "/profiles/ex.json"])
            _done, status = os.waitpid(job, 0)
            os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 99)
        finally:
            os._exit(98)
    seen = b""
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:                        # EIO: the terminal's last user is gone
            break
        if not chunk:
            break
        seen += chunk
    _done, status = os.waitpid(pid, 0)
    os.close(terminal)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, seen)
    with open(stored + "/data/w/out") as handle:
        assert handle.read().startswith("refused"), seen
