"""The role's system-bus policy drop-in for the proxy's user (issue 50 item 2: defence in depth, no signal emission),
proven with a real dbus-daemon, the real xdg-dbus-proxy and real bwrap runs, as a real user made with useradd here.

The bus is a private ``dbus-daemon`` in a temp folder with a system bus's policy (tests/helpers/system_bus.py
SYSTEM_POLICY: Debian's default context, and systemd's own /usr/share/dbus-1/system.d/org.freedesktop.systemd1.conf,
which lets every user call StartUnit and KillUnit and leaves the rest to polkit) and the role's drop-in
(templates/metnos-dbus-proxy.conf.j2, rendered with the role's vars as Ansible renders it) in its included folder,
read again on SIGHUP as the role's reload does; the stand-in systemd (tests/helpers/systemd_standin.py, there is no
systemd as PID 1 here) owns org.freedesktop.systemd1, records the calls that reach it, and listens for UnitRemoved
signals on the bus. The proxy runs as the role runs it: as its own user, the executors as another (both made with
useradd here), its socket 0666 as the unit's ExecStartPost makes it; the profile maps the sandbox's uid to the
proxy's (bwrap --uid).

- the reads still pass through the proxy, from a rendered profile run in bwrap as that user; commands do not.
- the drop-in denies the proxy's user every call but the reads: StartUnit made directly on the bus as that user is
  refused. Canary (the drop-in removed, the bus reloaded): StartUnit as that user reaches systemd.
- a signal the sandbox emits through the proxy (a forged Manager.UnitRemoved broadcast) does not reach a listener on
  the bus, nor one the proxy's user sends directly. Canaries: the same signal sent directly by root reaches it; and
  without the drop-in, both the proxy's user's and the sandbox's do (xdg-dbus-proxy 0.1.4 forwards a client's
  broadcast signals even with --filter: the drop-in is what stops them).
"""
import os
import re
import shutil
import time

import jinja2
import pytest
import yaml

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import channels
from helpers import system_bus, trees
from helpers.system_bus import PAYLOAD, READS, render

pytestmark = pytest.mark.skipif(not (shutil.which("xdg-dbus-proxy") and shutil.which("useradd")),
                                reason="needs xdg-dbus-proxy (Debian package) and useradd")
ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "roles", "metnos_sandbox")
EXECUTOR_USER = "mt-executor-t"      # the executors' user
PROXY_USER = "mt-busproxy-p"         # the proxy's own user (the role's metnos_sandbox_dbus_proxy_user)
DENIED = "org.freedesktop.DBus.Error.AccessDenied"
# Inside the sandbox: a forged org.freedesktop.systemd1.Manager.UnitRemoved broadcast, then a round trip (so that it
# was handled).
EMIT_PAYLOAD = r'''
import json, sys
import dbus, dbus.lowlevel
spec = json.loads(sys.argv[1])
bus = dbus.bus.BusConnection(spec["address"])
msg = dbus.lowlevel.SignalMessage("/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "UnitRemoved")
msg.append("forged.service", dbus.ObjectPath("/org/freedesktop/systemd1/unit/forged"), signature="so")
bus.send_message(msg)
bus.flush()
try:
    bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", [])
except dbus.exceptions.DBusException:
    pass
sys.stdout.write(json.dumps({"sent": True}))
'''


@pytest.fixture
def users():
    yield from system_bus.system_users(EXECUTOR_USER, PROXY_USER)


def _policy():
    """The role's drop-in, rendered as Ansible renders a template (trim_blocks) with the role's vars."""
    with open(os.path.join(ROLE, "vars", "main.yml")) as handle:
        variables = yaml.safe_load(handle)
    with open(os.path.join(ROLE, "templates", "metnos-dbus-proxy.conf.j2")) as handle:
        template = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True).from_string(handle.read())
    return template.render(dict(variables, ansible_managed="managed", metnos_sandbox_dbus_proxy_user=PROXY_USER))


@pytest.fixture
def bus(users):
    yield from system_bus.running_bus(system_like=True)


def _signalled(bus):
    """The forged signals the listener received (the units they name)."""
    time.sleep(0.5)
    if not os.path.exists(bus.log):
        return []
    with open(bus.log) as handle:
        return [line.split()[1] for line in handle if line.startswith("UnitRemoved")]


