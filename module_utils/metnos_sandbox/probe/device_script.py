# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The device proof's payload (probe/device.py): runs inside the sandbox under test, on the runtime's interpreter
(Python 3.6+, the standard library only, ``python -I -S -c TEXT SPEC``). It plants a grandchild that ignores
hangups and terminations and outlives its parent, reports one JSON line on stdout, then waits for the deadline.

device.py sends this file's text (sources.script). Importing this module runs nothing: the work is under
``if __name__ == "__main__"``, which is what ``-c`` gives. No ``from __future__`` import (sources.script).
"""
PR_SET_NAME = 15


def run() -> None:
    # Imported here, not above: the audit imports this module to read its text, and must not load ctypes or
    # socket for it (tests/unit/test_audit_payload.py).
    import ctypes
    import json
    import os
    import signal
    import socket
    import sys
    import time

    spec = json.loads(sys.argv[1])
    libc = ctypes.CDLL(None)

    def name(prefix: str) -> None:
        # the process's name, seen outside as /proc/PID/comm
        libc.prctl(PR_SET_NAME, (prefix + spec["token"])[:15].encode(), 0, 0, 0)

    name("md-")
    read, write = os.pipe()
    if os.fork() == 0:
        if os.fork() == 0:
            name("mg-")
            for number in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
                signal.signal(number, signal.SIG_IGN)
            os.write(write, b"x")
            while True:
                time.sleep(60)
        os._exit(0)
    os.wait()
    os.read(read, 1)
    mine = "/tmp/.metnos-device-" + spec["token"]
    obs = dict(token=spec["token"], pid=os.getpid())
    try:
        obs["proc_pids"] = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())[:512]
    except OSError as exc:
        obs["proc_pids"] = "error:%s" % exc.errno
    try:
        os.close(os.open(mine, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        obs["tmp_written"] = mine
    except OSError as exc:
        obs["tmp_written"] = "error:%s" % exc.errno
    obs["host_tmp_marker"] = os.path.lexists(spec["marker"])
    try:
        obs["interfaces"] = sorted(n for _i, n in socket.if_nameindex())
    except OSError as exc:
        obs["interfaces"] = "error:%s" % exc.errno
    sys.stdout.write(json.dumps(obs) + "\n")
    sys.stdout.flush()
    while True:
        time.sleep(60)


if __name__ == "__main__":
    run()
