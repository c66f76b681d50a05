"""enforce_write.check_exec_lines on real files: which ExecStart= lines of a drop-in run as root (the service's
uid, systemd's + and ! prefixes) and what they run (the command, env(1)'s program, the script a known interpreter
is given: enforce_script_not_roots). The program and the script are real files in a folder owned by ``nobody``
(chown), the canary a root-owned copy; cases as data.

Mutations run by hand: PRIVILEGED_PREFIXES = "" (a "+" line of a non-root service not judged): the "+" case
fails (no refusal); check_exec_lines without its _check_scripts call: every enforce_script_not_roots case fails.
Attack2 finding 5 (deny by default), each run and restored: _check_word returning at once (7 cases fail);
UNSAFE_VARIABLE never matched (6); a wrapper's command not judged (11); an unknown option taken as a flag (4); a
"file" option's argument not judged (9); python always isolated (3); UNMODELLED ignored (2); "refused" options
let through (4); relative paths let through (2); a path not there judged without who may create it (1); env's
PATH with a relative folder let through (1); SHELL_EXPANDS never matching (6)."""
import os
import pwd
import shutil
import subprocess
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
    for name in ("ruby", "node", "sudo"):              # root's programs under these names: their options modelled
        shutil.copy("/bin/true", os.path.join(root, name))
    os.chown(theirs, NOBODY, -1)
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", os.path.join(root, "venv")], check=True)
    yield {"roots": os.path.join(root, "tool"), "theirs": os.path.join(theirs, "tool"), "bin": root,
           "theirs_dir": theirs, "venv": os.path.join(root, "venv", "bin", "python"),
           "roots_script": os.path.join(root, "run.py"), "theirs_script": os.path.join(theirs, "run.py")}
    shutil.rmtree(root)


