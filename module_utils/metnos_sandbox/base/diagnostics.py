# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One shape for every finding, and the one registry of codes.

Every failure anywhere in the toolkit becomes a ``Diagnostic`` built from
``REGISTRY``: the code is stable and machine-readable, the message says what
was seen on this host, and the remediation is a list of commands, one per item,
that run as written in sh (placeholders explicit: <unit>, <path>); the words go
in the hint (tests/unit/test_remediation_commands.py).

The registry is the only place a code's severity, spec rule, report section,
title, cause (the default message), message templates and remediation live; a
call site fills ``{placeholders}``, may pick one of the code's named message
templates (``wording``) and remediation ``variants``, and never writes its own
message or remediation (``make`` refuses both). Codes a module returns when it
fails (``fail_json(code=...)``) are registered too (section ``module``).
tests/unit/test_diagnostics_registry.py walks the sources and fails on a code
that is emitted but not registered.

The documentation's code reference (docs/diagnostics.md) is generated from
this table by ``scripts/gen-diagnostics-doc.py``; a unit test fails when the
two drift apart.

Pure Python, no Ansible imports: it runs on managed hosts (Python >= 3.8) and
on the controller.
"""
from __future__ import absolute_import, annotations, division, print_function

import re
import reprlib
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, cast

from . import (
    codes_audit,
    codes_channels,
    codes_holdings,
    codes_host,
    codes_launcher,
    codes_mounts,
    codes_options,
    codes_probe,
    codes_profile,
    codes_service,
    registry,
)

# The registry's types, severities and sections, spelled here too: every caller names them D.<name>.
BWRAP_BINARY = registry.BWRAP_BINARY
ERROR = registry.ERROR
INFO = registry.INFO
KERNEL_USERNS = registry.KERNEL_USERNS
MODULE = registry.MODULE
MONITOR = registry.MONITOR
PROBE = registry.PROBE
PROFILES = registry.PROFILES
REACHABILITY = registry.REACHABILITY
SANDBOX_ACTIVE = registry.SANDBOX_ACTIVE
SECTIONS = registry.SECTIONS
SERVICE_ENVIRONMENT = registry.SERVICE_ENVIRONMENT
SEVERITIES = registry.SEVERITIES
SMOKE_TEST = registry.SMOKE_TEST
WARNING = registry.WARNING
Code = registry.Code
Diagnostic = registry.Diagnostic
UnregisteredCode = registry.UnregisteredCode
_RANK = registry.RANK
_CODES: List[Code] = (codes_host.CODES + codes_profile.CODES + codes_mounts.CODES + codes_channels.CODES +
                      codes_probe.CODES + codes_holdings.CODES + codes_service.CODES + codes_audit.CODES +
                      codes_options.CODES + codes_launcher.CODES)
REGISTRY: Dict[str, Code] = dict((c.code, registry.registered(c)) for c in _CODES)

# The codes a manifest load refuses with (manifest.coerce). A controller-side face hands a refusal to the
# host as a record (code and message, made and bounded by this toolkit); the host relays its message.
LOAD_CODES = ("manifest_parse_error", "manifest_missing", "manifest_not_utf8", "manifest_too_large",
              "manifest_too_many_nodes", "manifest_too_deep", "manifest_duplicate_key", "manifest_yaml_unsupported",
              "manifest_invalid", "manifest_string_too_long", "manifest_link_refused", "manifest_fifo",
              "manifest_unreadable_by_owner", "manifest_changed_while_read",
              "capability_whitespace")     # the YAML reader refuses it where the lines are known
for _load in LOAD_CODES:
    REGISTRY[_load] = registry.with_shared(REGISTRY[_load], {"relayed": "{relayed}"}, {}, {})


def spec(code: str) -> Code:
    """The registry entry of ``code``; an unregistered code is a defect and raises UnregisteredCode."""
    try:
        return REGISTRY[code]
    except KeyError:
        raise UnregisteredCode("%r is not a registered diagnostic code (module_utils/metnos_sandbox/"
                               "diagnostics.py)" % (code,)) from None


def section_of(code: str) -> str:
    """The report section of a registered code."""
    return spec(code).section


PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _fill(text: str, context: Mapping[str, Any]) -> str:
    """Replace ``{name}`` placeholders of a registry text with context values, one pass.

    Only the registry's own texts are templates: a value is inserted as it is and never
    interpreted again (no format specs, no attribute access), so manifest or unit text in a
    value cannot grow or reshape a message. Unknown placeholders are left as they are."""
    if "{" not in text:
        return text

    def sub(match: "re.Match[str]") -> str:
        key = match.group(1)
        return str(context[key]) if key in context else match.group(0)
    return PLACEHOLDER.sub(sub, text)


def _steps(templates: Iterable[str], context: Mapping[str, Any]) -> List[str]:
    """Remediation steps from registry templates; an item that is exactly ``{name}`` with a list value
    becomes the list's items (the steps of a classified cause)."""
    out: List[str] = []
    for item in templates:
        match = PLACEHOLDER.fullmatch(item)
        value = context.get(match.group(1)) if match else None
        if isinstance(value, (list, tuple)):
            out.extend(str(v) for v in value)
        else:
            out.append(_fill(item, context))
    return out


