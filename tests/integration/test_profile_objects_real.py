"""What a path names, in real bwrap, as root and as nobody: objects and aliases that realpath does
not judge. For each class the test plants the fault for real on the host, shows that the renderer
refuses it, and shows (with the refusal mutated away) what the sandbox would have reached from
inside: the evidence that the refusal is needed, gathered outside the sandbox.

- A Unix socket or a FIFO granted by fs:read: a read-only bind still lets the sandbox connect to
  a host process and send it commands, or write into the FIFO (scope_special_file).
"""
import os
import shutil
import tempfile
import threading
import uuid

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    granters,
    host_context,
    renderer,
)
from helpers import mount_aliases, trees
from helpers.socket_listener import Listener

ACTIVE = {"bwrap_available": True, "bwrap_path": shutil.which("bwrap") or "/usr/bin/bwrap",
          "disabled_via_env": False, "active": True}
USERS = (None, "nobody")
PAYLOAD = trees.inside_writer()      # tests/helpers/inside_writer.py


@pytest.fixture
def base():
    path = tempfile.mkdtemp(prefix="metnos-obj-", dir="/var/tmp")      # reachable by nobody (0755 parents)
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def sandboxed(argv, spec, user, descriptors=None):
    return trees.run_inside(argv, PAYLOAD, spec, user, descriptors=descriptors)


def render(caps, host=None, invocation=None, arguments=None):
    manifest = {"name": "ex", "origin": "t", "capabilities": caps}
    if arguments:
        manifest["arguments"] = arguments
    # writes are allowed in this test's folders (/var/tmp/metnos-obj-*): the admin's writable roots
    context = dict({"python_executable": "/usr/bin/python3", "writable_roots": ["/var/tmp"]}, **(host or {}))
    return renderer.render_safe(manifest, host_context.HostContext(context), invocation or {}, ACTIVE)


def test_sockets_and_fifos_are_refused_and_would_be_host_channels(base, monkeypatch):
    folder = os.path.join(base, "daemon")
    os.mkdir(folder)
    os.chmod(folder, 0o755)
    sock_path, fifo_path = os.path.join(folder, "ctl.sock"), os.path.join(folder, "fifo")
    listener = Listener(sock_path)
    os.mkfifo(fifo_path, 0o666)
    os.chmod(fifo_path, 0o666)
    reader = os.open(fifo_path, os.O_RDONLY | os.O_NONBLOCK)        # a host process reading the FIFO
    try:
        caps = ["fs:read:" + sock_path, "fs:read:" + fifo_path]
        prof = render(caps)
        assert prof["refusal"] == "scope_special_file", prof["diagnostics"]
        codes = [d["code"] for d in prof["diagnostics"] if d["severity"] == "error"]
        assert codes == ["scope_special_file", "scope_special_file"], codes

        # the mutation: without the check (grant and final check), both would be read-only binds ...
        monkeypatch.setattr(host_context.RenderState, "file_type", lambda self, path: "file")
        weak = render(caps)
        assert weak["decision"] == "wrapped", weak["diagnostics"]
        assert ["--ro-bind", sock_path, sock_path] == weak["argv"][weak["argv"].index(sock_path) - 1:][:3]
        for user in USERS:
            token = uuid.uuid4().hex
            inside = sandboxed(weak["argv"], {"token": token, "sockets": [sock_path], "fifos": [fifo_path]}, user,
                               weak["descriptors"])
            # ... and from outside: the host process behind the socket got the sandbox's command, the
            # host reader of the FIFO got its bytes, through "read-only" binds
            assert inside == {sock_path: "sent", fifo_path: "sent"}, (user, inside)
            for _ in range(50):
                if token in listener.got:
                    break
                threading.Event().wait(0.05)
            assert token in listener.got, (user, listener.got)
            assert os.read(reader, 256).decode() == token
    finally:
        os.close(reader)
        listener.close()


