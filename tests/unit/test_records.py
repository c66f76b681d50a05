# -*- coding: utf-8 -*-
"""base/records.py: ``Record`` makes the class ``typing.NamedTuple`` makes (fields, defaults, methods, docstring,
refusals, tuple behaviour), without a ForwardRef per field; the core's host side uses it everywhere, so importing
the audit as a host does compiles no annotation (a mutation putting ``typing.NamedTuple`` back in any core module
fails the last test)."""
from __future__ import absolute_import, annotations, division, print_function

import glob
import os
import subprocess
import sys
import typing

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.records import Record

CORE = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", "module_utils"))


class Point(Record):
    """A point."""
    x: int
    y: typing.List[str]
    label: str = "origin"
    extra: typing.Optional[int] = None

    def total(self) -> int:
        return self.x + len(self.y)


class TypedPoint(typing.NamedTuple):
    """A point."""
    x: int
    y: typing.List[str]
    label: str = "origin"
    extra: typing.Optional[int] = None

    def total(self) -> int:
        return self.x + len(self.y)


def test_a_record_is_the_class_named_tuple_makes():
    for cls in (Point, TypedPoint):
        p = cls(1, ["a"])
        assert p == (1, ["a"], "origin", None) and isinstance(p, tuple) and p.total() == 2
        assert cls._fields == ("x", "y", "label", "extra")
        assert cls._field_defaults == {"label": "origin", "extra": None}
        assert p._replace(label="l").label == "l" and p._asdict()["y"] == ["a"]
        assert cls.__doc__ == "A point." and cls.__module__ == __name__ and cls.__bases__ == (tuple,)
        assert cls._make([2, [], "b", 3]) == cls(2, [], "b", 3) and tuple.__new__(cls, (5, [], "c", 0)).x == 5
    assert repr(Point(1, [])).replace("Point", "") == repr(TypedPoint(1, [])).replace("TypedPoint", "")
    assert Point.__annotations__ == {"x": "int", "y": "typing.List[str]", "label": "str",
                                     "extra": "typing.Optional[int]"}
    assert all(isinstance(v, typing.ForwardRef) for v in TypedPoint.__annotations__.values())


def test_a_record_refuses_what_named_tuple_refuses():
    with pytest.raises(TypeError, match="Non-default namedtuple field y cannot follow default field x"):
        class _Late(Record):
            x: int = 0
            y: int
    with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _replace"):
        class _Own(Record):
            x: int

            def _replace(self):
                return self
    with pytest.raises(ValueError):
        class _Under(Record):
            _x: int
    with pytest.raises(TypeError, match="inherits from Record alone"):
        class _Mixed(Record, dict):
            x: int


def _hosts_pythons():
    """This interpreter and every CPython 3.8+ here (hosts run 3.8+)."""
    found = [sys.executable]
    for path in sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3")) + ["/usr/bin/python3"]:
        ok = subprocess.run([path, "-c", "import sys; print(sys.version_info >= (3, 8))"], capture_output=True,
                            text=True, check=False).stdout.strip()
        if ok == "True" and path not in found:
            found.append(path)
    return found


@pytest.mark.parametrize("python", _hosts_pythons())
def test_importing_the_audit_as_a_host_makes_no_forward_reference(python):
    """Every ForwardRef made while the audit's host side is imported (-I -S, as the bootstrap runs it) is counted:
    none (typing.NamedTuple and TypedDict made 342), on every interpreter a host may run."""
    code = ("import sys, typing; sys.path.insert(0, sys.argv[1]); made = []\n"
            "init = typing.ForwardRef.__init__\n"
            "def counted(self, *a, **k):\n    made.append(a[0]); init(self, *a, **k)\n"
            "typing.ForwardRef.__init__ = counted\n"
            "import metnos_sandbox.audit.host_audit\n"
            "print(len(made), sorted(set(made))[:5])")
    proc = subprocess.run([python, "-I", "-S", "-c", code, CORE], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == "0", proc.stdout
