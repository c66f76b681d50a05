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
import ctypes
import fnmatch
import hashlib
import inspect
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "module_utils"))

from metnos_sandbox.host import (
    bwrap,  # noqa: E402
    bwrap_trust,  # noqa: E402
)
from metnos_sandbox.probe import (
    payload,  # noqa: E402
    runners,  # noqa: E402
)
from metnos_sandbox.profile import (
    host_context,  # noqa: E402
    renderer,  # noqa: E402
)

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

# How a wrapper reads the child-pid of a decoy bwrap's first json-status record (from the pipe named).
_FIRST_CHILD = """first = b""
while b"}" not in first:
    chunk = os.read(%s, 4096)
    if not chunk:
        break
    first += chunk
%s = json.loads(first.decode().split("}")[0] + "}")["child-pid"]
"""

# How a wrapper passes the real bwrap's json-status records (read from pipe r) on to the probe's fd,
# with child-pid replaced by the expression given.
_RELAY = """buf = b""
while True:
    chunk = os.read(r, 4096)
    if not chunk:
        break
    buf += chunk
    while b"\\n" in buf:
        line, buf = buf.split(b"\\n", 1)
        obj = json.loads(line.decode())
        if "child-pid" in obj:
            obj["child-pid"] = %s
        os.write(fd, (json.dumps(obj) + "\\n").encode())
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
""" + _FIRST_CHILD % ("dr", "decoy_pid") + """real = subprocess.Popen(["/usr/bin/bwrap"] + args, pass_fds=(w,))
os.close(w)
""" + _RELAY % "decoy_pid" + """rc = real.wait()
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
""" + _RELAY % "real.pid" + """sys.exit(real.wait())
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
import json, os, subprocess, sys, time
r, w = os.pipe()
decoy = subprocess.Popen(["/usr/bin/bwrap", "--unshare-user", "--die-with-parent", "--ro-bind", "/", "/",
                          "--json-status-fd", str(w), "--", "sleep", "60"], pass_fds=(w,), stdin=subprocess.DEVNULL)
os.close(w)
""" + _FIRST_CHILD % ("r", "child") + """# bwrap reports child-pid before the namespace's uid/gid maps are
# written: joined before that, the real bwrap fails (EOVERFLOW creating its root), seen under load
for _ in range(1000):
    if all(open("/proc/%d/%s" % (child, m)).read().strip() for m in ("uid_map", "gid_map")):
        break
    time.sleep(0.005)
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


FAKE_PASS = """#!/bin/sh
# A bwrap look-alike first on the PATH that executes the packaged bwrap unchanged: the sandbox is the strict
# one, only the binary the service runs is not the packaged one.
exec /usr/bin/bwrap "$@"
"""

FAKE_OTHER = """#!/bin/sh
# A self-built bwrap (accepted by its sha256) that executes another binary: an unverified copy of bwrap next to it.
exec "$(dirname "$0")/bwrap-copy" "$@"
"""

FAKE_DETACH = """#!/usr/bin/python3
# A look-alike that executes the packaged bwrap unchanged, but first starts a detached copy of the command
# outside the sandbox: double fork, setsid, every descriptor closed, argv[0] changed.
import os, sys
args = sys.argv[1:]
cmd = args[args.index("--") + 1:]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 1024)
        os.open("/dev/null", os.O_RDWR)
        os.dup2(0, 1)
        os.dup2(0, 2)
        os.execv(cmd[0], ["metnos-copy"] + cmd[1:])
    os._exit(0)
os.wait()
os.execv("/usr/bin/bwrap", ["/usr/bin/bwrap"] + args)
"""

FAKE_WATCH = """#!/usr/bin/python3
# A look-alike that executes the packaged bwrap unchanged, leaving a detached watcher behind (double fork,
# setsid, descriptors closed) that starts a copy of the command outside the sandbox once bwrap has exited.
import os, sys, time
args = sys.argv[1:]
cmd = args[args.index("--") + 1:]
me = os.getpid()
def running(pid):
    try:
        return open("/proc/%d/stat" % pid).read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 1024)
        os.open("/dev/null", os.O_RDWR)
        os.dup2(0, 1)
        os.dup2(0, 2)
        while running(me):
            time.sleep(0.01)
        if os.fork() == 0:
            os.execv(cmd[0], ["metnos-late"] + cmd[1:])
        os.wait()
        os._exit(0)
    os._exit(0)
os.wait()
os.execv("/usr/bin/bwrap", ["/usr/bin/bwrap"] + args)
"""

FAKE_SYNC = """#!/usr/bin/python3
# A look-alike that runs a copy of the command outside as its own child (never an orphan), reads its report,
# kills it at once, then executes the packaged bwrap unchanged: nothing of the copy is left to find later.
import os, signal, sys
args = sys.argv[1:]
cmd = args[args.index("--") + 1:]
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.dup2(w, 1)
    os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
    os.execv(cmd[0], ["metnos-sync"] + cmd[1:])
os.close(w)
buf = b""
while b"\\n" not in buf:
    chunk = os.read(r, 4096)
    if not chunk:
        break
    buf += chunk
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
os.execv("/usr/bin/bwrap", ["/usr/bin/bwrap"] + args)
"""

FAKE_GIFT = """#!/usr/bin/python3
# A wrapper that receives one descriptor a helper outside opened (the bench's donor, over a unix socket) and
# executes the real bwrap with it: left open as fd TARGET ("fd"), copied onto the sandbox's root with
# --file ("file"), or made the controlling terminal of a new session and closed ("ctty"; no descriptor left).
import array, fcntl, os, socket, sys, termios
NAME, KEY, MODE, TARGET = %r, %r, %r, %r
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("\\0" + NAME)
s.sendall(KEY.encode() + b"\\n")
_msg, anc, _flags, _addr = s.recvmsg(16, socket.CMSG_SPACE(4))
fd = array.array("i", anc[0][2][:4])[0]
s.close()
args = ["/usr/bin/bwrap"] + sys.argv[1:]
if MODE == "fd":
    os.dup2(fd, TARGET)
    os.close(fd)
elif MODE == "file":
    os.dup2(fd, 9)
    os.close(fd)
    args[1:1] = ["--file", "9", TARGET]
elif MODE == "ctty":
    os.setsid()
    fcntl.ioctl(fd, termios.TIOCSCTTY, 0)
    os.close(fd)
os.execv(args[0], args)
"""

# Wrappers that execute the real bwrap under a weaker process attribute (issue 51): ASLR off, a raised priority.
FAKE_SETARCH = """#!/bin/sh
# A wrapper: the real bwrap with address space layout randomisation off (personality ADDR_NO_RANDOMIZE).
exec setarch "$(uname -m)" -R /usr/bin/bwrap "$@"
"""

FAKE_NICE = """#!/bin/sh
# A wrapper: the real bwrap at nice -15 (a raised priority; only root may raise it, others run at their own).
exec nice -n -15 /usr/bin/bwrap "$@"
"""

FAKE_AMBIENT = """#!/bin/sh
# A wrapper: the real bwrap with CAP_NET_RAW in its inheritable and ambient sets (setpriv), which bwrap run by root
# without --unshare-user hands on to the payload. Only a holder of the capability can raise it: run by another
# user, bwrap runs as the probe started it.
if [ "$(id -u)" = 0 ]; then
    exec setpriv --inh-caps +net_raw --ambient-caps +net_raw /usr/bin/bwrap "$@"
