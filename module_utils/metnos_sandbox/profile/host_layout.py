# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's layout a profile is rendered against, as data and its checks: the trees no scope may be
(system, runtime, broad, forbidden), the limits of the undo exception and of an invocation, DEFAULT_HOST
and the keys an admin may override (each path absolute and bounded: check_host_paths, check_pin), and
the refusal of a bad host-context key (ContextError, host_refusal). How a path is judged on the host
is host_context.py.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import re
from typing import Any, Dict, List, Optional

from ..base import diagnostics
from ..base.records import Record
from . import model

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc",
                "/var/lib/python3", "/sys")
# Neither read nor write may be rooted at or under these (the profile provides them itself).
FORBIDDEN_TREES = ("/proc", "/dev")
# Shared trees: a scope may live below them, never be one of them (R-SEC-2: no /opt).
BROAD_ROOTS = ("/", "/opt", "/home", "/root", "/var", "/var/lib", "/run", "/srv", "/mnt", "/media",
               "/tmp", "/var/tmp", "/usr/local", "/boot", "/lost+found")
# Host daemons' runtime tree: their sockets (systemd, D-Bus, container engines, user sessions)
# live here. No manifest-written scope at, below or above it; host state is reached through
# systemd:read / system:read, whose paths the admin configures (R-CAP-SYS).
RUNTIME_TREES = ("/run", "/var/run")
# System trees: never writable at, below or above.
SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc", "/boot",
                "/sys", "/proc", "/dev", "/var/lib/python3")
BASE_FLAGS = ("--unshare-user", "--unshare-ipc", "--unshare-uts")
# Where executors run (R-SCOPE-4, spec section 9): "server" (the server profile, section 3) or "device" (a paired
# Linux device: the server profile plus a PID namespace of its own and a session - so a process group - of its
# own; the separate network and the private /tmp are the server profile's already). The client's part of the
# row is the deadline: it starts bwrap in a process group of its own and kills that group when time is up.
PLACEMENTS = ("server", "device")
DEVICE_FLAGS = ("--unshare-pid", "--new-session")
DEVICE_RULE = "R-SCOPE-4"
UNDO_NAME = "undo_last_turn"
# Host-context trees that only their own capability reaches (never an fs: scope, never a base
# path): every executor's code, every integration, every mail account, every sender, every turn.
RESERVED_KEYS = ("executors_dir", "integrations_dir", "mail_credentials_dir", "dialog_dir", "undo_root")
# Limits of the undo broker's files read to compute its digest (R-FAIL-2).
MAX_UNDO_FILE_BYTES = 8 * 1024 * 1024
MAX_UNDO_TOTAL_BYTES = 32 * 1024 * 1024
MAX_UNDO_ENTRIES = 256
MAX_INVOCATION_ARGUMENTS = 64
MAX_ARG_VALUE = model.MAX_STRING
COMPONENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}")
HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}")
CRED_EXT = re.compile(r"[A-Za-z0-9]{1,16}")
UNDO_PIN_KEYS = ("name", "origin", "revision", "owner", "capability", "capabilities", "files", "digest",
                 "entrypoint")
UNDO_ENTRYPOINT = "main.py"      # the file the direct path starts unless the pin names another

DEFAULT_HOST = {
    "runtime_dir": "/srv/metnos/runtime",
    "executors_dir": "/srv/metnos/executors",
    "executor_dir": None,
    "python_executable": "/srv/metnos/venv/bin/python3",
    "python_prefix": "/srv/metnos/venv",
    "python_package_roots": [],
    "python_installation": [],
    "i18n_dbs": ["/var/lib/metnos/i18n"],
    "lexicon_dbs": ["/var/lib/metnos/lexicon"],
    "resources": {
        "sheets": "/var/lib/metnos/sheets",
        "people": "/var/lib/metnos/people",
        "proposals": "/var/lib/metnos/proposals",
        "memory": "/var/lib/metnos/memory",
        "calendar": "/var/lib/metnos/calendar",
        "tasks": "/var/lib/metnos/tasks",
    },
    "indexes": {
        "documents": "/var/lib/metnos/index/documents",
        "mail": "/var/lib/metnos/index/mail",
        "notes": "/var/lib/metnos/index/notes",
    },
    "integrations_dir": "/var/lib/metnos/integrations",
    "mail_credentials_dir": "/var/lib/metnos/credentials/mail",
    "mail_accounts": {},
    "dialog_dir": "/var/lib/metnos/dialog",
    "undo_root": "/var/lib/metnos/undo",
    # The system bus is never a read path: systemd:read / system:read reach it only through the filtering
    # proxy's socket (system_bus_proxy), bound where the bus is expected (channels.SYSTEM_BUS).
    "systemd_read_paths": ["/run/systemd/system"],
    "system_read_paths": [],
    "system_bus_proxy": None,
    # The real bus's sockets, the ones the proxy connects to (besides /run/dbus/system_bus_socket and the host's
    # DBUS_SYSTEM_BUS_ADDRESS, always judged): system_bus_proxy may be none of them (bus_proxy.swapped).
    "system_bus_sockets": [],
    # Command channels (sockets, FIFOs, device nodes) the admin lets a grant expose: [{path, reason}].
    "allow_channels": [],
    "undo_exception": None,
    # Where fs:write (and writable 'within' scopes) may reach: nothing outside these is ever writable
    # (deny by default: no list of dangerous places can be complete). Metnos's own data folder.
    "writable_roots": ["/var/lib/metnos"],
    # server | device (PLACEMENTS); a device's declared downgrades: [{flag, reason}], a flag of DEVICE_FLAGS the
    # platform cannot give, said with why (never silent: the profile and the probe name each one).
    "placement": "server",
    "device_downgrades": [],
}
LIST_KEYS = ("python_package_roots", "python_installation", "i18n_dbs", "lexicon_dbs", "systemd_read_paths",
             "system_read_paths", "writable_roots", "system_bus_sockets")
