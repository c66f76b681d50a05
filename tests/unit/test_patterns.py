# -*- coding: utf-8 -*-
"""base/patterns.py: regular expressions compiled at first use. The same answers as ``re`` for every method the
core calls, one compile per pattern, and none when the audit's core is imported (counted in a fresh
``python3 -I -S`` that imports it as the payload does, through the module path)."""
from __future__ import absolute_import, division, print_function

import os
import re
import subprocess
import sys

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import patterns as RX

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "module_utils")


def test_every_method_answers_as_re_does():
    cases = [(r"(?P<k>[a-z]+)=(\d*)", 0, "a=1 bb=22 C=3"), (r"^\s*x", re.I | re.M, "  X\nx"), (rb"\\([0-7]{3})", 0,
             b"a\\040b\\011")]
    for source, flags, text in cases:
        lazy, real = RX.Pattern(source, flags), re.compile(source, flags)
        for method in ("match", "fullmatch", "search", "findall"):
            got, want = getattr(lazy, method)(text), getattr(real, method)(text)
            assert (got.group(0) if isinstance(got, re.Match) else got) == \
                (want.group(0) if isinstance(want, re.Match) else want), (source, method)
            assert getattr(lazy, method)(text, 1) == getattr(real, method)(text, 1) or method != "findall"
        repl = b"-" if isinstance(text, bytes) else "-"
        assert lazy.sub(repl, text) == real.sub(repl, text) and lazy.sub(repl, text, 1) == real.sub(repl, text, 1)
        assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
        assert lazy.compiled() is lazy.compiled()


def test_importing_the_audit_core_compiles_no_pattern():
    """What made this module: an audited host imported the core and compiled every pattern (45). Now a pattern
    is compiled only when a check uses it; importing the audit compiles none of the core's (re's own cache is
    counted through re._compile, which re.compile and every re.match(...) go through)."""
    script = r'''
import re, sys
sys.path.insert(0, sys.argv[1])
made = []
real = re._compile
def counting(pattern, flags):
    caller = sys._getframe(2).f_globals.get("__name__", "")
    if caller.startswith("metnos_sandbox"):
        made.append((caller, str(pattern)[:40]))
    return real(pattern, flags)
re._compile = counting
from metnos_sandbox.audit import audit
print(made)
'''
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", script, MODULE_UTILS], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
