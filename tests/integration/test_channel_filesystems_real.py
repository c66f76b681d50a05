"""Kernel objects a grant exposes beyond sockets and FIFOs (issue 50 item 3), planted for real and reached from
inside real bwrap runs of the rendered argv: a POSIX message-queue filesystem mounted below an fs:read folder
(mount -t mqueue, a real queue holding a host daemon's job), a proc mount below a granted folder (a type that is
not a plain tree: refused as unjudged), and a daemon's listening socket inside a python_package_roots folder
(a base tree, searched with the same rules as a grant).

Each test shows the refusal with its own code, then, with the check mutated away, what the sandbox reaches,
proven from outside (the job gone from the host's queue, the daemon's listener receiving the sandbox's bytes).
"""
import ctypes
import ctypes.util
import os
import shutil
import subprocess
import tempfile
import uuid

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    channels,
    host_context,
    renderer,
)
from helpers import trees
from helpers.socket_listener import Listener

ACTIVE = {"bwrap_available": True, "bwrap_path": shutil.which("bwrap") or "/usr/bin/bwrap",
          "disabled_via_env": False, "active": True}
# Inside: open the queue through the bound mqueue filesystem (a path, not mq_open: the sandbox's own IPC
# namespace has no such queue) and take its message with mq_timedreceive on that descriptor; connect to sockets.
PAYLOAD = trees.inside_writer()      # tests/helpers/inside_writer.py


class MqAttr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("curmsgs", ctypes.c_long), ("reserved", ctypes.c_long * 4)]


LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


@pytest.fixture
def base():
    path = tempfile.mkdtemp(prefix="metnos-chanfs-", dir="/var/tmp")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def render(caps, host=None):
    manifest = {"name": "ex", "origin": "t", "capabilities": caps}
    context = dict({"python_executable": "/usr/bin/python3", "writable_roots": ["/var/tmp"]}, **(host or {}))
    return renderer.render_safe(manifest, host_context.HostContext(context), {}, ACTIVE)


def errors(prof):
    return [d["code"] for d in prof["diagnostics"] if d["severity"] == "error"]


