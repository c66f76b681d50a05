"""A restart of the D-Bus proxy does not break the stored profiles (issue 50 item 2): the profiles bind a stable path
in a root-owned folder, where the unit's ExecStartPost hard-links the socket the proxy listens on, again at every
start. Proven with a real dbus-daemon, the real xdg-dbus-proxy and a stored profile run by the real launcher
(descriptors.main, what metnos-sandbox-exec runs) in real bwrap, as nobody.

There is no systemd as PID 1 here: the unit's ExecStartPre= and ExecStartPost= lines (templates/
metnos-dbus-proxy.service.j2, rendered with the role's vars, its paths moved into a temp folder) are run as systemd
runs a "+" command (as root, the words split, "$$" made "$"); the proxy runs as its user in a folder of its own (the
unit's RuntimeDirectory, owned by its User=), removed when it stops, as systemd removes it. The bus is a private
dbus-daemon on a socket in the temp folder, with the stand-in systemd of tests/helpers/systemd_standin.py.

Canary: a profile rendered against the socket in the proxy's own folder (the layout before: a folder its user can
write, so the socket is bound by descriptor with its device and inode) fails with bind_source_moved after the same
restart, and works before it.

The proxy runs as its own user (made with useradd here), the executors as nobody: the profiles map the sandbox's
uid to the proxy's (bwrap --uid), and the reads pass through the launcher's run.
"""
import inspect
import json
import os
import pwd
import shlex
import shutil
import subprocess
import tempfile

import jinja2
import pytest
import yaml

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import descriptors, store
from helpers import system_bus
from helpers.system_bus import render

pytestmark = pytest.mark.skipif(not shutil.which("xdg-dbus-proxy"), reason="needs xdg-dbus-proxy (Debian package)")
ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "roles", "metnos_sandbox")
USER = "nobody"               # the executors' user here (and the proxy's in the link test)
PROXY_USER = "mt-busproxy-r"  # the proxy's own system user (the role's metnos_sandbox_dbus_proxy_user), useradd here
# The executor: a status read and a command on the bus where the profile binds it.
MAIN = r'''
import json, sys
import dbus
out = {}
for name, method, sig, args in (("GetUnit", "GetUnit", "s", ["ssh.service"]),
                                ("StartUnit", "StartUnit", "ss", ["evil.service", "replace"])):
    try:
        bus = dbus.bus.BusConnection("unix:path=/run/dbus/system_bus_socket")
        bus.call_blocking("org.freedesktop.systemd1", "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                          method, sig, args, timeout=5)
        out[name] = "ok"
    except dbus.exceptions.DBusException as exc:
        out[name] = exc.get_dbus_name() or str(exc)
sys.stdout.write(json.dumps(out))
'''


@pytest.fixture
def bus():
    subprocess.run(["userdel", PROXY_USER], capture_output=True)
    subprocess.run(["useradd", "--system", "--user-group", "--shell", "/usr/sbin/nologin", "--no-create-home",
                    PROXY_USER], check=True)
    try:
        yield from system_bus.running_bus()
    finally:
        subprocess.run(["userdel", PROXY_USER], capture_output=True)


def _unit_steps(paths):
    """The unit's "+" commands (ExecStartPre, ExecStartPost) as argv lists, rendered with the role's vars and
    ``paths`` (the unit's paths, moved into the test's folder)."""
    with open(os.path.join(ROLE, "vars", "main.yml")) as handle:
        variables = yaml.safe_load(handle)
    with open(os.path.join(ROLE, "templates", "metnos-dbus-proxy.service.j2")) as handle:
        template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(handle.read())
    unit = template.render(dict(variables, ansible_managed="managed", metnos_sandbox_unit="metnos.service",
                                metnos_sandbox_dbus_proxy_user=USER, **paths))
    steps = {}
    for line in unit.splitlines():
        key, _, command = line.partition("=")
        if key in ("ExecStartPre", "ExecStartPost"):
            assert command.startswith("+"), line                   # run as root, outside the unit's sandbox
            steps[key] = [word.replace("$$", "$") for word in shlex.split(command[1:])]
    assert sorted(steps) == ["ExecStartPost", "ExecStartPre"], unit
    return steps


def _start(bus, steps):
    """The unit's start: ExecStartPre, the proxy (as its own user, in its runtime folder, UMask=0077: its socket
    0700 until ExecStartPost makes the stable one 0666), ExecStartPost."""
    subprocess.run(steps["ExecStartPre"], check=True, timeout=30)
    listen = bus.proxy(PROXY_USER, name="proxy-run")
    subprocess.run(steps["ExecStartPost"], check=True, timeout=30)
    return listen


def _run_stored(path):
    """The stored profile run by the real launcher (descriptors.main: metnos-sandbox-exec) as the executors' user."""
    source = inspect.getsource(descriptors)
    proc = subprocess.run(["setpriv", "--reuid=" + USER, "--regid=nogroup", "--clear-groups", "/usr/bin/python3", "-I",
                           "-S", "-c", source, "--profile", path], capture_output=True, text=True, timeout=60)
    if proc.returncode:
        return proc.stderr
    return json.loads(proc.stdout)


def _store(bus, name, proxy, executors):
    prof = render({"system_bus_proxy": proxy, "system_bus_sockets": [bus.socket], "executors_dir": executors})
    assert prof["decision"] == "wrapped", prof["diagnostics"]
    uid = str(pwd.getpwnam(PROXY_USER).pw_uid)              # the sandbox's uid number: the proxy's
    assert prof["argv"][prof["argv"].index("--uid"):][:2] == ["--uid", uid], prof["argv"]
    dest = os.path.join(bus.root, "profiles-" + name)       # the one writer: .args and .json, one digest
    store.write(dest, prof)
    return prof, store.paths(dest, prof["executor"])[1]


