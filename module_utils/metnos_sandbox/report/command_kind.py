# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a fix command does, told from its text: "check" when it only looks, "fix" when it changes something
(or cannot be told). One answer for every place a command is shown: the site summary, the Markdown, the HTML."""

from __future__ import absolute_import, annotations, division, print_function

import functools
import shlex
from typing import List

# Commands that only look (by their start; each part of a pipe or a && chain must be one): labelled "check:".
# Anything else - an edit, a restart, an install, an unknown program - is a change, labelled "fix:" (unknown is
# never called harmless). The same starts as tests/unit/test_remediation_commands.py runs for real.
LOOKS = ("bwrap --", "cat ", "command -v ", "dpkg -S ", "dpkg --verify ", "findmnt", "getcap ", "getent ",
         "grep ", "journalctl ", "ls ", "ps ", "python3 -m json.tool ", "readlink ", "realpath ", "stat ",
         "sysctl -a", "systemctl cat ", "systemctl list-unit-files ", "systemctl --user list-unit-files ",
         "systemctl list-units ", "systemctl show", "systemctl status ", "systemd-analyze exit-status ",
         "systemd-analyze verify ", "systemd-detect-virt", "uname ", "ausearch ", "ss ", "id ", "head ", "tail ",
         "sha256sum ", "ansible-doc ", "ansible-inventory ")
# ansible commands that only look: a module that reads (the first word after -m).
LOOKING_MODULES = ("ansible.builtin.ping", "ansible.builtin.setup", "ping", "setup")
CHAIN = ("|", "||", "&&", ";")


def label(commands: List[str]) -> str:
    """The heading of a block of commands: "Check" when every one only looks, "Fix" when any changes something."""
    return "Check" if commands and all(kind(c) == "check" for c in commands) else "Fix"


@functools.lru_cache(maxsize=1024)
def kind(command: str) -> str:
    """"check" when every part of ``command`` (split as the shell does: quotes kept whole) only looks, "fix"
    else: a redirection, a background job or a command that does not parse is a change. Told once per text
    (issue 52's cost: a fleet's hosts share their fix commands, and shlex cost the HTML ~30% of its CPU)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return "fix"
    parts: List[List[str]] = [[]]
    for token in tokens:
        if token in CHAIN:
            parts.append([])
        elif token and all(ch in lexer.punctuation_chars for ch in token):
            return "fix"            # > >> < & ... : not a look
        else:
            parts[-1].append(token)
    if not tokens or any(not part for part in parts):
        return "fix"
    return "check" if all(_looks(" ".join(part)) for part in parts) else "fix"


def _looks(part: str) -> bool:
    if part.startswith(LOOKS) or part in ("findmnt", "systemd-detect-virt", "ss", "id", "uname"):
        return True
    words = part.split()
    if words[0] == "ansible" and "-m" in words[:-1]:
        return words[words.index("-m") + 1] in LOOKING_MODULES and "-b" not in words and "--become" not in words
    return False
