# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd unit files read from disk, with systemd's own rules, and ``systemctl show``. (The environment they
compose: unit_environment; what ExecStart= does to it: exec_env.)

From disk (no systemd running: containers, chroots, images, build machines):
- the fragment is the first ``<unit>`` found in the unit search path (``/etc`` before
  ``/run`` before ``/usr/local/lib`` before ``/usr/lib``/``/lib``), following alias symlinks;
- drop-ins come from ``<unit>.d/``, ``<prefix>-.<type>.d/`` for dashed names, the template's
  ``<name>@.<type>.d/`` and the top-level ``<type>.d/``, in every search directory; a file name
  in a higher-priority directory masks the same name elsewhere; files apply in lexical order
  of their names, across directories (systemd.unit(5));
- lines: ``#``/``;`` comments, a trailing backslash continues a line (comment lines inside are
  skipped), ``Key=Value`` with whitespace around ``=`` removed;
- ``Environment=`` is split into words with quotes and C escapes (systemd's
  extract_first_word with UNQUOTE|CUNESCAPE); each word must be ``NAME=VALUE`` with a valid name
  or it is ignored (systemd logs "Invalid environment assignment, ignoring"); an empty
  assignment resets the list; ``EnvironmentFile=`` likewise (``-`` prefix = optional);
- EnvironmentFile contents follow systemd's env-file grammar; their values override
  ``Environment=``; ``UnsetEnvironment=`` applies last.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..base import safe_read

SYSTEM_UNIT_DIRS = ("/etc/systemd/system.control", "/run/systemd/system.control", "/run/systemd/transient",
                    "/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system",
                    "/usr/lib/systemd/system", "/lib/systemd/system")
USER_UNIT_DIRS = ("~/.config/systemd/user", "/etc/systemd/user", "/run/systemd/user",
                  "/usr/local/lib/systemd/user", "/usr/lib/systemd/user")
DEFAULT_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
MAX_UNIT_FILE_BYTES = 1 << 20     # a unit file or drop-in is read once, bounded (base/safe_read.py)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.\\@-]+\.(service|socket|timer|target|path|mount|slice|scope)$")


class UnitError(ValueError):
    pass


def valid_unit_name(name: object) -> bool:
    return bool(isinstance(name, str) and _UNIT_NAME.match(name) and ".." not in name)


# --------------------------------------------------------------------------- files

def in_root(root: str, path: str) -> str:
    """``path`` (absolute) under ``root``: the host's own path when ``root`` is "/"."""
    return os.path.join(root, path.lstrip("/")) if root not in ("", "/") else path


def unit_dirs(scope: str = "system", home: Optional[str] = None) -> List[str]:
    if scope == "user":
        return [d.replace("~", home or "/nonexistent", 1) if d.startswith("~") else d for d in USER_UNIT_DIRS]
    return list(SYSTEM_UNIT_DIRS)


def find_fragment(unit: str, dirs: Sequence[str], root: str = "/") -> Optional[Dict[str, Any]]:
    """The unit file (following aliases), or None. For an instance, the template is used."""
    names = [unit]
    match = re.match(r"^(.+@)([^.]*)(\.\w+)$", unit)
    if match and match.group(2):
        names.append(match.group(1) + match.group(3))
    for name in names:
        for directory in dirs:
            path = in_root(root, os.path.join(directory, name))
            if os.path.lexists(path):
                if os.path.islink(path) and os.readlink(path) == "/dev/null":
                    return {"path": path, "masked": True}
                real = os.path.realpath(path) if root in ("", "/") else _resolve_in_root(path, root)
                if os.path.isfile(real):
                    return {"path": path, "real": real, "masked": False}
    return None


def _resolve_in_root(path: str, root: str) -> str:
    seen = 0
    while os.path.islink(path) and seen < 40:
        target = os.readlink(path)
        path = in_root(root, target) if target.startswith("/") else os.path.join(os.path.dirname(path), target)
        seen += 1
    return path


def dropin_dir_names(unit: str) -> List[str]:
    """Drop-in directory names for a unit, most specific first."""
    base, _dot, utype = unit.rpartition(".")
    names = [unit + ".d"]
    match = re.match(r"^(.+@)([^.]*)$", base)
    if match and match.group(2):
        names.append("%s.%s.d" % (match.group(1), utype))
    parts = base.split("-")
    for i in range(len(parts) - 1, 0, -1):
        names.append("%s-.%s.d" % ("-".join(parts[:i]), utype))
    names.append("%s.d" % utype)
    return names


def find_dropins(unit: str, dirs: Sequence[str], root: str = "/", exclude: Sequence[str] = ()) -> List[str]:
    """Drop-in files in the order systemd applies them. A drop-in folder is listed like safe_read reads a file (no
    link someone else controls followed): one it refuses is returned itself, never its names, so that load_unit's
    read refuses it with its own reason."""
    chosen: Dict[str, Optional[str]] = {}
    refused: List[str] = []
    for directory in dirs:
        for name in dropin_dir_names(unit):
            path = in_root(root, os.path.join(directory, name))
            try:
                entries = safe_read.list_folder(path)
            except safe_read.Refused as refusal:
                if refusal.reason != safe_read.MISSING:
                    refused.append(path)
                continue
            for entry in entries:
                if entry.endswith(".conf") and entry not in chosen:
                    full = os.path.join(path, entry)
                    if full in exclude:
                        chosen[entry] = None
                        continue
                    chosen[entry] = full
    files = [chosen[k] for k in sorted(chosen)]
    # every entry but a folder: a FIFO or a link is refused by the reader (load_unit), never skipped in silence
    return refused + [f for f in files if f is not None and os.path.lexists(f) and not os.path.isdir(f)]


