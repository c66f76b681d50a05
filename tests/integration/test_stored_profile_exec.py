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
import socket
import subprocess
import time

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import profile_states
from helpers import stored_profiles
from helpers.stored_profiles import NOBODY, host_of, render, run_stored

shipped = stored_profiles.shipped      # the launcher's fixtures, defined once in tests/helpers/stored_profiles.py
stored = stored_profiles.stored


@pytest.mark.rule("R-SEC-1")
def test_a_stored_profile_runs_through_the_helper_and_only_on_the_objects_judged(stored, shipped):
    with open(stored + "/profiles/ex.json") as handle:
        doc = json.load(handle)
    assert [d["path"] for d in doc["descriptors"]] == [stored + "/data/w"]
    for user in (None, "nobody"):
        proc = run_stored(stored, user, launcher=shipped)
        assert proc.returncode == 0, (user, proc.stderr)
        with open(stored + "/data/w/out") as handle:
            assert handle.read() == "ran"
        # started by root too, the executor ran as the profile's service user (the file it made is nobody's)
        assert os.stat(stored + "/data/w/out").st_uid == NOBODY.pw_uid, user
        os.unlink(stored + "/data/w/out")
    with open(stored + "/profiles/ex.args") as handle:
        plain = handle.read().splitlines()
    proc = run_stored(stored, None, *plain)               # the .args alone: the descriptor is not open
    assert proc.returncode != 0 and "/proc/self/fd/100" in proc.stderr, proc.stderr
    os.rename(stored + "/data/w", stored + "/data/w.judged")
    os.mkdir(stored + "/data/w")                      # another folder where the judged one was
    os.chmod(stored + "/data/w", 0o777)
    for user in (None, "nobody"):
        proc = run_stored(stored, user, launcher=shipped)
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


LURKER_MAIN = """import os, select, time
if os.fork() == 0 and os.fork() == 0:
    folder = '%s/data/w/'
    for _ in range(400):
        if os.path.exists(folder + 'go'):
            break
        time.sleep(0.05)
    got = os.read(0, 100) if select.select([0], [], [], 3)[0] else b'(nothing)'
    open(folder + 'out', 'w').write('alive tty=%%s read=%%r' %% (os.isatty(0), got))
os._exit(0)
"""
TYPED = b"root-password-canary\n"


def test_a_process_the_sandbox_leaves_behind_never_reads_the_terminal(stored, shipped):
    """Planted: root runs metnos-sandbox-exec on a real pseudo-terminal (pty.fork, the launcher the session leader as
    a login shell would start it); the executor leaves a grandchild behind (the profile has no --unshare-pid, so it
    outlives bwrap and the launcher) that waits for root's next typing and reads fd 0. The launcher puts /dev/null
    over fds 0-2 that are a terminal, so it reads end-of-file, not what root typed. Canary: the grandchild writes
    "alive" after the typing (it did outlive the launcher and read fd 0). Mutation run: without
    drop_terminal_descriptors() in launch(), it reads b'root-password-canary\\n' and this test fails."""
    with open(stored + "/executors/ex/main.py", "w") as handle:
        handle.write(LURKER_MAIN % stored)
    pid, terminal = pty.fork()
    if pid == 0:                               # pragma: no cover - the launcher on the terminal, as root
        try:
            os.execv(shipped, [shipped, "--profile", stored + "/profiles/ex.json"])
        finally:
            os._exit(98)
    _done, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    try:
        os.write(terminal, TYPED)              # root types at the terminal after the launcher returned
    except OSError:
        pass                                   # EIO: nobody holds the terminal any more (the fixed launcher)
    open(stored + "/data/w/go", "w").close()
    out = stored + "/data/w/out"
    for _ in range(300):
        if os.path.exists(out) and os.path.getsize(out):
            break
        time.sleep(0.05)
    os.close(terminal)
    with open(out) as handle:
        said = handle.read()
    assert said == "alive tty=False read=b''", said


OBSERVER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers", "sandbox_observer.py")
SECRETS = {"AWS_SECRET_ACCESS_KEY": "canary-aws-8c1f", "GITHUB_TOKEN": "ghp_canary5d2e", "PGPASSWORD": "canary-db",
           "SSH_AUTH_SOCK": "/run/user/0/canary-agent", "LD_PRELOAD": "libc.so.6", "PYTHONPATH": "/canary/site",
           "LISTEN_FDS": "1", "LISTEN_PID": "1", "DBUS_SESSION_BUS_ADDRESS": "unix:abstract=canary"}
ALLOWED = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "METNOS_TURN": "t-1"}


