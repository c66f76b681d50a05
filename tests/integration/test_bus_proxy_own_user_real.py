"""The D-Bus proxy runs as its own system user, not the executors' (issue 50 item 2): no sandbox can stop it, and the
reads still pass. Real dbus-daemon, the real xdg-dbus-proxy, real bwrap, two real users made with useradd here (the
proxy's and the executors'); the proxy's socket made 0666 as the unit's ExecStartPost makes it.

Why the sandbox's uid is mapped: the bus checks the identity a client claims (``AUTH EXTERNAL <hex uid>``, forwarded
as written by xdg-dbus-proxy 0.1.4) against the proxy connection's SO_PEERCRED, the proxy's uid. A rendered profile
that binds the proxy's socket runs with the proxy's uid number inside its user namespace (bwrap --uid, the socket's
owner: bus_proxy.mapped_uid), so libdbus (python3-dbus) and GDBus (gdbus) claim the proxy's uid.

- a sandbox cannot SIGSTOP the proxy (EPERM; seen from the host: the proxy is not stopped), and the reads pass,
  before and after the try; commands stay refused.
- canary of the SIGSTOP check: a proxy run as the executors' uid (the role's earlier default) is stopped by the same
  sandbox, seen from the host (and every read through it would then hang).
- canary of the mapping: without --uid (bus_proxy.mapped_uid patched to None), both client libraries are refused
  by the bus through the proxy of another uid.
"""
import os
import pwd
import shutil

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import bus_proxy, channels
from helpers import system_bus, trees
from helpers.system_bus import render

pytestmark = pytest.mark.skipif(not (shutil.which("xdg-dbus-proxy") and shutil.which("useradd")
                                     and shutil.which("gdbus")),
                                reason="needs xdg-dbus-proxy, dbus-daemon, gdbus (Debian packages) and useradd")
PROXY_USER = "mt-busproxy-t"
EXECUTOR_USER = "mt-busexec-t"
# Inside the sandbox: SIGSTOP to the proxy, then one read with libdbus and one with GDBus, then a command.
PAYLOAD = r'''
import json, os, signal, subprocess, sys
import dbus
spec = json.loads(sys.argv[1])
out = {"uid": os.getuid()}
try:
    os.kill(spec["pid"], signal.SIGSTOP)
    out["sigstop"] = "sent"
except OSError as exc:
    out["sigstop"] = "errno %d" % exc.errno
if spec.get("stop_only"):                  # a stopped proxy answers nothing: the reads would hang
    sys.stdout.write(json.dumps(out))
    sys.exit(0)
S, M = "org.freedesktop.systemd1", "/org/freedesktop/systemd1"
CALLS = (("Get", "org.freedesktop.DBus.Properties", "Get", "ss", [S + ".Manager", "Version"]),
         ("StartUnit", S + ".Manager", "StartUnit", "ss", ["evil.service", "replace"]))
for name, iface, method, sig, args in CALLS:
    try:
        dbus.bus.BusConnection(spec["address"]).call_blocking(S, M, iface, method, sig, args, timeout=5)
        out[name] = "ok"
    except dbus.exceptions.DBusException as exc:
        out[name] = exc.get_dbus_name() or str(exc)
gdbus = subprocess.run(["gdbus", "call", "--address", spec["address"], "--dest", S, "--object-path", M, "--method",
                        "org.freedesktop.DBus.Properties.Get", S + ".Manager", "Version"], capture_output=True,
                       text=True, timeout=20)
out["gdbus"] = "ok" if gdbus.returncode == 0 else gdbus.stderr.strip()[-200:]
sys.stdout.write(json.dumps(out))
'''
INSIDE = "unix:path=" + channels.SYSTEM_BUS


@pytest.fixture
def bus():
    yield from system_bus.bus_with_users(PROXY_USER, EXECUTOR_USER)


def _state(pid):
    with open("/proc/%d/status" % pid) as handle:
        return [line.split()[1] for line in handle if line.startswith("State:")][0]


def _try(bus, listen, pid, stop_only=False):
    prof = render({"system_bus_proxy": listen, "system_bus_sockets": [bus.socket]})
    assert prof["decision"] == "wrapped", prof["diagnostics"]
    bus.clear()
    spec = {"address": INSIDE, "pid": pid, "stop_only": stop_only}
    got = trees.run_inside(prof["argv"], PAYLOAD, spec, EXECUTOR_USER, descriptors=prof["descriptors"])
    return prof, got


def test_a_sandbox_cannot_stop_the_proxy_of_its_own_user_and_reads_pass(bus):
    listen, pid = system_bus.open_proxy(bus, PROXY_USER, "proxy-own")
    uid = pwd.getpwnam(PROXY_USER).pw_uid
    prof, stop = _try(bus, listen, pid, stop_only=True)
    assert stop["sigstop"] == "errno 1", stop                 # EPERM
    assert _state(pid) != "T", _state(pid)                    # from the host: not stopped
    prof, got = _try(bus, listen, pid)
    at = prof["argv"].index("--uid")
    assert prof["argv"][at + 1] == str(uid) and at < prof["argv"].index("--"), prof["argv"]
    assert [n for n in prof["namespaces"] if n["flag"] == "--uid"][0]["value"] == str(uid)
    assert got["uid"] == uid, got
    assert got["sigstop"] == "errno 1", got                   # EPERM
    assert _state(pid) != "T", _state(pid)                    # from the host: not stopped
    assert got["Get"] == "ok" and got["gdbus"] == "ok", got
    assert got["StartUnit"] == "org.freedesktop.DBus.Error.AccessDenied", got
    assert bus.calls() == ["Get", "Get"], bus.calls()         # the stand-in systemd saw the two reads, no command
    # after the try, the proxy still answers
    prof, again = _try(bus, listen, pid)
    assert again["Get"] == "ok" and again["gdbus"] == "ok", again


def test_canary_a_proxy_of_the_executors_uid_is_stopped_by_a_sandbox(bus):
    listen, pid = system_bus.open_proxy(bus, EXECUTOR_USER, "proxy-same")
    try:
        prof, got = _try(bus, listen, pid, stop_only=True)
        assert got["sigstop"] == "sent" and _state(pid) == "T", (got, _state(pid))
    finally:
        os.kill(pid, 18)                                      # SIGCONT: the fixture stops it


def test_canary_without_the_mapping_the_bus_refuses_both_client_libraries(bus, monkeypatch):
    listen, pid = system_bus.open_proxy(bus, PROXY_USER, "proxy-unmapped")
    monkeypatch.setattr(bus_proxy, "mapped_uid", lambda binds, stats: None)
    prof, got = _try(bus, listen, pid)
    assert "--uid" not in prof["argv"], prof["argv"]
    assert got["Get"] != "ok" and "Exhausted all available authentication mechanisms" in got["gdbus"], got
    assert bus.calls() == [], bus.calls()
