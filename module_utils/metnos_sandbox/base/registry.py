# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a diagnostic code is (``Code``), its severities and report sections, the one ``Diagnostic`` type,
and the remediation pieces several packages' codes share.

The codes of each capability package's checks are listed here on the ground floor, in ``codes_<package>.py``
(data only, importing this module alone: base/ imports nothing above it); base/diagnostics.py gathers them
into the one ``REGISTRY`` and builds every diagnostic from it. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Dict, List, Mapping, Sequence

from .records import Record, Shape

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)
RANK = {ERROR: 0, WARNING: 1, INFO: 2}   # most severe first (diagnostics.sort)

# Report sections (one JUnit test case per host and section; see document.py). Every code has one.
SANDBOX_ACTIVE = "sandbox_active"
BWRAP_BINARY = "bwrap_binary"
KERNEL_USERNS = "kernel_userns"
SMOKE_TEST = "smoke_test"
SERVICE_ENVIRONMENT = "service_environment"
PROFILES = "profiles"
PROBE = "probe"
REACHABILITY = "reachability"
MODULE = "module"          # a module's own failure (fail_json): never a finding of a host report
MONITOR = "monitor"        # the continuous proof's own install, configuration and outputs (proof.py)
SECTIONS = (SANDBOX_ACTIVE, BWRAP_BINARY, KERNEL_USERNS, SMOKE_TEST, SERVICE_ENVIRONMENT, PROFILES, PROBE,
            REACHABILITY, MODULE, MONITOR)


class _DiagnosticKeys(Shape):
    code: str
    severity: str
    rule: str
    title: str
    message: str
    remediation: List[str]


class Diagnostic(_DiagnosticKeys, total=False):
    """The one type of a finding (every diagnostic is made by diagnostics.make from the registry): code,
    severity, rule, title, message, remediation[, hint][, details]. A code with a ``hint`` keeps its remediation to
    commands that run as written (placeholders explicit, <unit>), the words that go with them in the hint."""
    hint: str
    details: Dict[str, Any]


class UnregisteredCode(KeyError):
    """A code that is not in the registry was asked for (a defect of the toolkit, never of the input)."""


class Code(Record):
    """Static description of one diagnostic code, built by keywords in codes_<package>.py (data only) and
    checked into the registry by ``registered``: ``remediation`` the default commands, ``variants`` other
    commands by name, ``messages`` the message template (what was seen) by name ("" the default, the cause
    when absent), ``hint`` what to know before running the commands (prose; the commands stay commands),
    ``hints`` the hint of a variant whose words differ from the default's (by variant name)."""
    code: str
    severity: str
    rule: str
    section: str
    title: str
    cause: str
    detection: str
    remediation: Sequence[str]
    variants: Mapping[str, Sequence[str]] = {}       # never changed in place: registered() makes each its own
    messages: Mapping[str, str] = {}
    hint: str = ""
    hints: Mapping[str, str] = {}


def registered(code: Code) -> Code:
    """``code`` checked (a known severity and report section) and copied as the registry holds it: its
    commands as tuples, its variants, messages and hints in dicts of its own."""
    if code.severity not in SEVERITIES or code.section not in SECTIONS:
        raise ValueError("%s: severity %r / section %r" % (code.code, code.severity, code.section))
    return code._replace(remediation=tuple(code.remediation),
                         variants=dict((name, tuple(steps)) for name, steps in code.variants.items()),
                         messages=dict(code.messages), hints=dict(code.hints))


def with_shared(code: Code, messages: Mapping[str, str], variants: Mapping[str, Sequence[str]],
                hints: Mapping[str, str]) -> Code:
    """``code`` with the shared messages, variants and hints it does not name itself (its own are kept, first)."""
    return code._replace(messages=_joined(code.messages, messages), variants=_joined(code.variants, variants),
                         hints=_joined(code.hints, hints))


def _joined(own: Mapping[str, Any], shared: Mapping[str, Any]) -> Dict[str, Any]:
    """``own``, then each name of ``shared`` it does not have."""
    out = dict(own)
    for name, value in shared.items():
        out.setdefault(name, value)
    return out


# The smallest drop-in that relaxes one unit directive for bwrap ({relax} is the line to add).
DROPIN_FIX = ("mkdir -p /etc/systemd/system/{unit}.d",
              "printf '[Service]\\n{relax}\\n' >> /etc/systemd/system/{unit}.d/zz-metnos-sandbox.conf",
              "systemctl daemon-reload", "systemctl restart {unit}")
