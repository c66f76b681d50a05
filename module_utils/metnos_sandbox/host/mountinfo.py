# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one reader of mountinfo lines (``/proc/PID/mountinfo``, proc(5)): every mount table of the core is parsed
here, the probe's (host/procfs.py: a process seen from outside) and the renderer's (profile/mounts.py: bind-mount
aliases and pseudo-filesystems).

A line is ``ID PARENT MAJOR:MINOR ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS``, its fields
separated by one space; the kernel writes space, tab, newline and backslash in a path as ``\\ooo`` (octal), so a
field never holds a space. A line without the ``-`` separator after the optional fields, with fewer than six
fields before it or three after it, is not a mount (a cut line at the end of a bounded read). Bytes in, bytes
out: each reader decodes the fields it keeps as it must (the renderer as the file system's names, the probe as
text).
Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import re
from typing import Iterator, List, Optional

from ..base.records import Record

_ESCAPE = re.compile(rb"\\([0-3][0-7]{2})")      # one byte: \000 to \377


class MountLine(Record):
    """One mount of a mountinfo table, each field as the kernel wrote it, unescaped (root, point, fstype, source)."""
    id: bytes
    parent: bytes
    dev: bytes                 # major:minor, the filesystem
    root: bytes                # the folder of that filesystem shown
    point: bytes               # where
    opts: bytes                # the mount's own options, comma-separated
    fstype: bytes
    source: bytes
    superopts: bytes           # the filesystem's options, comma-separated


def unescape(field: bytes) -> bytes:
    """mountinfo's ``\\ooo`` octal escapes (space, tab, newline, backslash) back to their bytes."""
    if b"\\" not in field:
        return field
    return _ESCAPE.sub(_octal, field)


def _octal(match: re.Match[bytes]) -> bytes:
    return bytes([int(match.group(1), 8)])


def parse_line(line: bytes) -> Optional[MountLine]:
    """One line of mountinfo, or None when it is not a whole mount line."""
    fields = line.rstrip(b"\n").split(b" ")
    try:
        sep = fields.index(b"-", 6)
    except ValueError:
        return None
    tail = fields[sep + 1:]
    if len(tail) < 3:
        return None                  # cut before the filesystem's options
    return MountLine(fields[0], fields[1], fields[2], unescape(fields[3]), unescape(fields[4]), fields[5],
                     unescape(tail[0]), unescape(tail[1]), tail[2])


def parse(data: bytes) -> Iterator[MountLine]:
    """Every mount line of a mountinfo table, in its order."""
    for line in data.split(b"\n"):
        found = parse_line(line)
        if found is not None:
            yield found


def options(field: bytes) -> List[str]:
    """A comma-separated options field as text."""
    return field.decode("utf-8", "replace").split(",")
