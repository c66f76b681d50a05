# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A service that runs as root gives its executors no boundary (issue 40): bwrap --unshare-user maps uid 0
to itself, so the sandbox keeps every capability of its user namespace and remounts any read-only bind
writable. Judged from the user systemd gives the unit (run_user.resolve_service_user) and the running
process's own uid (/proc/<MainPID>/status, a fact the service cannot forge); the drop-in that fixes it and
what it changes (the folders the service writes today as root) are named, never applied here.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..base import diagnostics

# The directories systemd creates and hands to the unit's user itself at each start (systemd.exec(5)).
OWNED_BY_SYSTEMD = {"StateDirectory": "/var/lib", "CacheDirectory": "/var/cache", "LogsDirectory": "/var/log",
                    "RuntimeDirectory": "/run"}
MAX_FOLDERS = 16
USER_DROPIN = "10-metnos-user.conf"     # the drop-in service_runs_as_root offers (enforce writes it only if asked)
DYNAMIC = "dynamic"                     # run_as's word for DynamicUser=yes


def user_dropin(run_as: str) -> str:
    """The drop-in that runs the service as ``run_as`` (a user name, or DYNAMIC for an allocated user)."""
    line = "DynamicUser=yes" if run_as == DYNAMIC else "User=%s" % run_as
    return "# Managed by metnos.sandbox.metnos_service_env (run_as): the sandbox is no boundary for root.\n" \
           "[Service]\n%s\n" % line


def proc_uid(pid: Any, proc: str = "/proc") -> Optional[int]:
    """The real uid of process ``pid`` from /proc/PID/status (readable by anyone), None when it is gone."""
    try:
        with open(os.path.join(proc, str(pid), "status")) as handle:
            for line in handle:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (IOError, OSError, ValueError, IndexError):
        return None
    return None


def _words(value: Any) -> List[str]:
    out: List[str] = []
    for text in (value if isinstance(value, list) else [value] if value else []):
        out.extend(str(text).split())
    return out


def _folders(settings: Mapping[str, Any]) -> Tuple[List[str], List[str]]:
    """(folders systemd re-owns itself, existing root-owned folders the service writes that the admin hands
    over): StateDirectory= & co.; WorkingDirectory= and ReadWritePaths=."""
    managed = []
    for key, base in sorted(OWNED_BY_SYSTEMD.items()):
        for word in _words(settings.get(key)):
            managed.append("%s/%s (%s=)" % (base, word.split(":")[0], key))
    handed: List[str] = []
    candidates = _words(settings.get("ReadWritePaths")) + [str(settings.get("WorkingDirectory") or "")]
    for word in candidates:
        path = word.lstrip("-+!")
        if not path.startswith("/") or path == "/" or path in handed:
            continue
        try:
            owned_by_root = os.lstat(path).st_uid == 0
        except OSError:
            continue
        if owned_by_root and os.path.isdir(path):
            handed.append(path)
    return managed[:MAX_FOLDERS], handed[:MAX_FOLDERS]


def root_diagnostics(unit: str, user: Mapping[str, Any], settings: Mapping[str, Any],
                     live: Optional[Mapping[str, Any]]) -> List[diagnostics.Diagnostic]:
    """service_runs_as_root when the unit's user is uid 0 (no User=, User=root or 0) or the running process
    (``live``: read_live_environ()'s pid) is root; else nothing."""
    live_uid = proc_uid(live["pid"]) if live is not None and live.get("pid") else None
    configured_root = user.get("uid") == 0
    if not configured_root and live_uid != 0:
        return []
    managed, handed = _folders(settings)
    changes = ["the service's processes and every executor run as <user> instead of root",
               "files they create from then on are <user>'s"]
    if managed:
        changes.append("systemd hands %s to <user> at the next start" % ", ".join(managed))
    if handed:
        changes.append("root-owned folders the service writes (hand them over): %s" % ", ".join(handed))
    handover = ["chown -R <user>: %s" % path for path in handed]
    context: Dict[str, Any] = {"unit": unit, "handover": handover, "folders": handed}
    fill = {"changes": "; ".join(changes)}
    if configured_root:
        name = settings.get("User")
        why = "no User=" if not name else "User=%s" % diagnostics.excerpt(name, 40)
        if user.get("dynamic_user") == "static":
            why += " with DynamicUser=yes"
        return [diagnostics.make("service_runs_as_root", wording="configured", fill=dict(fill, why=why), **context)]
    why = "uid %d in /proc/%s/status" % (0, live["pid"] if live else "?")
    return [diagnostics.make("service_runs_as_root", wording="live", pid=live["pid"] if live else None,
                             user=user.get("name"), fill=dict(fill, why=why), **context)]