DROPIN_HINT = "Smallest fix, as a drop-in (enforce mode writes it with metnos_sandbox_relax_restrictions=true)."
# No drop-in can relax it ({relax_note} says why): the unit itself changes; the command shows its files.
NO_DROPIN_FIX = ("systemctl cat {unit}",)
RESTRICTION_VARIANTS = {"dropin": DROPIN_FIX, "no_dropin": NO_DROPIN_FIX}
RESTRICTION_HINTS = {"dropin": DROPIN_HINT, "no_dropin": "{relax_note}"}


class Restriction(Record):
    """A unit directive that breaks bwrap inside the service (service_env.DIRECTIVE_CODES), as its code says it:
    fixed by the drop-in line ``fix`` (``fix_note``: what to know about it); ``messages`` as Code's."""
    code: str
    rule: str
    title: str
    cause: str
    detection: str
    fix: str
    messages: Mapping[str, str]
    fix_note: str = ""


def restriction(said: Restriction) -> Code:
    """The code of a restriction: its drop-in line and a daemon-reload (<unit>: the default names no unit), or
    the smallest drop-in enforce mode can write (its variants, made with the unit)."""
    return Code(code=said.code, severity=ERROR, rule=said.rule, section=SERVICE_ENVIRONMENT, title=said.title,
                cause=said.cause, detection=said.detection,
                remediation=[
                    "mkdir -p /etc/systemd/system/<unit>.d",
                    "printf '[Service]\\n%s\\n' >> /etc/systemd/system/<unit>.d/zz-metnos-sandbox.conf" % said.fix,
                    "systemctl daemon-reload",
                    "systemctl restart <unit>"], variants=RESTRICTION_VARIANTS,
                messages=said.messages,
                hint=" ".join(x for x in ("The drop-in line %s." % said.fix, said.fix_note) if x),
                hints=RESTRICTION_HINTS)


# Remediation items may contain ``{placeholders}`` filled from the context given to ``make``;
# an item that is exactly one placeholder whose value is a list becomes that list's items.
# Unknown placeholders are left as they are.
# bwrap_smoke_failed / probe_setup_failed: the steps of the cause bwrap's stderr was classified as
# (bwrap_errors.CAUSES, documented with this registry).
CLASSIFIED = {"classified": ("{cause_remediation}",)}
CLASSIFIED_HINT = "{cause_hint}"       # the classified cause's words (bwrap_errors.Cause.hint)

# A manifest value refused with the accepted forms (manifest._err): {value} is an excerpt, {expected} the forms.
REFUSED = {"refused": "{field}: {value} is refused: {expected}"}

# A manifest-written path refused by the host's rules (profile judge_scope): {access} is read-only/writable.
JUDGED = {"judged": "{field}: {access} {path}: {problem}",
          "judged_from": "{field}: {access} {path} (from {what}): {problem}"}


# A program root would run that someone else can change (base/owners.py): one finding per component, its variant
# the reason ({path}: the component, {owner}: its owner's name, {mode}: its mode, {program}: what root would run).
NOT_ROOTS_FIXES = {"owned": ("chown -h root:root {path}",), "group_writable": ("chmod g-w {path}",),
                   "world_writable": ("chmod o-w {path}",), "acl": ("setfacl -b {path}",),
                   "unknown": ("ls -ld {path}",)}
NOT_ROOTS_SEEN = {"owned": "{path} is owned by {owner}, not root",
                  "group_writable": "{path} is writable by its group (mode {mode}, gid {gid})",
                  "world_writable": "{path} is writable by every user (mode {mode}, no sticky bit)",
                  "acl": "{path} has a POSIX ACL entry that lets {owner} write it (mode {mode})",
                  "unknown": "{path} could not be judged (missing, not a regular file, a link loop, too deep)"}
NOT_ROOTS_HINT = ("Make every folder on the way, the program and its interpreter root's and writable by root alone "
                  "(or install the program where root keeps it: /usr/bin), then run the check again.")


def not_roots_messages(then: str) -> Dict[str, str]:
    """The message of each reason, followed by what the toolkit did instead (``then``: {program} in it)."""
    return dict((reason, "%s: %s" % (seen, then)) for reason, seen in NOT_ROOTS_SEEN.items())
