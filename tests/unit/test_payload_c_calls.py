# -*- coding: utf-8 -*-
"""The probe's in-sandbox payload's C calls (prctl(2), statfs(2) through ctypes since base/libc_lite.py went, issue
44), checked in real interpreters (``python3 -I -S -c``, as the probe runs it: the one the tests run on and every
CPython 3.6+ this machine has), outside any sandbox: the kernel's answers are known here. Nothing is mocked."""
from __future__ import absolute_import, division, print_function

import ctypes
import glob
import json
import subprocess
import sys

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import payload

PROC_SUPER_MAGIC = 0x9FA0
TMPFS_MAGIC = 0x01021994


def _interpreters():
    found = [sys.executable]
    for path in sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3")) + ["/usr/bin/python3"]:
        version = subprocess.run([path, "-c", "import sys; print(sys.version_info >= (3, 6))"],
                                 capture_output=True, text=True, check=False).stdout.strip()
        if version == "True" and path not in found:
            found.append(path)
    return found


@pytest.mark.parametrize("python", _interpreters())
def test_the_payload_reads_the_kernels_answers(python, tmp_path):
    """statfs(2) gives /proc's filesystem type (and a tmpfs's), a path that does not exist gives ENOENT through
    errno, PR_GET_PDEATHSIG reads the parent-death signal the test set before exec (SIGUSR1: kept across execve),
PR_SET_NAME names the process as the probe looks for it (mp-<token>)."""
    def set_pdeathsig():
        ctypes.CDLL(None, use_errno=True).prctl(1, 10, 0, 0, 0)     # PR_SET_PDEATHSIG, SIGUSR1

    spec = {"token": "ccalls", "proc": ["/proc"], "ns": ["net"], "ro": ["/nonexistent/metnos-c-calls"],
            "rw": [], "absent": [], "tmpfs": ["/dev/shm"], "dev": []}
    proc = subprocess.Popen([python, "-I", "-S", "-c", payload.payload_text(), json.dumps(spec)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=set_pdeathsig)
    try:
        line = proc.stdout.readline()      # the payload now waits on stdin: its name is readable from outside
        with open("/proc/%d/comm" % proc.pid) as handle:
            comm = handle.read().strip()
    finally:
        _out, err = proc.communicate("", timeout=60)
    assert proc.returncode == 0, err
    assert comm == "mp-ccalls"
    obs = json.loads(line)
    assert obs["metnos_probe"] == "ccalls"
    assert obs["proc"]["/proc"]["type"] == PROC_SUPER_MAGIC
    assert obs["ro"]["/nonexistent/metnos-c-calls"]["type"] == "error:ENOENT"
    assert obs["tmpfs"]["/dev/shm"]["type"] == TMPFS_MAGIC
    assert obs["pdeathsig"] == 10


def test_the_payload_carries_no_libc_prelude():
    """The payload is json_lite.py's text and payload_script.py's, nothing else (the C calls are ctypes')."""
    text = payload.payload_text()
    assert "import ctypes\n" in text and "_ctypes.dlopen" not in text
