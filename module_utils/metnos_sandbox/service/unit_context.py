# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service's execution context for the probe's transient unit: copy everything, minus a
documented list.

The probe must run where the service's processes run: same credentials, sandboxing,
filesystem view, namespaces, seccomp filters, address families, IP/socket policy,
capabilities, resource limits, working and root directory, MAC labels, environment, ...
Instead of a hand-picked list of directives, every assignment of the unit's ``[Service]``
section (the fragment and every drop-in, in the order systemd applies them, as systemd itself
lists them in ``FragmentPath``/``DropInPaths``) is carried to ``systemd-run -p`` verbatim,
with systemd's specifiers expanded for the *service's* name (transient units do not expand
them). A directive a later systemd release adds is carried the same way, without a code
change. Only ``DENY`` (context_deny) is not copied; each entry says why.

What cannot be carried is named, never dropped in silence:
- a directive systemd-run rejects (not transient-capable in this systemd version, or a value
  its client cannot parse): the preflight (unit_preflight) treats the rejection as data, retries without it and
  records systemd's own words;
- a directive in ``DENY`` whose effect on the processes is real but unsafe to reproduce
  (``carry=False``: the transient unit would create, chown or remove the service's own
  directories);
- an unknown specifier.

Here: the plan (read_assignments, specifier_table, plan) and the comparison of ``systemctl show`` outputs;
unit_preflight builds the context and proves the copy (build): it starts the transient unit once (``/bin/true``,
``RemainAfterExit=yes``), reads ``systemctl show`` of it and of the service, and compares every
property except ``IGNORED_PROPERTIES`` (unit identity, lifecycle and runtime state). A
property that differs is retried once in the form ``systemctl show`` prints it (which also
carries what the files do not say, e.g. the slice of a template instance); what still differs
is reported. Anything named lowers the probe's confidence.

Pure Python, no Ansible imports; runs on managed hosts (Python >= 3.8).
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import re
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import systemd_unit
from .context_deny import DENY, DIRECTORY_ROOTS, UNIT_SECTION_CARRIED, ignored_property

Assignment = List[str]                              # [directive, value, where]
Line = Tuple[Optional[str], str, str, str]          # (section, key, value, where) of a unit file

MAX_FILE = 1 << 20          # bytes read per unit file
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


# --------------------------------------------------------------------------- reading the unit

def read_assignments(paths: Iterable[str], read: Optional[Callable[[str], str]] = None
                     ) -> Tuple[List[Line], List[Dict[str, str]]]:
    """Assignments of ``paths`` (fragment first, then drop-ins in systemd's order), as
    ([(section, key, value, where)], [problems]). Bounded reads; an unreadable or oversized file is
    a problem, never skipped in silence."""
    out: List[Line] = []
    problems: List[Dict[str, str]] = []
    for path in paths:
        if not path:
            continue
        try:
            if read is not None:
                text = read(path)
            else:
                with open(path, "rb") as handle:
                    text = handle.read(MAX_FILE + 1).decode("utf-8", "replace")
        except (IOError, OSError) as exc:
            problems.append({"path": path, "error": exc.strerror or str(exc)})
            continue
        if len(text) > MAX_FILE:
            problems.append({"path": path, "error": "longer than %d bytes; not read" % MAX_FILE})
            continue
        for section, key, value, lineno in systemd_unit.parse_unit_text(text):
            out.append((section, key, value, "%s:%d" % (path, lineno)))
    return out, problems


def unit_files(show: Mapping[str, str]) -> List[str]:
    """The files systemd loaded the unit from, in the order it applies them."""
    files = [show.get("FragmentPath") or ""]
    files += (show.get("DropInPaths") or "").split()
    return [f for f in files if f]


# --------------------------------------------------------------------------- specifiers

def _unescape_unit(text: str) -> str:
    """systemd's unit_name_path_unescape for %I/%P/%J/%f: '-' is '/', '\\xNN' a byte."""
    out = re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)) if m.group(1).lower() != "2d" else
                 "\0", text)
    return out.replace("-", "/").replace("\0", "-")


