"""What a grant opens beyond paths (issue 40), in real bwrap runs of the rendered argv, as root and as nobody:
command channels below a granted folder and in the admin's host layout, and admin layouts that cross.

For each class the test plants the case for real on the host (a listening Unix socket that records what
reaches it, a FIFO with a host reader, a folder too large to search, nested index roots, a resource root
that is a symbolic link), shows that the renderer refuses it with the class's own code, and shows, with
the check mutated away, what the sandbox then reaches from inside, gathered outside the sandbox.
"""
import os
import shutil
import stat
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
USERS = (None, "nobody")
PAYLOAD = trees.inside_writer()      # tests/helpers/inside_writer.py


@pytest.fixture
def base():
    path = tempfile.mkdtemp(prefix="metnos-chan-", dir="/var/tmp")      # reachable by nobody (0755 parents)
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def render(caps, host=None):
    manifest = {"name": "ex", "origin": "t", "capabilities": caps}
    context = dict({"python_executable": "/usr/bin/python3", "writable_roots": ["/var/tmp"]}, **(host or {}))
    return renderer.render_safe(manifest, host_context.HostContext(context), {}, ACTIVE)


def folder(*parts, mode=0o755):
    path = os.path.join(*parts)
    os.makedirs(path, exist_ok=True)
    os.chmod(path, mode)
    return path


def errors(prof):
    return [d["code"] for d in prof["diagnostics"] if d["severity"] == "error"]


def no_search(monkeypatch):
    """The mutation of the search below granted folders: nothing found, never stopped."""
    monkeypatch.setattr(channels, "walk", lambda root, budget, skip=frozenset(): channels.Walk([]))


def test_a_socket_and_a_fifo_below_a_granted_folder_are_refused_and_would_be_commanded(base, monkeypatch):
    daemon = folder(base, "data", "daemon")
    sock, fifo = os.path.join(daemon, "ctl.sock"), os.path.join(daemon, "queue")
    listener = Listener(sock)
    os.mkfifo(fifo, 0o666)
    os.chmod(fifo, 0o666)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)              # a host process reading the FIFO
    try:
        caps = ["fs:read:" + os.path.join(base, "data")]               # the folder, not the socket, is named
        prof = render(caps)
        assert sorted(errors(prof)) == ["channel_refused", "channel_refused"], prof["diagnostics"]
        messages = " ".join(d["message"] for d in prof["diagnostics"])
        assert sock + "'" in messages and fifo + "'" in messages, messages

        no_search(monkeypatch)                                          # the mutation
        weak = render(caps)
        assert weak["decision"] == "wrapped", weak["diagnostics"]
        for user in USERS:
            token = uuid.uuid4().hex
            inside = trees.run_inside(weak["argv"], PAYLOAD, {"token": token, "sockets": [sock], "fifos": [fifo]},
                                      user, descriptors=weak["descriptors"])
            assert inside == {sock: "sent", fifo: "sent"}, (user, inside)
            # from outside: the daemon got the sandbox's command, the FIFO's reader its bytes (a read grant)
            assert listener.reached(token), (user, listener.got)
            assert os.read(reader, 256).decode() == token
    finally:
        os.close(reader)
        listener.close()


def test_an_allowed_channel_is_bound_and_listed_with_its_reason(base):
    """The admin's allow-list names the exact path with a reason: the grant is wrapped, the result lists the
    channel, and the sandbox reaches it (the allow-list does what it says, for that path only)."""
    daemon = folder(base, "data", "daemon")
    allowed, other = os.path.join(daemon, "allowed.sock"), os.path.join(daemon, "other.sock")
    one, two = Listener(allowed), Listener(other)
    try:
        host = {"allow_channels": [{"path": allowed, "reason": "the metrics daemon's query socket"}]}
        caps = ["fs:read:" + os.path.join(base, "data")]
        assert errors(render(caps, host)) == ["channel_refused"]          # the other socket is still refused
        os.unlink(other)
        prof = render(caps, host)
        assert prof["decision"] == "wrapped", prof["diagnostics"]
        assert prof["channels"] == [{"path": allowed, "kind": "socket", "reason": "the metrics daemon's query socket",
                                     "grant": "capability:fs:read:" + os.path.join(base, "data")}]
        token = uuid.uuid4().hex
        inside = trees.run_inside(prof["argv"], PAYLOAD, {"token": token, "sockets": [allowed]}, "nobody",
                                  descriptors=prof["descriptors"])
        assert inside == {allowed: "sent"} and one.reached(token), inside
    finally:
        one.close()
        two.close()