def test_hard_links_are_refused_and_would_write_a_read_only_tree(base, monkeypatch):
    runtime, data = os.path.join(base, "runtime"), os.path.join(base, "data")
    for folder in (runtime, data):
        os.mkdir(folder)
        os.chmod(folder, 0o755)
    module, second = os.path.join(runtime, "metnos.py"), os.path.join(data, "notes.txt")
    with open(module, "w") as handle:
        handle.write("# the runtime\n")
    os.chmod(module, 0o666)                         # writable by the service user, as its own file
    os.link(module, second)
    host = {"runtime_dir": runtime}
    prof = render(["fs:write:" + second], host)
    assert prof["refusal"] == "scope_hard_link", prof["diagnostics"]
    arg = render(["fs:write:arg:p"], host, {"arguments": {"p": "notes.txt"}}, {"p": {"within": [data + "/**"]}})
    assert arg["refusal"] == "scope_hard_link", arg["diagnostics"]

    monkeypatch.setattr(host_context.RenderState, "file_type", lambda self, path: "file")      # the mutation
    weak = render(["fs:write:" + second], host)
    assert weak["decision"] == "wrapped", weak["diagnostics"]
    for user in USERS:
        token = uuid.uuid4().hex
        inside = sandboxed(weak["argv"], {"token": token, "overwrite": [second, module]}, user, weak["descriptors"])
        # from inside: the runtime is read-only, its file's second name is not ...
        assert inside[second] == "written" and "Read-only" in inside[module], (user, inside)
        with open(module) as handle:                # ... and from outside: the runtime's file changed
            assert token in handle.read(), user


@pytest.mark.skipif(not shutil.which("unshare"), reason="needs unshare for a private mount namespace")
def test_bind_mount_aliases_are_refused_and_would_write_the_runtime(base):
    got = mount_aliases.run(base, mode="real")
    assert got["decision"] == "scope_mount_alias" and got["mutated"] == "wrapped", got
    for user in ("root", "nobody"):
        # from inside: the runtime's configured path is read-only, its data-disk path is not ...
        assert got[user]["inside"][0] == "written" and got[user]["inside"][1] == "Read-only file system", got
        assert got[user]["in_runtime"], (user, got)          # ... and from outside: the runtime changed


def test_within_patterns_narrow_and_their_root_would_widen(base, monkeypatch):
    data = os.path.join(base, "data")
    os.makedirs(os.path.join(data, "private"))
    for folder in (data, os.path.join(data, "private")):
        os.chmod(folder, 0o777)
    with open(os.path.join(data, "report.txt"), "w") as handle:
        handle.write("r")
    os.chmod(os.path.join(data, "report.txt"), 0o666)
    caps, arguments = ["fs:write:arg:p"], {"p": {"within": [data + "/*.txt"]}}
    assert render(caps, None, {"arguments": {"p": "report.txt"}}, arguments)["decision"] == "wrapped"
    prof = render(caps, None, {"arguments": {"p": "private"}}, arguments)
    assert prof["refusal"] == "arg_escapes_scope", prof["diagnostics"]

    monkeypatch.setattr(granters, "covers", lambda path, root, pattern,
                        steps: granters.under(path, root))  # mutation: root
    weak = render(caps, None, {"arguments": {"p": "private"}}, arguments)
    assert weak["decision"] == "wrapped", weak["diagnostics"]
    for user in USERS:
        target = os.path.join(data, "private", "planted-%s" % (user or "root"))
        with open(target, "w") as handle:
            handle.write("")
        os.chmod(target, 0o666)
        token = uuid.uuid4().hex
        inside = sandboxed(weak["argv"], {"token": token, "overwrite": [target]}, user, weak["descriptors"])
        assert inside[target] == "written", (user, inside)
        with open(target) as handle:                  # from outside: a file no *.txt pattern names changed
            assert token in handle.read(), user


@pytest.mark.skipif(not shutil.which("unshare") or not os.path.isdir("/etc/opt"),
                    reason="needs unshare and an /etc/opt folder to mount a tmpfs on (private namespace)")
def test_a_credential_store_inside_etc_is_refused_and_would_be_read_by_every_executor(base):
    got = mount_aliases.run(base, mode="reserved")
    assert got["decision"] == "host_path_refused" and got["mutated"] == "wrapped", got
    for user in ("root", "nobody"):
        assert got[user] == "oauth-refresh-token", (user, got)       # read from inside, without mail:read
