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
import shutil

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import channels, host_context
from helpers import system_bus, trees
from helpers.system_bus import PAYLOAD, READS, render

pytestmark = pytest.mark.skipif(not (shutil.which("dbus-daemon") and shutil.which("xdg-dbus-proxy")
                                     and shutil.which("bwrap")),
                                reason="needs dbus-daemon, xdg-dbus-proxy (Debian packages) and bwrap")


@pytest.fixture
def bus():
    yield from system_bus.running_bus()


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