fi
exec /usr/bin/bwrap "$@"
"""

FAKE_SECUREBITS = """#!/usr/bin/python3
# A wrapper: clears every securebit its starter set (not locked; needs CAP_SETPCAP: as root), then executes the
# real bwrap, which keeps them as they are when it makes no user namespace. Run by another user, prctl is refused
# and bwrap runs as the probe started it.
import ctypes, os, sys
ctypes.CDLL(None).prctl(28, 0, 0, 0, 0)                 # PR_SET_SECUREBITS
os.execv("/usr/bin/bwrap", ["/usr/bin/bwrap"] + sys.argv[1:])
"""

FAKE_KEYRING = """#!/usr/bin/python3
# A wrapper: joins a new session keyring, adds a key to it (a host secret), then executes the real bwrap, which
# the keyring follows into every namespace (bwrap has no keyring option). x86_64 system call numbers. The leak is
# proven from outside in tests/integration/test_probe_keyrings.py.
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
keyring = libc.syscall(250, 1, b"metnos-host-keyring")                          # KEYCTL_JOIN_SESSION_KEYRING
key = libc.syscall(248, b"user", b"metnos-host-key", b"host-secret", 11, ctypes.c_int(-3))   # add_key
if keyring < 0 or key < 0:
    sys.exit("keyring wrapper: keyctl failed")
os.execv("/usr/bin/bwrap", ["/usr/bin/bwrap"] + sys.argv[1:])
"""

# What the gift rows hand the sandbox (key: (mode, target)), each opened by the bench (as root) outside the tree.
GIFTS = {"pipe_fd7": ("fd", 7), "pipe_stderr": ("fd", 2), "pty_master": ("fd", 7), "pty_slave": ("fd", 7),
         "tun": ("fd", 7), "kmsg": ("fd", 7), "vcs": ("fd", 7), "ctty": ("ctty", 0),
         "shadow": ("file", "/host-secret"), "socket": ("fd", 7), "pipe_in_flight": ("fd", 7),
         "socket_in_flight": ("fd", 7), "declared": ("file", "/metnos-declared"),
         "shadow_declared": ("file", "/metnos-declared"), "secret_same_size": ("file", "/metnos-declared"),
         "pipe_thread_table": ("fd", 7),
         "shadow_sbin": ("file", "/sbin")}
# The content of the file rows file_declared and file_swapped declare (its size in the profile: declare_file).
DECLARED_CONTENT = b"metnos declared content\n"
# A host secret of the same size (root's, mode 0600: nobody cannot read it), the file_same_size row's swap.
SAME_SIZE_SECRET = b"metnos HOST SECRET 0600\n"
THREAD_READER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "thread_reader.py")
USER_KEYS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "user_keys.py")
INVOCATION_FORGER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "invocation_forger.py")


def _text(path):
    with open(path) as handle:
        return handle.read()


class Donor(object):
    """Hands descriptors the bench opened to the gift wrappers (SCM_RIGHTS over an abstract unix socket of the
    host's network namespace), as a helper outside the sandbox would: a pipe whose reader is a process outside
    (cat, in its own session), both sides of a real pty (os.openpty), a tun device attached to an interface of a
    network namespace of the bench's own (ip netns add), /dev/kmsg read-write, /dev/vcs1, /etc/shadow."""

    def __init__(self, bench):
        import socket
        import threading
        self.bench, self.fds, self.procs, self.netns = bench, {}, [], None
        self.queues = []        # pipe_in_flight: (sending socket, receiving socket), the read end in the queue
        self.sinks = []         # pipe_thread_table: the files the thread readers write what they read
        self.name = "metnos-donor-%s" % os.urandom(6).hex()
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind("\0" + self.name)
        self.server.listen(8)
        self.server.settimeout(0.2)
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _open(self, key):
        """(descriptor, whether the donor closes it once handed over)."""
        if key in self.fds:
            return self.fds[key], False
        if key == "socket":
            # a connected unix socket pair made outside; the other end's reader is a shell outside the sandbox
            import socket
            mine, theirs = socket.socketpair()
            self.procs.append(subprocess.Popen(["sh", "-c", "cat >/dev/null", "sh", self.bench.dir],
                                               stdin=theirs.fileno(), stdout=subprocess.DEVNULL,
                                               start_new_session=True))
            theirs.close()
            return mine.detach(), True
        if key in ("pipe_fd7", "pipe_stderr"):
            # a new pipe each time, the donor keeping no end of it: its reader is a shell outside the sandbox and
            # the probe (what it reads, it could run)
            r, w = os.pipe()
            self.procs.append(subprocess.Popen(["sh", "-c", "cat >/dev/null", "sh", self.bench.dir], stdin=r,
                                               stdout=subprocess.DEVNULL, start_new_session=True))
            os.close(r)
            return w, True
        if key == "pipe_in_flight":
            # the read end sent over a unix socket pair (SCM_RIGHTS) and never received: no process holds it, yet
            # whoever receives it later reads what the sandbox writes (take_in_flight)
            import array
            import socket
            r, w = os.pipe()
            sender, receiver = socket.socketpair()
            sender.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r]))])
            os.close(r)
            self.queues.append((sender, receiver))
            return w, True
        if key == "socket_in_flight":
            # one end of a unix socket pair; the other end sent over another pair (SCM_RIGHTS) and never received:
            # no process holds the peer, yet whoever receives it later reads what the sandbox writes
            import array
            import socket
            mine, theirs = socket.socketpair()
            sender, receiver = socket.socketpair()
            sender.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [theirs.fileno()]))])
            theirs.close()
            self.queues.append((sender, receiver))
            return mine.detach(), True
        if key in ("declared", "shadow_declared", "secret_same_size"):
            # opened anew for each run: bwrap --file reads to the end, and a kept descriptor's offset stays there
            path = os.path.join(self.bench.dir, "declared-content" if key == "declared" else "same-size-secret")
            if key != "shadow_declared":
                with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as handle:
                    handle.write(DECLARED_CONTENT if key == "declared" else SAME_SIZE_SECRET)
            return os.open("/etc/shadow" if key == "shadow_declared" else path, os.O_RDONLY), True
        if key == "pipe_thread_table":
            # the read end held only by a thread of a host process with a descriptor table of its own
            r, w = os.pipe()
            sink = os.path.join(self.bench.dir, "thread-sink-%d" % len(self.sinks))
            self.sinks.append(sink)
            reader = subprocess.Popen([PYTHON, THREAD_READER, str(r), sink], pass_fds=(r,), stdout=subprocess.PIPE,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
            self.procs.append(reader)
            os.close(r)
            assert reader.stdout.readline() == b"ready\n"
            reader.stdout.close()
            return w, True
        if key in ("pty_master", "pty_slave", "ctty"):
            master, slave = os.openpty()
            self.fds[key + ":other"] = slave if key == "pty_master" else master
            fd = master if key == "pty_master" else slave
        elif key == "tun":
            fd = self._tun()
        elif key == "kmsg":
            fd = os.open("/dev/kmsg", os.O_RDWR)
        elif key == "vcs":
            fd = os.open("/dev/vcs1", os.O_RDONLY)
        elif key in ("shadow", "shadow_sbin"):
            fd = os.open("/etc/shadow", os.O_RDONLY)
        else:
            raise KeyError(key)
        self.fds[key] = fd
        return fd, False

    def _tun(self):
        """A tun device made in a network namespace of the bench's own (ip netns add), attached: its descriptor."""
        import fcntl
        import struct
        self.netns = "metnos-gift-%s" % os.urandom(4).hex()
        subprocess.run(["ip", "netns", "add", self.netns], check=True, capture_output=True)
        out = {}

        def attach():      # in a thread of its own: setns moves only the calling thread
            here = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
            there = os.open("/run/netns/" + self.netns, os.O_RDONLY)
            libc = ctypes.CDLL(None, use_errno=True)
            try:
                if libc.setns(there, 0x40000000) != 0:                  # CLONE_NEWNET
                    raise OSError(ctypes.get_errno(), "setns")
                fd = os.open("/dev/net/tun", os.O_RDWR)
                fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH", b"metnos-tun0", 0x0001 | 0x1000))  # TUNSETIFF
                out["fd"] = fd
            finally:
                libc.setns(here, 0x40000000)
                os.close(here)
                os.close(there)
        import threading
        worker = threading.Thread(target=attach)
        worker.start()
        worker.join()
        return out["fd"]

    def _serve(self):
        import array
        import socket
        while not self.stop:
            try:
                conn, _addr = self.server.accept()
            except OSError:
                continue
            try:
                conn.settimeout(5)
                key = conn.recv(64).decode().strip()
                fd, once = self._open(key)
                conn.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
                if once:
                    os.close(fd)
            except Exception:
                pass
            finally:
                conn.close()

    def wrapper(self, key):
        """The path of the gift wrapper for ``key`` (written once)."""
        path = os.path.join(self.bench.dir, "gift-" + key, "bwrap")
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), mode=0o755)
            with open(path, "w") as handle:
                handle.write(FAKE_GIFT % ((self.name, key) + GIFTS[key]))
            os.chmod(path, 0o755)
        return path

    def take_in_flight(self):
        """The read end the last pipe_in_flight plant left in flight, received as anyone holding the socket
        could (a descriptor of this process's own)."""
        import socket
        _sender, receiver = self.queues[-1]
        _msg, anc, _flags, _addr = receiver.recvmsg(1, socket.CMSG_SPACE(4))
        return int.from_bytes(anc[0][2][:4], sys.byteorder)

    def close(self):
        self.stop = True
        self.thread.join()
        self.server.close()
        for pair in self.queues:
            for sock in pair:
                sock.close()
        self.queues = []
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}
        for proc in self.procs:
            proc.kill()
            proc.wait()
        if self.netns:
            subprocess.run(["ip", "netns", "delete", self.netns], capture_output=True)