_EXCERPT = reprlib.Repr()
_EXCERPT.maxstring = 72
_EXCERPT.maxother = 72
_EXCERPT.maxlevel = 2
_EXCERPT.maxlist = _EXCERPT.maxtuple = _EXCERPT.maxdict = _EXCERPT.maxset = 4
_EXCERPT.maxlong = 40


def excerpt(value: Any, limit: int = 80) -> str:
    """A short, escaped, bounded quotation of any value for a message (never the whole value).

    Strings are cut before ``repr`` (bounded work whatever their size); containers show at
    most a few items two levels deep; the result is at most ``limit`` characters."""
    if isinstance(value, str):
        text = repr(str.__str__(value[:limit]))
        if len(value) > limit:
            text += "... (%d characters)" % len(value)
    elif isinstance(value, (bytes, bytearray)):
        text = repr(bytes(value[:limit]))
        if len(value) > limit:
            text += "... (%d bytes)" % len(value)
    elif value is None or isinstance(value, (bool, int, float)):
        text = _EXCERPT.repr(value)
    else:
        try:
            text = _EXCERPT.repr(value)
        except Exception:  # a hostile object's own __repr__: never let it through
            text = "<%s>" % type(value).__name__
    if len(text) > limit + 24:
        text = text[:limit] + "..."
    return text


# The codes blame.py reports a culprit with (the directive table's and its own): one message and remediation
# for "found by experiment", the relaxation it tried ({relax_words}: the drop-in's lines, shell-quoted).
EXPERIMENT_CODES = ("unit_blocks_namespaces", "unit_syscall_filter_blocks_bwrap", "unit_address_families_block_netlink",
                    "unit_proc_subset_pid", "unit_restrict_suidsgid", "unit_ambient_capabilities",
                    "unit_resource_limit_blocks_bwrap", "unit_read_only_proc", "unit_noexec_bwrap",
                    "unit_syscall_filter_kills_interpreter", "unit_directive_breaks_bwrap")
_EXPERIMENT_HINT = ("Smallest relaxation, tried for real (the probe passed with it in the service's context), as a "
                    "drop-in.")
_EXPERIMENT_FIX = ("mkdir -p /etc/systemd/system/{unit}.d",
                   "printf '%s\\n' '[Service]' {relax_words} >> /etc/systemd/system/{unit}.d/zz-metnos-relax.conf",
                   "systemctl daemon-reload", "systemctl restart {unit}")
_EXPERIMENT_MESSAGES = {
    "experiment": "{unit}: {shown} breaks bwrap in the service's context{together}: {said} Found by experiment "
                  "({how}); {relaxed}",
    "experiment_unit": "{unit}: with {shown}{together}, systemd cannot start the service's processes at all: "
                       "{said} Nothing runs there, bwrap least of all. Found by experiment ({how}); {relaxed}"}
for _code in EXPERIMENT_CODES:
    REGISTRY[_code] = registry.with_shared(
        REGISTRY[_code], _EXPERIMENT_MESSAGES,
        {"experiment": _EXPERIMENT_FIX, "experiment_no_dropin": registry.NO_DROPIN_FIX},
        {"experiment": _EXPERIMENT_HINT, "experiment_no_dropin": "{relax_note}"})


