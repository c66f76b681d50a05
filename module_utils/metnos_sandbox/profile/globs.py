# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scope grammar: a scope's text checked, its glob root, brace expansion and component matching of
'within' patterns, each within its budget (MAX_GLOB_ALTERNATIVES, MAX_GLOB_STEPS).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import functools
from typing import List, Optional, Sequence, Tuple

from ..base import diagnostics
from ..base.records import Record
from . import model


# ------------------------------------------------------------------ grammar
def check_scope_text(field: str, scope: str, errors: List[diagnostics.Diagnostic]) -> bool:
    """Lexical checks of a fixed scope (absolute, normalised, no control characters)."""
    if model.has_control(scope):
        errors.append(model.err("scope_nul", field, scope, "NUL, control or format characters in a path (R-CAP-FS)"))
        return False
    if not scope.startswith("/"):
        errors.append(model.err("scope_relative", field, scope,
                                "a fixed scope must be an absolute path or glob, or arg:<name>; no '~' or "
                                "variable expansion (R-CAP-FS)"))
        return False
    parts = scope.split("/")[1:]
    if scope != "/" and (any(p in (".", "..", "") for p in parts)):
        errors.append(model.err("scope_not_normalized", field, scope,
                                "'.', '..', '//' and a trailing '/' are not allowed in a scope; write the normalised "
                                "path (R-ARG-1)"))
        return False
    return True


@functools.lru_cache(maxsize=4096)
def glob_root(scope: str) -> str:
    """The longest glob-free leading path of a scope: '/srv/a*/b' -> '/srv' (R-CAP-FS). Text only, so
    kept across renders (the renderer and the final check ask it of the same scopes)."""
    parts = scope.split("/")
    keep = []
    for part in parts[1:]:
        if any(ch in part for ch in model.GLOB_CHARS):
            break
        keep.append(part)
    root = "/" + "/".join(keep)
    return root.rstrip("/") or "/"


MAX_GLOB_ALTERNATIVES = 64         # brace expansion of one 'within' scope
MAX_GLOB_STEPS = 1 << 16           # component and character steps matching 'within' patterns, per render


def _expand_braces(text: str, budget: List[int]) -> Optional[List[str]]:
    """Brace alternatives of ``text`` ('{a,b}c' -> ['ac', 'bc']), nested braces included; None
    when there are more than the budget allows. An unbalanced '{' stays literal."""
    start = text.find("{")
    while start != -1:
        depth, parts, last = 0, [], start + 1
        for i in range(start, len(text)):
            ch = text[i]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    parts.append(text[last:i])
                    break
            elif ch == "," and depth == 1:
                parts.append(text[last:i])
                last = i + 1
        else:
            return [text]                  # unbalanced: literal
        if len(parts) < 2:
            start = text.find("{", start + 1)
            continue
        out = []
        for part in parts:
            alternatives = _expand_braces(text[:start] + part + text[i + 1:], budget)
            if alternatives is None:
                return None
            for alt in alternatives:
                out.append(alt)
                budget[0] -= 1
                if budget[0] < 0:
                    return None
        return out
    return [text]


class _Token(Record):
    """One token of a pattern component: '*', '?', '=' (a literal ``char``) or '[' (a set of
    ``ranges``, ``negate``d)."""
    kind: str
    char: str = ""
    negate: bool = False
    ranges: Tuple[Tuple[str, str], ...] = ()


_STAR, _ANY = _Token("*"), _Token("?")       # the only '*' and '?' tokens: compared by identity


def _tokens(pat: str) -> List[_Token]:
    """One pattern component as tokens: '*', '?', a set (chars, ranges, negated) or a literal char
    (fnmatch's syntax: '[!...]' negates, ']' first in a set is literal, an unclosed '[' is literal)."""
    out: List[_Token] = []
    i = 0
    while i < len(pat):
        ch = pat[i]
        if ch == "*":
            if not out or out[-1] is not _STAR:
                out.append(_STAR)
        elif ch == "?":
            out.append(_ANY)
        elif ch == "[":
            end, token = _set_token(pat, i)
            out.append(token)
            i = end
        else:
            out.append(_Token("=", ch))
        i += 1
    return out


