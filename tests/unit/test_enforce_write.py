"""enforce_write.check_exec_lines on real files: which ExecStart= lines of a drop-in run as root (the service's
uid, systemd's + and ! prefixes) and what they run (the command, env(1)'s program, the script a known interpreter
is given: enforce_script_not_roots). The program and the script are real files in a folder owned by ``nobody``
(chown), the canary a root-owned copy; cases as data.

Mutations run by hand: PRIVILEGED_PREFIXES = "" (a "+" line of a non-root service not judged): the "+" case
fails (no refusal); check_exec_lines without its _check_scripts call: every enforce_script_not_roots case fails."""
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
        with open(os.path.join(folder, "run.py"), "w") as handle:
            handle.write("print('ran')\n")
    os.chown(theirs, NOBODY, -1)
    yield {"roots": os.path.join(root, "tool"), "theirs": os.path.join(theirs, "tool"),
           "roots_script": os.path.join(root, "run.py"), "theirs_script": os.path.join(theirs, "run.py")}
    shutil.rmtree(root)


PROGRAM, SCRIPT = "enforce_exec_not_roots", "enforce_script_not_roots"
# (line template, service uid, the refusal's code or None)
CASES = [
    ("ExecStart={theirs} --serve", 0, PROGRAM),
    ("ExecStart={roots} --serve", 0, None),
    ("ExecStart=/usr/bin/env -i A=1 {theirs}", 0, PROGRAM),
    ("ExecStart=/usr/bin/env A=1 {roots}", 0, None),
    ("ExecStart={theirs}", 1000, None),               # runs as the service's own user
    ("ExecStart=+{theirs}", 1000, PROGRAM),               # "+": full privileges whatever User= says
    ("ExecStart=-!{theirs}", 1000, PROGRAM),
    ("ExecStart={theirs}", None, PROGRAM),                # an unknown user is judged as root
    ("ExecStart=/nonexistent/tool", 0, PROGRAM),          # unknown is a failure
    ("ExecStart=env {theirs}", 0, PROGRAM),               # a bare name resolved in systemd's search path
    ("ExecStart='unterminated", 0, PROGRAM),
    ("ExecStart=", 0, None),                          # the reset line
    ("ExecStart=/usr/bin/python3 {theirs_script}", 0, SCRIPT),
    ("ExecStart=/usr/bin/python3 -I -W ignore {theirs_script} --serve", 0, SCRIPT),
    ("ExecStart=/bin/sh {theirs_script}", 0, SCRIPT),
    ("ExecStart=/bin/bash -e -- {theirs_script}", 0, SCRIPT),
    ("ExecStart=/usr/bin/env A=1 python3 -u {theirs_script}", 0, SCRIPT),
    ("ExecStart=+/usr/bin/python3 {theirs_script}", 1000, SCRIPT),
    ("ExecStart=/usr/bin/python3 run.py", 0, SCRIPT),                # relative: the working directory, unknown
    ("ExecStart=/usr/bin/python3 {roots_script}", 0, None),           # canary: root's script
    ("ExecStart=/usr/bin/python3 {theirs_script}", 1000, None),       # runs as the service's own user
    ("ExecStart=/bin/bash -c 'exec {theirs_script}'", 0, None),       # -c: the code is data, judged nowhere
    ("ExecStart=/bin/sh -ec 'echo {theirs_script}'", 0, None),
    ("ExecStart=/usr/bin/python3 -m http.server", 0, None),
    ("ExecStart={roots} {theirs_script}", 0, None),                   # not an interpreter: an argument
]


@pytest.mark.parametrize("line,uid,refused", CASES)
def test_exec_lines_root_would_run(programs, line, uid, refused):
    text = line.format(**programs)
    if refused:
        with pytest.raises(enforce_write.EnforceRefused) as caught:
            enforce_write.check_exec_lines([text], uid)
        assert caught.value.code == refused
        if "{theirs" in line:
            assert caught.value.owner == "nobody" and caught.value.fix.startswith("chown -h root:root ")
    else:
        enforce_write.check_exec_lines([text], uid)