MAX_MESSAGE = 1000       # characters of one message (and of one detail): the rest is counted, not shown
MAX_DETAIL_ITEMS = 20


def utf8_safe(value: Any) -> Any:
    """``value`` with every string that is not valid UTF-8 (a lone surrogate: a file name's undecodable
    byte, an input's broken escape) escaped as text (``\\udcff``), in lists and mappings too: a reply
    that carries one is refused by Ansible ("Refusing to deserialize an invalid UTF8 string value"),
    and the refusal code it holds would never reach the play."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, (list, tuple)):
        return [utf8_safe(v) for v in value]
    if isinstance(value, dict):
        return dict((utf8_safe(k), utf8_safe(v)) for k, v in value.items())
    return value


def _bounded(value: Any) -> Any:
    """A message or detail cut to MAX_MESSAGE characters (lists: MAX_DETAIL_ITEMS items), so that a
    diagnostic stays short whatever the paths or values it quotes, and valid UTF-8 (utf8_safe)."""
    if isinstance(value, str):
        value = utf8_safe(value)
    if isinstance(value, str) and len(value) > MAX_MESSAGE:
        return value[:MAX_MESSAGE] + "... (%d characters)" % len(value)
    if isinstance(value, (list, tuple)):
        return [_bounded(v) for v in value[:MAX_DETAIL_ITEMS]]
    return value


def make(code: str, severity: Optional[str] = None, variant: Optional[str] = None,
         fill: Optional[Mapping[str, Any]] = None, wording: Optional[str] = None, **context: Any) -> Diagnostic:
    """Build the dict form of a diagnostic from the registry.

    The message (what was seen on this host) is the registry's template named ``wording`` (default: the
    one of the ``variant``, else the code's default template, else its cause text); the remediation is
    always the registry's: its default steps, or the named ``variant`` of the code. Extra keyword
    arguments fill the ``{placeholders}`` of the registry's texts and are returned under ``details`` so
    that a report keeps them; ``fill`` holds placeholders of the message template that are not kept as
    details (the pieces of a sentence the check composed: already excerpted or bounded values). Values
    are inserted once, never interpreted (``_fill``): input never becomes a template. A call site never
    writes its own message or remediation (both raise TypeError). An unregistered code, variant or
    wording raises (a defect of the toolkit)."""
    for own in ("message", "remediation"):
        if own in context:
            raise TypeError("make(%s): the %s comes from the registry (register a wording and fill its "
                            "placeholders)" % (code, own))
    return _make(code, None, severity, variant, fill, wording, context)


def _make(code: str, message: Optional[str], severity: Optional[str], variant: Optional[str],
          fill: Optional[Mapping[str, Any]], wording: Optional[str], context: Dict[str, Any]) -> Diagnostic:
    """make(), and the registry module's own builders (unit_not_found) that compose a sentence here."""
    entry = spec(code)
    if variant is not None and variant not in entry.variants and variant not in entry.messages:
        raise UnregisteredCode("%s has no variant %r" % (code, variant))
    if wording is not None and wording not in entry.messages:
        raise UnregisteredCode("%s has no message wording %r" % (code, wording))
    out: Diagnostic = {
        "code": code,
        "severity": severity or entry.severity,
        "rule": entry.rule,
        "title": entry.title,
        "message": _bounded(message if message is not None else _fill(
            _message_template(entry, variant if wording is None else wording),
            dict(context, **fill) if fill else context)),
        "remediation": _steps(entry.variants.get(variant or "", entry.remediation), context),
    }
    hint = _fill(entry.hints.get(variant or "", entry.hint), dict(context, **fill) if fill else context).strip()
    if hint:
        out["hint"] = _bounded(hint)
    if context:
        out["details"] = dict((k, _bounded(v)) for k, v in context.items() if _jsonable(v))
    return out


