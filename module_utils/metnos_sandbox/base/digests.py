# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""sha256 from the interpreter's own module where it has one (``_sha2`` from Python 3.12, ``_sha256``
before), hashlib's otherwise (an interpreter built without its own hashes).

Importing hashlib loads OpenSSL's libcrypto: about 3.8 ms of every audited host's CPU (python -X
importtime, Debian 12), for digests of a few small files. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Callable

sha256: Callable[..., Any]
try:
    from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:
        from hashlib import sha256  # type: ignore[assignment,unused-ignore]


def sha256_hex(data: bytes) -> str:
    """The sha256 of ``data``, in hex."""
    return str(sha256(data).hexdigest())
