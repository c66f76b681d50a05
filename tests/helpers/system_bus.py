"""A private system bus for the tests: dbus-daemon with a system bus's configuration on a socket in a temp folder,
the stand-in systemd on it (tests/helpers/systemd_standin.py: there is no systemd as PID 1 here) and xdg-dbus-proxy
in front of it with the core's policy; the payload that calls the bus from inside a sandbox; the renderer's call.
"""
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    channels,
    host_context,
    renderer,
)

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "systemd_standin.py")
ACTIVE = {"bwrap_available": True, "bwrap_path": shutil.which("bwrap") or "/usr/bin/bwrap",
          "disabled_via_env": False, "active": True}
# One dbus-daemon configuration (a system bus on a socket of the test's), with one of two policies.
HEAD = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
"""
# Every user may do everything: whatever is refused is refused by the proxy.
OPEN_POLICY = """  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
"""
# A system bus's policy as Debian's /usr/share/dbus-1/system.conf writes it (method calls denied by default, signals
# and replies allowed), with systemd's own policy for its name and the drop-ins of a folder (the role's).
SYSTEM_POLICY = """  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"
          send_member="UpdateActivationEnvironment"/>
  </policy>
  <policy user="root">
    <allow own="org.freedesktop.login1"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  <include>/usr/share/dbus-1/system.d/org.freedesktop.systemd1.conf</include>
  <includedir>%s</includedir>
"""


def bus_config(socket, system_like=False, dropins=None):
    """dbus-daemon's configuration: a system bus listening on ``socket``, with SYSTEM_POLICY (and the drop-ins
    of the folder ``dropins``) or OPEN_POLICY."""
    policy = SYSTEM_POLICY % dropins if system_like else OPEN_POLICY
    return HEAD % socket + policy + "</busconfig>\n"


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

    def __init__(self, root, system_like=False):
        """``system_like``: SYSTEM_POLICY, with the drop-ins of ``self.dropins`` (else every user may
        do everything, so that whatever is refused is refused by the proxy)."""
        self.root = root
        os.mkdir(os.path.join(root, "bus"))
        os.chmod(os.path.join(root, "bus"), 0o755)
        self.ready = []
        self.socket = os.path.join(root, "bus", "system_bus_socket")
        self.address = "unix:path=" + self.socket
        self.log = os.path.join(root, "calls.log")
        config = os.path.join(root, "system.conf")
        self.dropins = os.path.join(root, "system.d")
        os.makedirs(self.dropins, exist_ok=True)
        with open(config, "w") as handle:
            handle.write(bus_config(self.socket, system_like, self.dropins))
        self.procs = []
        self.pids = {}
        self.running = {}
        daemon = self._start(["dbus-daemon", "--config-file=" + config, "--nofork", "--nosyslog", "--print-address"])
        assert daemon.stdout.readline().strip(), "dbus-daemon printed no address"
        os.chmod(self.socket, 0o666)
        standin = self._start(["/usr/bin/python3", STANDIN, self.address, self.log])
        assert standin.stdout.readline().strip() == "ready"

    def proxy(self, user, name=None):
        """xdg-dbus-proxy with the core's policy, run as ``user`` (with its own group, as the unit's User= runs it;
        None: root) with the unit's UMask=0077; returns its socket,
        in a folder ``name`` (default: proxy-<user>). Its pid: self.pids[socket]."""
        folder = os.path.join(self.root, name or "proxy-%s" % (user or "root"))
        os.makedirs(folder, exist_ok=True)
        os.chmod(folder, 0o755)
        words = ["xdg-dbus-proxy"]
        if user:
            info = pwd.getpwnam(user)
            os.chown(folder, info.pw_uid, -1)
            words = ["setpriv", "--reuid=%s" % user, "--regid=%d" % info.pw_gid, "--clear-groups"] + words
        listen = os.path.join(folder, "system_bus_socket")
        ready_r, ready_w = os.pipe()
        proc = self._start(words + ["--fd=%d" % ready_w] + channels.proxy_words(self.address, listen),
                           pass_fds=(ready_w,), umask=0o077)
        os.close(ready_w)
        assert os.read(ready_r, 1), "xdg-dbus-proxy did not get ready"
        self.ready.append(ready_r)                     # the proxy stops when this end is closed
        self.pids[listen] = proc.pid
        self.running[listen] = (ready_r, proc)
        return listen

    def stop_proxy(self, listen):
        """The proxy listening on ``listen`` ends (its ready pipe closed), and its folder is removed as systemd
        removes a unit's RuntimeDirectory when it stops."""
        ready_r, proc = self.running.pop(listen)
        self.ready.remove(ready_r)
        os.close(ready_r)
        proc.wait(10)
        shutil.rmtree(os.path.dirname(listen))

    def reload(self):
        """The daemon reads its configuration again (SIGHUP: what the role's reload of dbus.service does)."""
        self.procs[0].send_signal(signal.SIGHUP)
        time.sleep(0.5)

    def _start(self, argv, pass_fds=(), umask=-1):
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                pass_fds=pass_fds, umask=umask)
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


def running_bus(system_like=False, before=None):
    """A Bus in a temp folder, stopped and removed afterwards; ``before(root)`` runs before the daemon starts."""
    root = tempfile.mkdtemp(prefix="metnos-bus-", dir="/var/tmp")
    os.chmod(root, 0o755)
    if before is not None:
        before(root)
    running = Bus(root, system_like)
    try:
        yield running
    finally:
        running.stop()
        shutil.rmtree(root, ignore_errors=True)


def render(host):
    context = dict({"python_executable": "/usr/bin/python3", "systemd_read_paths": []}, **host)
    return renderer.render_safe({"name": "ex", "origin": "t", "capabilities": ["systemd:read"]},
                                host_context.HostContext(context), {}, ACTIVE)


def system_users(*names):
    """A fixture's generator: each of ``names`` made a system user with useradd (made again when a killed run left
    it behind: userdel first), all removed after."""
    for name in names:
        subprocess.run(["userdel", name], capture_output=True)
        subprocess.run(["useradd", "--system", "--user-group", "--shell", "/usr/sbin/nologin", "--no-create-home",
                        name], check=True)
    try:
        yield
    finally:
        for name in names:
            subprocess.run(["userdel", name], capture_output=True)


def bus_with_users(*names):
    """A fixture's generator: the system users ``names`` (system_users), then a bus with a system bus's policy
    (running_bus); the bus stopped first, then the users removed."""
    users = system_users(*names)
    next(users)
    try:
        yield from running_bus(system_like=True)
    finally:
        next(users, None)


def open_proxy(bus, user, name=None):
    """The proxy run as ``user`` (Bus.proxy), its socket made 0666 as the unit's ExecStartPost makes it:
    (socket, pid)."""
    listen = bus.proxy(user, name=name)
    os.chmod(listen, 0o666)
    return listen, bus.pids[listen]
