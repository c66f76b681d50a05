"""The probe's mutation matrix: the strict profile, weakened one way per row, run for real.

Shared by tests/integration/test_probe_matrix.py (asserts every row) and scripts/probe-matrix.py
(prints the table). Each row says which checks must fail, per user: the row passes the test only
when the failed checks are *exactly* those (glob patterns are expanded against the checks the
run produced). ``code`` is the diagnostic the verdict must carry.

Everything a row needs on the host (fake bwraps, a setuid copy of bwrap, an empty persistent
directory, an empty host tmpfs, a procfs of another PID namespace) lives under one directory in
/var/tmp that ``Bench`` creates and removes, mounts included. Must run as root (it switches to
the unprivileged user and mounts).
"""
import fnmatch
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "module_utils"))

from metnos_sandbox import bwrap as B  # noqa: E402
from metnos_sandbox import probe as PR  # noqa: E402
from metnos_sandbox import profile as P  # noqa: E402

PYTHON = "/usr/bin/python3"
USERS = ("root", "nobody")

FAKE_EXEC = """#!/bin/sh
# A bwrap look-alike: ignores every option and runs the command unsandboxed (no status records).
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec "$@"
"""

FAKE_LEAVE = """#!/bin/sh
# A bwrap look-alike that runs the command unsandboxed (no status records) and leaves a process behind
# that holds its stdout and stderr (as a daemon or a decoy it started would), then exits.
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
(sleep 300; :) &
"$@"
rc=$?
exit $rc
"""

FAKE_HANG = """#!/bin/sh
# A bwrap look-alike that runs the command unsandboxed (no status records), then never exits.
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
"$@"
sleep 300
exit 0
"""

FAKE_JSON = """#!/usr/bin/python3
# A bwrap look-alike that writes plausible --json-status-fd records: the child-pid and namespace
# inodes of a decoy (a real sandbox, bwrap --unshare-all, running sleep) - then runs the command
# unsandboxed and reports its exit code.
import json, os, signal, subprocess, sys
# The decoy: a real sandbox in its own process group, with none of our pipes, killed as a group - bwrap
# arms its sandbox's parent-death signal only late in the setup (do_init), so killing the decoy's bwrap
# alone early can orphan a running sleep. Its command line names this script: the bench sees it is gone.
DECOY = ["/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--json-status-fd"]
args = sys.argv[1:]
fd = int(args[args.index("--json-status-fd") + 1]) if "--json-status-fd" in args else None
cmd = args[args.index("--") + 1:]
r, w = os.pipe()
decoy = subprocess.Popen(DECOY + [str(w), "--", "sh", "-c", "sleep 60; :", sys.argv[0]], pass_fds=(w,),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
os.close(w)
first = b""
while b"}" not in first:   # bwrap writes its first record in pieces
    chunk = os.read(r, 4096)
    if not chunk:
        break
    first += chunk
first = first.decode().split("}")[0] + "}"
if fd is not None:
    os.write(fd, (first + "\\n").encode())
rc = subprocess.call(cmd)
if fd is not None:
    os.write(fd, (json.dumps({"exit-code": rc}) + "\\n").encode())
os.killpg(decoy.pid, signal.SIGKILL)
decoy.wait()
sys.exit(rc)
"""

FAKE_UNSHARE = """#!/usr/bin/python3
# A bwrap look-alike that gives the command new user/ipc/uts/net namespaces but no mount
# namespace (so none of the profile's mounts), with honest --json-status-fd records.
import json, os, subprocess, sys
args = sys.argv[1:]
fd = int(args[args.index("--json-status-fd") + 1]) if "--json-status-fd" in args else None
cmd = args[args.index("--") + 1:]
child = subprocess.Popen(["unshare", "--user", "--map-root-user", "--ipc", "--uts", "--net", "--"] + cmd)
if fd is not None:
    os.write(fd, (json.dumps({"child-pid": child.pid}) + "\\n").encode())
rc = child.wait()
if fd is not None:
    os.write(fd, (json.dumps({"exit-code": rc}) + "\\n").encode())
sys.exit(rc)
"""