def _planted_start(cmd, out):
    """``cmd`` started with the planted secrets and loader variables in its environment and a real listening
    TCP socket on descriptor 3 (socket activation's LISTEN_FDS=1); what the observer saw, and the socket's
    inode."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        proc = subprocess.run(cmd + [out] if cmd[-1] == OBSERVER else cmd, env=dict(ALLOWED, **SECRETS),
                              pass_fds=(3,), preexec_fn=lambda: os.dup2(listener.fileno(), 3),
                              capture_output=True, text=True, timeout=60)
        inode = os.fstat(listener.fileno()).st_ino
    finally:
        listener.close()
    assert proc.returncode == 0, proc.stderr
    with open(out) as handle:
        seen = json.load(handle)
    os.unlink(out)
    return seen, "socket:[%d]" % inode


@pytest.mark.rule("R-SEC-1")
def test_an_executor_starts_clean_of_the_callers_secrets_loader_and_descriptors(stored, shipped):
    """Planted for real: the caller's environment holds credentials, an agent socket, LD_PRELOAD, PYTHONPATH and
    socket activation's LISTEN_FDS, and a real listening socket is open on descriptor 3. Canary: the observer
    started directly sees every one of them. Through the launcher (as root, dropped to nobody, in real bwrap) it
    sees only the allow-list (PATH, LANG, LC_*, METNOS_*), descriptors 0-2 and no socket, and runs as nobody
    without supplementary groups (mutations: clean_environment returning the caller's environment, and
    close_all_but closing nothing, each make this test fail)."""
    shutil.copy(OBSERVER, stored + "/executors/ex/main.py")
    out = stored + "/data/w/out"
    direct, inode = _planted_start(["/usr/bin/python3", OBSERVER], out)
    assert all(direct["env"].get(k) == v for k, v in SECRETS.items()) and direct["fds"].get("3") == inode, direct
    seen, inode = _planted_start([shipped, "--profile", stored + "/profiles/ex.json"], out)
    assert not set(SECRETS) & set(seen["env"]), seen["env"]
    assert not [v for v in seen["env"].values() if "canary" in v], seen["env"]
    assert set(seen["env"]) - {"PWD"} <= set(ALLOWED), seen["env"]          # PWD: bwrap's own, its --chdir
    assert all(seen["env"][k] == v for k, v in ALLOWED.items() if k in seen["env"]), seen["env"]
    assert sorted(seen["fds"]) == ["0", "1", "2"], seen["fds"]
    assert inode not in seen["fds"].values() and not [v for v in seen["fds"].values() if v.startswith("socket:")]
    assert (seen["uid"], seen["groups"]) == (NOBODY.pw_uid, []), seen


def test_root_never_runs_a_profile_that_names_no_service_user(stored, shipped):
    """A profile rendered without run_as: root is refused with launcher_root_refused and nothing runs (the canary:
    nobody itself runs the same profile). Mutation: launch() not dropping when run_as is absent runs it as root
    and this test fails."""
    res = render(stored, host_of(stored))
    assert res["decision"] == "wrapped" and "run_as" not in res, res
    proc = run_stored(stored, None, launcher=shipped)
    assert proc.returncode == 1 and proc.stderr.startswith("metnos-sandbox-exec: launcher_root_refused: "), proc.stderr
    assert "records no service user" in proc.stderr and "fix: ansible-playbook" in proc.stderr
    assert not os.path.exists(stored + "/data/w/out")
    proc = run_stored(stored, "nobody", launcher=shipped)
    assert proc.returncode == 0 and os.stat(stored + "/data/w/out").st_uid == NOBODY.pw_uid, proc.stderr


def _folder(stored, name, owner=0, mode=0o755):
    """A copy of the stored profile pair in stored/<name> (owner, mode), root's unless told."""
    folder = os.path.join(stored, name)
    os.mkdir(folder)
    for suffix in (".json", ".args"):
        shutil.copy(stored + "/profiles/ex" + suffix, folder)
    os.chown(folder, owner, owner)
    os.chmod(folder, mode)
    return folder


def _plant_missing(stored):
    return stored + "/profiles/nope.json"


def _plant_fifo(stored):
    folder = _folder(stored, "fifo")
    os.unlink(folder + "/ex.json")
    os.mkfifo(folder + "/ex.json")
    return folder + "/ex.json"


def _plant_args_given(stored):
    return stored + "/profiles/ex.args"


def _plant_not_json(stored):
    folder = _folder(stored, "notjson")
    with open(folder + "/ex.json", "w") as handle:
        handle.write("bwrap\n--unshare-all\n")
    return folder + "/ex.json"


def _plant_not_profile(stored):
    folder = _folder(stored, "notprofile")
    with open(folder + "/ex.json", "w") as handle:
        json.dump({"decision": "wrapped", "argv": ["/bin/sh", "-c", "id"]}, handle)
    return folder + "/ex.json"


def _plant_users_folder(stored):
    return _folder(stored, "users", owner=NOBODY.pw_uid) + "/ex.json"


