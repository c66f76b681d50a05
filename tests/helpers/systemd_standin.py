"""A stand-in for systemd's manager on a test's private system bus (there is no systemd as PID 1 in the
test's container): it owns org.freedesktop.systemd1, answers a few of the manager's methods and the
Properties interface, and appends every call that reaches it (and every UnitRemoved signal on the bus) to a log
(one line: the member, then its arguments), so a test can see from outside which calls a sandbox got through.

Run with the system's python3 (dbus-python and GLib): python3 systemd_standin.py ADDRESS LOG
It prints "ready" once it owns its name.
"""
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

MANAGER = "org.freedesktop.systemd1.Manager"
PROPS = "org.freedesktop.DBus.Properties"


class Manager(dbus.service.Object):
    def __init__(self, bus, log):
        dbus.service.Object.__init__(self, bus, "/org/freedesktop/systemd1")
        self.log = log

    def record(self, *words):
        with open(self.log, "a") as handle:
            handle.write(" ".join(str(w) for w in words) + "\n")

    @dbus.service.method(MANAGER, in_signature="s", out_signature="o")
    def GetUnit(self, name):
        self.record("GetUnit", name)
        return "/org/freedesktop/systemd1/unit/" + name.replace(".", "_2e")

    @dbus.service.method(MANAGER, in_signature="", out_signature="a(ssssssouso)")
    def ListUnits(self):
        self.record("ListUnits")
        return [("ssh.service", "OpenSSH", "loaded", "active", "running", "", "/org/freedesktop/systemd1/unit/ssh",
                 dbus.UInt32(0), "", "/")]

    @dbus.service.method(MANAGER, in_signature="ss", out_signature="o")
    def StartUnit(self, name, mode):
        self.record("StartUnit", name, mode)
        return "/org/freedesktop/systemd1/job/1"

    @dbus.service.method(MANAGER, in_signature="ssi", out_signature="")
    def KillUnit(self, name, who, signal):
        self.record("KillUnit", name, who, signal)

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        self.record("Get", interface, name)
        return dbus.String("252 (stand-in)", variant_level=1)

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        self.record("GetAll", interface)
        return {"Version": dbus.String("252 (stand-in)", variant_level=1)}


def main():
    address, log = sys.argv[1], sys.argv[2]
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    name = dbus.service.BusName("org.freedesktop.systemd1", bus)
    other = dbus.service.BusName("org.freedesktop.login1", bus)       # another name, the same recording object
    manager = Manager(bus, log)
    # a listener on the bus, on a connection of its own that owns no name (so that only the bus's rules for any
    # client apply): a UnitRemoved signal anyone broadcasts is recorded too (line "UnitRemoved <unit>")
    listener = dbus.bus.BusConnection(address)
    listener.add_signal_receiver(lambda unit, *rest: manager.record("UnitRemoved", unit), signal_name="UnitRemoved",
                                 dbus_interface=MANAGER)
    print("ready", flush=True)
    GLib.MainLoop().run()
    del name, other, listener


if __name__ == "__main__":
    main()