PROGRAM, SCRIPT, WORD = "enforce_exec_not_roots", "enforce_script_not_roots", "enforce_exec_word_not_roots"
ENV, OPTION, UNKNOWN = "enforce_exec_env_refused", "enforce_exec_option_refused", "enforce_exec_option_unknown"
WRAPPER, RELATIVE = "enforce_exec_wrapper_refused", "enforce_exec_relative_path"
OWNED = (PROGRAM, SCRIPT, WORD)        # refusals of a path: they name its owner and the chown
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
    # attack2 finding 5: fail closed. Inline code is data, but every absolute path in any word is judged.
    ("ExecStart=/bin/bash -c 'exec {theirs_script}'", 0, WORD),
    ("ExecStart=/bin/sh -ec 'echo {theirs_script}'", 0, WORD),
    ("ExecStart=/bin/sh -c {theirs}", 0, WORD),
    ("ExecStart=/bin/sh -c 'exec {roots}'", 0, None),                 # canary: root's program in the code
    ("ExecStart=/bin/sh -c 'exec ~nobody/x'", 0, OPTION),             # words the shell builds: not seen
    ("ExecStart=/bin/sh -c 'p=/var; exec $p/tmp/x'", 0, OPTION),
    ("ExecStart=/bin/bash -ec 'exec `echo x`'", 0, OPTION),
    ("ExecStart=/bin/sh -c 'cd /usr && ./x'", 0, OPTION),
    ("ExecStart=/bin/sh -c '. /etc/profile; exec {roots}'", 0, OPTION),
    ("ExecStart=/bin/sh -c 'exec /usr/bin/tru*'", 0, OPTION),
    ("ExecStart=/bin/sh -c 'sleep 1 && exec {roots} --serve'", 0, None),
    ("ExecStart={roots} {theirs_script}", 0, WORD),                   # not an interpreter: its argument judged
    ("ExecStart={roots} --log={theirs_dir}/new.log", 0, WORD),        # not there yet: its folder is theirs
    ("ExecStart={roots} --pid=/run/x-not-there.pid", 0, None),        # canary: root's folder
    ("ExecStart={roots} --tmp=/tmp/metnos-not-there", 0, WORD),       # not there: anyone may create it in /tmp
    ("ExecStart={roots} /dev/null", 0, None),                         # a data device, written, never run
    ("ExecStart=/usr/bin/env -i PATH=/usr/sbin:/usr/bin {roots}", 0, None),
    ("ExecStart=/usr/bin/env PATH=/usr/bin:{theirs_dir} {roots}", 0, WORD),
    ("ExecStart=/usr/bin/env PATH=bin:/usr/bin {roots}", 0, ENV),
    ("ExecStart={roots} ./x", 0, RELATIVE),
    ("ExecStart={roots} --config=../x", 0, RELATIVE),
    # python: -m and -c search the working directory first unless isolated
    ("ExecStart=/usr/bin/python3 -m http.server", 0, OPTION),
    ("ExecStart=/usr/bin/python3 -m evilmod", 0, OPTION),
    ("ExecStart=/usr/bin/python3 -I -m http.server", 0, None),
    ("ExecStart=/usr/bin/python3 -c 'print(1)'", 0, OPTION),
    ("ExecStart=/usr/bin/python3 -Ic 'print(1)'", 0, None),
    ("ExecStart=/usr/bin/python3 -Z {roots_script}", 0, UNKNOWN),
    ("ExecStart=/usr/bin/python3 -I -Wignore {roots_script} --serve", 0, None),
    ("ExecStart=/usr/bin/env python3 -I {roots_script}", 0, None),
    ("ExecStart={venv} -I -B {roots_script} --config /etc/hosts", 0, None),   # a Metnos unit: root's venv
    ("ExecStart={venv} {roots_script}", 0, None),
    ("ExecStart={venv} -m http.server", 0, OPTION),
    # wrappers modelled: options parsed, the wrapped command judged
    ("ExecStart=/usr/bin/env -u /bin/true {theirs}", 0, PROGRAM),
    ("ExecStart=/usr/bin/env -u/bin/true {theirs}", 0, PROGRAM),
    ("ExecStart=/usr/bin/env --unset=X {theirs}", 0, PROGRAM),
    ("ExecStart=/usr/bin/env -S{theirs}", 0, OPTION),
    ("ExecStart=/usr/bin/env --split-string={theirs}", 0, OPTION),
    ("ExecStart=/usr/bin/env -S'{roots} x'", 0, OPTION),
    ("ExecStart=/usr/bin/nice {theirs}", 0, PROGRAM),
    ("ExecStart=/usr/bin/timeout 5 {theirs}", 0, PROGRAM),
    ("ExecStart=/usr/bin/setpriv --reuid 0 {theirs}", 0, PROGRAM),
    ("ExecStart=/usr/bin/chrt -o 0 /usr/bin/ionice -c 3 /usr/bin/stdbuf -oL nohup setsid {theirs}", 0, PROGRAM),
    ("ExecStart=/usr/bin/chrt -o 0 /usr/bin/ionice -c 3 /usr/bin/stdbuf -oL nohup setsid {roots}", 0, None),
    ("ExecStart=/usr/bin/nice -n 5 /usr/bin/timeout -s TERM 5 /usr/bin/env -i A=1 {roots}", 0, None),
    ("ExecStart=/usr/bin/timeout --bogus 5 {roots}", 0, UNKNOWN),
    ("ExecStart=/usr/bin/nice -n", 0, UNKNOWN),
    ("ExecStart=/usr/bin/nice -10 {roots}", 0, UNKNOWN),
    ("ExecStart={bin}/sudo {roots}", 0, WRAPPER),
    ("ExecStart=/usr/bin/env xargs {roots}", 0, WRAPPER),
    # env(1) assignments that load code
    ("ExecStart=/usr/bin/env BASH_ENV={roots_script} /bin/bash {roots_script}", 0, ENV),
    ("ExecStart=/usr/bin/env ENV=/x /bin/sh {roots_script}", 0, ENV),
    ("ExecStart=/usr/bin/env PYTHONPATH=/usr/lib /usr/bin/python3 {roots_script}", 0, ENV),
    ("ExecStart=/usr/bin/env LD_PRELOAD=/lib/x.so {roots}", 0, ENV),
    ("ExecStart=/usr/bin/env PERL5OPT=-Mx RUBYOPT=x NODE_OPTIONS=x {roots}", 0, ENV),
    ("ExecStart=/usr/bin/env PATH={theirs_dir} tool", 0, ENV),
    ("ExecStart=/usr/bin/env LANG=C.UTF-8 {roots}", 0, None),
    # interpreters' options that load code from a file, a folder or a module
    ("ExecStart=/bin/bash --rcfile {theirs_script} -i {roots_script}", 0, SCRIPT),
    ("ExecStart=/bin/bash --init-file={theirs_script} {roots_script}", 0, SCRIPT),
    ("ExecStart=/bin/bash --rcfile rc -i {roots_script}", 0, SCRIPT),
    ("ExecStart=/bin/bash --rcfile {roots_script} -i {roots_script}", 0, None),
    ("ExecStart=/usr/bin/perl -I{theirs_dir} -Mstrict {roots_script}", 0, SCRIPT),
    ("ExecStart=/usr/bin/perl -I {theirs_dir} {roots_script}", 0, SCRIPT),
    ("ExecStart=/usr/bin/perl -Mstrict -w {roots_script}", 0, None),
    ("ExecStart=/usr/bin/perl -x {roots_script}", 0, OPTION),
    ("ExecStart={bin}/ruby -r {theirs_script} {roots_script}", 0, SCRIPT),
    ("ExecStart={bin}/ruby -I{theirs_dir} -rjson {roots_script}", 0, SCRIPT),
    ("ExecStart={bin}/ruby -rjson {roots_script}", 0, None),
    ("ExecStart={bin}/node -r {theirs_script} {roots_script}", 0, SCRIPT),
    ("ExecStart={bin}/node --require=evil {roots_script}", 0, SCRIPT),       # found from the working directory
    ("ExecStart={bin}/node --inspect {roots_script}", 0, UNKNOWN),
]


@pytest.mark.parametrize("line,uid,refused", CASES)
def test_exec_lines_root_would_run(programs, line, uid, refused):
    text = line.format(**programs)
    if refused:
        with pytest.raises(enforce_write.EnforceRefused) as caught:
            enforce_write.check_exec_lines([text], uid)
        assert caught.value.code == refused
        if "{theirs" in line and refused in OWNED:
            assert caught.value.owner == "nobody" and caught.value.fix.startswith("chown -h root:root ")
    else:
        enforce_write.check_exec_lines([text], uid)