def _plant_group_writable(stored):
    return _folder(stored, "groupw", mode=0o775) + "/ex.json"


def _plant_writable_file(stored):
    folder = _folder(stored, "filew")
    os.chmod(folder + "/ex.json", 0o666)
    return folder + "/ex.json"


def _plant_linked_folder(stored):
    _folder(stored, "real")
    os.symlink(stored + "/real", stored + "/linked")
    return stored + "/linked/ex.json"


def _plant_half_written(stored):
    folder = _folder(stored, "half")
    with open(folder + "/ex.args", "a") as handle:
        handle.write("--bind\n/\n/\n")
    return folder + "/ex.json"


REFUSALS = [   # (what is planted, the code, words of the message)
    (_plant_missing, "launcher_profile_missing", "does not exist"),
    (_plant_fifo, "launcher_profile_unreadable", "not a regular file"),
    (_plant_args_given, "launcher_profile_invalid", "name its <executor>.json"),
    (_plant_not_json, "launcher_profile_not_json", "is not JSON text"),
    (_plant_not_profile, "launcher_profile_invalid", "args_sha256"),
    (_plant_users_folder, "profile_folder_unsafe", "owned by nobody"),
    (_plant_group_writable, "profile_folder_unsafe", "mode 0775"),
    (_plant_writable_file, "profile_folder_unsafe", "the file"),
    (_plant_linked_folder, "profile_folder_unsafe", "a symbolic link"),
    (_plant_half_written, "profile_pair_mismatch", "are not one profile"),
]


@pytest.mark.parametrize("plant,code,words", REFUSALS, ids=[r[1] + ":" + r[0].__name__[7:] for r in REFUSALS])
def test_each_refusal_has_its_own_code_and_a_fix(stored, shipped, plant, code, words):
    """Each planted for real (a FIFO, a folder the user nobody owns, a group-writable folder, a world-writable
    profile, a symbolic link on the way, an .args that is not the .json's): the launcher, as root and as nobody,
    refuses with its own code (never bind_source_moved), names the path, prints a fix, and nothing runs. The
    canary: the untouched profile runs (the first test). Mutation: root_only() accepting every owner and mode
    makes the unsafe cases run (ran as root via the copy's drop: the out file appears) and fail here."""
    path = plant(stored)
    for user in (None, "nobody"):
        proc = run_stored(stored, user, launcher=shipped, profile=path)
        assert proc.returncode == 1, (user, proc.stderr)
        assert proc.stderr.startswith("metnos-sandbox-exec: %s: " % code), (user, proc.stderr)
        assert words in proc.stderr and "bind_source_moved" not in proc.stderr and "\n  fix: " in proc.stderr
        assert not os.path.exists(stored + "/data/w/out")