@pytest.mark.parametrize("where,code", [
    (("run", "docker.sock"), "channel_container_engine"),
    (("run", "podman", "podman.sock"), "channel_container_engine"),
    (("home", ".gnupg", "S.gpg-agent"), "channel_agent"),
    (("tmp", "ssh-XXXXabcd", "agent.4242"), "channel_agent"),
])
def test_known_channels_below_a_granted_folder_get_their_own_code(base, monkeypatch, where, code):
    path = os.path.join(folder(base, "data", *where[:-1]), where[-1])
    listener = Listener(path)
    try:
        caps = ["fs:read:" + os.path.join(base, "data")]
        prof = render(caps)
        assert errors(prof) == [code], prof["diagnostics"]
        no_search(monkeypatch)
        weak = render(caps)
        token = uuid.uuid4().hex
        inside = trees.run_inside(weak["argv"], PAYLOAD, {"token": token, "sockets": [path]}, "nobody",
                                  descriptors=weak["descriptors"])
        assert inside == {path: "sent"} and listener.reached(token), inside
    finally:
        listener.close()


@pytest.mark.parametrize("path,code", [
    ("/run/dbus/system_bus_socket", "channel_system_bus"), ("/var/run/dbus/system_bus_socket", "channel_system_bus"),
    ("/run/user/1000/bus", "channel_user_bus"), ("/run/systemd/journal/socket", "channel_journal"),
    ("/run/systemd/journal/stdout", "channel_journal"), ("/dev/log", "channel_journal"),
    ("/run/systemd/private", "channel_systemd"), ("/run/systemd/notify", "channel_systemd"),
    ("/run/systemd/userdb/io.systemd.DynamicUser", "channel_systemd"),
    ("/run/podman/podman.sock", "channel_container_engine"), ("/var/run/docker.sock", "channel_container_engine"),
    ("/run/containerd/containerd.sock", "channel_container_engine"),
    ("/run/user/1000/gnupg/S.gpg-agent.ssh", "channel_agent"), ("/tmp/ssh-XXXXabcd/agent.77", "channel_agent"),
    ("/srv/app/control", "channel_refused"),
])
def test_the_known_channels_of_the_issue(path, code):
    """The host's real /run is not planted (a shared machine): the names the issue lists, classified."""
    assert channels.code_of(path) == code


def test_a_channel_the_admin_lists_as_a_read_path_is_refused_unless_allowed(base, monkeypatch):
    sock = os.path.join(folder(base, "engine"), "docker.sock")
    listener = Listener(sock)
    try:
        host = {"systemd_read_paths": [sock]}
        prof = render(["systemd:read"], host)
        assert errors(prof) == ["channel_container_engine"], prof["diagnostics"]
        monkeypatch.setattr(host_context.HostContext, "allowed_channels",
                            lambda self: {sock: "mutation"})   # the mutation
        weak = render(["systemd:read"], host)
        token = uuid.uuid4().hex
        inside = trees.run_inside(weak["argv"], PAYLOAD, {"token": token, "sockets": [sock]}, "nobody",
                                  descriptors=weak["descriptors"])
        assert inside == {sock: "sent"} and listener.reached(token), inside
    finally:
        listener.close()


def test_a_folder_too_large_to_search_is_refused_never_passed(base, monkeypatch):
    """A socket hidden past the search's bound: the folder is refused (channel_walk_bound); with the bound
    made a silent pass (the mutation), the sandbox reaches the socket the search never saw."""
    monkeypatch.setattr(channels, "MAX_WALK_ENTRIES", 40)
    data = folder(base, "data")
    for i in range(60):
        open(os.path.join(data, "f%02d" % i), "w").close()
    sock = os.path.join(folder(data, "zz"), "ctl.sock")
    listener = Listener(sock)
    try:
        caps = ["fs:read:" + data]
        prof = render(caps)
        assert errors(prof) == ["channel_walk_bound"], prof["diagnostics"]
        real_walk = channels.walk
        monkeypatch.setattr(channels, "walk", lambda root, budget, skip=frozenset(): real_walk(root, budget,
                                                                                               skip)._replace(
            stop=None))
        weak = render(caps)
        assert weak["decision"] == "wrapped", weak["diagnostics"]
        token = uuid.uuid4().hex
        inside = trees.run_inside(weak["argv"], PAYLOAD, {"token": token, "sockets": [sock]}, "nobody",
                                  descriptors=weak["descriptors"])
        assert inside == {sock: "sent"} and listener.reached(token), inside
    finally:
        listener.close()


