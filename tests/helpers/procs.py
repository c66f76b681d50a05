"""A test's own processes, found in the host's /proc by a marker only that test uses (a unique
argument, a private directory in the command line) - never by a command other tests or users on the
same machine may run too - and a bounded wait for them to be gone."""
import os
import time


def matching(marker, proc="/proc"):
    """Pids whose command line contains ``marker``. Zombies have none: they hold nothing any more."""
    want = marker.encode("utf-8") if isinstance(marker, str) else marker
    out = []
    for name in os.listdir(proc):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(os.path.join(proc, name, "cmdline"), "rb") as handle:
                if want in handle.read():
                    out.append(int(name))
        except OSError:
            pass
    return sorted(out)


def left_after(marker, timeout=10.0):
    """The processes still matching ``marker`` after up to ``timeout`` seconds. A killed process takes a
    moment to exit on a loaded host (it must be scheduled to die); one still there after that was not
    killed."""
    deadline = time.time() + timeout
    while True:
        left = matching(marker)
        if not left or time.time() >= deadline:
            return left
        time.sleep(0.1)