def mounted(fstype, point):
    os.makedirs(point)
    done = subprocess.run(["mount", "-t", fstype, fstype, point], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("cannot mount %s here: %s" % (fstype, done.stderr.strip()))
    return point


def test_a_message_queue_mount_below_a_read_grant_is_a_channel_and_its_job_would_be_taken(base, monkeypatch):
    """A host daemon's queue (/metnos-job-<token>, one job in it) and the mqueue filesystem mounted at
    <data>/mq: fs:read:<data> is refused with channel_message_queue naming the mount point. Canary: the
    host's queue holds the job before. Mutation (run): odd_filesystems finding nothing - the grant is
    wrapped, and the sandbox (root and nobody) takes the job; from outside, the host's queue is empty."""
    data = os.path.join(base, "data")
    point = mounted("mqueue", os.path.join(data, "mq"))
    name = "/metnos-job-%s" % uuid.uuid4().hex[:12]
    attr = MqAttr(0, 4, 256, 0)
    queue = LIBC.mq_open(name.encode(), os.O_CREAT | os.O_RDWR, 0o666, ctypes.byref(attr))
    assert queue >= 0, ctypes.get_errno()
    try:
        caps = ["fs:read:" + data]
        prof = render(caps)
        assert errors(prof) == ["channel_message_queue"], prof["diagnostics"]
        diag = prof["diagnostics"][0]
        assert "'%s' is a POSIX message-queue" % point in diag["message"]
        assert "umount '%s'" % point in diag["remediation"]

        monkeypatch.setattr(channels, "odd_filesystems", lambda types, folder, odd=None: [])     # the mutation
        weak = render(caps)
        assert weak["decision"] == "wrapped", weak["diagnostics"]
        for user in (None, "nobody"):
            job = "job-%s" % uuid.uuid4().hex
            assert LIBC.mq_send(queue, job.encode(), len(job), 0) == 0
            LIBC.mq_getattr(queue, ctypes.byref(attr))
            assert attr.curmsgs == 1                                                     # the canary
            path = os.path.join(point, name[1:])
            inside = trees.run_inside(weak["argv"], PAYLOAD, {"queues": [path]}, user)
            assert inside == {path: job}, (user, inside)
            LIBC.mq_getattr(queue, ctypes.byref(attr))
            assert attr.curmsgs == 0, user                                               # taken, seen from outside
    finally:
        LIBC.mq_close(queue)
        LIBC.mq_unlink(name.encode())
        subprocess.run(["umount", point], check=False)


def test_a_proc_mount_below_a_grant_is_refused_as_unjudged(base):
    """A proc filesystem mounted below a granted folder: not a plain tree, so channel_filesystem_unjudged
    naming its type and mount point (before the change it was skipped as kernel state and the grant passed).
    Canary: the mount point shows the host's PID 1."""
    data = os.path.join(base, "data")
    point = mounted("proc", os.path.join(data, "p"))
    try:
        assert os.path.exists(os.path.join(point, "1", "status"))
        prof = render(["fs:read:" + data])
        assert errors(prof) == ["channel_filesystem_unjudged"], prof["diagnostics"]
        assert "'%s' is a 'proc' mount" % point in prof["diagnostics"][0]["message"]
    finally:
        subprocess.run(["umount", point], check=False)


def test_a_daemon_socket_in_a_python_package_root_is_refused_and_would_be_reached(base, monkeypatch):
    """A listening Unix socket in a folder the admin lists in python_package_roots (every sandbox's base
    binds): channel_refused naming it, with no grant at all. Mutation (run): the package roots left
    unsearched (as before) - the sandbox, as nobody, reaches the daemon, seen by the listener outside."""
    roots = os.path.join(base, "venv", "site-packages")
    os.makedirs(roots)
    sock = os.path.join(roots, "daemon.sock")
    listener = Listener(sock)
    try:
        host = {"python_package_roots": [roots]}
        prof = render([], host)
        assert errors(prof) == ["channel_refused"], prof["diagnostics"]
        assert sock in prof["diagnostics"][0]["message"]

        monkeypatch.setattr(renderer, "_UNSEARCHED", ("base:/", "base:python_"))       # the mutation
        weak = render([], host)
        assert weak["decision"] == "wrapped", weak["diagnostics"]
        token = uuid.uuid4().hex
        inside = trees.run_inside(weak["argv"], PAYLOAD, {"token": token, "sockets": [sock]}, "nobody",
                                  descriptors=weak["descriptors"])
        assert inside == {sock: "sent"} and listener.reached(token), inside
    finally:
        listener.close()


def _large_tree(root, count):
    """``count`` empty files below ``root`` in folders of 1,000 (a real venv's shape: many small files)."""
    for i in range(count):
        folder = os.path.join(root, "pkg%03d" % (i // 1000))
        if i % 1000 == 0:
            os.makedirs(folder)
        open(os.path.join(folder, "m%04d.py" % i), "w").close()


def test_a_large_package_root_is_searched_under_its_own_bound_a_grant_keeps_its_own(base, monkeypatch):
    """A python_package_roots folder with more entries than a grant's bound (channels.MAX_WALK_ENTRIES, 20,000;
    the shared venv of this machine holds 12,714) is searched under the base trees' own bound
    (MAX_BASE_WALK_ENTRIES) and bound; the same tree as an fs:read grant is still refused (channel_walk_bound).
    Canary: a socket planted last in the large root is still found (channel_refused). Both sides of the base
    bound: patched down to the grant's (what the shared budget did before), the root is refused."""
    roots = os.path.join(base, "venv", "site-packages")
    _large_tree(roots, channels.MAX_WALK_ENTRIES + 500)
    host = {"python_package_roots": [roots]}
    prof = render([], host)
    assert prof["decision"] == "wrapped" and not errors(prof), prof["diagnostics"]
    assert roots in prof["argv"], prof["argv"]
    granted = render(["fs:read:" + roots])
    assert errors(granted) == ["channel_walk_bound"], granted["diagnostics"]

    sock = os.path.join(roots, "zz", "daemon.sock")
    os.makedirs(os.path.dirname(sock))
    listener = Listener(sock)
    try:
        found = render([], host)
        assert errors(found) == ["channel_refused"] and sock in found["diagnostics"][0]["message"], found
    finally:
        listener.close()
    os.unlink(sock)

    monkeypatch.setattr(channels, "MAX_BASE_WALK_ENTRIES", channels.MAX_WALK_ENTRIES)
    bounded = render([], host)
    assert errors(bounded) == ["channel_walk_bound"], bounded["diagnostics"]
    assert "more than 20000 entries" in bounded["diagnostics"][0]["message"], bounded["diagnostics"]


LOOPBACK_PAYLOAD = r'''
import json, socket, sys
spec = json.loads(sys.argv[1])
out = {}
try:
    s = socket.create_connection(("127.0.0.1", spec["port"]), timeout=5)
    s.sendall(spec["token"].encode())
    s.close()
    out["tcp"] = "sent"
except OSError as exc:
    out["tcp"] = str(exc)
try:
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    u.connect("\0" + spec["abstract"])
    u.sendall(spec["token"].encode())
    u.close()
    out["unix"] = "sent"
except OSError as exc:
    out["unix"] = str(exc)
sys.stdout.write(json.dumps(out))
'''


def _accept_one(server, got):
    try:
        conn, _addr = server.accept()
        with conn:
            got.append(conn.recv(256).decode())
    except OSError:
        pass


def test_network_interfaces_says_host_network_and_lists_the_loopback_listeners_it_exposes():
    """Planted: a real TCP listener on 127.0.0.1 (an admin API nothing outside the host reaches), a real UDP
    socket on ::1 and a real listening abstract Unix socket. system:read:network_interfaces is wrapped with
    network_host_namespace and one network_loopback_listener naming each. Canary and proof: from inside the real
    sandbox (as nobody) the token reaches the TCP listener and the abstract socket, seen by them outside.
    Mutations run: the findings not added to the render; IPv4 addresses never judged loopback - each fails the test."""
    import socket
    import threading
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(1)
    tcp.settimeout(20)
    udp = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    udp.bind(("::1", 0))
    abstract = "metnos-admin-%s" % uuid.uuid4().hex[:10]
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind("\0" + abstract)
    unix.listen(1)
    unix.settimeout(20)
    port, udp_port = tcp.getsockname()[1], udp.getsockname()[1]
    try:
        prof = render(["system:read:network_interfaces"])
        assert prof["decision"] == "wrapped", prof["diagnostics"]
        codes = [d["code"] for d in prof["diagnostics"]]
        assert "network_host_namespace" in codes
        listed = " ".join(d["message"] for d in prof["diagnostics"] if d["code"] == "network_loopback_listener")
        for address in ("127.0.0.1:%d" % port, "[::1]:%d" % udp_port, "@" + abstract):
            assert address in listed, (address, listed)
        got = []
        threads = [threading.Thread(target=_accept_one, args=(server, got)) for server in (tcp, unix)]
        for thread in threads:
            thread.start()
        token = uuid.uuid4().hex
        inside = trees.run_inside(prof["argv"], LOOPBACK_PAYLOAD, {"token": token, "port": port,
                                                                  "abstract": abstract}, "nobody",
                                  descriptors=prof["descriptors"])
        for thread in threads:
            thread.join(25)
        assert inside == {"tcp": "sent", "unix": "sent"} and got == [token, token], (inside, got)
    finally:
        for sock in (tcp, udp, unix):
            sock.close()