DICT_KEYS = ("resources", "indexes", "mail_accounts")
PATH_KEYS = ("runtime_dir", "executors_dir", "executor_dir", "python_executable", "python_prefix",
             "integrations_dir", "mail_credentials_dir", "dialog_dir", "undo_root", "system_bus_proxy")
MAX_REASON = 300
MAX_HOST_LIST = 256


class ContextError(ValueError):
    """A host-context or invocation option is invalid; the message names it."""


def norm(path: str) -> str:
    norm = os.path.normpath(path)
    return "/" + norm.lstrip("/") if norm.startswith("//") else norm


class Problem(Record):
    """Why a path may not be mounted: ``kind`` (control, forbidden, broad, reserved, readonly,
    shared, runtime, alias, leave) picks the refusal code; ``text`` is the message."""
    kind: str
    text: str


def abs_clean(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.startswith("/") or len(value) > 4096 or model.has_control(value):
        raise ContextError("host.%s must be an absolute path without control characters, got %s"
                           % (key, diagnostics.excerpt(value)))
    return norm(str.__str__(value))


def check_host_paths(data: Dict[str, Any]) -> None:
    """Every host-context path absolute, normalised, without control characters; lists and
    mappings bounded; names matched whole; the placement and its declared downgrades (in place)."""
    for key in PATH_KEYS:
        if data[key] is not None:
            data[key] = abs_clean(key, data[key])
    for key in LIST_KEYS:
        if not isinstance(data[key], (list, tuple)) or len(data[key]) > MAX_HOST_LIST:
            raise ContextError("host.%s must be a list of at most %d absolute paths, got %s"
                               % (key, MAX_HOST_LIST, diagnostics.excerpt(data[key])))
        data[key] = [abs_clean("%s[%d]" % (key, i), v) for i, v in enumerate(data[key])]
    for key in DICT_KEYS:
        if not isinstance(data[key], dict) or len(data[key]) > MAX_HOST_LIST:
            raise ContextError("host.%s must be a mapping (at most %d entries), got %s"
                               % (key, MAX_HOST_LIST, diagnostics.excerpt(data[key])))
        for name in data[key]:
            if not isinstance(name, str) or not HOST_NAME.fullmatch(name):
                raise ContextError("host.%s: %s is not a name [A-Za-z0-9_.@+-]" % (key, diagnostics.excerpt(name)))
    data["resources"] = dict((k, abs_clean("resources." + k, v)) for k, v in data["resources"].items())
    data["indexes"] = dict((k, abs_clean("indexes." + k, v)) for k, v in data["indexes"].items())
    accounts = {}
    for account, files in data["mail_accounts"].items():
        if isinstance(files, str):
            files = [files]
        if not isinstance(files, (list, tuple)) or len(files) > MAX_HOST_LIST:
            raise ContextError("host.mail_accounts.%s must be a list of absolute paths" % account)
        accounts[account] = [abs_clean("mail_accounts." + account, f) for f in files]
    data["mail_accounts"] = accounts
    data["allow_channels"] = check_allowed(data["allow_channels"])
    check_placement(data)


def check_placement(data: Dict[str, Any]) -> None:
    """host.placement one of PLACEMENTS; host.device_downgrades a list of exactly {flag, reason}, each flag one of
    DEVICE_FLAGS (once), the reason plain text, and only on a device (in place)."""
    placement = data["placement"]
    if placement not in PLACEMENTS:
        raise ContextError("host.placement must be one of %s, got %s" % (", ".join(PLACEMENTS),
                                                                         diagnostics.excerpt(placement)))
    entries = data["device_downgrades"]
    if not isinstance(entries, (list, tuple)) or len(entries) > len(DEVICE_FLAGS):
        raise ContextError("host.device_downgrades must be a list of at most %d {flag, reason} mappings, got %s"
                           % (len(DEVICE_FLAGS), diagnostics.excerpt(entries)))
    if entries and placement != "device":
        raise ContextError("host.device_downgrades applies to placement device only (placement is %s)" % placement)
    out: List[Dict[str, str]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or sorted(entry) != ["flag", "reason"]:
            raise ContextError("host.device_downgrades[%d] must be a mapping of exactly flag and reason, got %s"
                               % (i, diagnostics.excerpt(entry)))
        flag, reason = entry["flag"], entry["reason"]
        if flag not in DEVICE_FLAGS or any(done["flag"] == flag for done in out):
            raise ContextError("host.device_downgrades[%d].flag must be one of %s, once, got %s"
                               % (i, ", ".join(DEVICE_FLAGS), diagnostics.excerpt(flag)))
        if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON or model.has_control(reason):
            raise ContextError("host.device_downgrades[%d].reason must say why, in 1-%d characters without control "
                               "characters, got %s" % (i, MAX_REASON, diagnostics.excerpt(reason)))
        out.append({"flag": str.__str__(flag), "reason": str.__str__(reason)})
    data["placement"] = str.__str__(placement)
    data["device_downgrades"] = out


def device_flags(data: Dict[str, Any]) -> List[str]:
    """The flags a device adds to the server profile (DEVICE_FLAGS but the declared downgrades); none on a
    server."""
    if data["placement"] != "device":
        return []
    dropped = set(entry["flag"] for entry in data["device_downgrades"])
    return [flag for flag in DEVICE_FLAGS if flag not in dropped]


def check_allowed(entries: Any) -> List[Dict[str, str]]:
    """host.allow_channels: at most MAX_HOST_LIST mappings of exactly {path, reason}, the path absolute, the
    reason plain text (1-300 characters)."""
    if not isinstance(entries, (list, tuple)) or len(entries) > MAX_HOST_LIST:
        raise ContextError("host.allow_channels must be a list of at most %d {path, reason} mappings, got %s"
                           % (MAX_HOST_LIST, diagnostics.excerpt(entries)))
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or sorted(entry) != ["path", "reason"]:
            raise ContextError("host.allow_channels[%d] must be a mapping of exactly path and reason, got %s"
                               % (i, diagnostics.excerpt(entry)))
        reason = entry["reason"]
        if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON or model.has_control(reason):
            raise ContextError("host.allow_channels[%d].reason must say why, in 1-%d characters without control "
                               "characters, got %s" % (i, MAX_REASON, diagnostics.excerpt(reason)))
        out.append({"path": abs_clean("allow_channels[%d].path" % i, entry["path"]), "reason": str.__str__(reason)})
    return out


def check_pin(pin: Any) -> Optional[Dict[str, Any]]:
    """The pinned undo exception (R-FAIL-2) as given by the admin: known keys and plain types."""
    if pin is None:
        return None
    if not isinstance(pin, dict):
        raise ContextError("host.undo_exception must be a mapping (name, origin, revision, owner, capability, "
                           "files, digest), got %s" % diagnostics.excerpt(pin))
    for key, value in pin.items():
        if key not in UNDO_PIN_KEYS:
            raise ContextError("host.undo_exception: unknown key %s; accepted: %s"
                               % (diagnostics.excerpt(key), ", ".join(UNDO_PIN_KEYS)))
        ok = (isinstance(value, list) and all(isinstance(v, str) for v in value)) if key in ("files", "capabilities") \
            else (isinstance(value, (str, int)) and not isinstance(value, bool)) if key == "revision" \
            else isinstance(value, str)
        if value is not None and not ok:
            raise ContextError("host.undo_exception.%s has the wrong type: %s" % (key, diagnostics.excerpt(value)))
    return dict(pin)


# Why the kernel would not resolve a path (paths.Unresolvable.why), for messages.
UNRESOLVABLE = {"links": "%s: resolving it follows more than 40 symbolic links (the kernel's limit: ELOOP)",
                "long": "%s: its resolved form is longer than 4096 characters (PATH_MAX)",
                "budget": "%s: resolving it exceeds this render's budget of 100,000 path lookups"}


def host_refusal(key: str, path: Any, problem: Problem) -> diagnostics.Diagnostic:
    diag: diagnostics.Diagnostic = diagnostics.make("host_path_refused", wording="host_key",
                                                    fill={"problem": problem.text}, host_key=key,
                                                    path=diagnostics.excerpt(path))
    return diag


def is_home(path: str) -> bool:
    """A whole home folder (or /home, /root) is never a package root."""
    parts = path.rstrip("/").split("/")
    return path in ("/home", "/root") or (len(parts) == 3 and parts[1] == "home")


class Layout(object):
    """One host's layout as data: DEFAULT_HOST with an admin's overrides, every key known and every path
    checked (check_host_paths, check_pin); read as a mapping (``layout["runtime_dir"]``). Raises
    ContextError for a bad override. How a path is judged against it: host_context.HostContext."""

    __slots__ = ("data",)

    def __init__(self, overrides: Optional[Dict[str, Any]] = None) -> None:
        data = dict(DEFAULT_HOST)
        if overrides is not None and not isinstance(overrides, dict):
            raise ContextError("host must be a mapping of host-context keys, got %s" % type(overrides).__name__)
        for key, value in (overrides or {}).items():
            if key not in DEFAULT_HOST:
                raise ContextError("host: unknown key %s; accepted: %s"
                                   % (diagnostics.excerpt(key), ", ".join(sorted(DEFAULT_HOST))))
            data[key] = value
        check_host_paths(data)
        data["undo_exception"] = check_pin(data["undo_exception"])
        self.data: Dict[str, Any] = data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]
