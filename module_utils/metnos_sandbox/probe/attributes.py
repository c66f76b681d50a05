# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The payload's process attributes, not weaker than its starter's (issue 51): what the kernel applies to a
process beyond its namespaces - personality flags, scheduling priority, rlimits, oom_score_adj, no_new_privs and
seccomp mode, the ambient, bounding and inheritable capability sets (permitted and effective in the starter's user
namespace) - read from the host's /proc (host/holdings.process_attributes, procfs.privileges) and compared with
the probe itself, or in a transient unit with the unit's own process before it ran bwrap (the service's context).
Each weakening is reported with a code of its own (ATTRIBUTE_CODES). Deny by default: an attribute that could not
be read on either side is not proven.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import ctypes
import typing as t

from ..base.records import Json
from ..host.procfs import is_error
from .held import Scene, unread

# kind of weakening -> the code it is reported with (codes_holdings.py)
ATTRIBUTE_CODES = {"personality": "probe_attribute_personality", "priority": "probe_attribute_priority",
                   "rlimit": "probe_attribute_rlimit", "oom": "probe_attribute_oom",
                   "privileges": "probe_attribute_privileges", "ambient": "probe_attribute_ambient",
                   "bounding": "probe_attribute_bounding", "capabilities": "probe_attribute_capabilities",
                   "securebits": "probe_attribute_securebits"}

# capability(7) names by bit (include/uapi/linux/capability.h)
_CAPABILITIES = ("chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid", "setpcap",
                 "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw", "ipc_lock",
                 "ipc_owner", "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct", "sys_admin",
                 "sys_boot", "sys_nice", "sys_resource", "sys_time", "sys_tty_config", "mknod", "lease", "audit_write",
                 "audit_control", "setfcap", "mac_override", "mac_admin", "syslog", "wake_alarm", "block_suspend",
                 "audit_read", "perfmon", "bpf", "checkpoint_restore")
# (/proc/PID/status field, its name, the kind of weakening a capability the starter has not is reported as)
_CAP_SETS = (("capamb", "CapAmb", "ambient"), ("capinh", "CapInh", "capabilities"))
_CAP_HELD = (("capbnd", "CapBnd", "bounding"), ("capprm", "CapPrm", "capabilities"),
             ("capeff", "CapEff", "capabilities"))

# personality(2) flags by name (include/uapi/linux/personality.h)
_PERSONALITY = {0x0040000: "ADDR_NO_RANDOMIZE", 0x0400000: "READ_IMPLIES_EXEC", 0x0200000: "ADDR_COMPAT_LAYOUT",
                0x0080000: "FDPIC_FUNCPTRS", 0x1000000: "SHORT_INODE", 0x2000000: "WHOLE_SECONDS",
                0x4000000: "STICKY_TIMEOUTS", 0x8000000: "ADDR_LIMIT_3GB", 0x0800000: "ADDR_LIMIT_32BIT",
                0x0100000: "MMAP_PAGE_ZERO", 0x0020000: "UNAME26"}


def _starter(sc: Scene) -> t.Tuple[t.Any, t.Any, str]:
    """(attributes, privileges, who) of the process the payload is compared with."""
    context = sc.outside.get("context")
    if isinstance(context, dict) and context:
        return (context.get("attributes"), context.get("privileges") or sc.host.get("privileges"),
                str(context.get("from") or "the unit's process"))
    return sc.host.get("attributes"), sc.host.get("privileges"), "the probe itself"


def _flags(value: int) -> str:
    names = [name for bit, name in sorted(_PERSONALITY.items()) if value & bit]
    rest = value & ~sum(_PERSONALITY)
    return "|".join(names + (["0x%x" % rest] if rest else [])) or "0"


def _limit_weaker(mine: t.Any, ref: t.Any) -> bool:
    """A limit (-1 unlimited) higher than the starter's."""
    return bool(ref != -1 and (mine == -1 or mine > ref))