# What a check adds to a finding already made (a count of the ones left out, where it was seen, whom a
# failure blames): "{message}" is the finding's own message, never re-read as a template.
AMENDMENTS = {
    "more_diagnostics": "{message} (and {count} more diagnostics)",
    "more_problems": "{message} (and {count} more problems)",
    "seen_in": "{where}: {message}",
    "blamed_by_probe": "{message} The probe failed in this unit's context.",
    "confirmed_by_experiment": "{message} The probe failed in this unit's context; found by experiment ({how}): "
                               "{relaxed}",
}


class Restated(Dict[str, Any]):
    """A finding that restates another (amend()): the same fields, a fuller message; ``restates`` is the
    finding it stands for, so that union() lists it in that finding's place. Serialised as a plain dict."""
    restates: Mapping[str, Any]


def amend(diag: Mapping[str, Any], amendment: str, **fill: Any) -> Diagnostic:
    """A copy of ``diag`` whose message is the registered ``amendment`` of it (values filled once); the copy
    restates ``diag`` (Restated)."""
    out = Restated(diag, message=_fill(AMENDMENTS[amendment], dict(fill, message=diag["message"])))
    out.restates = diag
    return cast(Diagnostic, out)          # a Diagnostic that also knows what it restates


def capped(diags: List[Diagnostic], limit: int, amendment: str) -> List[Diagnostic]:
    """At most ``limit`` of ``diags``, in their order; the last one kept tells how many more there were (its
    registered ``amendment``, ``count`` filled). A manifest of 128 refused paths gets a short answer."""
    if len(diags) <= limit:
        return diags
    kept = diags[:limit]
    kept[-1] = amend(kept[-1], amendment, count=len(diags) - limit)
    return kept


def _message_template(entry: Code, variant: Optional[str]) -> str:
    return entry.messages.get(variant or "", entry.messages.get("", entry.cause))


def _jsonable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, list, dict, tuple)) or value is None


def unit_not_found(unit: str, scope: Optional[str] = None, root: Optional[str] = None,
                   error: Optional[str] = None, then: Optional[str] = None) -> Diagnostic:
    """The one builder of ``unit_not_found``: the unit (and scope, or the root it was looked for below),
    why it counts as missing (``error``: systemctl failed) and what was done instead (``then``)."""
    text = unit + (" (%s scope)" % scope if scope else "")
    text += " was not found" + (" below %s" % root if root not in (None, "", "/") else "")
    if error:
        text += ": systemctl failed: %s" % error
    elif not scope and not root:
        text += " on this host"
    return _make("unit_not_found", text + (": %s." % then if then else "."), None, None, None, None, {"unit": unit})


def subject(diag: Mapping[str, Any]) -> Tuple[str, str]:
    """(code, subject): what a finding is about within one host's report - its code and the details it was
    built with (unit, directive, path, check, ...)."""
    return (str(diag.get("code")), repr(sorted((diag.get("details") or {}).items())))


def union(*groups: Iterable[Mapping[str, Any]]) -> List[Diagnostic]:
    """The findings of several checks of one host, each once, in order: a finding equal to one listed (the
    same record from two checks that read the same thing) is that one; a restatement (amend(): the probe
    blaming, or confirming by experiment, a directive the service check reported) takes the place of the
    finding it restates. Nothing is compared by its wording: two findings that differ in any field stay two."""
    out: List[Diagnostic] = []
    replaced: List[Mapping[str, Any]] = []
    for group in groups:
        for diag in group:
            original = getattr(diag, "restates", None)
            index = next((i for i, kept in enumerate(out) if original is not None and kept == original), None)
            if index is not None:
                replaced.append(out[index])
                out[index] = cast(Diagnostic, diag)
            elif diag not in out and diag not in replaced:
                out.append(cast(Diagnostic, diag))
    return out


def sort(diags: Iterable[Diagnostic]) -> List[Diagnostic]:
    """Errors first, then warnings, then info; stable otherwise."""
    return sorted(diags, key=lambda d: _RANK.get(d.get("severity", ""), 9))


def worst(diags: Iterable[Mapping[str, Any]]) -> Optional[str]:
    """The worst severity present, or None."""
    ranks = [_RANK[d["severity"]] for d in diags if d.get("severity") in _RANK]
    if not ranks:
        return None
    return SEVERITIES[min(ranks)]


def codes(diags: Iterable[Mapping[str, Any]]) -> List[str]:
    return [d["code"] for d in diags]
