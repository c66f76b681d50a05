# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the probe's transient unit does not copy of the service's unit (DENY: each directive with its category
and why), and the ``systemctl show`` properties that describe the unit rather than its processes (not compared
between the service and the probe's unit). docs/unit-directives.md is generated from these tables.

Pure Python, no Ansible imports; runs on managed hosts (Python >= 3.8).
"""
from __future__ import absolute_import, annotations, division, print_function

import re
from typing import Dict, Iterable, Optional, Tuple

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


def ignored_property(name: str) -> bool:
    return name in IGNORED_PROPERTIES or any(p.search(name) for p in _IGNORED_PATTERNS)
