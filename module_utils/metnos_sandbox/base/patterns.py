# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Regular expressions compiled when first used, not when their module is imported.

The core's modules define their patterns at module level. Compiled there, an audited host paid for all of
them at every audit (45 patterns, ~2.7 ms of CPU on Debian 12's Python 3.11, ``re.compile`` timed in the
payload), although 37 of them serve paths an audit rarely takes (manifest fields, unit files, package
managers other than the host's, systemd's error texts). ``Pattern(source, flags)`` holds the source and
compiles it (``re.compile``, once) at the first ``match``, ``fullmatch``, ``search``, ``sub`` or
``findall``: the same results, at the same cost for a pattern that is used, none for one that is not.
Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import re
import sys
import typing as t

AnyStr = t.TypeVar("AnyStr", str, bytes)


class Pattern(t.Generic[AnyStr]):
    """``re.compile(source, flags)``, compiled at first use."""

    __slots__ = ("source", "flags", "_compiled")
    source: AnyStr
    flags: int
    _compiled: t.Optional[re.Pattern[AnyStr]]

    def __init__(self, source: AnyStr, flags: int = 0) -> None:
        self.source = source
        self.flags = flags
        self._compiled = None

    def compiled(self) -> re.Pattern[AnyStr]:
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled

    def match(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> t.Optional[re.Match[AnyStr]]:
        return self.compiled().match(string, pos, endpos)

    def fullmatch(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> t.Optional[re.Match[AnyStr]]:
        return self.compiled().fullmatch(string, pos, endpos)

    def search(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> t.Optional[re.Match[AnyStr]]:
        return self.compiled().search(string, pos, endpos)

    def sub(self, repl: t.Union[AnyStr, t.Callable[[re.Match[AnyStr]], AnyStr]], string: AnyStr,
            count: int = 0) -> AnyStr:
        return self.compiled().sub(repl, string, count)

    def findall(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> t.List[t.Any]:
        return self.compiled().findall(string, pos, endpos)

    def finditer(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> t.Iterator[re.Match[AnyStr]]:
        return self.compiled().finditer(string, pos, endpos)
