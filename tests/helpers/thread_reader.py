"""A host process whose only holder of a pipe's read end is a thread with a descriptor table of its own.

Run as ``python3 thread_reader.py FD SINK``: one thread calls unshare(CLONE_FILES) (its own copy of the table,
absent from /proc/PID/fd, present in /proc/PID/task/TID/fd), then the main thread closes FD in the process's
table, says "ready" on stdout and waits. The thread appends everything it reads from FD to SINK (what the
sandbox writes reaches the host: the leak, proven by a canary) and ends the process at end of file.
Used by the matrix's pipe_thread_table row (tests/helpers/probe_mutations.py, Donor).
"""
import ctypes
import os
import sys
import threading

CLONE_FILES = 0x400


def main():
    fd, sink = int(sys.argv[1]), sys.argv[2]
    ready = threading.Event()

    def reader():
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_FILES) != 0:
            os._exit(3)
        ready.set()
        with open(sink, "ab") as out:
            while True:
                data = os.read(fd, 4096)
                if not data:
                    break
                out.write(data)
                out.flush()
        os._exit(0)

    threading.Thread(target=reader, daemon=True).start()
    if not ready.wait(10):
        os._exit(4)
    os.close(fd)                 # the process's own table: the read end is left in the thread's alone
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    threading.Event().wait()


if __name__ == "__main__":
    main()
