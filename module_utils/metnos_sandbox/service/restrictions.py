# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The unit directives that break bwrap inside the service: which namespaces, address families and
syscalls a unit's settings leave bwrap (RestrictNamespaces=, RestrictAddressFamilies=, SystemCallFilter=,
...), and each one's diagnostic (DIRECTIVE_CODES) with the drop-in that relaxes it.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set

from ..base import diagnostics
from ..base.records import Record
from ..host import bwrap
from . import run_user

DROPIN_NAME = "zz-metnos-sandbox.conf"
NEEDED_SYSCALLS = ("mount", "pivot_root", "umount2", "unshare", "clone")
# Which of NEEDED_SYSCALLS each systemd syscall group contains (nested groups flattened;
# from `systemd-analyze syscall-filter`, systemd 252-257).
SYSCALL_GROUPS: Dict[str, Set[str]] = {
    "@mount": {"mount", "pivot_root", "umount2"},
    "@process": {"clone", "unshare"},
    "@system-service": {"clone", "unshare"},
    "@privileged": {"pivot_root"},
    "@known": set(NEEDED_SYSCALLS),
}
ALL_NAMESPACES = ("cgroup", "ipc", "net", "mnt", "pid", "user", "uts")
BWRAP_NAMESPACES = ("user", "mnt", "ipc", "uts", "net")
BWRAP_FAMILIES = ("AF_NETLINK",)        # loopback setup in --unshare-net (measured)


# --------------------------------------------------------------------------- restrictions

def allowed_namespaces(values: Optional[Iterable[str]]) -> Set[str]:
    """RestrictNamespaces= lines -> the set of namespace types the service may create.

    systemd's merge (config_parse_restrict_namespaces): a boolean replaces everything before it;
    the first list sets the allowed types (``~`` inverts); later lists add to them, ``~`` lists
    remove from them; an empty assignment resets.
    """
    allowed: Optional[Set[str]] = None  # systemd's NAMESPACE_FLAGS_INITIAL: nothing restricted yet
    for value in values or []:
        value = value.strip()
        low = value.lower()
        if value == "":
            allowed = None
        elif low in ("yes", "true", "1", "on", "y", "t"):
            allowed = set()
        elif low in ("no", "false", "0", "off", "n", "f"):
            allowed = set(ALL_NAMESPACES)
        else:
            invert = value.startswith("~")
            names = set((value[1:] if invert else value).split()) & set(ALL_NAMESPACES)
            if allowed is None:
                allowed = set(ALL_NAMESPACES) - names if invert else names
            else:
                allowed = allowed - names if invert else allowed | names
    return set(ALL_NAMESPACES) if allowed is None else allowed


def families_blocked(values: Optional[Iterable[str]], needed: Sequence[str] = BWRAP_FAMILIES) -> List[str]:
    """RestrictAddressFamilies= lines -> the families bwrap needs that they block.

    systemd's merge (config_parse_address_families): while the set is empty a line decides
    allow-list (plain) or deny-list (``~``) mode; later plain lines add in allow mode and remove
    in deny mode, ``~`` lines the reverse; ``none`` is an empty allow list; empty resets.
    """
    allow: Optional[bool] = None
    families: Set[str] = set()
    for value in values or []:
        value = value.strip()
        if value == "":
            allow, families = None, set()
            continue
        if value == "none":
            allow, families = True, set()
            continue
        invert = value.startswith("~")
        if not families:
            allow = not invert
        for name in (value[1:] if invert else value).split():
            if (not invert) == allow:
                families.add(name)
            else:
                families.discard(name)
    if allow is None:
        return []
    if allow:
        return [f for f in needed if f not in families]
    return [f for f in needed if f in families]


def syscalls_blocked(values: Optional[Iterable[str]]) -> List[str]:
    """SystemCallFilter= lines -> the needed syscalls it blocks (allow-list or deny-list semantics)."""
    allow_mode: Optional[bool] = None
    allowed: Set[str] = set()
    denied: Set[str] = set()
    for value in values or []:
        value = value.strip()
        if not value:
            allow_mode, allowed, denied = None, set(), set()
            continue
        negate = value.startswith("~")
        items = value[1:].split() if negate else value.split()
        names: Set[str] = set()
        for item in items:
            item = item.split(":")[0]           # name:errno
            names |= SYSCALL_GROUPS.get(item, {item} if item in NEEDED_SYSCALLS else set())
        if allow_mode is None:
            allow_mode = not negate
        if allow_mode:
            allowed = allowed - names if negate else allowed | names
        else:
            denied = denied - names if not negate else denied | names
    if allow_mode is None:
        return []
    if allow_mode:
        return [s for s in NEEDED_SYSCALLS if s not in allowed]
    return [s for s in NEEDED_SYSCALLS if s in denied]


# Every directive measured to break bwrap on a real unit (docs/unit-directives.md, generated from
# docs/unit-directives.json by scripts/gen-unit-directives-doc.py) -> the code that names it. A unit
# test keeps this table and the measured one consistent.
DIRECTIVE_CODES = {
    "RestrictNamespaces": "unit_blocks_namespaces",
    "SystemCallFilter": "unit_syscall_filter_blocks_bwrap",
    "ProcSubset": "unit_proc_subset_pid",
    "RestrictSUIDSGID": "unit_restrict_suidsgid",
    "DynamicUser": "unit_restrict_suidsgid",
    "RestrictAddressFamilies": "unit_address_families_block_netlink",
}
# Codes for directives that break bwrap only under a condition the trial host does not have.
CONDITIONAL_CODES = {
    "unit_no_new_privileges_setuid": ("NoNewPrivileges", "a setuid bwrap on a host without unprivileged user "
                                                         "namespaces (NoNewPrivileges ignores the setuid bit)"),
}


