"""systemd:read reaches the system bus only through the filtering proxy (issue 40 item 2), proven with a real
bus, the real xdg-dbus-proxy and a real bwrap run of the rendered argv, as root and as nobody.

The bus is a real ``dbus-daemon`` started by the test with a system bus's configuration on a private socket
(its policy lets every user talk to every name, so that whatever is refused is refused by the proxy). There is
no systemd as PID 1 here: a stand-in (tests/helpers/systemd_standin.py, on the system's python3 and
dbus-python) owns org.freedesktop.systemd1 on that bus and records every call that reaches it. The proxy runs
with the core's policy (channels.proxy_words), the profile binds its socket at /run/dbus/system_bus_socket,
and a payload inside the sandbox calls the bus there: status reads pass, StartUnit, KillUnit and the bus
driver's BecomeMonitor and any other name (the stand-in also owns
org.freedesktop.login1) are refused. The mutation (the bus socket itself allowed and listed as a read path, as
the default layout did before) shows what the sandbox reaches without the filter: StartUnit reaches systemd,
and BecomeMonitor succeeds as root.
"""
import os
import shutil
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    channels,
    host_context,
    profile,
)
from helpers import trees

pytestmark = pytest.mark.skipif(not (shutil.which("dbus-daemon") and shutil.which("xdg-dbus-proxy")
                                     and shutil.which("bwrap")),
                                reason="needs dbus-daemon, xdg-dbus-proxy (Debian packages) and bwrap")
HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "..", "helpers", "systemd_standin.py")
ACTIVE = {"bwrap_available": True, "bwrap_path": shutil.which("bwrap") or "/usr/bin/bwrap",
          "disabled_via_env": False, "active": True}
CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"""
# Inside the sandbox, on the system's python3 (bound with /usr): each call on its own connection.
PAYLOAD = r'''
import json, sys
import dbus
spec = json.loads(sys.argv[1])
S, M = "org.freedesktop.systemd1", "/org/freedesktop/systemd1"
calls = {
    "GetUnit": (S, M, S + ".Manager", "GetUnit", "s", ["ssh.service"]),
    "ListUnits": (S, M, S + ".Manager", "ListUnits", "", []),
    "Get": (S, M, "org.freedesktop.DBus.Properties", "Get", "ss", [S + ".Manager", "Version"]),
    "GetAll": (S, M, "org.freedesktop.DBus.Properties", "GetAll", "s", [S + ".Manager"]),
    "StartUnit": (S, M, S + ".Manager", "StartUnit", "ss", ["evil.service", "replace"]),
    "KillUnit": (S, M, S + ".Manager", "KillUnit", "ssi", ["ssh.service", "all", 9]),
    "OtherName": ("org.freedesktop.login1", M, S + ".Manager", "ListUnits", "", []),
    "BecomeMonitor": ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Monitoring",
                      "BecomeMonitor", "asu", [[], 0]),
}
out = {}
for name, (dest, path, iface, method, sig, args) in calls.items():
    try:
        bus = dbus.bus.BusConnection(spec["address"])
        bus.call_blocking(dest, path, iface, method, sig, args, timeout=5)
        out[name] = "ok"
    except dbus.exceptions.DBusException as exc:
        out[name] = exc.get_dbus_name() or str(exc)
sys.stdout.write(json.dumps(out))
'''
READS = ("GetUnit", "ListUnits", "Get", "GetAll")


class Bus(object):
    """dbus-daemon on a private socket, the stand-in systemd on it, and xdg-dbus-proxy in front of it."""

    def __init__(self, root):
        self.root = root
        os.mkdir(os.path.join(root, "bus"))
        os.chmod(os.path.join(root, "bus"), 0o755)
        self.ready = []
        self.socket = os.path.join(root, "bus", "system_bus_socket")
        self.address = "unix:path=" + self.socket
        self.log = os.path.join(root, "calls.log")
        config = os.path.join(root, "system.conf")
        with open(config, "w") as handle:
            handle.write(CONFIG % self.socket)
        self.procs = []
        daemon = self._start(["dbus-daemon", "--config-file=" + config, "--nofork", "--nosyslog", "--print-address"])
        assert daemon.stdout.readline().strip(), "dbus-daemon printed no address"
        os.chmod(self.socket, 0o666)
        standin = self._start(["/usr/bin/python3", STANDIN, self.address, self.log])
        assert standin.stdout.readline().strip() == "ready"

    def proxy(self, user):
        """xdg-dbus-proxy with the core's policy, run as ``user`` (the user the executors run as: the bus
        checks the client's EXTERNAL identity against the proxy's own credentials); returns its socket."""
        folder = os.path.join(self.root, "proxy-%s" % (user or "root"))
        os.mkdir(folder)
        os.chmod(folder, 0o755)
        words = ["xdg-dbus-proxy"]
        if user:
            os.chown(folder, 65534, -1)
            words = ["setpriv", "--reuid=%s" % user, "--regid=nogroup", "--clear-groups"] + words
        listen = os.path.join(folder, "system_bus_socket")
        ready_r, ready_w = os.pipe()
        self._start(words + ["--fd=%d" % ready_w] + channels.proxy_words(self.address, listen), pass_fds=(ready_w,))
        os.close(ready_w)
        assert os.read(ready_r, 1), "xdg-dbus-proxy did not get ready"
        self.ready.append(ready_r)                     # the proxy stops when this end is closed
        return listen

    def _start(self, argv, pass_fds=()):
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                pass_fds=pass_fds)
        self.procs.append(proc)
        return proc

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as handle:
            return [line.split()[0] for line in handle]

    def clear(self):
        if os.path.exists(self.log):
            os.unlink(self.log)

    def stop(self):
        for fd in self.ready:
            os.close(fd)
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@pytest.fixture
def bus():
    root = tempfile.mkdtemp(prefix="metnos-bus-", dir="/var/tmp")
    os.chmod(root, 0o755)
    running = Bus(root)
    try:
        yield running
    finally:
        running.stop()
        shutil.rmtree(root, ignore_errors=True)


def render(host):
    context = dict({"python_executable": "/usr/bin/python3", "systemd_read_paths": []}, **host)
    return profile.render_safe({"name": "ex", "origin": "t", "capabilities": ["systemd:read"]},
                               host_context.HostContext(context), {}, ACTIVE)


def test_status_reads_pass_through_the_proxy_and_commands_are_refused(bus, monkeypatch):
    for user in (None, "nobody"):
        proxy = bus.proxy(user)
        prof = render({"system_bus_proxy": proxy})
        assert prof["decision"] == "wrapped", prof["diagnostics"]
        at = prof["argv"].index(channels.SYSTEM_BUS)
        bound = prof["argv"][at - 2:at + 1]
        # the folder of a proxy run as nobody is nobody's: its socket is bound by descriptor
        fds = [str(d["fd"]) for d in prof["descriptors"] if d["path"] == proxy]
        assert bound == (["--ro-bind-fd", fds[0]] if user else ["--ro-bind", proxy]) + [channels.SYSTEM_BUS], bound
        assert bus.socket not in prof["argv"]
        bus.clear()
        got = trees.run_inside(prof["argv"], PAYLOAD, {"address": "unix:path=" + channels.SYSTEM_BUS}, user,
                               descriptors=prof["descriptors"])
        assert all(got[name] == "ok" for name in READS), (user, got)
        denied = "org.freedesktop.DBus.Error.AccessDenied"
        assert [got[n] for n in ("StartUnit", "KillUnit", "BecomeMonitor")] == [denied] * 3, (user, got)
        assert got["OtherName"] == "org.freedesktop.DBus.Error.ServiceUnknown", (user, got)    # invisible
        # from outside: the stand-in systemd saw the reads, and never StartUnit or KillUnit
        assert sorted(bus.calls()) == sorted(READS), (user, bus.calls())

    # without the proxy the bus is not granted, and the profile says why
    plain = render({})
    assert plain["decision"] == "wrapped" and channels.SYSTEM_BUS not in plain["argv"]
    assert "system_bus_not_granted" in [d["code"] for d in plain["diagnostics"]], plain["diagnostics"]
    # the bus socket named as a read path is refused (a command channel) ...
    named = render({"systemd_read_paths": [bus.socket]})
    assert named["refusal"] == "channel_refused", named["diagnostics"]

    # ... and the mutation (the bus socket itself allowed, as the default layout bound it before) shows why
    monkeypatch.setattr(host_context.HostContext, "allowed_channels", lambda self: {bus.socket: "mutation"})
    weak = render({"systemd_read_paths": [bus.socket]})
    assert weak["decision"] == "wrapped", weak["diagnostics"]
    for user in (None, "nobody"):
        bus.clear()
        got = trees.run_inside(weak["argv"], PAYLOAD, {"address": bus.address}, user, descriptors=weak["descriptors"])
        assert got["StartUnit"] == "ok" and "StartUnit" in bus.calls(), (user, got, bus.calls())
        assert got["KillUnit"] == "ok" and "KillUnit" in bus.calls(), (user, got)
        assert got["OtherName"] == "ok", (user, got)
        if user is None:
            assert got["BecomeMonitor"] == "ok", got              # every message on the bus, as root