FAKE_WRAP = """#!/usr/bin/python3
# A wrapper around the real bwrap that lies about its child: it forwards bwrap's status records but
# names a decoy (another real sandbox's child) as child-pid. The sandbox itself is real.
import json, os, signal, subprocess, sys
# The decoy: a real sandbox in its own process group, with none of our pipes, killed as a group - bwrap
# arms its sandbox's parent-death signal only late in the setup (do_init), so killing the decoy's bwrap
# alone early can orphan a running sleep. Its command line names this script: the bench sees it is gone.
DECOY = ["/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--json-status-fd"]
args = sys.argv[1:]
i = args.index("--json-status-fd")
fd = int(args[i + 1])
r, w = os.pipe()
args[i + 1] = str(w)
dr, dw = os.pipe()
decoy = subprocess.Popen(DECOY + [str(dw), "--", "sh", "-c", "sleep 60; :", sys.argv[0]], pass_fds=(dw,),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
os.close(dw)
first = b""
while b"}" not in first:
    chunk = os.read(dr, 4096)
    if not chunk:
        break
    first += chunk
decoy_pid = json.loads(first.decode().split("}")[0] + "}")["child-pid"]
real = subprocess.Popen(["/usr/bin/bwrap"] + args, pass_fds=(w,))
os.close(w)
buf = b""
while True:
    chunk = os.read(r, 4096)
    if not chunk:
        break
    buf += chunk
    while b"\\n" in buf:
        line, buf = buf.split(b"\\n", 1)
        obj = json.loads(line.decode())
        if "child-pid" in obj:
            obj["child-pid"] = decoy_pid
        os.write(fd, (json.dumps(obj) + "\\n").encode())
rc = real.wait()
os.killpg(decoy.pid, signal.SIGKILL)
decoy.wait()
sys.exit(rc)
"""

FAKE_MOVE = """#!/usr/bin/python3
# A wrapper around the real bwrap that drops --unshare-ipc (the payload shares its parent's IPC
# namespace), names the real bwrap - its own child, the payload's parent - as child-pid, and then
# moves itself into new user and IPC namespaces: judged against "bwrap's own" namespaces, the
# payload's IPC namespace looks private.
import ctypes, json, os, subprocess, sys
args = [a for a in sys.argv[1:] if a != "--unshare-ipc"]
i = args.index("--json-status-fd")
fd = int(args[i + 1])
r, w = os.pipe()
args[i + 1] = str(w)
real = subprocess.Popen(["/usr/bin/bwrap"] + args, pass_fds=(w,))
os.close(w)
ctypes.CDLL(None, use_errno=True).unshare(0x10000000 | 0x08000000)   # CLONE_NEWUSER | CLONE_NEWIPC
buf = b""
while True:
    chunk = os.read(r, 4096)
    if not chunk:
        break
    buf += chunk
    while b"\\n" in buf:
        line, buf = buf.split(b"\\n", 1)
        obj = json.loads(line.decode())
        if "child-pid" in obj:
            obj["child-pid"] = real.pid
        os.write(fd, (json.dumps(obj) + "\\n").encode())
sys.exit(real.wait())
"""

FAKE_SECCOMP = """#!/usr/bin/python3
# A wrapper that hands the real bwrap a seccomp filter of its own (--add-seccomp-fd): R-BASE-8 says
# the server profile has none, and a filter can hide syscalls from the payload or answer them for it.
# Needs Debian's python3-seccomp.
import errno, os, sys, tempfile
import seccomp
filt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
filt.add_rule(seccomp.ERRNO(errno.EPERM), "swapon")
with tempfile.TemporaryFile() as handle:
    filt.export_bpf(handle)
    handle.seek(0)
    fd = os.dup(handle.fileno())
os.set_inheritable(fd, True)
os.execv("/usr/bin/bwrap", ["/usr/bin/bwrap", "--add-seccomp-fd", str(fd)] + sys.argv[1:])
"""

FAKE_USERNS = """#!/usr/bin/python3
# A wrapper that starts a decoy sandbox whose user namespace stays held by a process outside the
# payload's sandbox (its owner has every capability in it: it can enter the payload's namespaces and
# ptrace it), then executes the real bwrap joining that namespace (--userns) instead of
# --unshare-user. The payload's user namespace differs from the parent's: it is not private.
import json, os, subprocess, sys
r, w = os.pipe()
decoy = subprocess.Popen(["/usr/bin/bwrap", "--unshare-user", "--die-with-parent", "--ro-bind", "/", "/",
                          "--json-status-fd", str(w), "--", "sleep", "60"], pass_fds=(w,), stdin=subprocess.DEVNULL)
os.close(w)
first = b""
while b"}" not in first:
    chunk = os.read(r, 4096)
    if not chunk:
        break
    first += chunk
child = json.loads(first.decode().split("}")[0] + "}")["child-pid"]
fd = os.open("/proc/%d/ns/user" % child, os.O_RDONLY)
os.set_inheritable(fd, True)
args = [a for a in sys.argv[1:] if a != "--unshare-user"]
os.execv("/usr/bin/bwrap", ["/usr/bin/bwrap", "--userns", str(fd)] + args)
"""

