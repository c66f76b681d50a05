# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""JSON for the small scripts the core runs in other processes (the probe's in-sandbox payload, the
question to the executors' interpreter), without importing the json package.

Those scripts start a fresh interpreter with ``-I -S``, where ``import json`` is the largest cost of the
whole script: it imports re and its compiler, each time (docs/benchmarks.md). This module defines ``loads``
and ``dumps`` on json's own C parts (``_json``: the scanner and the string encoder json.loads and json.dumps use), so
the text read and written is exactly JSON; an interpreter without ``_json`` (not CPython) uses the json
package instead.

``loads`` takes one JSON value and nothing after it, and refuses NaN and the infinities; ``dumps`` writes
None, booleans, numbers, strings, lists, tuples and dicts (keys: strings; a number or boolean key
as its JSON text), ASCII only, like
``json.dumps`` with its defaults (its spacing may differ; the readers are json.loads).
The scripts include this file's text before their own (``sources.script(json_lite, ...)``): it imports
nothing of the core and has no ``from __future__`` import. Pure Python, no Ansible imports.
"""

__all__ = ["dumps", "loads"]
MYPY = False
if MYPY:    # what the type checker reads; at run time nothing more is imported
    from typing import Any

try:
    from _json import encode_basestring_ascii as _json_quote
    from _json import make_scanner as _json_scanner
except ImportError:
    _json_quote = None  # type: ignore[assignment]
if _json_quote is not None:
    class _JsonRules(object):
        """What json's scanner reads of a JSONDecoder (strict, no hooks, NaN and the infinities refused)."""
        strict = True
        object_hook = object_pairs_hook = None
        parse_float, parse_int = float, int

        def __init__(self) -> None:
            self.memo: "dict[str, Any]" = {}

        def parse_constant(self, name: str) -> "Any":
            raise ValueError("not JSON: %s" % name)

    def loads(text: str) -> "Any":
        try:
            value, end = _json_scanner(_JsonRules())(text, 0)  # type: ignore[arg-type]  # the attributes it reads
        except StopIteration as exc:
            raise ValueError("not JSON: no value at %s" % exc.value)  # noqa: B904  # as json's own message
        if text[end:].strip():
            raise ValueError("not JSON: data after the value at %d" % end)
        return value

    def dumps(value: "Any") -> str:
        if value is None:
            return "null"
        if value is True or value is False:
            return "true" if value else "false"
        if isinstance(value, int):
            return int.__repr__(value)
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):  # pylint: disable=comparison-with-itself
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
else:                   # not CPython: the json package
    from json import dumps, loads  # type: ignore[unreachable]