# --------------------------------------------------------------------------- unit syntax

def parse_unit_text(text: str) -> List[Tuple[Optional[str], str, str, int]]:
    """[(section, key, value, lineno)] in file order."""
    out = []
    section = None
    pending = None
    start = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if pending is not None:
            if line.startswith(("#", ";")):
                continue
            if line.endswith("\\"):
                pending += " " + line[:-1]
                continue
            line = pending + " " + line
            pending = None
        else:
            start = lineno
            if not line or line.startswith(("#", ";")):
                continue
            if line.endswith("\\"):
                pending = line[:-1]
                continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        out.append((section, key.strip(), value.strip(), start))
    if pending is not None:
        key, sep, value = pending.partition("=")
        if sep:
            out.append((section, key.strip(), value.strip(), start))
    return out


_ESC = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"',
        "'": "'", "s": " "}


def split_words(value: str) -> Tuple[List[str], bool]:
    """systemd's extract_first_word(UNQUOTE|CUNESCAPE) over a whole value. Returns (words, ok)."""
    words: List[str] = []
    i = 0
    n = len(value)
    while True:
        while i < n and value[i] in " \t\n\r":
            i += 1
        if i >= n:
            return words, True
        word = []
        quote = None
        while i < n:
            ch = value[i]
            if quote is None and ch in " \t\n\r":
                break
            if ch == "\\":
                if i + 1 >= n:
                    return words, False
                nxt = value[i + 1]
                if nxt in _ESC:
                    word.append(_ESC[nxt])
                    i += 2
                    continue
                if nxt == "x" and re.match(r"[0-9a-fA-F]{2}", value[i + 2:i + 4]):
                    word.append(chr(int(value[i + 2:i + 4], 16)))
                    i += 4
                    continue
                if re.match(r"[0-7]{3}", value[i + 1:i + 4]):
                    word.append(chr(int(value[i + 1:i + 4], 8)))
                    i += 4
                    continue
                return words, False   # invalid escape: systemd rejects the whole line
            if quote is None and ch in "\"'":
                quote = ch
                i += 1
                continue
            if quote is not None and ch == quote:
                quote = None
                i += 1
                continue
            word.append(ch)
            i += 1
        if quote is not None:
            return words, False
        words.append("".join(word))


# --------------------------------------------------------------------------- a whole unit

RESTRICTION_KEYS = ("RestrictNamespaces", "SystemCallFilter", "ProcSubset", "ProtectKernelTunables",
                    "RestrictSUIDSGID", "DynamicUser", "NoNewPrivileges", "PrivateUsers", "ProtectProc",
                    "PrivateTmp", "ProtectSystem", "ProtectHome", "CapabilityBoundingSet", "SystemCallArchitectures",
                    "LockPersonality", "PrivateDevices", "ProtectKernelModules", "ProtectClock", "RestrictRealtime",
                    "MemoryDenyWriteExecute", "PrivateNetwork", "IPAddressDeny", "ReadOnlyPaths",
                    "InaccessiblePaths", "TemporaryFileSystem", "RestrictAddressFamilies", "SystemCallErrorNumber")
_LIST_KEYS = ("SystemCallFilter", "RestrictNamespaces", "ReadOnlyPaths", "InaccessiblePaths",
              "TemporaryFileSystem", "CapabilityBoundingSet", "RestrictAddressFamilies", "SupplementaryGroups")


def add_setting(settings: Dict[str, Any], key: str, value: str) -> Dict[str, Any]:
    """One [Service] assignment into ``settings``: list directives accumulate (empty resets), others
    keep the last value."""
    if key in _LIST_KEYS:
        if value == "":
            settings[key] = []
        else:
            settings.setdefault(key, []).append(value)
    else:
        settings[key] = value
    return settings


def settings_from_text(text: str) -> Dict[str, Any]:
    """The [Service] settings of a unit text (no Environment handling): for offline checks."""
    settings: Dict[str, Any] = {}
    for section, key, value, _lineno in parse_unit_text(text):
        if section == "Service":
            add_setting(settings, key, value)
    return settings


