# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a transient unit's main process ended, read as systemd reports it, and whose failure it was.

``systemd-run --wait`` ends with "Main processes terminated with: code=exited, status=203/EXEC"
(systemd 257) or "code=exited/status=203" (252); a signal reads "code=killed, status=31/SYS" or
"code=killed/status=SYS". Two things must never be read as bwrap's:

- an exit status of systemd's own table (200-245, 255: EXEC, USER, NAMESPACE, ...) while the unit's
  command had not started: systemd failed to set up the process (changing user, building its mount
  namespace, exec'ing the command) and nothing of ours ran, bwrap least of all;
- a signal that killed the unit's process before it reported (the probe's launcher prints its pid
  before anything else, and only then executes bwrap): the unit's own settings killed it (a
  SystemCallFilter= that kills a system call the launcher makes), not bwrap.

Once the launcher has reported, a status of 200-245 is the command's own exit status (bwrap's or
the payload's), like any other.

The names are systemd's (``systemd-analyze exit-status``, class "systemd", systemd 252 and 257; a
system test compares this table with the host's). Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import re
import signal
import subprocess
import typing as t

from ..base import diagnostics
from ..base.records import Record

SIGSYS = int(getattr(signal, "SIGSYS", 31))
JOURNAL_LINES = 40          # lines of the unit's journal read for systemd's own reason

# systemd's own exit statuses (src/basic/exit-status.h; `systemd-analyze exit-status`, class systemd).
# 223 was tcpwrap and is reserved; 234 (MAKE_STARTER) is gone; KSM is 257's.
EXIT_STATUSES: t.Dict[int, str] = {
    200: "CHDIR", 201: "NICE", 202: "FDS", 203: "EXEC", 204: "MEMORY", 205: "LIMITS", 206: "OOM_ADJUST",
    207: "SIGNAL_MASK", 208: "STDIN", 209: "STDOUT", 210: "CHROOT", 211: "IOPRIO", 212: "TIMERSLACK",
    213: "SECUREBITS", 214: "SETSCHEDULER", 215: "CPUAFFINITY", 216: "GROUP", 217: "USER", 218: "CAPABILITIES",
    219: "CGROUP", 220: "SETSID", 221: "CONFIRM", 222: "STDERR", 224: "PAM", 225: "NETWORK", 226: "NAMESPACE",
    227: "NO_NEW_PRIVILEGES", 228: "SECCOMP", 229: "SELINUX_CONTEXT", 230: "PERSONALITY", 231: "APPARMOR",
    232: "ADDRESS_FAMILIES", 233: "RUNTIME_DIRECTORY", 235: "CHOWN", 236: "SMACK_PROCESS_LABEL", 237: "KEYRING",
    238: "STATE_DIRECTORY", 239: "CACHE_DIRECTORY", 240: "LOGS_DIRECTORY", 241: "CONFIGURATION_DIRECTORY",
    242: "NUMA_POLICY", 243: "CREDENTIALS", 244: "BPF", 245: "KSM", 255: "EXCEPTION",
}

# What each status means for the probe's unit, in a sysadmin's words (systemd.exec(5) "Process exit codes").
MEANING: t.Dict[str, str] = {
    "CHDIR": "changing to the unit's WorkingDirectory= failed",
    "EXEC": "executing the unit's command failed (not found, not executable: a noexec mount, NoExecPaths=, or "
            "a resource limit such as LimitNPROC= reached at execve)",
    "LIMITS": "setting the unit's resource limits (Limit*=) failed",
    "GROUP": "setting the unit's Group=/SupplementaryGroups= failed",
    "USER": "changing to the unit's User= failed (the user does not exist, or DynamicUser= could not allocate it)",
    "CAPABILITIES": "applying the unit's capability settings failed",
    "NAMESPACE": "setting up the unit's mount namespace failed (a path of ReadWritePaths=, BindPaths=, ... is "
                 "missing, or mount namespaces are not available)",
    "NO_NEW_PRIVILEGES": "setting NoNewPrivileges= failed",
    "SECCOMP": "installing the unit's seccomp filters (SystemCallFilter=, RestrictNamespaces=, ...) failed",
    "ADDRESS_FAMILIES": "applying RestrictAddressFamilies= failed",
    "CREDENTIALS": "setting up the unit's credentials (LoadCredential=, SetCredential=) failed",
}