DIRECT = ["bwrap", "--bind", "/", "/", "--"]        # no sandbox to speak of: straight to the bus's socket


def _inside(argv, payload, spec, descriptors=None, user=EXECUTOR_USER):
    return trees.run_inside(argv, payload, spec, user, descriptors=descriptors)


def test_the_proxy_user_may_only_read_and_emits_no_signal(bus):
    dropin = os.path.join(bus.dropins, "metnos-dbus-proxy.conf")
    with open(dropin, "w") as handle:
        handle.write(_policy())
    bus.reload()
    proxy, _pid = system_bus.open_proxy(bus, PROXY_USER)     # its socket 0666: the unit's ExecStartPost
    prof = render({"system_bus_proxy": proxy, "system_bus_sockets": [bus.socket]})
    assert prof["decision"] == "wrapped", prof["diagnostics"]
    inside = {"address": "unix:path=/run/dbus/system_bus_socket"}

    # the reads pass through the proxy; commands are refused
    bus.clear()
    got = _inside(prof["argv"], PAYLOAD, inside, prof["descriptors"])
    assert all(got[name] == "ok" for name in READS), got
    assert [got["StartUnit"], got["KillUnit"], got["BecomeMonitor"]] == [DENIED] * 3, got
    assert sorted(bus.calls()) == sorted(READS), bus.calls()

    # defence in depth: the proxy's user, directly on the bus, may only read
    bus.clear()
    direct = _inside(DIRECT, PAYLOAD, {"address": bus.address}, user=PROXY_USER)
    assert all(direct[name] == "ok" for name in READS), direct
    assert [direct["StartUnit"], direct["KillUnit"]] == [DENIED] * 2, direct
    # (OtherName's ListUnits reaches the stand-in: it owns org.freedesktop.systemd1, which the bus's rules name)
    assert set(bus.calls()) == set(READS), bus.calls()

    # no signal from a sandbox reaches a listener on the bus, nor one the proxy's user sends directly (the drop-in);
    # canary: the same signals sent directly by root arrive
    bus.clear()
    _inside(prof["argv"], EMIT_PAYLOAD, inside, prof["descriptors"])
    assert _signalled(bus) == [], bus.calls()
    _inside(DIRECT, EMIT_PAYLOAD, {"address": bus.address}, user=PROXY_USER)
    assert _signalled(bus) == [], bus.calls()
    trees.run_inside(DIRECT, EMIT_PAYLOAD, {"address": bus.address})
    assert _signalled(bus) == ["forged.service"], bus.calls()

    # the canary of the drop-in: removed (the bus reloaded), the proxy's user starts units, and its signals arrive,
    # the sandbox's too (xdg-dbus-proxy forwards a client's broadcast signals: the drop-in is the wall)
    os.unlink(dropin)
    bus.reload()
    bus.clear()
    direct = _inside(DIRECT, PAYLOAD, {"address": bus.address}, user=PROXY_USER)
    assert direct["StartUnit"] == "ok" and "StartUnit" in bus.calls(), direct
    bus.clear()
    _inside(DIRECT, EMIT_PAYLOAD, {"address": bus.address}, user=PROXY_USER)
    assert _signalled(bus) == ["forged.service"], bus.calls()
    bus.clear()
    _inside(prof["argv"], EMIT_PAYLOAD, inside, prof["descriptors"])
    assert _signalled(bus) == ["forged.service"], bus.calls()


def test_the_role_policy_allows_exactly_the_proxied_reads():
    """The drop-in's allowed systemd calls are the proxy's --call rules (the core's channels.proxy_words)."""
    text = _policy()
    allowed = set(re.findall(r'send_destination="org.freedesktop.systemd1" send_interface="([^"]+)" '
                             r'send_member="([^"]+)"', text))
    want = set(tuple(rule.split("=", 2)[2].split("@")[0].rsplit(".", 1)) for rule in
               channels.proxy_words("bus", "listen") if rule.startswith("--call="))
    assert allowed == want and want
    for line in ('<deny send_type="method_call"/>', '<deny send_type="signal"/>', '<deny own="*"/>'):
        assert line in text, line