class Finding(Record):
    """A directive of the unit that breaks bwrap, as its diagnostic says it: the ``code``, the ``directive``,
    ``fill`` and ``wording`` (the message from the code's registered templates), ``relax`` (the smallest
    drop-in line that lets bwrap work, or None with ``relax_note`` saying why a drop-in cannot) and the
    ``severity`` when it is not the code's."""
    code: str
    directive: str
    fill: Mapping[str, Any]
    relax: Optional[str]
    relax_note: Optional[str] = None
    severity: Optional[str] = None
    wording: str = "seen"


def _restriction(unit: str, found: Finding) -> diagnostics.Diagnostic:
    """The diagnostic of one ``found`` restriction of ``unit``."""
    diag: diagnostics.Diagnostic = diagnostics.make(
        found.code, unit=unit, directive=found.directive, fill=found.fill, wording=found.wording,
        severity=found.severity, relax=found.relax,
        relax_note=found.relax_note or "No drop-in can relax it; change the unit.",
        variant="dropin" if found.relax else "no_dropin")
    return diag


def restriction_diagnostics(settings: Mapping[str, Any], unit: str,
                            bwrap_info: Optional[Mapping[str, Any]] = None) -> List[diagnostics.Diagnostic]:
    """The unit's directives that break bwrap inside the service (measured: docs/unit-directives.md),
    each with the smallest drop-in line that lets bwrap work."""
    return _confinement_diagnostics(settings, unit) + _privilege_diagnostics(settings, unit, bwrap_info)


def _confinement_diagnostics(settings: Mapping[str, Any], unit: str) -> List[diagnostics.Diagnostic]:
    """Namespaces, system calls, address families and /proc the unit denies bwrap."""
    out = []
    ns = allowed_namespaces(settings.get("RestrictNamespaces"))
    missing = [n for n in BWRAP_NAMESPACES if n not in ns]
    if missing:
        out.append(_restriction(unit, Finding(
            code="unit_blocks_namespaces", directive="RestrictNamespaces",
            fill={"values": " ".join(settings["RestrictNamespaces"]), "missing": ", ".join(missing)},
            relax="RestrictNamespaces=%s" % " ".join(missing))))
    blocked = syscalls_blocked(settings.get("SystemCallFilter"))
    if blocked:
        errno_action = str(settings.get("SystemCallErrorNumber") or "").strip()
        killed = errno_action in ("", "2147483646", "kill")
        out.append(_restriction(unit, Finding(
            code="unit_syscall_filter_blocks_bwrap", directive="SystemCallFilter",
            fill={"blocked": ", ".join(blocked), "errno": errno_action},
            relax="SystemCallFilter=%s" % " ".join(blocked), wording="killed" if killed else "errno")))
    families = families_blocked(settings.get("RestrictAddressFamilies"))
    if families:
        out.append(_restriction(unit, Finding(
            code="unit_address_families_block_netlink", directive="RestrictAddressFamilies",
            fill={"values": " ".join(settings["RestrictAddressFamilies"]), "families": ", ".join(families)},
            relax="RestrictAddressFamilies=%s" % " ".join(families))))
    if str(settings.get("ProcSubset", "")).strip() == "pid":
        out.append(_restriction(unit, Finding(
            code="unit_proc_subset_pid", directive="ProcSubset", fill={}, relax="ProcSubset=all")))
    return out


def _privilege_diagnostics(settings: Mapping[str, Any], unit: str,
                           bwrap_info: Optional[Mapping[str, Any]]) -> List[diagnostics.Diagnostic]:
    """RestrictSUIDSGID=/DynamicUser= (openat2) and NoNewPrivileges against a setuid bwrap."""
    out = []
    info = bwrap_info or {}
    version = bwrap.version_tuple(info.get("version"))
    explicit = run_user.truthy(settings.get("RestrictSUIDSGID", "no"))
    dynamic = run_user.truthy(settings.get("DynamicUser", "no"))
    if explicit or dynamic:
        why = "RestrictSUIDSGID=yes" if explicit else "DynamicUser=yes (implies RestrictSUIDSGID=yes)"
        severe = version >= (0, 12)
        out.append(_restriction(unit, Finding(
            code="unit_restrict_suidsgid", directive="DynamicUser" if dynamic and not explicit else "RestrictSUIDSGID",
            fill={"why": why, "version": info.get("version") or "?"},
            relax=None if dynamic else "RestrictSUIDSGID=no",
            severity=diagnostics.ERROR if severe else diagnostics.WARNING, wording="fails" if severe else "warns",
            relax_note="DynamicUser=yes forces RestrictSUIDSGID=yes: run the service with a static User= "
                       "(DynamicUser=no) to use bubblewrap >= 0.12" if dynamic else None)))
    nnp = run_user.truthy(settings.get("NoNewPrivileges", "no")) or explicit or dynamic or \
        bool(settings.get("SystemCallFilter")) or bool(settings.get("RestrictNamespaces"))
    if nnp and info.get("setuid"):
        out.append(diagnostics.make("unit_no_new_privileges_setuid", unit=unit, directive="NoNewPrivileges",
                                    bwrap_path=info.get("path")))
    return out