def load_unit(unit: str, scope: str = "system", root: str = "/", home: Optional[str] = None,
              exclude: Sequence[str] = ()) -> Dict[str, Any]:
    """Parse a unit and its drop-ins from disk. Raises UnitError('unit_not_found')."""
    dirs = unit_dirs(scope, home)
    frag = find_fragment(unit, dirs, root)
    dropins = find_dropins(unit, dirs, root, exclude)
    if frag is None and not dropins:
        raise UnitError("unit_not_found")
    files = []
    if frag is not None and not frag.get("masked"):   # on this host, read where the search path names it: a link
        files.append(frag["path"] if root in ("", "/") else frag["real"])     # someone else controls is refused
    files.extend(dropins)
    state: Dict[str, Any] = {
        "fragment": frag["path"] if frag else None, "masked": bool(frag and frag.get("masked")),
        "dropins": dropins, "environment": [], "environment_files": [], "unset_environment": [],
        "rejected_assignments": [], "settings": {}, "sources": {}, "exec_start": [], "refused_files": []}
    for path in files:
        try:
            text = safe_read.read_once(path, MAX_UNIT_FILE_BYTES).decode("utf-8", "replace")
        except safe_read.Refused as refused:
            if refused.reason != safe_read.MISSING:
                state["refused_files"].append({"path": refused.path, "reason": refused.reason, "owner": refused.owner,
                                               "target_owner": refused.target_owner,
                                               "why": refused.error or refused.reason.replace("_", " ")})
            continue
        for section, key, value, lineno in parse_unit_text(text):
            if section == "Service":
                _assign(state, key, value, "%s:%d" % (path, lineno))
    return state


def _assign(state: Dict[str, Any], key: str, value: str, where: str) -> None:
    """One [Service] line into load_unit()'s state, as systemd merges it."""
    if key == "Environment":
        _assign_environment(state, value, where)
    elif key == "EnvironmentFile":
        if value == "":
            state["environment_files"] = []
            return
        optional = value.startswith("-")
        state["environment_files"].append({"path": value[1:] if optional else value,
                                           "optional": optional, "where": where})
    elif key == "ExecStart":
        if value == "":
            state["exec_start"] = []
        else:
            state["exec_start"].append({"value": value, "where": where})
    elif key == "UnsetEnvironment":
        if value == "":
            state["unset_environment"] = []
            return
        words, ok = split_words(value)
        state["unset_environment"].extend(words if ok else [])
    else:
        add_setting(state["settings"], key, value)
        state["sources"][key] = where


def _assign_environment(state: Dict[str, Any], value: str, where: str) -> None:
    """An Environment= line: its valid NAME=VALUE words, the others rejected as systemd does."""
    if value == "":
        state["environment"] = []
        return
    words, ok = split_words(value)
    if not ok:
        state["rejected_assignments"].append({"where": where, "text": value, "line": value,
                                              "reason": "unbalanced quotes or bad escape: "
                                                        "the whole line is ignored"})
        return
    for word in words:
        name, eq, val = word.partition("=")
        if not eq or not ENV_NAME.match(name):
            state["rejected_assignments"].append({"where": where, "text": word, "line": value,
                                                  "reason": "Invalid environment assignment, ignoring"})
            continue
        state["environment"].append({"name": name, "value": val, "where": where})


# --------------------------------------------------------------------------- systemctl show

SHOW_PROPERTIES = ("Id", "LoadState", "ActiveState", "FragmentPath", "DropInPaths", "NeedDaemonReload",
                   "Environment", "EnvironmentFiles", "UnsetEnvironment", "User", "Group", "DynamicUser",
                   "ExecSearchPath", "MainPID", "WorkingDirectory", "ExecStart",
                   "SupplementaryGroups") + RESTRICTION_KEYS


def show_args(unit: str) -> List[str]:
    """Arguments after `systemctl [--user]` that read the properties this toolkit needs."""
    argv = ["show", unit, "--no-pager"]
    for prop in SHOW_PROPERTIES:
        argv += ["-p", prop]
    return argv


def parse_show(text: str) -> Dict[str, Any]:
    """`systemctl show` output -> dict; repeated keys (EnvironmentFiles) become lists."""
    out: Dict[str, Any] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key == "EnvironmentFiles":
            out.setdefault(key, []).append(value)
        else:
            out[key] = value
    return out


def state_from_show(show: Mapping[str, Any]) -> Dict[str, Any]:
    """A load_unit()-like state from `systemctl show` properties."""
    env = []
    words, _ok = split_words(show.get("Environment", ""))
    for word in words:
        name, eq, val = word.partition("=")
        if eq:
            env.append({"name": name, "value": val, "where": "systemctl show"})
    files = []
    for item in show.get("EnvironmentFiles", []):
        match = re.match(r"^(.*) \(ignore_errors=(yes|no)\)$", item)
        if match:
            files.append({"path": match.group(1), "optional": match.group(2) == "yes", "where": "systemctl show"})
    unset, _ok = split_words(show.get("UnsetEnvironment", ""))
    settings = {}
    for key in RESTRICTION_KEYS + ("User", "Group", "ExecSearchPath", "WorkingDirectory", "SupplementaryGroups"):
        value = show.get(key)
        if value not in (None, ""):
            settings[key] = [value] if key in _LIST_KEYS else value
    return {"fragment": show.get("FragmentPath") or None, "masked": show.get("LoadState") == "masked",
            "dropins": show.get("DropInPaths", "").split() if show.get("DropInPaths") else [],
            "environment": env, "environment_files": files, "unset_environment": unset,
            "rejected_assignments": [], "settings": settings, "sources": {}}