# Each look-alike row but the ones that plant a bwrap the probe must refuse accepts its own binary by sha256
# (as an administrator accepts a self-built bwrap), so that the row proves its own check, not the package's.


class Bench(object):
    """Host-side fixtures for the rows, all under one /var/tmp directory; ``close()`` removes them."""

    def __init__(self, mounts=True):
        self.with_mounts = mounts
        self.nobody = pwd.getpwnam("nobody")
        self.dir = tempfile.mkdtemp(prefix="metnos-matrix-", dir="/var/tmp")
        self.mounts = []
        self.trusted = {}
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
                           ("pin", FAKE_PIN), ("pass", FAKE_PASS), ("other", FAKE_OTHER),
                           ("detach", FAKE_DETACH), ("watch", FAKE_WATCH), ("sync", FAKE_SYNC),
                           ("setarch", FAKE_SETARCH), ("nice", FAKE_NICE), ("keyring", FAKE_KEYRING),
                           ("ambient", FAKE_AMBIENT), ("securebits", FAKE_SECUREBITS),
                           ("invocation", _text(INVOCATION_FORGER))):
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
        version = bwrap.parse_version(subprocess.run([self.bwrap, "--version"], capture_output=True,
                                                     text=True).stdout)
        self.setuid_ok = bwrap.version_tuple(version) < (0, 12)
        self.mounts.append(os.path.join(os.path.dirname(self.fakes["pin"]), "netns-pin"))   # if left mounted
        shutil.copy(self.bwrap, os.path.join(os.path.dirname(self.fakes["other"]), "bwrap-copy"))
        self.bwrap_copy = os.path.join(self.dir, "copy", "bwrap")          # the real bwrap's bytes, unpackaged
        os.makedirs(os.path.dirname(self.bwrap_copy), mode=0o755)
        shutil.copy(self.bwrap, self.bwrap_copy)
        self.bwrap_modified = os.path.join(self.dir, "bwrap-modified")     # one byte more: dpkg --verify says 5
        shutil.copy(self.bwrap, self.bwrap_modified)
        with open(self.bwrap_modified, "ab") as handle:
            handle.write(b"\0")
        os.chmod(self.bwrap_modified, 0o755)
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

    @property
    def donor(self):
        if getattr(self, "_donor", None) is None:
            self._donor = Donor(self)
        return self._donor

    def close(self):
        if getattr(self, "_donor", None) is not None:
            self._donor.close()
            self._donor = None
        for target in reversed(self.mounts):
            subprocess.run(["umount", "-l", target], capture_output=True)
        self.mounts = []
        shutil.rmtree(self.dir, ignore_errors=True)

    def trust(self, path, accept):
        key = (path, tuple(accept))
        if key not in self.trusted:
            self.trusted[key] = bwrap_trust.for_run(path, accepted=accept, path_text="/usr/bin:/bin")
        return self.trusted[key]

    def can_unshare_mounts(self):
        return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0

    def in_private_mounts(self, binds, func):
        """func() (a JSON-able result) in a forked child in a private mount namespace with ``binds`` ((source,
        destination) pairs) mounted: what the probe there sees, nothing the host sees."""
        rfd, wfd = os.pipe()
        child = os.fork()
        if child == 0:      # pragma: no cover - the forked child
            code = 1
            try:
                os.close(rfd)
                if ctypes.CDLL(None, use_errno=True).unshare(0x00020000) != 0:     # CLONE_NEWNS
                    raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
                subprocess.run(["mount", "--make-rprivate", "/"], check=True, capture_output=True)
                for src, dest in binds:
                    subprocess.run(["mount", "--bind", src, dest], check=True, capture_output=True)
                data = json.dumps(func()).encode()
                code = 0
            except BaseException as exc:
                data = json.dumps({"error": repr(exc)}).encode()
            try:
                while data:
                    data = data[os.write(wfd, data):]
            finally:
                os._exit(code)
        os.close(wfd)
        chunks = []
        while True:
            chunk = os.read(rfd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(rfd)
        os.waitpid(child, 0)
        out = json.loads(b"".join(chunks).decode())
        if "error" in out and "checks" not in out:
            raise AssertionError("the private mount namespace run failed: %s" % out["error"])
        return out

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
    prof = renderer.render_safe(dict(runners.PROBE_MANIFEST),
                                host_context.HostContext({"python_executable": PYTHON}), {}, None)
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


def binary(attr, then=None, accept=False):
    """argv[0] replaced by a bench binary (``fakes.NAME`` or an attribute); ``accept``: the row accepts its sha256."""
    def edit(argv, bench):
        argv = [getattr(bench, attr) if "." not in attr else bench.fakes[attr.split(".")[1]]] + list(argv[1:])
        return then(argv, bench) if then else argv
    edit.accept = accept
    return edit


def declare_file(edit):
    """The row's profile also declares a file it copies onto the root, /metnos-declared, of DECLARED_CONTENT's
    size and sha256 (--file FD DEST: the gift wrapper adds the option and the descriptor)."""
    def declare(profile):
        profile = dict(profile, mounts=list(profile["mounts"]) + [
            {"kind": "file", "dest": "/metnos-declared", "size": len(DECLARED_CONTENT),
             "sha256": hashlib.sha256(DECLARED_CONTENT).hexdigest()}])
        return profile
    edit.declare = declare
    return edit


def as_user(user, argv):
    """``argv`` run as ``user`` (a name), with the user's own ids and no capabilities (setpriv), as the service."""
    if user == "root":
        return list(argv)
    entry = pwd.getpwnam(user)
    return ["setpriv", "--reuid", str(entry.pw_uid), "--regid", str(entry.pw_gid), "--clear-groups", "--"] + list(argv)


def user_key(canary, description="metnos-service-key", perm=()):
    """A plant: a "user" key holding ``canary`` added to the user's own user keyring (@u, its kuid's, the host's)
    before the probe runs, invalidated after (``perm``: (its hex permissions,)). Returns the plant (called with the
    user's name, returns the undo)."""
    def plant(user):
        done = subprocess.run(as_user(user, [PYTHON, USER_KEYS, "add", description, canary] + list(perm)),
                              capture_output=True, timeout=30, check=True)
        serial = done.stdout.decode().strip()
        return lambda: subprocess.run(as_user(user, [PYTHON, USER_KEYS, "drop", serial]), capture_output=True,
                                      timeout=30, check=True)
    return plant


def starter_securebit(bit):
    """A plant: the probe's own process (the starter of bwrap, run in this process) with securebit ``bit`` set, not
    locked, for the run; the bits it had restored after (as root: CAP_SETPCAP)."""
    def plant(_user):
        libc = ctypes.CDLL(None, use_errno=True)
        before = libc.prctl(27, 0, 0, 0, 0)                              # PR_GET_SECUREBITS
        assert libc.prctl(28, before | 1 << bit, 0, 0, 0) == 0, ctypes.get_errno()
        return lambda: libc.prctl(28, before, 0, 0, 0)
    return plant


def _stacked_on_etc(bench):
    """Two host files bound one over the other at /etc/hostname (in the probe's private mount namespace): the
    lower bind stays writable under bwrap's read-only one, and no path reaches it."""
    out = []
    for name in ("stack-lower", "stack-upper"):
        path = os.path.join(bench.dir, name)
        with open(path, "w") as handle:
            handle.write("metnos-stack\n")
        os.chmod(path, 0o644)
        out.append((path, "/etc/hostname"))
    return out


def gift(key, then=None):
    """argv[0] replaced by the gift wrapper for ``key`` (its sha256 accepted): the real bwrap, handed one
    descriptor a helper outside opened (Donor)."""
    def edit(argv, bench):
        argv = then(argv, bench) if then else argv
        return [bench.donor.wrapper(key)] + list(argv[1:])
    edit.accept = True
    return edit


# --------------------------------------------------------------------------- the rows

_UNSANDBOXED = ["bwrap_child_is_payload", "*_namespace_private", "fresh_tmpfs:/tmp", "minimal_dev:/dev",
                "read_only:*", "hidden:*", "no_undeclared_mounts", "parent_death_signal", "no_capabilities",
                "payload_code_from_binds", "bwrap_exe_verified", "root_content_declared", "keyring_own"]
# A look-alike that runs the command itself: everything fails, and the launcher is not a verified bwrap; the
# host's own /proc lacks the read-only covers bwrap adds for root.
NOT_ISOLATED_DIRECT = {"root": _UNSANDBOXED + ["proc_covers"], "nobody": list(_UNSANDBOXED)}
_NO_MNT = ["mnt_namespace_private", "fresh_tmpfs:/tmp", "minimal_dev:/dev", "read_only:*", "hidden:*",
           "no_undeclared_mounts", "parent_death_signal", "no_capabilities", "payload_code_from_binds",
           "bwrap_exe_verified", "root_content_declared"]
NO_MNT = {"root": _NO_MNT + ["proc_covers"], "nobody": list(_NO_MNT)}


class Row(object):
    """One weakening. ``fails``: the check patterns that must fail (per user, or for all); ``code``: the
    diagnostic codes the verdict must carry (a code, a list, or per user; default probe_check_failed when checks
    fail), ``also``: codes it may carry besides (a race the row cannot fix, e.g. whether a watcher's copy was
    already running); info codes (an accepted bwrap) are never counted. ``accept``: the row's own binary is
    accepted by its sha256, as an administrator accepts a self-built bwrap, so that the row proves its own
    check and not the package's. ``isolate(bench)``: (source, destination) binds made in a private mount
    namespace the probe runs in (what the probe sees as the service's bwrap, e.g. a modified copy over
    /usr/bin/bwrap). ``properties``: unit directives of the transient unit (systemd context only). ``only``:
    "direct" or "systemd" for a row one context cannot plant. ``plant``: a function of the user's name that plants
    the fault on the host before the run and returns its undo (user_key). Every check of ``fails`` fails in a
    transient unit too: there the payload's descriptor tables are read again as their owner (issue 51 item 5), so
    no row's expectation is excused as unseen or counted."""

    def __init__(self, name, what, edit, fails, code=None, note=None, needs=None, accept=False, also=(),
                 isolate=None, properties=(), only=None, plant=None):
        self.name, self.what, self.edit, self.note, self.needs = name, what, edit, note, needs
        self.plant = plant      # plant(user) before the run, on the host as that user: returns the undo
        self.accept = accept or getattr(edit, "accept", False)
        self.also, self.isolate, self.properties, self.only = set(also), isolate, properties, only
        self.fails = fails if isinstance(fails, dict) else dict((u, fails) for u in USERS)
        codes = code if isinstance(code, dict) else dict((u, code) for u in USERS)
        self.code = {}
        for u in USERS:
            given = codes.get(u)
            if given is None:
                given = ["probe_check_failed"] if self.fails[u] else []
            self.code[u] = sorted([given] if isinstance(given, str) else given)

    def expect(self, user):
        """(check patterns that must fail, codes) for ``user``; any other user is unprivileged like nobody."""
        key = user if user in self.fails else "nobody"
        return self.fails[key], self.code[key]

    def weakening(self, user):
        patterns, codes = self.expect(user)
        return bool(patterns or codes)


def _modified_over_bwrap(bench):
    return [(bench.bwrap_modified, "/usr/bin/bwrap")]


# The process tree (issue 20): look-alikes that execute the packaged bwrap unchanged (the sandbox is the strict
# one) but do work beside it. Each accepts its own sha256: only the tree accounting can catch them.
TREE_ROWS = [
    Row("detached_copy", "look-alike: execs the packaged bwrap, but first a detached copy of the command runs "
        "outside (double fork, setsid, descriptors closed, argv[0] changed)", binary("fakes.detach", accept=True),
        [], code="probe_payload_outside"),
    Row("watcher_after_exit", "look-alike: execs the packaged bwrap, leaving a detached watcher that starts a copy "
        "of the command once bwrap has exited", binary("fakes.watch", accept=True), [],
        code="probe_process_unaccounted", also=["probe_payload_outside"],
        note="the watcher is found while bwrap runs; whether its copy already ran when the tree is killed is a "
             "race the row leaves open (then it is found too)"),
    Row("copy_killed_at_once", "look-alike: runs a copy of the command outside as its own child, reads its report "
        "and kills it, then execs the packaged bwrap (never an orphan, gone before any poll)",
        binary("fakes.sync", accept=True), [], code="probe_payload_outside",
        note="found by the beacon: the copy reached the probe's own network namespace, where the probe holds it "
             "while it reads who it is"),
    Row("dead_bwrap", "a setuid copy of bwrap that dies at once (uid-map error run by nobody, capset refused in a "
        "container), leaving its child stuck", binary("setuid_bwrap", accept=True), [],
        code={"root": [], "nobody": ["probe_setup_failed"]}, needs="setuid_ok",
        note="run by root the setuid bit changes nothing (real uid = effective uid): the strict sandbox; run by "
             "nobody bwrap dies at once - a setup failure reported with its stderr within seconds, not a timeout"),
]

# The bwrap that runs (issue 20): only the packaged one is trusted.
TRUST_ROWS = [
    Row("lookalike_on_path", "look-alike first on the PATH that execs the packaged bwrap unchanged (the sandbox is "
        "real)", binary("fakes.pass"), [], code="probe_bwrap_unpackaged"),
    Row("copy_unpackaged", "an unpackaged copy of the packaged bwrap (the same bytes) first on the PATH",
        binary("bwrap_copy"), ["bwrap_exe_verified"], code=["probe_bwrap_unpackaged", "probe_check_failed"]),
    Row("bwrap_modified", "the packaged /usr/bin/bwrap with one byte appended (dpkg --verify: ??5??????), as the "
        "probe sees it", binary("bwrap", then=lambda a, b: ["/usr/bin/bwrap"] + a[1:]), ["bwrap_exe_verified"],
        code=["probe_bwrap_modified", "probe_check_failed"], isolate=_modified_over_bwrap),
    Row("accepted_runs_other", "a self-built bwrap accepted by its sha256 that executes another, unverified binary",
        binary("fakes.other", accept=True), ["bwrap_exe_verified"], only="direct",
        also=["probe_process_unaccounted"]),    # a race: a poll may catch the wrapper's sh before its exec
    Row("unit_sees_other_bwrap", "the unit's mount namespace shows a modified bwrap at /usr/bin/bwrap "
        "(BindReadOnlyPaths=); the probe verified the host's", lambda a, b: ["/usr/bin/bwrap"] + a[1:],
        ["bwrap_exe_verified"], properties=[("BindReadOnlyPaths", "{bench.bwrap_modified}:/usr/bin/bwrap")],
        only="systemd"),
]

ROWS = [
    Row("strict", "the strict profile, unmutated", lambda a, b: a, []),
    Row("drop_unshare_user", "--unshare-user dropped (packaged bwrap)", drop("--unshare-user"),
        {"root": ["user_namespace_private", "keyring_own"], "nobody": []},
        code={"root": ["probe_check_failed", "probe_keyring_shared"], "nobody": []},
        note="not a weakening for nobody: a non-setuid bwrap run by a non-root user always creates the user "
             "namespace (bubblewrap.c); the setuid row below makes it one. In the host's user namespace the payload "
             "has the host's user keyrings (issue 51)"),
    Row("drop_unshare_user_setuid", "--unshare-user dropped, bwrap setuid (privileged path)",
        binary("setuid_bwrap", drop("--unshare-user")), ["user_namespace_private", "keyring_own"],
        code=["probe_check_failed", "probe_keyring_shared"], needs="setuid_ok", accept=True),
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
        ["proc_is_own_procfs", "proc_covers"]),
    Row("proc_foreign", "/proc: a procfs of another PID namespace bound",
        replace(("--proc", "/proc"), ("--bind", "{bench.foreign_proc}", "/proc")),
        {"root": ["proc_is_own_procfs", "proc_covers"], "nobody": ["proc_is_own_procfs"]}, needs="mounts"),
    Row("proc_host_bind", "/proc: the host's /proc bound (--bind /proc /proc)",
        replace(("--proc", "/proc"), ("--bind", "/proc", "/proc")), {"root": ["proc_covers"], "nobody": []},
        note="without --unshare-pid bwrap's --proc is a bind of the host's /proc (bubblewrap.c: 'Use system "
             "procfs, as we share pid namespace anyway'), plus read-only covers of /proc/irq and /proc/bus for a "
             "caller that may write them (root): run by root the bind lacks them; run by nobody bwrap adds none, "
             "the same mount table (equivalent, not a weakening)"),
    Row("proc_covers_rw", "read-write binds over /proc/irq and /proc/bus after --proc (bwrap's covers replaced)",
        add("--bind", "/proc/irq", "/proc/irq", "--bind", "/proc/bus", "/proc/bus"), ["proc_covers"],
        needs="/proc/irq"),
    Row("bind_elsewhere", "extra --bind /var/lib at a path no check knew (/metnos-x)",
        add("--bind", "/var/lib", "/metnos-x"), ["no_undeclared_mounts"]),
    Row("symlink_made_bind", "--symlink usr/bin /bin made --bind /usr/bin /bin (writable host binaries)",
        replace(("--symlink", "usr/bin", "/bin"), ("--bind", "/usr/bin", "/bin")),
        ["no_undeclared_mounts", "root_content_declared"], code=["probe_check_failed", "probe_root_undeclared"],
        note="the declared symlink /bin is not on the root: a mount covers its place (issue 51)"),
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
        "hands them on as ambient)", add("--cap-add", "ALL"), ["no_capabilities", "process_attributes"],
        code=["probe_check_failed", "probe_attribute_ambient", "probe_attribute_capabilities"]),
    Row("seccomp_added", "wrapper: the real bwrap with --add-seccomp-fd (a filter of its own, R-BASE-8)",
        binary("fakes.seccomp", accept=True), ["no_custom_seccomp", "keyring_own"],
        code=["probe_check_failed", "probe_keyring_shared"], needs="python3-seccomp",
        note="the payload has a filter the probe has not: keyctl might kill it, so it is not asked and the keyrings "
             "are not proven (issue 51)"),
    Row("userns_joined", "wrapper: the real bwrap joins a user namespace a decoy outside holds (--userns "
        "instead of --unshare-user; the namespace's descriptor reaches the payload too; the decoy is left in the "
        "tree)", binary("fakes.userns", accept=True),
        ["bwrap_child_is_payload", "user_namespace_private", "no_leaked_descriptors"],
        code=["probe_not_isolated", "probe_process_unaccounted"]),
    Row("fd_leaked", "wrapper: the real bwrap with a descriptor of the host's / left open (openat escapes)",
        binary("fakes.fd", accept=True), ["no_leaked_descriptors"], code="probe_descriptor_file"),
    Row("library_planted", "wrapper: a library planted on the sandbox's root (--file) and preloaded into the "
        "payload (--setenv LD_PRELOAD)", binary("fakes.preload", accept=True),
        ["payload_code_from_binds", "root_content_declared"], code=["probe_check_failed", "probe_root_undeclared"]),
    Row("harmless_words", "--new-session, --hostname, --remount-ro /tmp, --unshare-cgroup added",
        add("--new-session", "--hostname", "metnos-x", "--remount-ro", "/tmp", "--unshare-cgroup"), [],
        note="not weakenings (a new session, a name, a read-only /tmp, one more namespace): the verdict passes "
             "and lists the words under argv_deviations"),
    Row("netns_pinned", "wrapper: the real bwrap, and a helper that keeps the sandbox's network namespace "
        "alive on the host (a bind of its nsfs inode, as 'ip netns add' makes)", binary("fakes.pin", accept=True),
        {"root": ["net_namespace_private"], "nobody": []},
        code={"root": ["probe_check_failed", "probe_process_unaccounted"], "nobody": ["probe_process_unaccounted"]},
        note="run by nobody the helper cannot mount: nothing is held, but the helper itself ran beside bwrap"),
    Row("fake_exec", "look-alike bwrap: runs the command unsandboxed, no status records",
        binary("fakes.exec", accept=True), NOT_ISOLATED_DIRECT, code="probe_not_isolated"),
    Row("fake_json", "look-alike bwrap: plausible json-status (a decoy sandbox's child-pid), command unsandboxed",
        binary("fakes.json", accept=True), NOT_ISOLATED_DIRECT, code=["probe_not_isolated",
                                                                      "probe_process_unaccounted"]),
    Row("fake_left_behind", "look-alike: command unsandboxed, exits leaving a process that holds its output",
        # the process it leaves holds the probe's status pipe, which the unsandboxed command holds too (issue 41)
        binary("fakes.leave", accept=True),
        dict((u, NOT_ISOLATED_DIRECT[u] + ["no_leaked_descriptors"]) for u in USERS),
        code=["probe_not_isolated", "probe_process_unaccounted"],
        note="in a transient unit the process left behind is the service user's, whose descriptor links root "
             "without CAP_SYS_PTRACE may not read: they are read again as their owner, so the pipe is judged there "
             "too (issue 51)"),
    Row("fake_wrap_decoy", "wrapper around the real bwrap that reports a decoy's child-pid (sandbox itself real)",
        binary("fakes.wrap", accept=True), ["bwrap_child_is_payload", "bwrap_exe_verified"],
        code=["probe_check_failed", "probe_process_unaccounted"]),
    Row("fake_no_mnt", "look-alike: user/ipc/uts/net namespaces, no mount namespace, honest json-status",
        binary("fakes.unshare", accept=True), NO_MNT, code=["probe_check_failed", "probe_root_undeclared"]),
    Row("fake_move_after_fork", "wrapper: real bwrap without --unshare-ipc, then the wrapper moves itself into "
        "new namespaces (judged against bwrap's own, the payload's IPC namespace looked private)",
        binary("fakes.move", accept=True), ["bwrap_child_is_payload", "bwrap_exe_verified", "ipc_namespace_private"],
        code="probe_not_isolated"),
] + TREE_ROWS + TRUST_ROWS + [
    # What the sandbox holds (issue 41): the real bwrap and the strict profile, handed one thing from outside.
    Row("pipe_to_outside", "wrapper: a pipe left open as fd 7 whose reader is a shell outside the sandbox",
        gift("pipe_fd7"), ["no_leaked_descriptors"], code="probe_descriptor_outside"),
    Row("stderr_to_outside", "wrapper: the payload's stderr replaced by a pipe to a shell outside the sandbox",
        gift("pipe_stderr"), ["no_leaked_descriptors"], code="probe_descriptor_outside"),
    Row("socket_to_outside", "wrapper: one end of a unix socket pair left open as fd 7, the other end read by a "
        "shell outside the sandbox", gift("socket"), ["no_leaked_descriptors"], code="probe_descriptor_outside"),
    # Unknown is a failure (issue 51): a pipe whose other end no process of the sandbox or the probe holds.
    Row("pipe_in_flight", "wrapper: a pipe's write end left open as fd 7, its read end kept in flight in a unix "
        "socket's queue outside (SCM_RIGHTS sent, never received: no process holds it)", gift("pipe_in_flight"),
        ["no_leaked_descriptors"], code="probe_descriptor_unseen"),
    Row("socket_in_flight", "wrapper: one end of a unix socket pair left open as fd 7, its peer kept in flight in "
        "another socket's queue outside (SCM_RIGHTS sent, never received: no process holds it)",
        gift("socket_in_flight"), ["no_leaked_descriptors"], code="probe_descriptor_unseen",
        note="proven from outside in tests/integration/test_probe_unseen_ends.py: the host receives the peer and "
             "reads what the sandbox wrote"),
    Row("pipe_thread_table", "wrapper: a pipe's write end left open as fd 7, its read end held only by a thread of "
        "a host process with a descriptor table of its own (unshare(CLONE_FILES): absent from /proc/PID/fd)",
        gift("pipe_thread_table"), ["no_leaked_descriptors"], code="probe_descriptor_outside"),
    Row("pty_master", "wrapper: the master side of a host pty left open (the sandbox types into its shell)",
        gift("pty_master"), ["no_leaked_descriptors"], code="probe_descriptor_terminal"),
    Row("pty_slave", "wrapper: the slave side of a host pty left open (writes to a host terminal)",
        gift("pty_slave"), ["no_leaked_descriptors"], code="probe_descriptor_terminal"),
    Row("tun_attached", "wrapper: /dev/net/tun attached to an interface of another network namespace",
        gift("tun"), ["no_leaked_descriptors"], code="probe_descriptor_device", needs="/dev/net/tun"),
    Row("kmsg_open", "wrapper: /dev/kmsg opened read-write (read and forge the kernel log)", gift("kmsg"),
        ["no_leaked_descriptors"], code="probe_descriptor_device", needs="/dev/kmsg"),
    Row("vcs_open", "wrapper: /dev/vcs1 open (the host console's screen)", gift("vcs"),
        ["no_leaked_descriptors"], code="probe_descriptor_terminal", needs="/dev/vcs1"),
    Row("ctty_inherited", "wrapper: a new session whose controlling terminal is a host pty (no descriptor left)",
        gift("ctty"), ["no_controlling_terminal"], code="probe_controlling_terminal"),
    Row("stacked_hidden_mount", "not a weakening: two binds stacked at /etc/hostname, the lower (writable) one "
        "hidden under the upper that bwrap makes read-only", lambda a, b: a, [], isolate=_stacked_on_etc,
        needs="/etc/hostname",
        note="a mount no path reaches is not judged: the checks read the top of each stack (visible mounts)"),
    Row("file_copied_on_root", "wrapper: --file FD /host-secret with /etc/shadow opened by a root helper (only "
        "an unprivileged user gains: it cannot read the shadow file otherwise)", gift("shadow"),
        ["root_content_declared"], code="probe_root_undeclared"),
    # Process attributes not weaker than the starter's (issue 51): the packaged bwrap run by a wrapper.
    Row("aslr_off", "wrapper: the real bwrap under setarch -R (ASLR off: personality ADDR_NO_RANDOMIZE)",
        binary("fakes.setarch", accept=True), ["process_attributes"], code="probe_attribute_personality"),
    Row("nice_raised", "wrapper: the real bwrap under nice -n -15 (a raised scheduling priority)",
        binary("fakes.nice", accept=True), {"root": ["process_attributes"], "nobody": []},
        code={"root": "probe_attribute_priority", "nobody": []},
        note="only root may raise a priority: run by nobody, nice is refused and bwrap runs at the probe's own"),
    Row("ambient_net_raw", "wrapper: the real bwrap under setpriv --ambient-caps +net_raw, --unshare-user dropped "
        "(the payload holds CAP_NET_RAW in its ambient set, in the host's user namespace)",
        binary("fakes.ambient", drop("--unshare-user"), accept=True),
        {"root": ["user_namespace_private", "keyring_own", "no_capabilities", "process_attributes"], "nobody": []},
        code={"root": ["probe_check_failed", "probe_keyring_shared", "probe_attribute_ambient",
                       "probe_attribute_capabilities"], "nobody": []},
        note="proven from outside: the host's /proc/PID/status of the payload shows CapAmb 0x2000 (as root; with "
             "--unshare-user bwrap clears it). Cannot exist for nobody: a process raises an ambient capability only "
             "if it is permitted and inheritable, and nobody holds none, so setpriv is refused"),
    Row("securebits_cleared", "the probe (bwrap's starter) with SECBIT_NO_CAP_AMBIENT_RAISE set; a wrapper clears "
        "it (prctl PR_SET_SECUREBITS) and executes the real bwrap, --unshare-user dropped (the payload in the "
        "starter's user namespace, where securebits hold)",
        binary("fakes.securebits", drop("--unshare-user"), accept=True),
        {"root": ["user_namespace_private", "keyring_own", "process_attributes"], "nobody": []},
        code={"root": ["probe_check_failed", "probe_keyring_shared", "probe_attribute_securebits"], "nobody": []},
        only="direct", plant=starter_securebit(6),
        note="proven from outside in tests/integration/test_probe_securebits.py: the payload raises CAP_NET_RAW into "
             "its ambient set, which the starter's bit refuses. Cannot exist for nobody: clearing a securebit needs "
             "CAP_SETPCAP, and bwrap run by nobody makes a user namespace, which starts with none. Not in a unit: "
             "the probe there is not bwrap's starter (the unit's process is, with its SecureBits=)"),
    Row("securebits_cleared_unit", "the transient unit (root's) with SecureBits=no-setuid-fixup; the unit's process, "
        "a wrapper, clears it (prctl PR_SET_SECUREBITS) and executes the real bwrap, --unshare-user dropped",
        binary("fakes.securebits", drop("--unshare-user"), accept=True),
        {"root": ["user_namespace_private", "keyring_own", "process_attributes"], "nobody": []},
        code={"root": ["probe_check_failed", "probe_keyring_shared", "probe_keyring_keys",
                       "probe_attribute_securebits"], "nobody": []},
        only="systemd", properties=[("SecureBits", "no-setuid-fixup")],
        note="the unit context of securebits_cleared: the starter is the unit's process, its bits are its "
             "SecureBits= (proven applied by systemd in tests/system/test_probe_weakened_systemd.py). systemd knows "
             "no no-cap-ambient-raise word, and noroot leaves the unit's root without the capabilities a bwrap "
             "without a user namespace needs, so the bit is no-setuid-fixup. Root's payload in the host's user "
             "namespace also holds the unit's invocation_id key, in the host's user namespace a key of the host's: "
             "probe_keyring_keys; the other units' it sees are info (probe_keyring_invocation_ids). "
             "Cannot exist for a unit with User= (the service user): clearing a securebit needs CAP_SETPCAP, so the "
             "wrapper's prctl is refused and bwrap runs with the unit's bits"),
    # Keyrings, not namespaced (issue 51): the sandbox started holding a host process's session keyring.
    Row("keyring_joined", "wrapper: joins a new session keyring with a host key in it, then executes the real bwrap "
        "(the sandbox reads the host's key; the host reads a key the sandbox adds)",
        binary("fakes.keyring", accept=True), ["keyring_own"], code=["probe_keyring_keys", "probe_keyring_shared"],
        only="direct", note="in a transient unit the unit's own session keyring (systemd's KeyringMode=private) "
        "reaches the payload the same way, planted or not"),
    Row("keyring_joined_unit", "the keyring_joined wrapper as the unit's process: joins a new session keyring with a "
        "host key in it, then executes the real bwrap", binary("fakes.keyring", accept=True), ["keyring_own"],
        code="probe_keyring_keys", only="systemd",
        note="in a unit a session keyring joined before the payload is the unit's kind (probe_keyring_unit, info: "
             "the payload cannot tell a wrapper's from systemd's), so the host key in it is what fails. That the "
             "unit's own session keyring carries keys both ways between the service and the sandbox is proven "
             "from outside in tests/system/test_probe_weakened_systemd.py (tests/helpers/keyring_holder.py, unit)"),
    Row("keyring_shared_mode", "the transient unit with KeyringMode=shared: systemd links the service user's own "
        "user keyring (the host's, shared with every process of that uid) into the unit's session keyring, which the "
        "payload inherits through bwrap", lambda argv, bench: argv, ["keyring_own"], code=["probe_keyring_keys"],
        only="systemd", properties=[("KeyringMode", "shared")], plant=user_key("metnos-canary-shared-mode"),
        note="caught as a key of another linked in the payload's session keyring; proven from outside in "
             "tests/system/test_probe_weakened_systemd.py: with a key planted in the service user's @u, the sandbox "
             "reads it without linking anything (under KeyringMode=private only by linking the keyring by its "
             "serial, the keyring_user_key row)"),
    Row("keyring_user_key", "the service user's own user keyring (@u: its kuid's, the host's) holds a key, planted "
        "before the probe; the packaged bwrap unchanged: the sandbox finds the keyring's serial in /proc/keys, links "
        "it into its session keyring and reads the key", lambda argv, bench: argv, ["keyring_own"],
        code="probe_keyring_keys", plant=user_key("metnos-canary-service-key"),
        note="proven from outside in tests/integration/test_probe_keyrings.py (as root and nobody, the host gets the "
             "canary back) and, in a transient unit (KeyringMode=private), in tests/system/"
             "test_probe_weakened_systemd.py (its containers allow add_key: tests/podman/seccomp-keyrings.json)"),
    Row("keyring_invocation_forged", "wrapper, the unit's process: systemd's invocation_id key in the unit's session "
        "keyring unlinked and replaced by a key of the service user's with the same type, description and 16 bytes, "
        "readable by anyone; then the real bwrap", binary("fakes.invocation", accept=True), ["keyring_own"],
        code="probe_keyring_keys", only="systemd",
        note="only its owner (the service user, not uid 0) tells it from systemd's: the exemption of systemd's key "
             "holds only on the evidence read from outside (probe/keyrings.py why_not_systemds); the helper is "
             "tests/helpers/invocation_forger.py"),
    Row("keyring_invocation_forged_root", "a key forged among the other units' invocation_id keys a root payload "
        "views: a user key named invocation_id, owned by root, perm 0x0b0b0000 as systemd's, 16 bytes that are no "
        "unit's InvocationID, planted in root's own user keyring before the probe; the packaged bwrap unchanged",
        lambda argv, bench: argv, ["keyring_own"], code="probe_keyring_keys",
        plant=user_key("metnos-forged-16", "invocation_id", ("0b0b0000",)), only="systemd",
        note="only its content tells it from systemd's (probe/keyrings.py visible_evidence, compared with the "
             "InvocationIDs systemd publishes in /run/systemd/units); run as root in "
             "tests/system/test_probe_weakened_systemd.py, where the strict row passes beside the real ones"),
    Row("keyring_filtered", "not a weakening: the remediation, the transient unit with "
        "SystemCallFilter=~@keyring:EPERM: bwrap still works under it, and the payload's keyctl fails with EPERM",
        lambda argv, bench: argv, [], only="systemd", properties=[("SystemCallFilter", "~@keyring:EPERM")]),
    Row("keyring_filtered_kill", "not a weakening: the transient unit with SystemCallFilter=~@keyring (keyctl kills "
        "its caller, systemd's default action): bwrap still works, and the payload, told so by the probe, never "
        "calls keyctl (a fork to ask was a second payload, issue 51)",
        lambda argv, bench: argv, [], only="systemd", properties=[("SystemCallFilter", "~@keyring")]),
    Row("file_declared", "not a weakening: the profile declares a file of 24 bytes at /metnos-declared, and the "
        "wrapper copies exactly that content there (--file FD)", declare_file(gift("declared")), []),
    Row("file_swapped", "wrapper: the profile declares a file of 24 bytes at /metnos-declared, the wrapper copies "
        "/etc/shadow there instead (--file FD, opened by a root helper: swapped content under a declared name)",
        declare_file(gift("shadow_declared")), ["root_content_declared"], code="probe_root_undeclared",
        note="proven in tests/integration/test_probe_unseen_ends.py: run as nobody, the sandbox prints "
             "/metnos-declared and the host gets /etc/shadow's bytes, which nobody cannot read"),
    Row("file_same_size", "wrapper: the profile declares a file of 24 bytes at /metnos-declared, the wrapper copies "
        "a 24-byte host secret there instead (root's, mode 0600, opened by a root helper: a swap the size does not "
        "show)", declare_file(gift("secret_same_size")), ["root_content_declared"], code="probe_root_swapped",
        note="proven in tests/integration/test_probe_unseen_ends.py: run as nobody, the sandbox prints "
             "/metnos-declared and the host gets the secret's bytes, which nobody cannot read"),
    Row("symlink_made_file", "wrapper: --symlink usr/sbin /sbin replaced by --file FD /sbin with /etc/shadow opened "
        "by a root helper (a host secret on the root under a declared name, no mount)",
        gift("shadow_sbin", replace(("--symlink", "usr/sbin", "/sbin"), ())), ["root_content_declared"],
        code="probe_root_undeclared"),
]


