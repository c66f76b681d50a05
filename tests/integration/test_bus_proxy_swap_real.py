"""host.system_bus_proxy may not be the system bus itself (issue 50 item 2): the bus's own socket, a symbolic link
to it, and a hard link of it (the same device and inode) are each refused with their own code, proven with a real
dbus-daemon, the real xdg-dbus-proxy and a real bwrap run.

The bus is a private ``dbus-daemon`` with a system bus's configuration on a socket in a temp folder (no systemd as
PID 1 here; the stand-in systemd of tests/helpers/systemd_standin.py owns org.freedesktop.systemd1 and records the
calls that reach it): tests/helpers/system_bus.py. Its socket is named to the renderer the way the role
names the proxy's upstream (host.system_bus_sockets), or through DBUS_SYSTEM_BUS_ADDRESS.

Canary: each planted link really is the bus (StartUnit through it, from the host, reaches the stand-in). The
mutation in the test (the check disabled) shows what the sandbox would get: the profile is rendered, and StartUnit
from inside the sandbox reaches systemd.
"""
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import bus_proxy, channels
from helpers import system_bus, trees
from helpers.system_bus import PAYLOAD, READS, render

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/xdg-dbus-proxy"), reason="needs xdg-dbus-proxy")
CODES = ("bus_proxy_is_bus", "bus_proxy_symlink_to_bus", "bus_proxy_same_inode_as_bus")


@pytest.fixture
def bus():
    yield from system_bus.running_bus()


def _plant(bus):
    """The faults, in a root-owned folder: {case: (host.system_bus_proxy, the code, configured bus sockets)}."""
    folder = os.path.join(bus.root, "planted")
    os.mkdir(folder, 0o755)
    symlink = os.path.join(folder, "symlink_socket")
    os.symlink(bus.socket, symlink)
    hardlink = os.path.join(folder, "hardlink_socket")
    os.link(bus.socket, hardlink)
    linked_folder = os.path.join(folder, "linked_folder")
    os.symlink(os.path.dirname(bus.socket), linked_folder)
    return {
        "the bus's own path": (bus.socket, "bus_proxy_is_bus", [bus.socket]),
        "a symlink to it": (symlink, "bus_proxy_symlink_to_bus", [bus.socket]),
        "a path through a linked folder": (os.path.join(linked_folder, "system_bus_socket"),
                                           "bus_proxy_symlink_to_bus", [bus.socket]),
        "a hard link of it": (hardlink, "bus_proxy_same_inode_as_bus", [bus.socket]),
        "a symlink, the bus named by DBUS_SYSTEM_BUS_ADDRESS only": (symlink, "bus_proxy_symlink_to_bus", []),
        "a hard link, the bus named by DBUS_SYSTEM_BUS_ADDRESS only": (hardlink, "bus_proxy_same_inode_as_bus", []),
    }


def _codes(prof):
    return [d["code"] for d in prof["diagnostics"] if d["code"] in CODES]


def test_the_bus_itself_a_link_and_a_hard_link_are_each_refused(bus, monkeypatch):
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=" + bus.socket.replace("_", "%5f") + ",guid=0")
    planted = _plant(bus)
    for case, (path, code, sockets) in planted.items():
        # canary: the planted path is the unfiltered bus (StartUnit through it reaches systemd)
        bus.clear()
        got = trees.run_inside(["bwrap", "--bind", "/", "/", "--"], PAYLOAD, {"address": "unix:path=" + path})
        assert got["StartUnit"] == "ok" and "StartUnit" in bus.calls(), (case, got)
        prof = render({"system_bus_proxy": path, "system_bus_sockets": sockets})
        assert prof["decision"] != "wrapped" and _codes(prof) == [code], (case, prof["diagnostics"])
        diag = [d for d in prof["diagnostics"] if d["code"] == code][0]
        assert path in diag["message"] and diag["rule"] == "R-CAP-SYS", diag
        assert "ansible-playbook metnos.sandbox.site -e metnos_sandbox_dbus_proxy=true" in diag["remediation"]
        assert prof["argv"] is None, prof["argv"]                     # nothing rendered, nothing bound

    # the proxy's own socket, and a symlink to it, are not the bus: the reads pass, commands do not
    proxy = bus.proxy(None)
    alias = os.path.join(bus.root, "planted", "proxy_alias")
    os.symlink(proxy, alias)
    for path in (proxy, alias):
        prof = render({"system_bus_proxy": path, "system_bus_sockets": [bus.socket]})
        assert not _codes(prof), prof["diagnostics"]
    prof = render({"system_bus_proxy": proxy, "system_bus_sockets": [bus.socket]})
    assert prof["decision"] == "wrapped", prof["diagnostics"]
    bus.clear()
    got = trees.run_inside(prof["argv"], PAYLOAD, {"address": "unix:path=" + channels.SYSTEM_BUS},
                           descriptors=prof["descriptors"])
    assert all(got[n] == "ok" for n in READS) and got["StartUnit"] != "ok", got
    assert "StartUnit" not in bus.calls(), bus.calls()

    # the mutation (the check disabled): the hard link is rendered, and StartUnit from the sandbox reaches systemd
    monkeypatch.setattr(bus_proxy, "swapped", lambda *args: None)
    weak = render({"system_bus_proxy": planted["a hard link of it"][0], "system_bus_sockets": [bus.socket]})
    assert weak["decision"] == "wrapped", weak["diagnostics"]
    bus.clear()
    got = trees.run_inside(weak["argv"], PAYLOAD, {"address": "unix:path=" + channels.SYSTEM_BUS},
                           descriptors=weak["descriptors"])
    assert got["StartUnit"] == "ok" and "StartUnit" in bus.calls(), (got, bus.calls())


@pytest.mark.parametrize("address, paths", [
    ("unix:path=/run/dbus/system_bus_socket", ["/run/dbus/system_bus_socket"]),
    ("unix:path=/a%20b/s,guid=1;unix:abstract=/x;tcp:host=h,port=1;unix:path=/c", ["/a b/s", "/c"]),
    ("unix:abstract=/tmp/dbus-x", []),
    ("unix:path=relative", []),
    ("unix:path=/x%00y", []),
    ("", []),
])
def test_address_paths(address, paths):
    assert bus_proxy.address_paths(address) == paths