def test_a_restart_keeps_every_stored_profile_working(bus):
    executors = os.path.join(bus.root, "executors")
    os.makedirs(os.path.join(executors, "ex"), 0o755)
    with open(os.path.join(executors, "ex", "main.py"), "w") as handle:
        handle.write(MAIN)
    os.chmod(os.path.join(executors, "ex", "main.py"), 0o644)
    stable = os.path.join(bus.root, "stable")
    steps = _unit_steps({"__metnos_sandbox_dbus_proxy_listen": os.path.join(bus.root, "proxy-run", "system_bus_socket"),
                         "__metnos_sandbox_dbus_proxy_folder": stable,
                         "__metnos_sandbox_dbus_proxy_socket": os.path.join(stable, "system_bus_socket")})
    listen = _start(bus, steps)
    socket = os.path.join(stable, "system_bus_socket")
    assert os.stat(stable).st_uid == 0 and os.stat(socket).st_ino == os.stat(listen).st_ino
    # the socket is the proxy's user's, made 0666 by ExecStartPost (the executors are another user)
    assert os.stat(socket).st_uid == pwd.getpwnam(PROXY_USER).pw_uid and os.stat(socket).st_mode & 0o777 == 0o666

    prof, stored = _store(bus, "stable", socket, executors)
    assert socket in prof["argv"] and not prof["descriptors"], prof["argv"]       # bound by path
    old, before = _store(bus, "before", listen, executors)
    assert [d["path"] for d in old["descriptors"]] == [listen], old["descriptors"]  # the canary's: by descriptor
    for path in (stored, before):
        assert _run_stored(path) == {"GetUnit": "ok", "StartUnit": "org.freedesktop.DBus.Error.AccessDenied"}, path

    # the restart: the proxy stops (its runtime folder removed), starts again with a new socket
    inode = os.stat(socket).st_ino
    bus.stop_proxy(listen)
    assert _start(bus, steps) == listen and os.stat(socket).st_ino != inode
    bus.clear()
    assert _run_stored(stored) == {"GetUnit": "ok", "StartUnit": "org.freedesktop.DBus.Error.AccessDenied"}
    assert bus.calls() == ["GetUnit"], bus.calls()
    # the canary: the profile that bound the socket itself is stale now
    assert "bind_source_moved" in _run_stored(before)


BIND = "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])"       # a socket file at argv[1]


def _as_user(*argv):
    subprocess.run(["setpriv", "--reuid=" + USER, "--regid=nogroup", "--clear-groups"] + list(argv), check=True,
                   timeout=30)


@pytest.fixture
def top():
    """A folder the proxy's user can traverse (pytest's own tmp_path is root's 0700)."""
    folder = tempfile.mkdtemp(prefix="metnos-proxy-link-", dir="/var/tmp")
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_link_the_proxy_user_plants_never_becomes_the_stable_socket(top):
    """Planted: the proxy's folder is its user's (the executors' user), who puts there, where the proxy's socket is
    expected, a symbolic link to a root-owned socket standing in for the real bus (the unit waits with [ -S ], which
    follows it, and ln links the link itself). The unit's exact ExecStartPost line, run as root, refuses what it
    linked into root's folder: it fails, and neither the stable path nor its .new is left. Canary: the same line,
    with a real socket of that user in place of the link, makes the stable path that very socket. Mutation run:
    without the [ ! -L ] && [ -S ] check after the ln, the line succeeds and the stable path is the user's link."""
    bus_socket = os.path.join(top, "bus", "system_bus_socket")           # the real bus: root's
    os.makedirs(os.path.dirname(bus_socket), 0o755)
    subprocess.run(["/usr/bin/python3", "-c", BIND, bus_socket], check=True, timeout=30)
    assert os.stat(bus_socket).st_uid == 0
    runtime = os.path.join(top, "proxy-run")                              # the unit's RuntimeDirectory: its User='s
    os.mkdir(runtime, 0o755)
    shutil.chown(runtime, USER)
    listen, stable = os.path.join(runtime, "system_bus_socket"), os.path.join(top, "stable")
    steps = _unit_steps({"__metnos_sandbox_dbus_proxy_listen": listen, "__metnos_sandbox_dbus_proxy_folder": stable,
                         "__metnos_sandbox_dbus_proxy_socket": os.path.join(stable, "system_bus_socket")})
    socket_path = os.path.join(stable, "system_bus_socket")
    subprocess.run(steps["ExecStartPre"], check=True, timeout=30)
    _as_user("ln", "-s", bus_socket, listen)
    assert os.lstat(listen).st_uid != 0 and os.path.islink(listen)
    proc = subprocess.run(steps["ExecStartPost"], capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0, proc.stderr
    assert not os.path.lexists(socket_path) and not os.path.lexists(socket_path + ".new"), os.listdir(stable)

    # the canary: a real socket of the proxy's user where the link was
    _as_user("rm", listen)
    _as_user("/usr/bin/python3", "-c", BIND, listen)
    proc = subprocess.run(steps["ExecStartPost"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert os.lstat(socket_path).st_ino == os.lstat(listen).st_ino and os.listdir(stable) == ["system_bus_socket"]