def test_help_says_what_the_launcher_checks(shipped):
    proc = subprocess.run([shipped, "--help"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0 and proc.stdout.startswith("usage: metnos-sandbox-exec --profile"), proc.stderr
    for word in ("run_as", "LC_*", "METNOS_*", "launcher_root_refused", "profile_pair_mismatch", "Exit status"):
        assert word in proc.stdout, word


def test_a_profile_folder_someone_else_can_change_is_an_error_in_render_and_audit(stored):
    """Planted for real: the profile folder owned by the user nobody, then root's but group-writable. The render
    writes nothing there and fails with profile_folder_unsafe and its chown/chmod fix; the audit (and the monitor,
    which runs it) reports the same code. Canary: the root-owned 0755 folder the fixture rendered into has no such
    finding. Mutation: safe_owner() accepting every owner makes the render write and this test fail."""
    entries = stored_profiles.audit_states(stored, stored + "/profiles", ["fs:write:%s/data/w" % stored])
    assert [e["state"] for e in entries] == ["in_sync"]
    host = host_of(stored)
    for owner, mode, words in ((NOBODY.pw_uid, 0o755, "owned by nobody"), (0, 0o775, "mode 0775")):
        os.chown(stored + "/profiles", owner, owner)
        os.chmod(stored + "/profiles", mode)
        for name in os.listdir(stored + "/profiles"):          # the fixture's pair: the render must not write one
            os.unlink(os.path.join(stored, "profiles", name))
        res = render(stored, host, run_as="nobody")
        assert res["_rc"] != 0 and res.get("code") == "profile_folder_unsafe", res
        assert words in res["msg"] and os.listdir(stored + "/profiles") == [], res["msg"]
        fix = [d for d in res["diagnostics"] if d["code"] == "profile_folder_unsafe"][0]["remediation"]
        assert fix == ["chown root:root %s/profiles" % stored, "chmod go-w %s/profiles" % stored], fix
        entries = stored_profiles.audit_states(stored, stored + "/profiles", ["fs:write:%s/data/w" % stored])
        unsafe = [f for f in profile_states.findings(entries) if f["code"] == "profile_folder_unsafe"]
        assert len(unsafe) == 1 and words in unsafe[0]["message"], entries


@pytest.mark.rule("R-SEC-1")
def test_a_channel_made_in_a_grant_after_rendering_is_refused_at_launch(stored, shipped):
    """Planted for real after the render: a listening unix socket (a host daemon's), then a FIFO, in the granted
    folder. The profile recorded no channel there (channels: []); the launcher, as root and as nobody, refuses
    with launcher_channel_appeared naming it, and nothing runs. Canary: the same profile runs before the plant.
    Mutation: launch() without recheck_channels runs the executor next to the socket and this test fails."""
    with open(stored + "/profiles/ex.json") as handle:
        assert json.load(handle)["channels"] == []
    proc = run_stored(stored, None, launcher=shipped)
    assert proc.returncode == 0, proc.stderr
    os.unlink(stored + "/data/w/out")
    daemon = socket.socket(socket.AF_UNIX)
    try:
        daemon.bind(stored + "/data/w/daemon.sock")
        daemon.listen(1)
        for plant in ("daemon.sock", "jobs.fifo"):
            if plant == "jobs.fifo":
                daemon.close()
                os.unlink(stored + "/data/w/daemon.sock")
                os.mkfifo(stored + "/data/w/jobs.fifo")
            for user in (None, "nobody"):
                proc = run_stored(stored, user, launcher=shipped)
                assert proc.returncode == 1, (plant, user, proc.stderr)
                assert proc.stderr.startswith("metnos-sandbox-exec: launcher_channel_appeared: %s/data/w/%s" % (
                    stored, plant)), proc.stderr
                assert not os.path.exists(stored + "/data/w/out")
    finally:
        daemon.close()


@pytest.mark.rule("R-SEC-1")
def test_an_executor_never_holds_the_root_callers_session_keyring(stored, shipped):
    """attack2 finding 1, planted for real: root joins a session keyring holding a secret key (what su -l, login
    or a root unit give root; tests/helpers/keyrings_real.py through ctypes), then execs the shipped launcher. The
    executor (as nobody, in real bwrap) reads its session keyring and every key in it. Canary: the same code under
    plain setpriv to nobody reads the secret. Through the launcher: a keyring of its own, no key. Mutation run by
    hand: drop_to not calling own_session_keyring: the executor reads the secret and this test fails."""
    helper = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers", "keyrings_real.py")
    shutil.copy(helper, stored + "/executors/ex/main.py")
    hold = ["/usr/bin/python3", "-I", "-S", stored + "/executors/ex/main.py", "hold", "root-only-keyring-canary", "--"]
    canary = subprocess.run(hold + ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                    "/usr/bin/python3", "-I", "-S", stored + "/executors/ex/main.py"],
                            capture_output=True, text=True, timeout=60)
    assert json.loads(canary.stdout)["keys"] == ["root-only-keyring-canary"], canary.stderr
    proc = subprocess.run(hold + [shipped, "--profile", stored + "/profiles/ex.json"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["keys"] == [] and seen["uid"] == NOBODY.pw_uid, seen


@pytest.mark.rule("R-SEC-1")
@pytest.mark.parametrize("action, refused", [("errno", False), ("kill", True)])
def test_under_a_keyctl_filter_the_launcher_never_guesses(stored, shipped, action, refused):
    """The launcher started by root under a real seccomp filter on keyctl (libseccomp, as SystemCallFilter=~@keyring
    loads one), root's keyring holding a secret: a filter answering EPERM proves no keyring is reachable (asked in
    a child: keyctl could kill) and the executor runs, reading no key; a filter that kills keyctl is refused
    (launcher_keyring_kept), the launcher itself not killed. Mutation run by hand: own_session_keyring skipping
    the child under a filter: the kill case dies by SIGSYS instead of refusing, and this test fails."""
    if subprocess.run(["/usr/bin/python3", "-c", "import seccomp"], capture_output=True).returncode:
        pytest.skip("no python3-seccomp for /usr/bin/python3")
    helper = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers", "keyrings_real.py")
    shutil.copy(helper, stored + "/executors/ex/main.py")
    script = stored + "/executors/ex/main.py"
    argv = ["/usr/bin/python3", "-I", "-S", script, "hold", "root-only-keyring-canary", "--",
            "/usr/bin/python3", "-I", script, "filter", action, "--",
            shipped, "--profile", stored + "/profiles/ex.json"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if refused:
        assert proc.returncode == 1 and proc.stderr.startswith("metnos-sandbox-exec: launcher_keyring_kept: "), \
            (proc.returncode, proc.stderr)
        assert "fix: grep Seccomp /proc/self/status" in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
        seen = json.loads(proc.stdout)
        assert seen["keys"] == [] and seen["uid"] == NOBODY.pw_uid, seen