def specifier_table(unit: str, scope: str = "system", user: Optional[Mapping[str, Any]] = None,
                    fragment: Optional[str] = None, proc: str = "/proc") -> Dict[str, str]:
    """Values of systemd's specifiers for ``unit`` (systemd.unit(5)). The manager's user is root
    for the system manager, ``user`` (a pwd entry-like dict) for a user manager."""
    base, _dot, _suffix = unit.rpartition(".")
    prefix, at, instance = base.partition("@")
    prefix_last = prefix.rsplit("-", 1)[-1]

    def read(path: str) -> Optional[str]:
        try:
            with open(path) as handle:
                return handle.read(4096).strip()
        except (IOError, OSError):
            return None

    if scope == "user" and user:
        home = user.get("home") or "/"
        runtime = "/run/user/%s" % user.get("uid")
        dirs = {"t": runtime, "S": home + "/.local/state", "C": home + "/.cache", "L": home + "/.local/state/log",
                "E": home + "/.config", "u": user.get("name"), "U": str(user.get("uid")), "h": home,
                "g": user.get("group") or user.get("name"), "G": str(user.get("gid")),
                "s": user.get("shell") or "/bin/sh"}
    else:
        dirs = {"t": "/run", "S": "/var/lib", "C": "/var/cache", "L": "/var/log", "E": "/etc", "u": "root",
                "U": "0", "h": "/root", "g": "root", "G": "0", "s": "/bin/sh"}
    host = os.uname()[1]         # what gethostname() returns
    table = {
        "n": unit, "N": base, "p": prefix, "P": _unescape_unit(prefix), "i": instance if at else "",
        "I": _unescape_unit(instance) if at else "", "j": prefix_last, "J": _unescape_unit(prefix_last),
        "f": "/" + _unescape_unit(instance if at and instance else prefix),
        "T": "/tmp", "V": "/var/tmp", "H": host, "l": host.split(".")[0], "v": os.uname()[2], "%": "%",
        "m": read("/etc/machine-id"), "b": (read(os.path.join(proc, "sys/kernel/random/boot_id")) or "").replace(
            "-", "") or None,
        "y": fragment, "Y": os.path.dirname(fragment) if fragment else None,
    }
    table.update(dirs)
    return dict((k, v) for k, v in table.items() if v is not None)


def expand(value: str, table: Mapping[str, str]) -> Tuple[str, List[str]]:
    """Expand specifiers. Returns (value, unknown specifier letters)."""
    unknown = []

    def sub(match: re.Match[str]) -> str:
        letter = match.group(1)
        if letter in table:
            return table[letter]
        unknown.append(letter)
        return match.group(0)

    return re.sub(r"%(.)", sub, value), unknown


# --------------------------------------------------------------------------- the plan

def plan(assignments: Iterable[Line], table: Optional[Mapping[str, str]] = None,
         denied: Optional[Mapping[str, Tuple[str, Optional[str]]]] = None, static_user: bool = False) -> Dict[str, Any]:
    """Unit assignments -> the context to carry.

    Returns {"assignments": [[key, value, where]], "excluded": [{directive, category}],
    "not_carried": [{directive, reason, where}], "carried_as": [...]}. ``denied`` overrides DENY
    (tests); ``static_user``: a system unit whose directories may be carried as their mounts.
    """
    denied = DENY if denied is None else denied
    carried: List[Assignment] = []
    excluded: Dict[str, str] = {}
    not_carried: List[Dict[str, Any]] = []
    for section, key, value, where in assignments:
        if section in ("Unit", "Install") and key not in UNIT_SECTION_CARRIED:
            continue
        if section not in ("Service", "Unit"):
            continue
        if not _KEY.match(key):
            not_carried.append({"directive": key, "reason": "not a directive name", "where": where})
            continue
        if key in denied:
            category, note = denied[key]
            if note:
                previous = [n for n in not_carried if n["directive"] == key]
                if value == "":
                    not_carried[:] = [n for n in not_carried if n["directive"] != key]
                elif previous:
                    previous[0]["value"] += " " + value
                else:
                    not_carried.append({"directive": key, "reason": note, "where": where, "category": category,
                                        "value": value})
            else:
                excluded.setdefault(key, category)
            continue
        if table is not None and "%" in value:
            value, unknown = expand(value, table)
            if unknown:
                not_carried.append({"directive": key, "where": where,
                                    "reason": "specifier %s is not known to this toolkit and transient units do "
                                              "not expand specifiers" % ", ".join("%" + u for u in unknown)})
                carried = [a for a in carried if a[0] != key]
                continue
        if any(n["directive"] == key and n["reason"].startswith("specifier") for n in not_carried):
            continue
        carried.append([key, value, where])
    out = {"assignments": carried,
           "excluded": [{"directive": k, "category": v} for k, v in sorted(excluded.items())],
           "not_carried": not_carried, "carried_as": []}
    _directories_as_mounts(out, static_user)
    return out


def _directories_as_mounts(ctx: Dict[str, Any], static_user: bool) -> None:
    """StateDirectory= & co. of a static user: their writable mount, as ReadWritePaths= of the paths."""
    if not static_user:
        return
    dynamic = [a for a in ctx["assignments"] if a[0] == "DynamicUser"]
    if dynamic and dynamic[-1][1].strip().lower() in ("yes", "true", "1", "on"):
        return
    keep = []
    for item in ctx["not_carried"]:
        root = DIRECTORY_ROOTS.get(item["directive"])
        if root is None or not item.get("value"):
            keep.append(item)
            continue
        paths = ["-%s/%s" % (root, word.split(":")[0].strip("/")) for word in item["value"].split()
                 if word.split(":")[0].strip("/") and ".." not in word]
        if not paths or len(paths) != len(item["value"].split()):
            keep.append(item)           # an empty list would reset ReadWritePaths=; an odd name stays named
            continue
        ctx["assignments"].append(["ReadWritePaths", " ".join(paths), item["where"]])
        ctx["carried_as"].append({"directive": item["directive"], "where": item["where"],
                                  "as": ["ReadWritePaths=%s" % " ".join(paths)], "mount_only": paths,
                                  "note": "the writable mount only: the transient unit neither creates, chowns "
                                          "nor removes the service's directory (and sets no %s_DIRECTORY)"
                                          % item["directive"][:-len("Directory")].upper()})
    ctx["not_carried"] = keep


