# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a unit's ExecStart= does to the environment before the service's program runs: the command line split
with systemd's quoting, $VAR substitution, an `env` prefix and a shell script's assignments followed
(exec_env_effect), and the command line rewritten so that it no longer sets the given names (neutralised_exec).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import re
import shlex
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .systemd_unit import ENV_NAME, split_words

# --------------------------------------------------------------------------- ExecStart= and the environment

SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox")
_SHELL_KEYWORDS = ("if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
                   "function", "select", "{", "}", "!", "[[", "source", ".", "eval", "set", "read", "declare",
                   "typeset", "local")
_ENV_FLAGS_NOARG = ("-0", "--null", "-v", "--debug", "--list-signal-handling")
_ENV_FLAGS_ARG = ("-C", "--chdir", "--block-signal", "--default-signal", "--ignore-signal")
_VAR_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
MAX_EXEC_WORDS = 4096


def exec_words(value: str) -> Optional[Tuple[str, List[str]]]:
    """ExecStart= value -> (prefix characters, [words]) with systemd's quoting, or None if invalid."""
    prefix = ""
    while value[:1] in ("@", "-", ":", "+", "!") and value:
        prefix += value[0]
        value = value[1:]
    words, ok = split_words(value)
    if not ok or not words or len(words) > MAX_EXEC_WORDS:
        return None
    return prefix, words