def _compare(mine: Json, ref: Json, who: str) -> t.List[t.Tuple[str, str]]:
    """[(kind, what)] of each attribute of the payload weaker than the starter's (or not read on either side)."""
    out: t.List[t.Tuple[str, str]] = []
    for key, kind in (("personality", "personality"), ("nice", "priority"), ("oom_score_adj", "oom"),
                      ("limits", "rlimit")):
        if is_error(mine.get(key)) or is_error(ref.get(key)) or mine.get(key) is None or ref.get(key) is None:
            said = "%s: not proven (the payload's: %s, %s's: %s)" % (key, mine.get(key), who, ref.get(key))
            out.append((kind, said))
    if out:
        return out
    added = mine["personality"] & ~ref["personality"]
    if mine["personality"] != ref["personality"]:
        out.append(("personality", "personality %s, %s has %s%s" % (
            _flags(mine["personality"]), who, _flags(ref["personality"]),
            " (%s added: address space layout randomisation off)" % _flags(added)
            if added & 0x0040000 else " (%s added)" % _flags(added) if added else "")))
    if mine["nice"] < ref["nice"] or mine.get("policy") != ref.get("policy") or \
            (mine.get("rt_priority") or 0) > (ref.get("rt_priority") or 0):
        out.append(("priority", "nice %s, scheduling policy %s, real-time priority %s; %s has nice %s, policy %s, "
                                "real-time priority %s (raised: it takes the CPU from the host)" % (
                                    mine["nice"], mine.get("policy"), mine.get("rt_priority"), who, ref["nice"],
                                    ref.get("policy"), ref.get("rt_priority"))))
    if mine["oom_score_adj"] < ref["oom_score_adj"]:
        out.append(("oom", "oom_score_adj %s, %s has %s (the OOM killer spares the sandbox, kills the host's "
                           "processes first)" % (mine["oom_score_adj"], who, ref["oom_score_adj"])))
    raised = ["%s %s (%s has %s)" % (name, "/".join("unlimited" if v == -1 else str(v) for v in pair), who,
                                     "/".join("unlimited" if v == -1 else str(v) for v in ref["limits"].get(name)))
              for name, pair in sorted(mine["limits"].items()) if name in ref["limits"]
              and any(_limit_weaker(a, b) for a, b in zip(pair, ref["limits"][name]))]
    missing = sorted(set(ref["limits"]) - set(mine["limits"]))
    if raised or missing:
        out.append(("rlimit", "limits raised: %s" % ", ".join(raised + ["%s not read" % m for m in missing])))
    return out


def _compare_privileges(mine: t.Any, ref: t.Any, who: str) -> t.List[t.Tuple[str, str]]:
    """no_new_privs and the seccomp mode, not lower than the starter's."""
    if not isinstance(mine, dict) or not isinstance(ref, dict):
        return [("privileges", "no_new_privs and seccomp: not proven (the payload's %s, %s's %s)" % (
            type(mine).__name__, who, type(ref).__name__))]
    out = []
    if isinstance(ref.get("nonewprivs"), int) and (mine.get("nonewprivs") or 0) < ref["nonewprivs"]:
        out.append(("privileges", "no_new_privs %s, %s has %s" % (mine.get("nonewprivs"), who, ref["nonewprivs"])))
    if isinstance(ref.get("seccomp"), int) and (mine.get("seccomp") or 0) < ref["seccomp"]:
        out.append(("privileges", "seccomp mode %s, %s has %s" % (mine.get("seccomp"), who, ref["seccomp"])))
    return out


def _cap_names(value: int) -> str:
    return ",".join(_CAPABILITIES[bit] if bit < len(_CAPABILITIES) else "cap_%d" % bit
                    for bit in range(64) if value >> bit & 1)


def _compare_capabilities(mine: t.Any, ref: t.Any, who: str, same_userns: bool) -> t.List[t.Tuple[str, str]]:
    """Capability sets not wider than the starter's: ambient and inheritable always (a new user namespace starts
    with both empty: what the payload holds there was added, --cap-add or a wrapper); bounding, permitted and
    effective only when the payload is in the starter's user namespace (a new one starts with them full, and
    bwrap's no_capabilities check judges what it keeps)."""
    if not isinstance(mine, dict) or not isinstance(ref, dict):
        return [("capabilities", "capabilities: not proven (the payload's %s, %s's %s)" % (
            type(mine).__name__, who, type(ref).__name__))]
    out = []
    for key, name, kind in _CAP_SETS + (_CAP_HELD if same_userns else ()):
        if not isinstance(mine.get(key), int) or not isinstance(ref.get(key), int):
            out.append((kind, "%s: not proven (the payload's %s, %s's %s)" % (name, mine.get(key), who, ref.get(key))))
        elif mine[key] & ~ref[key]:
            added = _cap_names(mine[key] & ~ref[key])
            out.append((kind, "%s 0x%x, %s has 0x%x (added: %s)" % (name, mine[key], who, ref[key], added)))
    return out


# securebits(7) by bit; SECBIT_KEEP_CAPS (4) is cleared by every execve, so a payload never keeps it
_SECUREBITS = ("noroot", "noroot_locked", "no_setuid_fixup", "no_setuid_fixup_locked", "keep_caps", "keep_caps_locked",
               "no_cap_ambient_raise", "no_cap_ambient_raise_locked")
