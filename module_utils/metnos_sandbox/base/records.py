# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``Record`` and ``Shape``: ``typing.NamedTuple`` and ``typing.TypedDict`` for the type checker, without
turning each field's annotation into a ``typing.ForwardRef`` at run time.

The core's modules use ``from __future__ import annotations``, so every annotation is a string; the
class statements ``class X(typing.NamedTuple)`` and ``class X(typing.TypedDict)`` make a ForwardRef of
each field's string and compile it (``ForwardRef.__init__`` calls ``compile``), for every record and
shape of the core when the audit imports it on a host: what that costs a whole audit is in
docs/benchmarks.md ("Standard library first"), which is why this module stays.

- ``Record`` makes the class typing's ``NamedTupleMeta`` makes, by ``collections.namedtuple``: the fields
  in order, their defaults, the class's own methods and docstring, the same refusals (a field without a
  default after one with, a name namedtuple keeps for itself); the annotations stay the strings they are.
- ``Shape`` is a TypedDict for the checker; at run time the class is a plain subclass of dict with its
  ``__total__`` (the core never makes, checks or introspects one: its values are plain dicts).

Used exactly as typing's: ``class Point(Record):`` / ``class Result(Shape, total=False):`` with annotated
fields. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import collections
from typing import TYPE_CHECKING, Any, Dict, Tuple

# A JSON object as the core's results hand it along (one alias for every package: issue 55).
Json = Dict[str, Any]

__all__ = ["Json", "Record", "Shape"]

if TYPE_CHECKING:
    from typing import NamedTuple as Record
    from typing import TypedDict as Shape
else:
    _PROHIBITED = frozenset(("__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                             "_make", "_replace", "_asdict", "_source"))
    _SPECIAL = frozenset(("__module__", "__name__", "__annotations__"))

    class _RecordMeta(type):
        """A class statement whose base is Record makes a namedtuple class, as typing.NamedTupleMeta does."""

        def __new__(cls, typename: str, bases: Tuple[type, ...], ns: Dict[str, Any]) -> type:
            if ns.get("_record_root"):
                return type.__new__(cls, typename, bases, ns)
            if bases != (Record,):
                raise TypeError("a Record inherits from Record alone")
            types = ns.get("__annotations__", {})
            default_names = []
            for field_name in types:
                if field_name in ns:
                    default_names.append(field_name)
                elif default_names:
                    raise TypeError("Non-default namedtuple field %s cannot follow default field%s %s"
                                    % (field_name, "s" if len(default_names) > 1 else "", ", ".join(default_names)))
            made = collections.namedtuple(typename, list(types), defaults=[ns[n] for n in default_names],
                                          module=ns["__module__"])
            made.__annotations__ = made.__new__.__annotations__ = dict(types)
            for key in ns:
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _SPECIAL and key not in made._fields:
                    setattr(made, key, ns[key])
            return made

    class Record(metaclass=_RecordMeta):
        """The base of a record class (see the module's docstring)."""
        _record_root = True

    class _ShapeMeta(type):
        """A class statement whose base is Shape (or a class made so) makes a subclass of dict, annotations unread."""

        def __new__(cls, name: str, bases: Tuple[type, ...], ns: Dict[str, Any], total: bool = True) -> type:
            made = type.__new__(cls, name, (dict,), ns)
            made.__total__ = total
            return made

    class Shape(dict, metaclass=_ShapeMeta):
        """The base of a TypedDict class (see the module's docstring)."""
