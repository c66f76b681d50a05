# -*- coding: utf-8 -*-
"""base/json_lite.py: the JSON of the scripts the probe runs in other processes, checked in the real
interpreter those scripts run on (``python3 -I -S``), against the json package."""
from __future__ import absolute_import, division, print_function

import json
import subprocess
import sys

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import json_lite, sources

PRELUDE = sources.script(json_lite)      # the file's text, as the scripts include it

VALUES = [None, True, False, 0, -7, 2 ** 70, 1.5, -1e300, "", "x\u00e9\u2603\n\t\"\\", "\udcff",
          [], [1, [2, [3, {}]]], {"a": {"b": [None, "c"]}, "": 0}, {"mixed": [True, 1, 1.0, "1"]}]


def _run(script, *argv, block_json_c=False):
    """The prelude and ``script`` in a fresh ``python3 -I -S`` (``block_json_c``: as an interpreter without
    _json), stdout as text."""
    head = "import sys\n" + ("sys.modules['_json'] = None\n" if block_json_c else "")
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", head + PRELUDE + script] + list(argv),
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_it_reads_and_writes_what_json_does_in_both_branches():
    """Every value written by json.dumps is read back as json.loads reads it, and every value written by
    the prelude's dumps is read by json.loads as the same value: with _json (CPython) and without it."""
    text = json.dumps(VALUES)
    for block in (False, True):
        out = _run("print(dumps(loads(sys.argv[1])))", text, block_json_c=block)
        assert json.loads(out) == VALUES
        assert out.isascii()


def test_it_imports_neither_json_nor_re():
    """The point of the prelude: in ``-I -S`` neither json nor re is imported (they cost ~10 ms per script)."""
    out = _run("loads(dumps({'a': [1, 'b']}))\nprint(sorted(m for m in ('json', 're') if m in sys.modules))")
    assert out.strip() == "[]"


def test_what_is_not_one_json_value_is_refused():
    """NaN and the infinities (json.loads would take them), data after the value, nothing at all, a broken
    object: ValueError each, never a value; and dumps refuses what JSON cannot hold."""
    script = """
for text in sys.argv[1:]:
    try:
        loads(text)
        print("taken", text)
    except ValueError:
        print("refused")
for value in (float("nan"), float("inf"), object()):
    try:
        dumps(value)
        print("taken", value)
    except (TypeError, ValueError):
        print("refused")
"""
    out = _run(script, '{"a": NaN}', "[Infinity]", "[1] 2", "", "{", '"x')
    assert out.split("\n")[:-1] == ["refused"] * 9, out