def applicable(row, bench, systemd=False):
    if row.only and row.only != ("systemd" if systemd else "direct"):
        return False, "planted only in the %s context" % row.only
    if row.needs == "mounts":
        return bench.with_mounts, "needs mounts on the host (CAP_SYS_ADMIN)"
    if row.needs == "setuid_ok":
        return bench.setuid_ok, "bwrap >= 0.12 refuses setuid use"
    if row.needs == "python3-seccomp":
        found = subprocess.run([PYTHON, "-c", "import seccomp"], capture_output=True).returncode == 0
        return found, "python3-seccomp is not installed"
    if row.needs and row.needs.startswith("/"):
        return os.path.exists(row.needs), "%s does not exist on this host" % row.needs
    if row.isolate and not bench.can_unshare_mounts():
        return False, "needs a private mount namespace (CAP_SYS_ADMIN)"
    return True, None


def sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


# What run_row needs of a probe: this checkout's, or another checkout's (scripts/probe-matrix.py --core).
CORE = types.SimpleNamespace(expectations=payload.expectations, run=runners.run, run_systemd=runners.run_systemd,
                             RunSpec=runners.RunSpec)


def run_row(row, user, bench, profile=None, core=CORE, systemd=False, timeout=30, properties=()):
    """Run one row as ``user`` (a name). Direct (as the probe runs without a unit), or with
    ``systemd`` in a transient unit as the probe runs for a service (``properties``: (directive, value)
    pairs the unit carries, e.g. PrivatePIDs=yes, besides the row's own). Returns (verdict, failed names)."""
    prof = getattr(row.edit, "declare", lambda p: p)(profile or strict_profile())
    argv = row.edit(list(prof["argv"]), bench)
    spec = core.expectations(prof)
    accept = [sha256(argv[0] if os.path.isabs(argv[0]) else bench.bwrap)] if row.accept else []
    props = [(k, v.format(bench=bench)) for k, v in row.properties] + list(properties)

    def probe():
        # the bwrap's trust is verified once per binary and bench (as probe_service verifies it once per run),
        # except where the row changes what the probe sees
        trust = None if row.isolate or core is not CORE else bench.trust(argv[0], accept)
        func = core.run_systemd if systemd else core.run
        assignments = {"assignments": [(k, v, "test") for k, v in props]}
        unit = "metnos-probe-matrix-%s" % row.name
        if getattr(core, "RunSpec", None) is not None:      # the run's inputs as one record (issue 55)
            job = core.RunSpec(argv=argv, spec=spec, python=PYTHON, timeout=timeout, trust=trust, accept_sha256=accept)
            if systemd:
                entry = pwd.getpwnam(user)
                return func(job, {"name": user, "uid": entry.pw_uid, "gid": entry.pw_gid}, assignments,
                            {"PATH": "/usr/bin:/bin"}, unit)
            return func(job, user=bench.user(user))
        # another checkout's core (scripts/probe-matrix.py --core, e.g. main's) may predate the record and the trust
        more = {"accept_sha256": accept, "trust": trust} if "trust" in inspect.signature(func).parameters else {}
        if systemd:
            entry = pwd.getpwnam(user)
            return func(argv, spec, PYTHON, {"name": user, "uid": entry.pw_uid, "gid": entry.pw_gid},
                        assignments, {"PATH": "/usr/bin:/bin"}, timeout, unit, **more)
        return func(argv, spec, PYTHON, user=bench.user(user), timeout=timeout, **more)

    undo = row.plant(user) if row.plant else None
    try:
        verdict = bench.in_private_mounts(row.isolate(bench), probe) if row.isolate else probe()
    finally:
        if undo:
            undo()
    return verdict, sorted(c["name"] for c in verdict["checks"] if not c["ok"])