def test_dev_log_named_as_a_read_path_gets_the_journal_code(base):
    """/dev/log is a channel before it is a path below /dev: the admin naming it gets channel_journal (when
    this host has one: a socket, or a link to journald's)."""
    if channels.kind_of(os.stat("/dev/log").st_mode if os.path.exists("/dev/log") else 0) is None:
        pytest.skip("no /dev/log socket on this host")
    assert errors(render(["system:read"], {"system_read_paths": ["/dev/log"]})) == ["channel_journal"]


def test_a_named_channel_gets_its_own_code_before_the_path_rules(base):
    """A known channel named where a path rule would refuse it too (here inside the reserved executors folder):
    the channel's code, which says what it is and what to do, comes first."""
    executors = folder(base, "executors")
    sock = os.path.join(executors, "S.gpg-agent")
    listener = Listener(sock)
    try:
        assert errors(render(["system:read"], {"executors_dir": executors, "system_read_paths": [sock]})) == [
            "channel_agent"]
    finally:
        listener.close()


def test_a_device_node_below_a_granted_folder_is_refused(base):
    """A character device (the kernel's /dev/null numbers) planted below a granted folder."""
    data = folder(base, "data")
    os.mknod(os.path.join(data, "null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    prof = render(["fs:read:" + data])
    assert errors(prof) == ["channel_refused"], prof["diagnostics"]
    assert "a device node" in prof["diagnostics"][0]["message"]


def test_nested_index_roots_are_refused_and_would_read_the_nested_index(base, monkeypatch):
    docs = folder(base, "index", "docs")
    mail = folder(docs, "mail")
    secret = os.path.join(mail, "mail.idx")
    with open(secret, "w") as handle:
        handle.write("subject: payroll")
    os.chmod(secret, 0o644)
    host = {"indexes": {"docs": docs, "mail": mail}}
    prof = render(["index:read:docs"], host)
    assert errors(prof) == ["layout_roots_nested"], prof["diagnostics"]
    assert errors(render(["index:read:mail"], host)) == ["layout_roots_nested"]     # the layout, whichever side
    monkeypatch.setattr(host_context.HostContext, "crossed", lambda self, state, what, key, path,
                        real: None)      # the mutation
    weak = render(["index:read:docs"], host)
    for user in USERS:
        inside = trees.run_inside(weak["argv"], PAYLOAD, {"token": "", "read": [secret]}, user,
                                  descriptors=weak["descriptors"])
        assert inside == {secret: "subject: payroll"}, (user, inside)     # the mail index, read by index:read:docs


def test_a_resource_root_that_is_a_symlink_is_refused_and_would_write_elsewhere(base, monkeypatch):
    other = folder(base, "lib", "people", mode=0o777)
    sheets = os.path.join(folder(base, "lib"), "sheets")
    os.symlink(other, sheets)
    host = {"resources": {"sheets": sheets, "people": other}, "writable_roots": [base]}
    prof = render(["metnos:write:sheets"], host)
    assert errors(prof) == ["layout_root_symlink"], prof["diagnostics"]
    monkeypatch.setattr(host_context.HostContext, "crossed", lambda self, state, what, key, path,
                        real: None)      # the mutation
    weak = render(["metnos:write:sheets"], host)
    assert weak["decision"] == "wrapped", weak["diagnostics"]
    for user in USERS:
        target = os.path.join(other, "planted-%s" % (user or "root"))
        token = uuid.uuid4().hex
        inside = trees.run_inside(weak["argv"], PAYLOAD, {"token": token, "write": [target]}, user,
                                  descriptors=weak["descriptors"])
        assert inside == {target: "written"}, (user, inside)
        with open(target) as handle:               # from outside: the people registry changed, through sheets
            assert handle.read() == token
