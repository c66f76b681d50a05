# -*- coding: utf-8 -*-
"""base/libc_lite.py: the C calls of the scripts the probe runs in other processes, checked in real
interpreters (``python3 -I -S``: the one the tests run on, and every CPython 3.6+ this machine has), in both
branches (``_ctypes`` alone, and the ctypes package when ``_ctypes`` lacks what the prelude needs), against
the ctypes package itself. Nothing is mocked: prctl(2) and statfs(2) are the kernel's."""
from __future__ import absolute_import, division, print_function

import glob
import json
import subprocess
import sys

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import libc_lite, sources

PRELUDE = sources.script(libc_lite)      # the file's text, as the payload includes it

# What the reaper and the payload ask: their process name set (PR_SET_NAME) and read back, the parent-death
# signal set and read (PR_SET_PDEATHSIG, PR_GET_PDEATHSIG), the filesystem type of /proc and of / (statfs), the
# errno of a path that does not exist, and becoming a child subreaper.
CALLS = r'''
import json, os, sys
out = {}
out["set_name"] = libc.prctl(15, b"mp-libc-lite", 0, 0, 0)
out["comm"] = open("/proc/self/comm").read().strip()
out["set_pdeathsig"] = libc.prctl(1, 9, 0, 0, 0)
sig = c_int(0)
out["get_pdeathsig"] = [libc.prctl(2, byref(sig), 0, 0, 0), sig.value]
for path in ("/proc", "/"):
    buf = string_buffer(512)
    out[path] = [libc.statfs(path.encode(), buf), c_long.from_buffer(buf).value & 0xffffffff,
                 c_uint.from_buffer(buf).value]
buf = string_buffer(512)
out["missing"] = [libc.statfs(b"/nonexistent/metnos-libc-lite", buf), get_errno()]
out["subreaper"] = libc.prctl(36, 1, 0, 0, 0)
out["modules"] = sorted(m for m in ("ctypes", "struct") if m in sys.modules)
print(json.dumps(out))
'''

# The same calls through the ctypes package, as the scripts made them before the prelude.
REFERENCE = r'''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
c_int, c_uint, c_long, byref, get_errno = ctypes.c_int, ctypes.c_uint, ctypes.c_long, ctypes.byref, ctypes.get_errno
string_buffer = ctypes.create_string_buffer
'''

# The prelude's other branch: ``import _ctypes`` refused (the package imported first, so that it still works).
NO_CTYPES_C = "import ctypes, sys\nsys.modules['_ctypes'] = None\n"


def _interpreters():
    found = [sys.executable]
    for path in sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3")) + ["/usr/bin/python3"]:
        version = subprocess.run([path, "-c", "import sys; print(sys.version_info >= (3, 6))"],
                                 capture_output=True, text=True, check=False).stdout.strip()
        if version == "True" and path not in found:
            found.append(path)
    return found


def _run(python, head):
    proc = subprocess.run([python, "-I", "-S", "-c", head + CALLS], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("python", _interpreters())
def test_the_prelude_makes_the_calls_ctypes_makes(python):
    """Every call returns what the ctypes package returns, in the same interpreter; the prelude's own branch
    imports neither ctypes nor struct, its fallback imports ctypes."""
    want = _run(python, REFERENCE)
    assert want["comm"] == "mp-libc-lite" and want["/proc"][1] == 0x9FA0 and want["missing"] == [-1, 2]
    own = _run(python, PRELUDE)
    fallback = _run(python, NO_CTYPES_C + PRELUDE)
    assert own.pop("modules") == []
    assert fallback.pop("modules") == ["ctypes", "struct"]
    want.pop("modules")
    assert own == want
    assert fallback == want


def test_the_scripts_use_the_prelude_not_the_package():
    """The probe's in-sandbox payload carries the prelude, and its forked reaper uses it, neither importing ctypes
    themselves (a mutation that puts ``import ctypes`` back in either is caught here, the calls above catch a
    broken prelude)."""
    import inspect

    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import payload, reaper
    reaper_source = inspect.getsource(reaper)
    assert "return LL.libc" in reaper_source
    for body in (payload.payload_text().replace(PRELUDE, ""), reaper_source):
        assert "import ctypes" not in body and "ctypes." not in body
    assert PRELUDE in payload.payload_text()
