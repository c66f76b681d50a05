"""Run inside a test host (tests/system/test_faults_packages.py): SIGKILL every dpkg process the moment dpkg's
journal records a given state of a package, as a power loss or the OOM killer would end it there (or SIGSTOP it
there, to hold dpkg mid-run while the test kills the controller).

    python3 dpkg_killer.py PACKAGE STATE READY_FILE [KILL|STOP]

dpkg journals each status change as a numbered file renamed into /var/lib/dpkg/updates (a new package goes
half-installed while its files are unpacked, unpacked, half-configured while its postinst runs, installed):
inotify sees the rename, the file is read, and on PACKAGE's STATE every process whose comm is dpkg is killed.
READY_FILE is created once the watch is set; the pids signalled are printed ("KILL dpkg [pids] at ...")."""
import ctypes
import os
import re
import signal
import struct
import sys

UPDATES = "/var/lib/dpkg/updates"
IN_MOVED_TO = 0x80


def dpkg_pids():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/comm" % pid) as handle:
                if handle.read().strip() == "dpkg":
                    found.append(int(pid))
        except OSError:
            continue
    return found


def main(package, state, ready, signal_name="KILL"):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init()
    if libc.inotify_add_watch(fd, UPDATES.encode(), IN_MOVED_TO) < 0:
        raise OSError(ctypes.get_errno(), "inotify_add_watch " + UPDATES)
    open(ready, "w").close()
    while True:
        data = os.read(fd, 65536)
        offset = 0
        while offset < len(data):
            size = struct.unpack_from("iIII", data, offset)[3]
            name = data[offset + 16:offset + 16 + size].rstrip(b"\0").decode()
            offset += 16 + size
            try:
                with open(os.path.join(UPDATES, name)) as handle:
                    text = handle.read()
            except OSError:
                continue
            if text.startswith("Package: %s\n" % package) and re.search("^Status: .* %s$" % state, text, re.M):
                pids = dpkg_pids()
                for pid in pids:
                    os.kill(pid, getattr(signal, "SIG" + signal_name))
                print("%s dpkg %s at %s %s (journal entry %s)" % (signal_name, pids, package, state, name), flush=True)
                return


if __name__ == "__main__":
    main(*sys.argv[1:5])
