"""Run inside a pacman test host (tests/system/test_faults_packages.py): SIGKILL every pacman process the moment
libalpm creates its lock (/var/lib/pacman/db.lck, made with O_EXCL when a transaction starts), as a power loss or
the OOM killer would end pacman mid-run: the lock is left behind.

    python3 pacman_killer.py READY_FILE

READY_FILE is created once the watch is set (inotify on /var/lib/pacman); the pids killed are printed."""
import ctypes
import os
import signal
import struct
import sys

FOLDER = "/var/lib/pacman"
IN_CREATE = 0x100


def pacman_pids():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/comm" % pid) as handle:
                if handle.read().strip() == "pacman":
                    found.append(int(pid))
        except OSError:
            continue
    return found


def main(ready):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init()
    if libc.inotify_add_watch(fd, FOLDER.encode(), IN_CREATE) < 0:
        raise OSError(ctypes.get_errno(), "inotify_add_watch " + FOLDER)
    open(ready, "w").close()
    while True:
        data = os.read(fd, 65536)
        offset = 0
        while offset < len(data):
            size = struct.unpack_from("iIII", data, offset)[3]
            name = data[offset + 16:offset + 16 + size].rstrip(b"\0").decode()
            offset += 16 + size
            if name == "db.lck":
                pids = pacman_pids()
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
                print("KILL pacman %s at the creation of %s/db.lck" % (pids, FOLDER), flush=True)
                return


if __name__ == "__main__":
    main(sys.argv[1])