def directives(context: Mapping[str, Any]) -> List[str]:
    """The directive names a context carries, in first-seen order."""
    return list(dict.fromkeys(a[0] for a in context.get("assignments") or []))


def property_args(assignments: Iterable[Sequence[str]]) -> List[str]:
    """systemd-run arguments for the carried assignments."""
    out = []
    for key, value, _where in assignments:
        out += ["-p", "%s=%s" % (key, value)]
    return out


def own_exec_paths(assignments: Iterable[Sequence[str]], programs: Iterable[str]) -> List[str]:
    """systemd-run arguments that keep the probe's own programs executable where the unit restricts
    execution (NoExecPaths=): the launcher stands for the service's own process, which the unit executes
    by definition (its ExecStart= binary, which the service's ExecPaths= names); bwrap and what runs in
    the sandbox get nothing. [] when the unit's NoExecPaths= is empty (unset, or reset by an empty
    assignment) or its ExecPaths= already covers them (the copy then stays equal to the service)."""
    lists: Dict[str, List[str]] = {"NoExecPaths": [], "ExecPaths": []}
    for key, value, _where in assignments:
        if key in lists:
            lists[key] = lists[key] + [w.lstrip("-+") for w in value.split()] if value.strip() else []
    if not lists["NoExecPaths"]:
        return []
    paths = sorted(set(os.path.realpath(p) for p in programs if p))
    paths = [p for p in paths if not any(e.startswith("/") and (p == e or p.startswith(e.rstrip("/") + "/"))
                                         for e in lists["ExecPaths"])]
    return ["-p", "ExecPaths=%s" % " ".join(paths)] if paths else []


# --------------------------------------------------------------------------- show <-> assignment

def parse_show_all(text: str) -> Dict[str, str]:
    """`systemctl show --all` output -> {property: value} (first occurrence wins; multi-line
    values such as ExecStart appear once per line and are not compared)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key not in out:
            out[key] = value
    return out


def show_assignment(prop: str, service_show: Mapping[str, str]) -> Optional[List[str]]:
    """The assignment that sets ``prop`` to the value ``systemctl show`` prints for the service,
    for the few properties whose printed form differs from the directive; None if unknown."""
    value = service_show.get(prop)
    if value is None:
        return None
    if prop.startswith("Limit") and prop.endswith("Soft"):     # LimitXSoft: the LimitX=soft:hard pair
        prop = prop[:-4]
        return [prop, "%s:%s" % (value, service_show.get(prop))]
    if prop.startswith("Limit") and prop + "Soft" in service_show:
        return [prop, "%s:%s" % (service_show[prop + "Soft"], value)]
    if prop == "WorkingDirectory" and value.startswith("!"):
        return [prop, "-" + value[1:]]
    if prop == "CPUQuotaPerSecUSec":
        usec = _usec(value)
        return None if usec is None else ["CPUQuota", "" if isinstance(usec, str) else "%g%%" % (usec / 10000.0)]
    if prop.endswith("USec") and prop not in ("CPUQuotaPerSecUSec",):
        return [prop[:-4] + "Sec", value]
    return [prop, value]


def _usec(text: str) -> Union[str, float, None]:
    """A `systemctl show` time span -> microseconds, "infinity", or None (zero or unparsed)."""
    if text == "infinity":
        return "infinity"
    units = {"us": 1, "ms": 1000, "s": 1000000, "min": 60000000, "h": 3600000000}
    total = 0.0
    for number, unit in re.findall(r"([0-9.]+)\s*(us|ms|min|s|h)", text):
        total += float(number) * units[unit]
    return total or None


# Properties systemd keeps as sets: the order `show` prints them in carries no meaning.
SET_VALUED = frozenset(("SystemCallFilter", "SystemCallArchitectures", "RestrictAddressFamilies",
                        "RestrictFileSystems", "RestrictNetworkInterfaces", "RestrictNamespaces",
                        "CapabilityBoundingSet", "AmbientCapabilities", "IPAddressAllow", "IPAddressDeny",
                        "SocketBindAllow", "SocketBindDeny", "SupplementaryGroups"))


def compare(service_show: Mapping[str, str], probe_show: Mapping[str, str]) -> List[Dict[str, Any]]:
    """Properties (not ignored) whose values differ: [{property, service, probe}]."""
    diffs = []
    for prop in sorted(set(service_show) | set(probe_show)):
        if ignored_property(prop):
            continue
        a, b = service_show.get(prop), probe_show.get(prop)
        if a != b and not (prop in SET_VALUED and a is not None and b is not None and
                           a.startswith("~") == b.startswith("~") and
                           sorted(a.lstrip("~").split()) == sorted(b.lstrip("~").split())):
            diffs.append({"property": prop, "service": a, "probe": b})
    return diffs
