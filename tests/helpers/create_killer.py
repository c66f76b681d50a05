"""Run inside a test host (tests/system/test_faults_packages.py): SIGKILL every process that MATCH names (comm:NAME,
its comm is NAME; cmdline:WORD, WORD is in its command line) the moment a file whose name starts with PREFIX is
created in FOLDER, as a power loss or the OOM killer would end it
there. pacman: libalpm creates /var/lib/pacman/db.lck (O_EXCL) when its transaction starts, so the lock is left
behind; dnf: rpm writes each file of a package under a temporary name beside it ("/usr/bin/bwrap;<hex>") and
renames it, so the Ansible dnf module's process (rpm runs in it: cmdline:AnsiballZ_dnf) is killed mid-transaction
with the package's files half there.

    python3 create_killer.py FOLDER PREFIX MATCH READY_FILE

READY_FILE is created once the watch is set (inotify IN_CREATE on FOLDER); the pids killed are printed."""
import ctypes
import os
import signal
import struct
import sys

IN_CREATE = 0x100


def children():
    """{ppid: [pids]} of every process now."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        found.setdefault(ppid, []).append(int(pid))
    return found


def pids_of(match):
    """The pids MATCH names and their descendants (the Ansible dnf module respawns itself as a child, "python3 --",
    under the interpreter with dnf's bindings: the child runs the transaction), deepest first; this process and
    its parent (whose command lines hold MATCH) left out."""
    kind, _colon, word = match.partition(":")
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) in (os.getpid(), os.getppid()):
            continue
        try:
            with open("/proc/%s/%s" % (pid, kind), "rb") as handle:
                text = handle.read()
        except OSError:
            continue
        if (text.strip() == word.encode()) if kind == "comm" else (word.encode() in text):
            found.append(int(pid))
    tree, todo = children(), list(found)
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found[::-1]


def main(folder, prefix, match, ready):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init()
    if libc.inotify_add_watch(fd, folder.encode(), IN_CREATE) < 0:
        raise OSError(ctypes.get_errno(), "inotify_add_watch " + folder)
    open(ready, "w").close()
    while True:
        data = os.read(fd, 65536)
        offset = 0
        while offset < len(data):
            size = struct.unpack_from("iIII", data, offset)[3]
            name = data[offset + 16:offset + 16 + size].rstrip(b"\0").decode()
            offset += 16 + size
            if name.startswith(prefix):
                pids = pids_of(match)
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
                print("KILL %s %s at the creation of %s" % (match, pids, os.path.join(folder, name)), flush=True)
                return


if __name__ == "__main__":
    main(*sys.argv[1:5])