_MAIN = re.compile(r"code=(?P<code>[a-z]+)\s*[,/]\s*status=(?P<num>\d+)?/?(?P<name>[A-Z][A-Z0-9_+]*)?")


class Ending(Record):
    """How the main process ended: ``code`` exited/killed/dumped, its status number and systemd's name."""
    code: str
    status: t.Optional[int]
    name: t.Optional[str]


def parse_main(text: t.Optional[str]) -> t.Optional[Ending]:
    """systemd-run's "Main processes terminated with:" value -> Ending, or None when unreadable."""
    match = _MAIN.search(text or "")
    if not match:
        return None
    code, num, name = match.group("code"), match.group("num"), match.group("name")
    status = int(num) if num is not None else None
    if code in ("killed", "dumped"):
        if status is None and name:
            sig = getattr(signal, "SIG" + name, None)
            status = int(sig) if sig is not None else None
        if status is not None and not name:
            name = _signal_name(status)
    elif status is not None and not name:
        name = EXIT_STATUSES.get(status)
    return Ending(code, status, name)


def _signal_name(number: int) -> t.Optional[str]:
    try:
        return signal.Signals(number).name[3:]
    except ValueError:
        return None


def unit_failure(main: t.Optional[str], launcher_reported: bool,
                 unit: t.Optional[str] = None) -> t.Optional[t.Dict[str, t.Any]]:
    """Whose failure the unit's ending was, when it was not bwrap's: None when bwrap (or what it ran)
    may have caused it, else {kind, status, name, meaning, reason}. ``launcher_reported``: the unit's
    command printed its pid, so systemd had executed it; ``unit``: the transient unit, whose journal
    holds systemd's own words ("Failed at step EXEC spawning /bin/sh: Permission denied")."""
    ending = parse_main(main)
    if ending is None or launcher_reported:
        return None
    if ending.code == "exited" and ending.status in EXIT_STATUSES and ending.status != 0:
        name = EXIT_STATUSES[ending.status]
        out: t.Dict[str, t.Any] = {"kind": "systemd_status", "status": ending.status, "name": name,
                                   "meaning": MEANING.get(name, "systemd failed to set up the unit's process "
                                                                "(%s)" % name)}
    elif ending.code in ("killed", "dumped") and ending.status is not None:
        out = {"kind": "signal_before_bwrap", "status": ending.status, "name": ending.name or str(ending.status),
               "meaning": "the unit's own process was killed by SIG%s before it started bwrap"
                          % (ending.name or ending.status)}
    else:
        return None
    out["reason"] = journal_reason(unit) if unit else None
    return out


# systemd's own sentences, best first: the step that failed, then what it could not do.
_REASONS = (re.compile(r"Failed at step "), re.compile(r"(Failed to (?!start )|Unable to )"))


def journal_reason(unit: str, timeout: float = 5.0) -> t.Optional[str]:
    """systemd's own sentence about why it could not run the unit's process, from the unit's journal
    (bounded; None when the journal says nothing or cannot be read)."""
    name = unit if unit.endswith(".service") else unit + ".service"
    try:
        proc = subprocess.run(["journalctl", "-u", name, "-o", "cat", "--no-pager", "-n", str(JOURNAL_LINES)],  # pylint: disable=ansible-bad-function
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    text = proc.stdout.decode("utf-8", "replace").splitlines()
    for pattern in _REASONS:
        lines = [ln.strip() for ln in text if pattern.search(ln)]
        if lines:
            last = lines[-1]
            return (last[len(name) + 2:] if last.startswith(name + ": ") else last)[:300]
    return None


def diagnostic(failure: t.Mapping[str, t.Any], who: str) -> diagnostics.Diagnostic:
    """The probe's finding for a unit that failed before bwrap could run (systemd's status, or a signal)."""
    reason = " systemd said: %s." % failure["reason"] if failure.get("reason") else ""
    if failure["kind"] == "systemd_status":
        return diagnostics.make("probe_unit_start_failed", user=who, status=failure["status"], name=failure["name"],
                                fill={"meaning": failure["meaning"], "said": reason})
    return diagnostics.make("probe_unit_killed", user=who, signal=failure["name"], status=failure["status"],
                            fill={"said": reason})


def signal_number(main: t.Optional[str]) -> t.Optional[int]:
    """The signal that ended the main process, if one did."""
    ending = parse_main(main)
    if ending is not None and ending.code in ("killed", "dumped"):
        return ending.status
    return None