_KEEP_CAPS = 1 << 4
# systemd's SecureBits= words (systemd.exec(5)): the bits the unit's process starts with
_UNIT_SECUREBITS = {"noroot": 0, "noroot-locked": 1, "no-setuid-fixup": 2, "no-setuid-fixup-locked": 3,
                    "keep-caps": 4, "keep-caps-locked": 5}


def own_securebits() -> t.Any:
    """This process's securebits (prctl PR_GET_SECUREBITS), or an error text: /proc does not show them."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        bits = libc.prctl(27, 0, 0, 0, 0)
    except (OSError, AttributeError) as exc:
        return "error:%s" % type(exc).__name__
    return bits if bits >= 0 else "error:errno %d" % ctypes.get_errno()


def unit_securebits(assignments: t.Iterable[t.Sequence[t.Any]]) -> t.Any:
    """The securebits the unit's process runs with, from its SecureBits= lines (systemd's merge: an empty value
    resets), or an error text for a word systemd would not know."""
    bits = 0
    for row in assignments:
        if str(row[0]) != "SecureBits":
            continue
        words = str(row[1]).split()
        if not words:
            bits = 0
        for word in words:
            if word not in _UNIT_SECUREBITS:
                return "error:SecureBits=%s" % word[:40]
            bits |= 1 << _UNIT_SECUREBITS[word]
    return bits


def _bit_names(value: int) -> str:
    return ",".join(_SECUREBITS[bit] if bit < len(_SECUREBITS) else "bit_%d" % bit
                    for bit in range(32) if value >> bit & 1) or "none"


def _compare_securebits(mine: t.Any, ref: t.Any, who: str, same_userns: bool) -> t.List[t.Tuple[str, str]]:
    """The payload's securebits (prctl, reported through the collector) hold every bit its starter's hold, but
    SECBIT_KEEP_CAPS, which execve clears. Compared only in the starter's user namespace: the kernel starts a new
    user namespace with none (set_cred_user_ns), and they govern capabilities of that namespace alone."""
    if not same_userns:
        return []
    if not isinstance(mine, int) or isinstance(mine, bool) or not isinstance(ref, int) or isinstance(ref, bool):
        return [("securebits", "securebits: not proven (the payload's %s, %s's %s)" % (mine, who, ref))]
    lost = ref & ~mine & ~_KEEP_CAPS
    if lost:
        return [("securebits", "securebits 0x%x (%s), %s has 0x%x (%s): %s cleared between them" % (
            mine, _bit_names(mine), who, ref, _bit_names(ref), _bit_names(lost)))]
    return []


def _same_userns(sc: Scene) -> bool:
    """The payload is in its starter's user namespace (not proven: judged as if it were, the stricter)."""
    mine = (sc.payload.get("ns") or {}).get("user")
    context = sc.outside.get("context")
    theirs = (context.get("ns") if isinstance(context, dict) and context else sc.host.get("ns")) or {}
    return not mine or is_error(mine) or mine == theirs.get("user")


def check_attributes(sc: Scene) -> None:
    """9e. The payload's personality, scheduling priority, rlimits, oom_score_adj, no_new_privs and seccomp mode,
    read from the host's /proc, are not weaker than its starter's (the probe, or the unit's process): ASLR
    switched off (setarch -R), a raised priority (nice -15), a higher limit, a lower oom_score_adj each a
    finding of its own."""
    mine = sc.payload.get("attributes")
    problems = unread(sc, mine, dict, "reading its attributes")
    ref, ref_privileges, who = _starter(sc)
    kinds: t.List[t.Tuple[str, str]] = []
    if not problems and isinstance(mine, dict):
        kinds = _compare(mine, ref, who) if isinstance(ref, dict) else [
            ("personality", "not proven: %s's attributes were not read (%s)" % (who, ref))]
        kinds.extend(_compare_privileges(sc.payload.get("privileges"), ref_privileges, who))
        kinds.extend(_compare_capabilities(sc.payload.get("privileges"), ref_privileges, who, _same_userns(sc)))
        context = sc.outside.get("context")
        kinds.extend(_compare_securebits(sc.obs.get("securebits"), sc.spec.get("unit_securebits") if isinstance(
            context, dict) and context else sc.host.get("securebits"), who, _same_userns(sc)))
        problems.extend(what for _kind, what in kinds)
    sc.add("process_attributes", "R-SCOPE-1", "personality, priority, rlimits, oom_score_adj, no_new_privs, "
           "seccomp mode, capability sets and securebits not weaker than %s's" % who,
           {"payload": mine, "starter": who, "problems": problems[:12], "kinds": [list(k) for k in kinds[:12]]},
           not problems)
