# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""C calls for the code the probe runs in other processes (its forked reaper and the in-sandbox payload),
without importing the ctypes package.

They call prctl(2) and statfs(2); the payload starts a fresh interpreter with ``-I -S``, where
``import ctypes`` defines some sixty types and imports struct each time (what that costs a whole
audit: docs/benchmarks.md, "Standard library first"). ``PRELUDE`` defines, on ctypes'
own C module (``_ctypes``, which the package is built on), only what the scripts use:

- ``libc``: the functions of the process's C library by name, each returning a C ``int`` and keeping
  ``errno`` for ``get_errno()`` - what ``ctypes.CDLL(None, use_errno=True)`` gives, arguments converted
  the same way (a Python int as a C int, bytes as ``char *``);
- ``c_int``, ``c_uint``, ``c_long``: ctypes' simple types of the same codes (so ``from_buffer`` and
  ``value`` behave as ctypes' own);
- ``byref`` and ``get_errno``: ctypes' own functions (the package re-exports them from ``_ctypes``);
- ``string_buffer(size)``: ``size`` zero bytes, as ``ctypes.create_string_buffer(size)``.

An interpreter whose ``_ctypes`` lacks any of these (not CPython) uses the ctypes package instead, with
the same names. Checked on CPython 3.6 to 3.13 (tests/unit/test_libc_lite.py).
Pure Python, no Ansible imports.
"""

from __future__ import absolute_import, annotations, division, print_function

PRELUDE = r'''
try:
    import _ctypes
    class c_int(_ctypes._SimpleCData):
        _type_ = "i"
    class c_uint(_ctypes._SimpleCData):
        _type_ = "I"
    class c_long(_ctypes._SimpleCData):
        _type_ = "l"
    class _c_char(_ctypes._SimpleCData):
        _type_ = "c"
    class _LibcFunction(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
        _restype_ = c_int
    class _Libc(object):
        _handle = _ctypes.dlopen(None, 0)
        def __getattr__(self, name):
            if name.startswith("_"):
                raise AttributeError(name)
            function = _LibcFunction((name, self))
            setattr(self, name, function)
            return function
    libc = _Libc()
    byref, get_errno = _ctypes.byref, _ctypes.get_errno
except (ImportError, AttributeError, TypeError, OSError):
    from ctypes import CDLL, byref, c_char as _c_char, c_int, c_long, c_uint, get_errno
    libc = CDLL(None, use_errno=True)
def string_buffer(size):
    return (_c_char * size)()
'''
