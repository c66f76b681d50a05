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
change. Only ``DENY`` below is not copied; each entry says why.

What cannot be carried is named, never dropped in silence:
- a directive systemd-run rejects (not transient-capable in this systemd version, or a value
  its client cannot parse): ``preflight`` treats the rejection as data, retries without it and
  records systemd's own words;
- a directive in ``DENY`` whose effect on the processes is real but unsafe to reproduce
  (``carry=False``: the transient unit would create, chown or remove the service's own
  directories);
- an unknown specifier.

``preflight`` then proves the copy: it starts the transient unit once (``/bin/true``,
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
import socket
import uuid
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ..host import bwrap as B
from . import systemd_unit as U

Assignment = List[str]                              # [directive, value, where]
Line = Tuple[Optional[str], str, str, str]          # (section, key, value, where) of a unit file

# --------------------------------------------------------------------------- what is not copied

LIFECYCLE = "lifecycle"      # how systemd starts/stops/restarts/supervises the unit: not the processes' context
PROBE = "probe"              # the probe sets its own value (command, pipes, kill and timeout policy)
SIDE_EFFECT = "side_effect"  # a real effect on the processes, but copying it would act on the service's data

CATEGORIES = {
    LIFECYCLE: "how systemd starts, stops, restarts and supervises the unit; not what its processes run under",
    PROBE: "the probe sets its own value: its command, its pipes, its kill and timeout policy",
    SIDE_EFFECT: "it changes what the processes see, but a copy would act on the service's own data (the "
                 "transient unit would create, chown or remove the service's directories, or open a PAM "
                 "session): for a static User= "
                 "of a system unit its writable mount is carried as ReadWritePaths= of the existing paths "
                 "(ConfigurationDirectory= and DynamicUser= units excepted); otherwise it is named in the "
                 "result and the probe's confidence is lowered",
}


def _deny(category: str, names: Iterable[str],
          carry_note: Optional[str] = None) -> Dict[str, Tuple[str, Optional[str]]]:
    return dict((name, (category, carry_note)) for name in names)


DENY: Dict[str, Tuple[str, Optional[str]]] = {}
DENY.update(_deny(LIFECYCLE, (
    # the service's commands and their search path (the probe runs its own command)
    "ExecStart", "ExecStartPre", "ExecStartPost", "ExecCondition", "ExecReload", "ExecStop", "ExecStopPost",
    "ExecSearchPath",
    # type, supervision, restart policy, exit statuses
    "Type", "ExitType", "RemainAfterExit", "GuessMainPID", "PIDFile", "BusName", "NotifyAccess",
    "Restart", "RestartMode", "RestartSec", "RestartSteps", "RestartMaxDelaySec", "SuccessExitStatus",
    "RestartPreventExitStatus", "RestartForceExitStatus", "OOMPolicy", "ReloadSignal",
    "RootDirectoryStartOnly", "PermissionsStartOnly",
    # timeouts of the service lifecycle
    "TimeoutSec", "TimeoutStartSec", "TimeoutStopSec", "TimeoutAbortSec", "TimeoutCleanSec",
    "TimeoutStartFailureMode", "TimeoutStopFailureMode", "WatchdogSec",
    # activation and file-descriptor passing
    "Sockets", "FileDescriptorStoreMax", "FileDescriptorStorePreserve", "USBFunctionDescriptors",
    "USBFunctionStrings", "OpenFile",
    # start-rate limits and unit actions (accepted in [Service] for compatibility)
    "StartLimitInterval", "StartLimitIntervalSec", "StartLimitBurst", "StartLimitAction", "FailureAction",
    "SuccessAction", "RebootArgument",
    # what systemd does when the unit stops: RemoveIPC= would delete every IPC object of the service's
    # user when the probe's unit stops and nothing else holds that user (a stopped service's objects)
    "RemoveIPC",
    # login accounting (utmp/wtmp records are written on start and stop)
    "UtmpIdentifier", "UtmpMode",
    # modes and keep-policy of the directories below (meaningless without them)
    "RuntimeDirectoryMode", "StateDirectoryMode", "CacheDirectoryMode", "LogsDirectoryMode",
    "ConfigurationDirectoryMode", "RuntimeDirectoryPreserve",
)))
DENY.update(_deny(PROBE, (
    "KillMode", "KillSignal", "RestartKillSignal", "FinalKillSignal", "SendSIGKILL", "SendSIGHUP",
    "WatchdogSignal", "RuntimeMaxSec", "RuntimeRandomizedExtraSec",
    "StandardInput", "StandardOutput", "StandardError", "StandardInputText", "StandardInputData",
    "TTYPath", "TTYReset", "TTYVHangup", "TTYVTDisallocate", "TTYRows", "TTYColumns", "NonBlocking",
    "SyslogIdentifier", "SyslogFacility", "SyslogLevel", "SyslogLevelPrefix", "LogLevelMax", "LogExtraFields",
    "LogRateLimitIntervalSec", "LogRateLimitBurst", "LogFilterPatterns", "LogNamespace",
)))
DENY.update(_deny(SIDE_EFFECT, ("PAMName",), carry_note="a PAM session's modules may write login records and "
                                                        "set limits or environment; the probe opens none"))
DENY.update(_deny(SIDE_EFFECT, (
    "RuntimeDirectory", "StateDirectory", "CacheDirectory", "LogsDirectory", "ConfigurationDirectory",
), carry_note="the transient unit would create/chown (and for RuntimeDirectory= remove on stop) the "
              "service's own directory; the writable mount it adds under ProtectSystem= is not reproduced"))
# For a static User= of a system unit, what the processes see of these directories -- a writable
# mount of an existing path -- is carried as ReadWritePaths= (no creation, no chown, no removal).
DIRECTORY_ROOTS = {"RuntimeDirectory": "/run", "StateDirectory": "/var/lib", "CacheDirectory": "/var/cache",
                   "LogsDirectory": "/var/log"}

# [Unit] and [Install] hold dependencies, ordering, conditions, triggers, descriptions and start
# limits: copying them would start or stop other units. One [Unit] directive is execution context.
UNIT_SECTION_CARRIED = ("JoinsNamespaceOf",)

# `systemctl show` properties that describe the unit, not its processes: identity, dependencies,
# state, timestamps, counters, and the properties of the DENY directives. Used only to compare
# the probe's unit with the service; a property not listed here that differs is reported.
IGNORED_PROPERTIES = frozenset((
    "Id", "Names", "Following", "Description", "Documentation", "LoadState", "ActiveState", "FreezerState",
    "SubState", "FragmentPath", "SourcePath", "DropInPaths", "UnitFileState", "UnitFilePreset", "Transient",
    "Perpetual", "NeedDaemonReload", "Job", "Refs", "CanStart", "CanStop", "CanReload", "CanIsolate", "CanClean",
    "CanFreeze", "CanLiveMount", "StopWhenUnneeded", "RefuseManualStart", "RefuseManualStop", "AllowIsolate",
    "DefaultDependencies", "SurviveFinalKillSignal", "OnSuccessJobMode", "OnFailureJobMode", "IgnoreOnIsolate",
    "JobTimeoutUSec", "JobRunningTimeoutUSec", "JobTimeoutAction", "JobTimeoutRebootArgument", "ConditionResult",
    "AssertResult", "Conditions", "Asserts", "LoadError", "InvocationID", "CollectMode", "StartLimitIntervalUSec",
    "StartLimitBurst", "StartLimitAction", "FailureAction", "FailureActionExitStatus", "SuccessAction",
    "SuccessActionExitStatus", "RebootArgument", "AccessSELinuxContext", "ActivationDetails", "Markers",
    "DebugInvocation",
    # dependencies and ordering
    "Requires", "Requisite", "Wants", "BindsTo", "PartOf", "Upholds", "RequiredBy", "RequisiteOf", "WantedBy",
    "BoundBy", "UpheldBy", "ConsistsOf", "Conflicts", "ConflictedBy", "Before", "After", "OnSuccess",
    "OnSuccessOf", "OnFailure", "OnFailureOf", "Triggers", "TriggeredBy", "PropagatesReloadTo",
    "ReloadPropagatedFrom", "PropagatesStopTo", "StopPropagatedFrom", "JoinsNamespaceOf", "SliceOf",
    "RequiresMountsFor", "WantsMountsFor", "References", "ReferencedBy",
    # service lifecycle and state
    "Type", "ExitType", "Restart", "RestartMode", "NotifyAccess", "RestartUSec", "RestartSteps",
    "RestartMaxDelayUSec", "RestartUSecNext", "TimeoutStartUSec", "TimeoutStopUSec", "TimeoutAbortUSec",
    "TimeoutCleanUSec", "TimeoutStartFailureMode", "TimeoutStopFailureMode", "RuntimeMaxUSec",
    "RuntimeRandomizedExtraUSec", "WatchdogUSec", "PermissionsStartOnly", "RootDirectoryStartOnly",
    "RemainAfterExit", "GuessMainPID", "PIDFile", "BusName", "MainPID", "ControlPID", "FileDescriptorStoreMax",
    "NFileDescriptorStore", "FileDescriptorStorePreserve", "StatusText", "StatusErrno", "StatusBusError",
    "StatusVarlinkError", "Result", "ReloadResult", "CleanResult", "LiveMountResult", "UID", "GID", "NRestarts",
    "OOMPolicy", "ReloadSignal", "SuccessExitStatus", "RestartPreventExitStatus", "RestartForceExitStatus",
    "OpenFile", "ExtraFileDescriptorNames", "ExecSearchPath", "Sockets",
    # kill policy and I/O plumbing (the probe's own)
    "KillMode", "KillSignal", "RestartKillSignal", "FinalKillSignal", "SendSIGKILL", "SendSIGHUP",
    "WatchdogSignal", "StandardInput", "StandardOutput", "StandardError", "StandardInputData",
    "StandardInputFileDescriptorName", "StandardOutputFileDescriptorName", "StandardErrorFileDescriptorName",
    "TTYPath", "TTYReset", "TTYVHangup", "TTYVTDisallocate", "TTYRows", "TTYColumns", "NonBlocking",
    "SyslogIdentifier", "SyslogFacility", "SyslogLevel", "SyslogLevelPrefix", "SyslogPriority", "LogLevelMax",
    "LogExtraFields", "LogRateLimitIntervalUSec", "LogRateLimitBurst", "LogFilterPatterns", "LogNamespace",
    # the directories (named as not carried instead) and their modes
    "RuntimeDirectory", "StateDirectory", "CacheDirectory", "LogsDirectory", "ConfigurationDirectory",
    "RuntimeDirectorySymlink", "StateDirectorySymlink", "CacheDirectorySymlink", "LogsDirectorySymlink",
    "RuntimeDirectoryMode", "StateDirectoryMode", "CacheDirectoryMode", "LogsDirectoryMode",
    "ConfigurationDirectoryMode", "RuntimeDirectoryPreserve", "RemoveIPC", "UtmpIdentifier", "UtmpMode",
    "PAMName",
    # cgroup runtime state and counters
    "ControlGroup", "ControlGroupId", "MemoryCurrent", "MemoryPeak", "MemorySwapCurrent", "MemorySwapPeak",
    "MemoryZSwapCurrent", "MemoryAvailable", "EffectiveMemoryMax", "EffectiveMemoryHigh", "EffectiveTasksMax",
    "EffectiveCPUs", "EffectiveMemoryNodes", "CPUUsageNSec", "TasksCurrent", "IPIngressBytes", "IPIngressPackets",
    "IPEgressBytes", "IPEgressPackets", "IOReadBytes", "IOReadOperations", "IOWriteBytes", "IOWriteOperations",
))
_IGNORED_PATTERNS = (re.compile(r"Timestamp(Monotonic)?$"), re.compile(r"^ExecMain"),
                     re.compile(r"^Exec(Start|Stop|Reload|Condition)"))

MAX_FILE = 1 << 20          # bytes read per unit file
MAX_ATTEMPTS = 24           # systemd-run attempts per preflight (rejections, bisection, fallback)
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


def ignored_property(name: str) -> bool:
    return name in IGNORED_PROPERTIES or any(p.search(name) for p in _IGNORED_PATTERNS)


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
        for section, key, value, lineno in U.parse_unit_text(text):
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
    host = socket.gethostname()
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


# --------------------------------------------------------------------------- systemd-run as data

_REJECTION_PATTERNS = (
    re.compile(r"Unknown assignment: ([A-Za-z0-9]+)="),
    re.compile(r"Cannot set property ([A-Za-z0-9]+)"),
    re.compile(r"Failed to parse ([A-Za-z0-9]+)"),
    re.compile(r"Missing argument to ([A-Za-z0-9]+)="),
    re.compile(r"Invalid ([A-Za-z0-9]+) setting"),
    re.compile(r"\b([A-Z][A-Za-z0-9]+)= "),
    re.compile(r"Dependency type ([A-Za-z0-9]+) may not"),
)


def rejected_directive(stderr: str, keys: Sequence[str]) -> Optional[str]:
    """The directive a systemd-run error names, among ``keys``; None when it names none."""
    for pattern in _REJECTION_PATTERNS:
        for match in pattern.finditer(stderr):
            if match.group(1) in keys:
                return match.group(1)
    words = set(re.findall(r"[A-Za-z][A-Za-z0-9]+", stderr))
    named = sorted((k for k in keys if k in words), key=len, reverse=True)
    return named[0] if len(named) == 1 else None


def _error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith("Running as unit")]
    return lines[-1][:300] if lines else "systemd-run failed without a message"


