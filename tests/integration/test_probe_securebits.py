"""Securebits not weaker than the starter's (issue 51), the weakening proven from outside the probe: a starter with
SECBIT_NO_CAP_AMBIENT_RAISE set (not locked) runs the matrix's securebits_cleared wrapper (it clears the bits, then
executes the real bwrap under the strict profile without --unshare-user); the sandboxed command says its own
securebits (prctl PR_GET_SECUREBITS: /proc does not show them): 0, where the real bwrap alone keeps the starter's
0x40 (the control). Root only: clearing a securebit needs CAP_SETPCAP, and bwrap run by another user makes a user
namespace, which starts with none. That the probe fails it with probe_attribute_securebits is the matrix's row."""
import os
import subprocess

import pytest

from helpers import probe_mutations

SAY = "import ctypes; print(ctypes.CDLL(None).prctl(27, 0, 0, 0, 0))"


@pytest.fixture(scope="module")
def bench():
    b = probe_mutations.Bench()
    try:
        yield b
    finally:
        b.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs CAP_SETPCAP")
def test_a_wrapper_clears_the_starters_securebit(bench):
    argv = probe_mutations.strict_profile()["argv"]
    opts = [w for w in argv[1:argv.index("--")] if w != "--unshare-user"]
    said = {}
    undo = probe_mutations.starter_securebit(6)("root")
    try:
        for name, launcher in (("wrapper", bench.fakes["securebits"]), ("bwrap", argv[0])):
            done = subprocess.run([launcher] + opts + ["--", probe_mutations.PYTHON, "-c", SAY], capture_output=True,
                                  timeout=60)
            assert done.returncode == 0, done.stderr
            said[name] = int(done.stdout)
    finally:
        undo()
    assert said == {"wrapper": 0, "bwrap": 0x40}, said
