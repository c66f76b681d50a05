# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""METNOS_SANDBOX semantics and the runtime's ``status()`` answer, ``Status`` (R-DIAG-1, R-FAIL-1).

The runtime disables the sandbox when METNOS_SANDBOX is ``0``, ``off``, ``no``
or ``false``, compared case-insensitively with the exact value (no trimming).
Anything else keeps the sandbox on. Values that a person may have *meant* as
"off" but the runtime does not treat as such (``' OFF'``, ``n``, ``f``,
``disabled``, an empty value) are reported separately as ambiguous, never
guessed.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import List, Mapping, Optional, Tuple

from . import diagnostics
from .records import Shape

ENV_VAR = "METNOS_SANDBOX"
DISABLING = ("0", "off", "no", "false")
# systemd's parse_boolean() false spellings plus common words for "off".
_LOOKS_FALSE = ("0", "off", "no", "false", "n", "f", "disable", "disabled", "none")


def classify_value(value: Optional[str]) -> Tuple[bool, Optional[str]]:
    """Return ``(disabled, ambiguous_reason)`` for a METNOS_SANDBOX value.

    ``value`` is None when the variable is unset.
    """
    if value is None:
        return False, None
    if value.lower() in DISABLING:
        return True, None
    if value == "":
        return False, "the variable is set but empty; the runtime keeps the sandbox on"
    stripped = value.strip().lower()
    if stripped in DISABLING:
        return False, ("the value %r has surrounding whitespace; the runtime compares the exact "
                       "value and keeps the sandbox ON" % value)
    if stripped in _LOOKS_FALSE:
        return False, ("the value %r looks like 'off' but is not one of 0/off/no/false; the "
                       "runtime keeps the sandbox ON" % value)
    return False, None


class Status(Shape):
    """The runtime's ``sandbox.status()``: its four answers (what every face reports as ``status``)."""
    bwrap_available: bool
    bwrap_path: Optional[str]
    disabled_via_env: bool
    active: bool


def status(bwrap_path: Optional[str], environment: Optional[Mapping[str, str]]) -> Status:
    """The runtime's ``sandbox.status()``: computed now, never cached."""
    value = environment.get(ENV_VAR) if environment is not None else None
    disabled, _reason = classify_value(value)
    available = bwrap_path is not None
    return {
        "bwrap_available": available,
        "bwrap_path": bwrap_path,
        "disabled_via_env": disabled,
        "active": available and not disabled,
    }


def diagnose(status: Status, environment: Optional[Mapping[str, str]], path_text: Optional[str],
             unit: str = "metnos.service", where: str = "environment") -> List[diagnostics.Diagnostic]:
    """Diagnostics that follow from the runtime's status() and the METNOS_SANDBOX value."""
    out: List[diagnostics.Diagnostic] = []
    value = environment.get(ENV_VAR) if environment is not None else None
    _disabled, reason = classify_value(value)
    if not status["bwrap_available"]:
        out.append(diagnostics.make("bwrap_missing", path=path_text))
    if status["disabled_via_env"]:
        out.append(diagnostics.make("sandbox_disabled_via_env", variant="where", unit=unit, value=value,
                                    shown=repr(value),
                                    where=where))
    if reason:
        out.append(diagnostics.make("sandbox_env_value_ambiguous", variant="reason", value=value, reason=reason))
    if not status["active"]:
        why: List[str] = []
        if not status["bwrap_available"]:
            why.append("bwrap is not on PATH")
        if status["disabled_via_env"]:
            why.append("%s=%r" % (ENV_VAR, value))
        out.append(diagnostics.make("executor_os_sandbox_unavailable", variant="why", why=" and ".join(why)))
    return out