class Preflight(object):
    """Start the transient unit once with the carried context and learn what systemd accepts."""

    def __init__(self, runner: B.Runner, unit_name: str, scope: str = "system", user: Optional[str] = None,
                 base_args: Sequence[str] = ()) -> None:
        self.runner = runner
        self.unit_name = unit_name
        self.scope = scope
        self.user = user
        self.base_args = list(base_args)
        self.attempts = 0
        self.started = False

    def _systemctl(self, *args: str) -> Tuple[int, str, str]:
        argv = ["systemctl"]
        if self.scope == "user":
            argv += ["--user", "--machine=%s@" % self.user]
        return self.runner(argv + list(args))

    def start(self, assignments: Sequence[Sequence[str]]) -> Tuple[bool, str]:
        """One attempt: (ok, stderr)."""
        self.attempts += 1
        argv = ["systemd-run"]
        if self.scope == "user":
            argv += ["--user", "--machine=%s@" % self.user]
        argv += ["--no-block", "--unit=" + self.unit_name, "--service-type=exec", "-p", "RemainAfterExit=yes",
                 "-p", "KillMode=mixed"] + self.base_args + property_args(assignments) + ["/bin/true"]
        rc, _out, err = self.runner(argv)
        self.started = rc == 0
        return rc == 0, err

    def show(self) -> Optional[Dict[str, str]]:
        rc, out, _err = self._systemctl("show", "--all", "--no-pager", self.unit_name + ".service")
        return parse_show_all(out) if rc == 0 else None

    def cleanup(self) -> None:
        """Stop the preflight unit if it was started (a refused one never existed)."""
        if not getattr(self, "started", False):
            return
        self.started = False
        self._systemctl("stop", self.unit_name + ".service")
        self._systemctl("reset-failed", self.unit_name + ".service")

    def accept(self, assignments: Sequence[Assignment],
               not_carried: List[Dict[str, Any]]) -> Optional[List[Assignment]]:
        """Drop rejected directives until systemd-run accepts the rest. Returns the accepted list
        (None when even the empty context is refused)."""
        pending = list(assignments)
        while self.attempts < MAX_ATTEMPTS:
            ok, err = self.start(pending)
            if ok:
                return pending
            keys = list(dict.fromkeys(a[0] for a in pending))
            if not keys:
                return None
            culprit = rejected_directive(err, keys) or self._bisect(pending)
            if culprit is None:
                return None
            where = [a[2] for a in pending if a[0] == culprit]
            not_carried.append({"directive": culprit, "where": where[0] if where else None,
                                "reason": "systemd-run refused it: %s" % _error_line(err)})
            pending = [a for a in pending if a[0] != culprit]
        return None

    def _bisect(self, pending: Sequence[Assignment]) -> Optional[str]:
        """Find one directive whose assignments alone are refused (the error named none)."""
        keys = list(dict.fromkeys(a[0] for a in pending))
        while len(keys) > 1 and self.attempts < MAX_ATTEMPTS:
            half = keys[:len(keys) // 2]
            ok, _err = self.start([a for a in pending if a[0] in half])
            if ok:
                self.cleanup()
                keys = keys[len(keys) // 2:]
            else:
                keys = half
        if len(keys) == 1:
            return keys[0]
        return None


def build(show: Mapping[str, str], runner: B.Runner, unit: str, scope: str = "system", user: Optional[str] = None,
          unit_name: Optional[str] = None, verify: bool = True, read: Optional[Callable[[str], str]] = None,
          user_entry: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The whole context: plan from the unit files, prove it with a preflight unit.

    ``show``: the service's `systemctl show --all` as a dict. Returns the context dict with
    ``assignments`` (what the probe passes), ``excluded``, ``not_carried``, ``differences``,
    ``verified`` and ``confidence`` ("full" or "reduced") and ``reasons``.
    """
    files = unit_files(show)
    assignments, problems = read_assignments(files, read)
    table = specifier_table(unit, scope, user_entry, show.get("FragmentPath") or None)
    ctx = plan(assignments, table, static_user=scope == "system")
    for problem in problems:       # a file systemd loaded but we cannot read: its directives are unknown
        ctx["not_carried"].append({"directive": "(all of %s)" % problem["path"], "where": problem["path"],
                                   "reason": "the unit file could not be read: %s" % problem["error"],
                                   "category": "unreadable"})
    ctx.update(files=files, differences=[], verified=False, attempts=0)
    if verify:
        pre = Preflight(runner, unit_name or "metnos-probe-ctx-%s" % uuid.uuid4().hex[:10], scope, user)
        try:
            _verify(ctx, pre, show)
        finally:
            pre.cleanup()
        ctx["attempts"] = pre.attempts
    _reconcile(ctx)
    ctx["carried"] = directives(ctx)
    reasons = ["%s not carried: %s" % (n["directive"], n["reason"]) for n in ctx["not_carried"]]
    reasons += ["%s differs: the service has %r, the probe's unit %r" % (d["property"], d["service"], d["probe"])
                for d in ctx["differences"]]
    if verify and not ctx["verified"]:
        reasons.append("the copy could not be verified (systemd-run refused the transient unit)")
    ctx["reasons"] = reasons
    ctx["confidence"] = "reduced" if reasons else "full"
    return ctx


def _reconcile(ctx: Dict[str, Any]) -> None:
    """A directive systemd-run refused in the files' form but carried in the form `systemctl show`
    prints (e.g. PrivateTmp=disconnected as PrivateTmpEx=disconnected) is carried, not missing."""
    shown = dict((a[0], a) for a in ctx["assignments"] if str(a[2]).startswith("systemctl show"))
    differing = set(d["property"] for d in ctx["differences"])
    keep = []
    for item in ctx["not_carried"]:
        name = item["directive"]
        forms = [shown[k] for k in (name, name + "Ex") if k in shown]
        if item.get("category") is None and forms and not differing & set((name, name + "Ex")):
            ctx.setdefault("carried_as", []).append(
                {"directive": name, "where": item.get("where"),
                 "as": ["%s=%s" % (f[0], f[1]) for f in forms]})
            continue
        keep.append(item)
    ctx["not_carried"] = keep


def _verify(ctx: Dict[str, Any], pre: Preflight, service_show: Mapping[str, str]) -> None:
    accepted = pre.accept(ctx["assignments"], ctx["not_carried"])
    if accepted is None:
        ctx["assignments"] = []
        return
    ctx["assignments"] = accepted
    probe_show = pre.show()
    pre.cleanup()
    if probe_show is None:
        return
    diffs = _expected_mounts(compare(service_show, probe_show), ctx)
    if diffs:
        # Second round: each differing property in the form `systemctl show` prints it, instead
        # of the files' assignments of that directive (also what the files do not say, such as
        # the slice of a template instance). A form systemd-run refuses keeps the first round's.
        fixes: List[Assignment] = []
        for diff in diffs:
            assignment = show_assignment(diff["property"], service_show)
            if assignment and assignment[0] not in DENY and not any(f[0] == assignment[0] for f in fixes):
                fixes.append([assignment[0], assignment[1], "systemctl show %s" % diff["property"]])
        if fixes:
            second = _second_round(pre, accepted, fixes, service_show, ctx.get("carried_as"))
            if second is not None and len(second[1]) < len(diffs):
                ctx["assignments"], diffs = second
    ctx["differences"] = diffs
    ctx["verified"] = True


def _expected_mounts(diffs: Iterable[Dict[str, Any]], ctx: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Drop the ReadWritePaths= difference that is exactly the directories carried as mounts."""
    added = set(p for c in ctx.get("carried_as") or [] for p in c.get("mount_only") or [])
    out = []
    for diff in diffs:
        if diff["property"] == "ReadWritePaths" and added:
            extra = set((diff["probe"] or "").split()) - set((diff["service"] or "").split())
            missing = set((diff["service"] or "").split()) - set((diff["probe"] or "").split())
            if not missing and extra <= added:
                continue
        out.append(diff)
    return out


def _second_round(pre: Preflight, accepted: List[Assignment], fixes: List[Assignment], service_show: Mapping[str, str],
                  carried_as: Optional[Sequence[Mapping[str, Any]]] = ()
                  ) -> Optional[Tuple[List[Assignment], List[Dict[str, Any]]]]:
    """(assignments, differences) with the show forms that systemd-run accepts, or None."""
    fix_keys = set(f[0] for f in fixes)
    refused: List[Dict[str, Any]] = []
    ok_list = pre.accept([a for a in accepted if a[0] not in fix_keys] + fixes, refused)
    if ok_list is None:
        return None
    dropped = set(n["directive"] for n in refused)
    if dropped:
        pre.cleanup()
        ok_list = ok_list + [a for a in accepted if a[0] in dropped]
        ok, _err = pre.start(ok_list)
        if not ok:
            return None
    shown = pre.show()
    pre.cleanup()
    if shown is None:
        return None
    return ok_list, _expected_mounts(compare(service_show, shown), {"carried_as": carried_as})