FAKE_FD = """#!/bin/sh
# A wrapper that leaves a descriptor of the host's / open (fd 7) and executes the real bwrap: the
# sandbox inherits it, and openat(7, ...) reaches every host file past the mounts.
exec 7</
exec /usr/bin/bwrap "$@"
"""

FAKE_PRELOAD = """#!/usr/bin/python3
# A wrapper that plants a library on the sandbox's own root (--file) and preloads it into the payload
# (--setenv LD_PRELOAD): code the profile never bound runs inside, able to answer for the payload.
# Here the library is a harmless copy of libm.
import os, sys, tempfile
lib = [line.split()[-1] for line in open("/proc/self/maps") if "/libm.so" in line][0]
handle = tempfile.TemporaryFile()
with open(lib, "rb") as src:
    handle.write(src.read())
handle.seek(0)
fd = os.dup(handle.fileno())
os.set_inheritable(fd, True)
os.execv("/usr/bin/bwrap", ["/usr/bin/bwrap", "--file", str(fd), "/preload.so", "--setenv", "LD_PRELOAD",
                            "/preload.so"] + sys.argv[1:])
"""

FAKE_PIN = """#!/bin/sh
# A wrapper that executes the real bwrap but first leaves a helper behind: once the sandboxed child
# exists (bwrap waits on --block-fd before it executes the payload), the helper keeps the child's
# network namespace alive on the host (a bind of its nsfs inode, as 'ip netns add' makes): anyone
# root can enter it and talk to the payload on lo. Needs root (mount); run by another user the bind
# fails and nothing is held.
dir=$(dirname "$0")
pin="$dir/netns-pin"
fifo=$(mktemp -d) || exit 1
mkfifo "$fifo/block" && exec 8<>"$fifo/block"
rm -rf "$fifo"
launcher=$$
(
    read -r me _ < /proc/self/stat
    i=0
    while [ $i -lt 500 ]; do
        for c in $(cat /proc/$launcher/task/$launcher/children 2>/dev/null); do
            [ "$c" = "$me" ] && continue
            [ -e /proc/$c/ns/net ] || continue
            if [ "$(readlink /proc/$c/ns/net)" != "$(readlink /proc/$launcher/ns/net)" ]; then
                touch "$pin" && mount --bind /proc/$c/ns/net "$pin"   # (":>" failing would end sh)
                echo go >&8
                # until bwrap has exited (a zombie counts: the probe reaps it only after this helper
                # let go of the inherited status pipe)
                while [ -e /proc/$launcher ] && ! grep -q '^State:[[:space:]]*Z' /proc/$launcher/status; do
                    sleep 0.05
                done
                umount "$pin"
                exit 0
            fi
        done
        sleep 0.01; i=$((i + 1))
    done
    echo go >&8
) </dev/null >/dev/null 2>&1 &
exec /usr/bin/bwrap --block-fd 8 "$@"
"""