def _set_token(pat: str, i: int) -> Tuple[int, _Token]:
    """The set that opens at pat[i] == '[': (index of its ']', token); an unclosed '[' is literal."""
    j = i + 1
    negate = j < len(pat) and pat[j] == "!"
    j += negate
    if j < len(pat) and pat[j] == "]":
        j += 1
    end = pat.find("]", j)
    if end == -1:
        return i, _Token("=", "[")
    body, items, k = pat[i + 1 + negate:end], [], 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            items.append((body[k], body[k + 2]))
            k += 3
        else:
            items.append((body[k], body[k]))
            k += 1
    return end, _Token("[", negate=negate, ranges=tuple(items))


def _char_ok(token: _Token, ch: str) -> bool:
    if token is _ANY:
        return True
    if token.kind == "=":
        return token.char == ch
    inside = any(lo <= ch <= hi for lo, hi in token.ranges)
    return inside != token.negate


def component_match(text: str, pat: str, steps: List[int]) -> Optional[bool]:
    """fnmatch.fnmatchcase(text, pat) without regular expressions: the two-pointer wildcard match,
    O(len(text) * len(pat)) at worst, every step counted in ``steps`` (None when it runs out), so
    that no pattern costs more than the budget on any Python (3.8's fnmatch can backtrack
    exponentially)."""
    tokens = _tokens(pat)
    ti = pi = 0
    star, mark = -1, 0
    while ti < len(text):
        steps[0] -= 1
        if steps[0] < 0:
            return None
        if pi < len(tokens) and tokens[pi] is not _STAR and _char_ok(tokens[pi], text[ti]):
            ti += 1
            pi += 1
        elif pi < len(tokens) and tokens[pi] is _STAR:
            star, mark = pi, ti
            pi += 1
        elif star != -1:
            pi, mark = star + 1, mark + 1
            ti = mark
        else:
            return False
    while pi < len(tokens) and tokens[pi] is _STAR:
        pi += 1
    return pi == len(tokens)


def _closure(states: List[bool], pat: List[str]) -> List[bool]:
    """'**' may match no component: reaching it reaches what follows it."""
    for k in range(len(pat)):
        if states[k] and pat[k] == "**":
            states[k + 1] = True
    return states


def glob_covers(parts: Sequence[str], pattern: Sequence[str], steps: Optional[List[int]] = None) -> Optional[bool]:
    """True if the path components ``parts`` (below a scope's glob root) are at or below a path that
    ``pattern`` (the scope's components below that root) matches: '**' is any number of components
    (none included), '*' '?' '[...]' match within one component, '{a,b}' alternatives. None when the
    pattern is too complex to decide within the documented bounds (the caller fails closed)."""
    alternatives = _expand_braces("/".join(pattern), [MAX_GLOB_ALTERNATIVES])
    if alternatives is None:
        return None
    steps = [MAX_GLOB_STEPS] if steps is None else steps       # a caller's budget spans several calls
    for alt in alternatives:
        pat = alt.split("/")
        width = len(pat)
        reach = _closure([True] + [False] * width, pat)
        for part in [None] + list(parts):
            if part is not None:
                steps[0] -= width
                if steps[0] < 0:
                    return None
                new = [False] * (width + 1)
                for k in range(width):
                    if not reach[k]:
                        continue
                    if pat[k] == "**":
                        new[k] = True               # '**' takes this component and may take more
                    else:
                        matched = component_match(part, pat[k], steps)
                        if matched is None:
                            return None
                        new[k + 1] = matched
                reach = _closure(new, pat)
            if reach[width]:
                return True                         # a matched path; what follows is below it
            if not any(reach):
                break
    return False