def expected_failures(row, user, verdict):
    names = [c["name"] for c in verdict["checks"]]
    return sorted(n for n in names if any(fnmatch.fnmatchcase(n, pat) for pat in row.expect(user)[0]))


def counted_codes(verdict):
    """The verdict's codes a row is judged by: every finding but the informational ones."""
    return sorted(set(d["code"] for d in verdict["diagnostics"] if d.get("severity") != "info"))


def judge(row, user, verdict, failed, systemd=False):
    """'ok' or a sentence saying how the row differs from its expectation (``systemd``: run in a transient unit)."""
    codes = counted_codes(verdict)
    want = expected_failures(row, user, verdict)
    patterns, need = row.expect(user)
    problems = []
    if failed != want:
        problems.append("failed %s, expected %s" % (failed, want))
    if not verdict["checks"] and "probe_setup_failed" not in need:
        problems.append("no checks (codes %s)" % codes)
    if not need and verdict["passed"] is not True:
        problems.append("did not pass (codes %s)" % codes)
    if need and verdict["passed"] is not False:
        problems.append("passed (codes %s)" % codes)
    if not (set(need) <= set(codes) <= set(need) | row.also):
        problems.append("codes %s, expected %s%s" % (codes, need, " (and maybe %s)" % sorted(row.also)
                                                      if row.also else ""))
    if patterns and not want:
        problems.append("expected failures %s match no check" % patterns)
    return "; ".join(problems) or "ok"
