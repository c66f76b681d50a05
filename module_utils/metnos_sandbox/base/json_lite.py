# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""JSON for the small scripts the core runs in other processes (the probe's in-sandbox payload, the
question to the executors' interpreter), without importing the json package.

Those scripts start a fresh interpreter with ``-I -S``, where ``import json`` is the largest cost of the
whole script: it imports re and its compiler (what that costs a whole audit: docs/benchmarks.md,
"Standard library first"). ``PRELUDE`` defines ``loads`` and ``dumps``
on json's own C parts (``_json``: the scanner and the string encoder json.loads and json.dumps use), so
the text read and written is exactly JSON; an interpreter without ``_json`` (not CPython) uses the json
package instead.

``loads`` takes one JSON value and nothing after it, and refuses NaN and the infinities; ``dumps`` writes
None, booleans, numbers, strings, lists, tuples and dicts (keys: strings; a number or boolean key
as its JSON text), ASCII only, like
``json.dumps`` with its defaults (its spacing may differ; the readers are json.loads).
Pure Python, no Ansible imports.
"""

from __future__ import absolute_import, annotations, division, print_function

PRELUDE = r'''
try:
    from _json import encode_basestring_ascii as _json_quote, make_scanner as _json_scanner
except ImportError:
    _json_quote = None
if _json_quote is None:
    from json import dumps, loads
else:
    class _JsonRules(object):
        strict = True
        object_hook = object_pairs_hook = None
        parse_float, parse_int = float, int
        def __init__(self):
            self.memo = {}
        def parse_constant(self, name):
            raise ValueError("not JSON: %s" % name)
    def loads(text):
        try:
            value, end = _json_scanner(_JsonRules())(text, 0)
        except StopIteration as exc:
            raise ValueError("not JSON: no value at %s" % exc.value)
        if text[end:].strip():
            raise ValueError("not JSON: data after the value at %d" % end)
        return value
    def dumps(value):
        if value is None:
            return "null"
        if value is True or value is False:
            return "true" if value else "false"
        if isinstance(value, int):
            return int.__repr__(value)
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError("not JSON: %r" % value)
            return float.__repr__(value)
        if isinstance(value, str):
            return _json_quote(value)
        if isinstance(value, dict):
            return "{" + ", ".join(_json_quote(k if isinstance(k, str) else dumps(k).strip('"')) + ": " + dumps(v)
                                   for k, v in value.items()) + "}"
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(dumps(v) for v in value) + "]"
        raise TypeError("not JSON: %s" % type(value).__name__)
'''
