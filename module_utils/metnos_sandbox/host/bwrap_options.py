# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bwrap's options and how many words follow each (bwrap 0.4 ... 0.12): the one table every reader of a bwrap
argv uses (the profile's final check, the probe's argv deviations, the audit's drift), and ``options()``, the one
walk of an argv by it. An option not in it is one unknown word.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Dict, Iterator, List, Sequence, Tuple

ARITY: Dict[str, int] = dict(
    [(o, 0) for o in ("--unshare-all", "--share-net", "--unshare-user", "--unshare-user-try", "--unshare-ipc",
                      "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup", "--unshare-cgroup-try",
                      "--disable-userns", "--assert-userns-disabled", "--clearenv", "--new-session",
                      "--die-with-parent", "--as-pid-1", "--level-prefix")] +
    [(o, 1) for o in ("--args", "--argv0", "--userns", "--userns2", "--pidns", "--uid", "--gid", "--hostname",
                      "--chdir", "--unsetenv", "--lock-file", "--sync-fd", "--remount-ro", "--exec-label",
                      "--file-label", "--proc", "--dev", "--tmpfs", "--mqueue", "--dir", "--seccomp",
                      "--add-seccomp-fd", "--block-fd", "--userns-block-fd", "--info-fd", "--json-status-fd",
                      "--cap-add", "--cap-drop", "--perms", "--size", "--overlay-src", "--tmp-overlay",
                      "--ro-overlay")] +
    [(o, 2) for o in ("--setenv", "--bind", "--bind-try", "--dev-bind", "--dev-bind-try", "--ro-bind",
                      "--ro-bind-try", "--bind-fd", "--ro-bind-fd", "--file", "--bind-data", "--ro-bind-data",
                      "--symlink", "--chmod")] + [("--overlay", 3)])


def options(words: Sequence[str]) -> Iterator[Tuple[int, str, List[str]]]:
    """(index, option, the words that follow it) of each option of bwrap ``words``, in order, by ARITY: an option
    bwrap does not know is one word (never guessed at); '--' and the command's words come as options of no words
    (where a reading ends is the caller's). The last option's words are fewer than its arity in a cut argv."""
    i = 0
    while i < len(words):
        arity = ARITY.get(words[i], 0)
        yield i, words[i], list(words[i + 1:i + 1 + arity])
        i += 1 + arity