def _substitute(word: str, env: Mapping[str, str]) -> Tuple[str, List[str]]:
    """systemd's $VAR/${VAR} substitution in ExecStart= words. Returns (word, unknown names)."""
    unknown = []

    def sub(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in env:
            return env[name]
        unknown.append(name)
        return ""

    if "$$" in word:
        parts = word.split("$$")
        out = []
        for part in parts:
            text, miss = _substitute(part, env)
            out.append(text)
            unknown.extend(miss)
        return "$".join(out), unknown
    return _VAR_REF.sub(sub, word), unknown


def exec_env_effect(value: str, env: Optional[Mapping[str, str]] = None,
                    keys: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """What the start command line does to the environment before the program runs.

    Parses env(1) prefixes (``NAME=VALUE``, ``-u NAME``, ``-i``) and ``sh -c 'NAME=V exec ...'``
    style shells. Returns {"sets": {}, "unsets": [], "clears": bool, "determinable": bool,
    "how": "env"|"shell"|None, "words": [...], "prefix": str, "note": str}. ``keys`` limits the
    "undeterminable" verdict to scripts that mention one of them.
    """
    env = dict(env or {})
    keys = tuple(keys or ())
    out: Dict[str, Any] = {"sets": {}, "unsets": [], "clears": False, "determinable": True, "how": None,
                           "note": None, "words": [], "prefix": ""}
    parsed = exec_words(value)
    if parsed is None:
        out.update(determinable=False, note="the command line cannot be split with systemd's quoting rules")
        return out
    prefix, words = parsed
    out["prefix"], out["words"] = prefix, list(words)
    if "@" in prefix and len(words) > 1:
        words = [words[0]] + words[2:]          # @path argv0 args...: argv0 is only a name
    words = _substituted(words, env, keys, out)
    i = _env_prefix(words, out)
    if i is None:
        return out
    if i < len(words) and os.path.basename(words[i]) in SHELLS:
        shell = words[i:]
        if "-c" in shell[1:3] or (len(shell) > 1 and shell[1].startswith("-") and "c" in shell[1]):
            idx = next(n for n, w in enumerate(shell) if w == "-c" or (w.startswith("-") and "c" in w and n > 0))
            script = shell[idx + 1] if idx + 1 < len(shell) else ""
            out["how"] = "shell" if out["how"] is None else out["how"] + "+shell"
            _shell_effect(script, dict(env, **out["sets"]), out, keys)
    return out


def _substituted(words: Sequence[str], env: Mapping[str, str], keys: Sequence[str],
                 out: Dict[str, Any]) -> List[str]:
    """``words`` after $VAR substitution; an unknown variable where it matters makes ``out`` undeterminable."""
    subst = []
    for word in words:
        text, unknown = _substitute(word, env)
        if unknown and any(k in word for k in keys) or unknown and "=" in word.split("$")[0]:
            out.update(determinable=False, note="$%s is not set when the command line is expanded" % unknown[0])
        subst.append(text)
    return subst


def _env_prefix(words: List[str], out: Dict[str, Any]) -> Optional[int]:
    """env(1) prefixes of the start command line into ``out``: the index of the first word after them,
    or None when what they do cannot be told (``out`` says why)."""
    i = 0
    while i < len(words) and os.path.basename(words[i]) == "env":
        out["how"] = "env"
        i += 1
        while i < len(words):
            word = words[i]
            if word == "--":
                i += 1
                break
            if word in ("-i", "--ignore-environment", "-"):
                out["clears"] = True
                out["sets"] = {}
            elif word in ("-u", "--unset"):
                if i + 1 >= len(words):
                    break
                i += 1
                out["unsets"].append(words[i])
                out["sets"].pop(words[i], None)
            elif word.startswith("--unset="):
                out["unsets"].append(word.split("=", 1)[1])
            elif word.startswith("-u") and len(word) > 2:
                out["unsets"].append(word[2:])
            elif word in _ENV_FLAGS_NOARG:
                pass
            elif word in _ENV_FLAGS_ARG:
                i += 1
            elif any(word.startswith(f + "=") for f in _ENV_FLAGS_ARG) or (word.startswith("-C") and len(word) > 2):
                pass
            elif word.startswith("-S") or word.startswith("--split-string"):
                out.update(determinable=False, note="env -S splits a string itself")
                return None
            elif word.startswith("-"):
                out.update(determinable=False, note="env option %r is not understood" % word)
                return None
            elif "=" in word and ENV_NAME.match(word.split("=", 1)[0]):
                name, _eq, val = word.partition("=")
                out["sets"][name] = val
            else:
                break
            i += 1
    return i


def _shell_effect(script: str, env: Mapping[str, str], out: Dict[str, Any], keys: Sequence[str]) -> None:
    """The environment effect of a simple ``sh -c`` script: assignments before ``exec``/the command,
    ``export``, ``unset``. Anything else that mentions one of ``keys`` is undeterminable."""
    relevant = any(k in script for k in keys) or any(t in script for t in ("set -a", "source ", "eval ", ". /"))
    statements = _shell_statements(script, relevant, out)
    if statements is None:
        return
    if relevant and any(stmt and stmt[0] in _SHELL_KEYWORDS for stmt in statements):
        out.update(determinable=False, note="the shell script uses control structures")
        return
    for stmt in statements:
        if stmt:
            _shell_statement(stmt, env, out, keys, relevant)


def _shell_statements(script: str, relevant: bool, out: Dict[str, Any]) -> Optional[List[List[str]]]:
    """A script's simple commands (lists of words), or None when it is not a plain sequence of them
    (``out`` says why when the script is ``relevant``)."""
    try:
        lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        if relevant:
            out.update(determinable=False, note="the shell script cannot be parsed")
        return None
    statements: List[List[str]] = []
    current: List[str] = []
    for tok in tokens:
        if tok in (";", "&&", "\n"):
            statements.append(current)
            current = []
        elif tok in ("|", "||", "&", "|&", ";;") or tok.startswith(("(", "{")) or "$(" in tok or "`" in tok:
            if relevant:
                out.update(determinable=False, note="the shell script is not a plain sequence of commands")
            return None
        else:
            current.append(tok)
    statements.append(current)
    return statements


def _shell_statement(stmt: List[str], env: Mapping[str, str], out: Dict[str, Any], keys: Sequence[str],
                     relevant: bool) -> None:
    """One simple command's effect on the environment, into ``out``."""
    head = stmt[0]
    if head == "export":
        for word in stmt[1:]:
            name, eq, val = word.partition("=")
            if eq and ENV_NAME.match(name):
                out["sets"][name] = val
        return
    if head == "unset":
        for name in stmt[1:]:
            if ENV_NAME.match(name):
                out["unsets"].append(name)
                out["sets"].pop(name, None)
        return
    assigns = []
    rest = list(stmt)
    while rest and "=" in rest[0] and ENV_NAME.match(rest[0].split("=", 1)[0]):
        assigns.append(rest.pop(0))
    if rest and rest[0] == "exec":
        rest.pop(0)
        while rest and "=" in rest[0] and ENV_NAME.match(rest[0].split("=", 1)[0]):
            assigns.append(rest.pop(0))
    for word in assigns:
        name, _eq, val = word.partition("=")
        if "$" in val and name in keys:
            out.update(determinable=False, note="%s is assigned from a shell expansion" % name)
            continue
        if rest or name in env or name in out["sets"]:
            # prefix assignments reach the command; a bare one changes an imported (exported) variable
            out["sets"][name] = val
    if rest and rest[0] in ("env",) and relevant:
        out.update(determinable=False, note="the shell script runs env(1) itself")


def apply_exec_effect(env: Mapping[str, str], effect: Mapping[str, Any]) -> Dict[str, str]:
    """The environment the program gets: ``env`` changed as the start command line does."""
    result = {} if effect["clears"] else dict(env)
    for name in effect["unsets"]:
        result.pop(name, None)
    result.update(effect["sets"])
    return result


def quote_exec_word(word: str) -> str:
    """A word for an ExecStart= line: quoted when needed, specifiers and $ references kept as written."""
    if word and not re.search(r"[\s\"'\\;]", word) and all(32 <= ord(c) < 127 or ord(c) > 159 for c in word):
        return word
    out = []
    for ch in word:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    return '"%s"' % "".join(out)


def neutralised_exec(value: str, keys: Sequence[str]) -> Tuple[Optional[str], Optional[str]]:
    """An ExecStart= value with env(1)'s assignments and unsets of ``keys`` removed.

    Returns (value, None) -- the same value when there is nothing to remove -- or (None, reason)
    when a drop-in cannot neutralise it (shell scripts, ``env -i``, ``env -S``).
    """
    parsed = exec_words(value)
    if parsed is None:
        return None, "the command line cannot be split with systemd's quoting rules"
    prefix, words = parsed
    head = 2 if "@" in prefix else 1          # '@path argv0 args': argv0 is only a name
    if len(words) < head:
        return None, "the command line has no argv[0]"
    rest = list(words[head:])
    kept, i, changed, refusal = _strip_env_words(rest, keys, os.path.basename(words[0]) == "env")
    if refusal is not None:
        return None, refusal
    out = list(words[:head]) + kept
    tail = rest[i:]
    shell = os.path.basename(tail[0]) in SHELLS if tail else os.path.basename(words[0]) in SHELLS
    if (shell or os.path.basename(words[0]) in SHELLS) and any(k in " ".join(words) for k in keys):
        return None, "the command runs a shell script that sets %s; edit ExecStart= by hand" % "/".join(keys)
    if not changed:
        return value, None
    return prefix + " ".join(quote_exec_word(w) for w in out + tail), None


def _strip_env_words(rest: List[str], keys: Sequence[str],
                     in_env: bool) -> Tuple[List[str], int, bool, Optional[str]]:
    """The env(1) words of ``rest`` (after argv[0]) without the assignments and unsets of ``keys``:
    (words kept, index of the first word after env's, whether any was removed, refusal or None)."""
    out: List[str] = []
    changed = False
    i = 0
    while in_env and i < len(rest):
        word = rest[i]
        if word == "--":
            out.append(word)
            i += 1
            in_env = i < len(rest) and os.path.basename(rest[i]) == "env"
            if in_env:
                out.append(rest[i])
                i += 1
            continue
        if word in ("-i", "--ignore-environment", "-") or word.startswith(("-S", "--split-string")):
            return out, i, changed, "env %s replaces or re-splits the whole environment; edit ExecStart= by hand" \
                % word
        if word in ("-u", "--unset") and i + 1 < len(rest):
            if rest[i + 1] in keys:
                changed = True
            else:
                out += [word, rest[i + 1]]
            i += 2
            continue
        if word.startswith("--unset=") or (word.startswith("-u") and not word.startswith("--") and len(word) > 2):
            target = word.split("=", 1)[1] if word.startswith("--unset=") else word[2:]
            if target in keys:
                changed = True
            else:
                out.append(word)
            i += 1
            continue
        if word.startswith("-"):
            out.append(word)
            if word in _ENV_FLAGS_ARG and i + 1 < len(rest):
                out.append(rest[i + 1])
                i += 1
            i += 1
            continue
        if "=" in word and ENV_NAME.match(word.split("=", 1)[0]):
            if word.split("=", 1)[0] in keys:
                changed = True
            else:
                out.append(word)
            i += 1
            continue
        if os.path.basename(word) == "env":
            out.append(word)
            i += 1
            continue
        break
    return out, i, changed, None
