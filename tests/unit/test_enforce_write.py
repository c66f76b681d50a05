"""enforce_write.check_exec_lines on real files: which ExecStart= lines of a drop-in run as root (the service's
uid, systemd's + and ! prefixes) and what they run (the command, env(1)'s program). The program is a real file
in a folder owned by ``nobody`` (chown), the canary a root-owned copy; cases as data.

Mutation run by hand: PRIVILEGED_PREFIXES = "" (a "+" line of a non-root service not judged): the "+" case
fails (no refusal)."""
import os
import pwd
import shutil
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import enforce_write

NOBODY = pwd.getpwnam("nobody").pw_uid


@pytest.fixture(scope="module")
def programs():
    root = tempfile.mkdtemp(prefix="metnos-exec-", dir="/var/tmp")
    os.chmod(root, 0o755)
    theirs = os.path.join(root, "theirs")
    os.makedirs(theirs)
    for folder in (root, theirs):
        shutil.copy("/bin/true", os.path.join(folder, "tool"))
    os.chown(theirs, NOBODY, -1)
    yield {"roots": os.path.join(root, "tool"), "theirs": os.path.join(theirs, "tool")}
    shutil.rmtree(root)


# (line template, service uid, refused?)
CASES = [
    ("ExecStart={theirs} --serve", 0, True),
    ("ExecStart={roots} --serve", 0, False),
    ("ExecStart=/usr/bin/env -i A=1 {theirs}", 0, True),
    ("ExecStart=/usr/bin/env A=1 {roots}", 0, False),
    ("ExecStart={theirs}", 1000, False),               # runs as the service's own user
    ("ExecStart=+{theirs}", 1000, True),               # "+": full privileges whatever User= says
    ("ExecStart=-!{theirs}", 1000, True),
    ("ExecStart={theirs}", None, True),                # an unknown user is judged as root
    ("ExecStart=/nonexistent/tool", 0, True),          # unknown is a failure
    ("ExecStart=env {theirs}", 0, True),               # a bare name resolved in systemd's search path
    ("ExecStart='unterminated", 0, True),
    ("ExecStart=", 0, False),                          # the reset line
]


@pytest.mark.parametrize("line,uid,refused", CASES)
def test_exec_lines_root_would_run(programs, line, uid, refused):
    text = line.format(**programs)
    if refused:
        with pytest.raises(enforce_write.EnforceRefused) as caught:
            enforce_write.check_exec_lines([text], uid)
        assert caught.value.code == "enforce_exec_not_roots"
        if "{theirs}" in line:
            assert caught.value.owner == "nobody" and caught.value.fix.startswith("chown -h root:root ")
    else:
        enforce_write.check_exec_lines([text], uid)