class Bench(object):
    """Host-side fixtures for the rows, all under one /var/tmp directory; ``close()`` removes them."""

    def __init__(self, mounts=True):
        self.with_mounts = mounts
        self.nobody = pwd.getpwnam("nobody")
        self.dir = tempfile.mkdtemp(prefix="metnos-matrix-", dir="/var/tmp")
        self.mounts = []
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _build(self):
        os.chmod(self.dir, 0o755)
        self.bwrap = shutil.which("bwrap")
        self.fakes = {}
        for name, text in (("exec", FAKE_EXEC), ("json", FAKE_JSON), ("unshare", FAKE_UNSHARE), ("wrap", FAKE_WRAP),
                           ("leave", FAKE_LEAVE), ("hang", FAKE_HANG),
                           ("move", FAKE_MOVE), ("seccomp", FAKE_SECCOMP),
                           ("userns", FAKE_USERNS), ("fd", FAKE_FD),
                           ("preload", FAKE_PRELOAD),
                           ("pin", FAKE_PIN)):
            path = os.path.join(self.dir, "fake-" + name, "bwrap")
            os.makedirs(os.path.dirname(path), mode=0o755)
            with open(path, "w") as handle:
                handle.write(text)
            os.chmod(path, 0o755)
            self.fakes[name] = path
        # A setuid copy, usable only by root and nobody's group.
        suid_dir = os.path.join(self.dir, "suid")
        os.makedirs(suid_dir)
        os.chown(suid_dir, 0, self.nobody.pw_gid)
        os.chmod(suid_dir, 0o750)
        self.setuid_bwrap = os.path.join(suid_dir, "bwrap")
        shutil.copy(self.bwrap, self.setuid_bwrap)
        os.chmod(self.setuid_bwrap, 0o4755)
        version = B.parse_version(subprocess.run([self.bwrap, "--version"], capture_output=True,
                                                 text=True).stdout)
        self.setuid_ok = B.version_tuple(version) < (0, 12)
        self.mounts.append(os.path.join(os.path.dirname(self.fakes["pin"]), "netns-pin"))   # if left mounted
        self.python_copy = os.path.join(self.dir, "python")
        shutil.copy(os.path.realpath(PYTHON), self.python_copy)
        self.empty = os.path.join(self.dir, "empty")
        os.makedirs(self.empty, mode=0o755)
        if not self.with_mounts:     # e.g. in a container without CAP_SYS_ADMIN
            return
        self.tmpfs = os.path.join(self.dir, "host-tmpfs")
        os.makedirs(self.tmpfs)
        self._mount(["mount", "-t", "tmpfs", "-o", "mode=0755,size=1m", "metnos-matrix", self.tmpfs], self.tmpfs)
        self.foreign_proc = os.path.join(self.dir, "foreign-proc")
        os.makedirs(self.foreign_proc)
        # A procfs of a new PID namespace, mounted on the host (the namespace's only process exits).
        self._mount(["unshare", "--pid", "--fork", "mount", "-t", "proc", "proc", self.foreign_proc],
                    self.foreign_proc)

    def _mount(self, argv, target):
        subprocess.run(argv, check=True, capture_output=True)
        self.mounts.append(target)

    def close(self):
        for target in reversed(self.mounts):
            subprocess.run(["umount", "-l", target], capture_output=True)
        self.mounts = []
        shutil.rmtree(self.dir, ignore_errors=True)

    def user(self, name):
        if name == "root":
            return None
        entry = pwd.getpwnam(name)
        return {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def strict_profile():
    prof = P.render_safe(dict(PR.PROBE_MANIFEST), P.HostContext({"python_executable": PYTHON}), {}, None)
    assert prof["decision"] == "wrapped", prof["diagnostics"]
    return prof


# --------------------------------------------------------------------------- argv edits

def _opts(argv):
    sep = argv.index("--")
    return list(argv[:sep]), list(argv[sep:])


def drop(flag):
    def edit(argv, _bench):
        opts, rest = _opts(argv)
        assert flag in opts, flag
        opts.remove(flag)
        return opts + rest
    return edit


def add(*words):
    def edit(argv, _bench):
        opts, rest = _opts(argv)
        return opts + list(words) + rest
    return edit


def replace(old, new):
    """Replace the option words ``old`` (a tuple, e.g. ("--tmpfs", "/tmp")) by ``new`` (may use {bench.x})."""
    def edit(argv, bench):
        opts, rest = _opts(argv)
        for i in range(len(opts) - len(old) + 1):
            if tuple(opts[i:i + len(old)]) == tuple(old):
                words = [w.format(bench=bench) for w in new]
                return opts[:i] + words + opts[i + len(old):] + rest
        raise AssertionError("%s not in the strict profile" % (old,))
    return edit


def writable(path):
    return replace(("--ro-bind", path, path), ("--bind", path, path))


def binary(attr, then=None):
    def edit(argv, bench):
        argv = [getattr(bench, attr) if "." not in attr else bench.fakes[attr.split(".")[1]]] + list(argv[1:])
        return then(argv, bench) if then else argv
    return edit


# --------------------------------------------------------------------------- the rows

NOT_ISOLATED_DIRECT = ["bwrap_child_is_payload", "*_namespace_private", "fresh_tmpfs:/tmp", "minimal_dev:/dev",
                       "read_only:*", "hidden:*", "no_undeclared_mounts", "parent_death_signal", "no_capabilities",
                       "payload_code_from_binds"]


class Row(object):
    def __init__(self, name, what, edit, fails, code=None, note=None, needs=None):
        self.name, self.what, self.edit, self.note, self.needs = name, what, edit, note, needs
        self.fails = fails if isinstance(fails, dict) else dict((u, fails) for u in USERS)
        self.code = code if isinstance(code, dict) else dict(
            (u, code if code is not None else ("probe_check_failed" if self.fails[u] else None)) for u in USERS)

    def expect(self, user):
        """(check patterns that must fail, code) for ``user``; any other user is unprivileged like nobody."""
        key = user if user in self.fails else "nobody"
        return self.fails[key], self.code[key]


ROWS = [
    Row("strict", "the strict profile, unmutated", lambda a, b: a, []),
    Row("drop_unshare_user", "--unshare-user dropped (packaged bwrap)", drop("--unshare-user"),
        {"root": ["user_namespace_private"], "nobody": []},
        note="not a weakening for nobody: a non-setuid bwrap run by a non-root user always creates the user "
             "namespace (bubblewrap.c); the setuid row below makes it one"),
    Row("drop_unshare_user_setuid", "--unshare-user dropped, bwrap setuid (privileged path)",
        binary("setuid_bwrap", drop("--unshare-user")), ["user_namespace_private"], needs="setuid_ok"),
    Row("drop_unshare_ipc", "--unshare-ipc dropped", drop("--unshare-ipc"), ["ipc_namespace_private"]),
    Row("drop_unshare_uts", "--unshare-uts dropped", drop("--unshare-uts"), ["uts_namespace_private"]),
    Row("network_shared", "--unshare-net dropped (host network)", drop("--unshare-net"), ["net_namespace_private"]),
    Row("pid_namespace", "--unshare-pid added (R-BASE-8 forbids it)", add("--unshare-pid"), ["no_pid_namespace"]),
    Row("no_die_with_parent", "--die-with-parent dropped", drop("--die-with-parent"), ["parent_death_signal"]),
    Row("usr_writable", "--ro-bind /usr made --bind", writable("/usr"), ["read_only:/usr"]),
    Row("etc_writable", "--ro-bind /etc made --bind", writable("/etc"), ["read_only:/etc"]),
    Row("sys_writable", "--ro-bind /sys made --bind", writable("/sys"), ["read_only:/sys"]),
    Row("tmp_host", "/tmp: the host's /tmp bound", replace(("--tmpfs", "/tmp"), ("--bind", "/tmp", "/tmp")),
        ["fresh_tmpfs:/tmp"]),
    Row("tmp_empty_dir", "/tmp: an empty persistent host directory bound",
        replace(("--tmpfs", "/tmp"), ("--bind", "{bench.empty}", "/tmp")), ["fresh_tmpfs:/tmp"]),
    Row("tmp_host_tmpfs", "/tmp: an empty host tmpfs bound (only its device tells)",
        replace(("--tmpfs", "/tmp"), ("--bind", "{bench.tmpfs}", "/tmp")), ["fresh_tmpfs:/tmp"], needs="mounts"),
    Row("tmp_missing", "/tmp: no tmpfs at all", replace(("--tmpfs", "/tmp"), ()), ["fresh_tmpfs:/tmp"]),
    Row("dev_host", "/dev: the host's /dev bound (--dev-bind)",
        replace(("--dev", "/dev"), ("--dev-bind", "/dev", "/dev")), ["minimal_dev:/dev"]),
    Row("bind_home", "extra --ro-bind /home", add("--ro-bind", "/home", "/home"), ["hidden:/home"],
        needs="/home"),
    Row("bind_root", "extra --ro-bind /root", add("--ro-bind", "/root", "/root"), ["hidden:/root"]),
    Row("bind_var", "extra --ro-bind /var", add("--ro-bind", "/var", "/var"), ["hidden:/var"]),
    Row("proc_tmpfs", "/proc: a tmpfs instead of --proc", replace(("--proc", "/proc"), ("--tmpfs", "/proc")),
        ["proc_is_own_procfs"]),
    Row("proc_foreign", "/proc: a procfs of another PID namespace bound",
        replace(("--proc", "/proc"), ("--bind", "{bench.foreign_proc}", "/proc")), ["proc_is_own_procfs"],
        needs="mounts"),
    Row("proc_host_bind", "/proc: the host's /proc bound (--bind /proc /proc)",
        replace(("--proc", "/proc"), ("--bind", "/proc", "/proc")), [],
        note="equivalent, not a weakening: without --unshare-pid bwrap's --proc *is* a bind of the host's "
             "/proc (bubblewrap.c: 'Use system procfs, as we share pid namespace anyway'); measured: the same "
             "mount table for nobody"),
    Row("bind_elsewhere", "extra --bind /var/lib at a path no check knew (/metnos-x)",
        add("--bind", "/var/lib", "/metnos-x"), ["no_undeclared_mounts"]),
    Row("symlink_made_bind", "--symlink usr/bin /bin made --bind /usr/bin /bin (writable host binaries)",
        replace(("--symlink", "usr/bin", "/bin"), ("--bind", "/usr/bin", "/bin")), ["no_undeclared_mounts"]),
    Row("ro_bind_other_source", "--ro-bind /etc /etc made --ro-bind /root /etc (right place, wrong host path)",
        replace(("--ro-bind", "/etc", "/etc"), ("--ro-bind", "/root", "/etc")), ["bind_source:/etc"]),
    Row("ro_mount_below_bind", "extra --ro-bind /root /usr/local (read-only, below a read-only bind)",
        add("--ro-bind", "/root", "/usr/local"), ["bind_source:/usr"], needs="/usr/local"),
    Row("interpreter_replaced", "a copy of the interpreter from elsewhere bound over %s (it runs the payload)"
        % os.path.realpath(PYTHON), replace(("--chdir", "/"), ("--ro-bind", "{bench.python_copy}",
                                                               os.path.realpath(PYTHON), "--chdir", "/")),
        ["bind_source:/usr"]),
    Row("dev_node_swapped", "--dev-bind /dev/kmsg /dev/full (a host device under a name bwrap's --dev uses)",
        add("--dev-bind", "/dev/kmsg", "/dev/full"), ["minimal_dev:/dev"], needs="/dev/kmsg"),
    Row("dev_shm_host", "--bind /dev/shm /dev/shm (the host's shared memory)",
        add("--bind", "/dev/shm", "/dev/shm"), ["minimal_dev:/dev"], needs="/dev/shm"),
    Row("proc_mount_below", "extra --ro-bind /root /proc/driver (a host directory inside /proc)",
        add("--ro-bind", "/root", "/proc/driver"), ["proc_is_own_procfs"], needs="/proc/driver"),
    Row("cap_add", "--cap-add ALL (capabilities in the sandbox's user namespace; run by root, bwrap then also "
        "hands them on as ambient)", add("--cap-add", "ALL"), ["no_capabilities"]),
    Row("seccomp_added", "wrapper: the real bwrap with --add-seccomp-fd (a filter of its own, R-BASE-8)",
        binary("fakes.seccomp"), ["no_custom_seccomp"], needs="python3-seccomp"),
    Row("userns_joined", "wrapper: the real bwrap joins a user namespace a decoy outside holds (--userns "
        "instead of --unshare-user; the namespace's descriptor reaches the payload too)", binary("fakes.userns"),
        ["bwrap_child_is_payload", "user_namespace_private", "no_leaked_descriptors"], code="probe_not_isolated"),
    Row("fd_leaked", "wrapper: the real bwrap with a descriptor of the host's / left open (openat escapes)",
        binary("fakes.fd"), ["no_leaked_descriptors"]),
    Row("library_planted", "wrapper: a library planted on the sandbox's root (--file) and preloaded into the "
        "payload (--setenv LD_PRELOAD)", binary("fakes.preload"), ["payload_code_from_binds"]),
    Row("harmless_words", "--new-session, --hostname, --remount-ro /tmp, --unshare-cgroup added",
        add("--new-session", "--hostname", "metnos-x", "--remount-ro", "/tmp", "--unshare-cgroup"), [],
        note="not weakenings (a new session, a name, a read-only /tmp, one more namespace): the verdict passes "
             "and lists the words under argv_deviations"),
    Row("netns_pinned", "wrapper: the real bwrap, and a helper that keeps the sandbox's network namespace "
        "alive on the host (a bind of its nsfs inode, as 'ip netns add' makes)", binary("fakes.pin"),
        {"root": ["net_namespace_private"], "nobody": []},
        note="run by nobody the helper cannot mount: nothing is held, the sandbox is the strict one"),
    Row("fake_exec", "look-alike bwrap: runs the command unsandboxed, no status records",
        binary("fakes.exec"), NOT_ISOLATED_DIRECT, code="probe_not_isolated"),
    Row("fake_json", "look-alike bwrap: plausible json-status (a decoy sandbox's child-pid), command unsandboxed",
        binary("fakes.json"), NOT_ISOLATED_DIRECT, code="probe_not_isolated"),
    Row("fake_left_behind", "look-alike: command unsandboxed, exits leaving a process that holds its output",
        binary("fakes.leave"), NOT_ISOLATED_DIRECT, code="probe_not_isolated"),
    Row("fake_wrap_decoy", "wrapper around the real bwrap that reports a decoy's child-pid (sandbox itself real)",
        binary("fakes.wrap"), ["bwrap_child_is_payload"]),
    Row("fake_no_mnt", "look-alike: user/ipc/uts/net namespaces, no mount namespace, honest json-status",
        binary("fakes.unshare"), ["mnt_namespace_private", "fresh_tmpfs:/tmp", "minimal_dev:/dev", "read_only:*",
                                  "hidden:*", "no_undeclared_mounts", "parent_death_signal", "no_capabilities",
                                  "payload_code_from_binds"]),
    Row("fake_move_after_fork", "wrapper: real bwrap without --unshare-ipc, then the wrapper moves itself into "
        "new namespaces (judged against bwrap's own, the payload's IPC namespace looked private)",
        binary("fakes.move"), ["bwrap_child_is_payload", "ipc_namespace_private"], code="probe_not_isolated"),
]


def applicable(row, bench):
    if row.needs == "mounts":
        return bench.with_mounts, "needs mounts on the host (CAP_SYS_ADMIN)"
    if row.needs == "setuid_ok":
        return bench.setuid_ok, "bwrap >= 0.12 refuses setuid use"
    if row.needs == "python3-seccomp":
        found = subprocess.run([PYTHON, "-c", "import seccomp"], capture_output=True).returncode == 0
        return found, "python3-seccomp is not installed"
    if row.needs and row.needs.startswith("/"):
        return os.path.exists(row.needs), "%s does not exist on this host" % row.needs
    return True, None


def run_row(row, user, bench, profile=None, core=PR, systemd=False, timeout=30):
    """Run one row as ``user`` (a name). Direct (as the probe runs without a unit), or with
    ``systemd`` in a transient unit as the probe runs for a service. Returns (verdict, failed names)."""
    prof = profile or strict_profile()
    argv = row.edit(list(prof["argv"]), bench)
    spec = core.expectations(prof)
    if systemd:
        entry = pwd.getpwnam(user)
        verdict = core.run_systemd(argv, spec, PYTHON, {"name": user, "uid": entry.pw_uid, "gid": entry.pw_gid},
                                   {}, {"PATH": "/usr/bin:/bin"}, timeout, "metnos-probe-matrix-%s" % row.name)
    else:
        verdict = core.run(argv, spec, PYTHON, user=bench.user(user), timeout=timeout)
    return verdict, sorted(c["name"] for c in verdict["checks"] if not c["ok"])


def expected_failures(row, user, verdict):
    names = [c["name"] for c in verdict["checks"]]
    return sorted(n for n in names if any(fnmatch.fnmatchcase(n, pat) for pat in row.expect(user)[0]))


def judge(row, user, verdict, failed):
    """'ok' or a sentence saying how the row differs from its expectation."""
    codes = sorted(set(d["code"] for d in verdict["diagnostics"]))
    want = expected_failures(row, user, verdict)
    patterns, code = row.expect(user)
    problems = []
    if failed != want:
        problems.append("failed %s, expected %s" % (failed, want))
    if not verdict["checks"]:
        problems.append("no checks (codes %s)" % codes)
    if code is None and verdict["passed"] is not True:
        problems.append("did not pass (codes %s)" % codes)
    if code is not None and codes != [code]:
        problems.append("codes %s, expected [%s]" % (codes, code))
    if patterns and not want:
        problems.append("expected failures %s match no check" % patterns)
    return "; ".join(problems) or "ok"
