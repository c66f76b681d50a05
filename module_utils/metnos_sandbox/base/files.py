# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one atomic file writer: a temporary file in the target's own folder, then one rename.

Used for rendered profiles (store.py), the service's drop-in and PATH file (metnos_service_env), the
audit's spooled host results and its reports (report.py). A reader never sees a half-written file.
Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
from typing import Callable, Iterable, Optional, Tuple, Union

TEMP_TRIES = 100


def temporary_beside(path: str) -> Tuple[int, str]:
    """A new file ``.<name>.<12 hex digits>`` in ``path``'s folder, created exclusively (never a link
    followed), mode 0600: (descriptor, its path). What tempfile.mkstemp does, without importing tempfile
    (shutil, random, bz2, lzma: on every audited host; its cost: docs/benchmarks.md)."""
    folder, name = os.path.dirname(path) or ".", os.path.basename(path)
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    for _try in range(TEMP_TRIES):
        tmp = os.path.join(folder, ".%s.%s" % (name, os.urandom(6).hex()))
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError("no free temporary name beside %s after %d tries" % (path, TEMP_TRIES))


def replace(path: str, content: Union[str, Iterable[str]], mode: int = 0o644,
            move: Optional[Callable[[str, str], object]] = None) -> None:
    """Write ``content`` (text, or an iterable of text chunks streamed as they come) to ``path`` atomically.

    ``move(tmp, path)`` puts the finished temporary file in place (a module passes
    AnsibleModule.atomic_move, which keeps the SELinux context); the default is os.replace. The temporary
    file is removed whatever happens."""
    fd, tmp = temporary_beside(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for chunk in ([content] if isinstance(content, str) else content):
                handle.write(chunk)
        os.chmod(tmp, mode)
        (move or os.replace)(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
