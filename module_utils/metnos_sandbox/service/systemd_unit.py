# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd unit files read from disk, with systemd's own rules, and ``systemctl show``.

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
import shlex
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..host import bwrap as B

SYSTEM_UNIT_DIRS = ("/etc/systemd/system.control", "/run/systemd/system.control", "/run/systemd/transient",
                    "/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system",
                    "/usr/lib/systemd/system", "/lib/systemd/system")
USER_UNIT_DIRS = ("~/.config/systemd/user", "/etc/systemd/user", "/run/systemd/user",
                  "/usr/local/lib/systemd/user", "/usr/lib/systemd/user")
DEFAULT_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.\\@-]+\.(service|socket|timer|target|path|mount|slice|scope)$")


class UnitError(ValueError):
    pass


def valid_unit_name(name: object) -> bool:
    return bool(isinstance(name, str) and _UNIT_NAME.match(name) and ".." not in name)


# --------------------------------------------------------------------------- files

def _r(root: str, path: str) -> str:
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
            path = _r(root, os.path.join(directory, name))
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
        path = _r(root, target) if target.startswith("/") else os.path.join(os.path.dirname(path), target)
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
    """Drop-in files in the order systemd applies them."""
    chosen: Dict[str, Optional[str]] = {}
    for directory in dirs:
        for name in dropin_dir_names(unit):
            path = _r(root, os.path.join(directory, name))
            try:
                entries = os.listdir(path)
            except OSError:
                continue
            for entry in entries:
                if entry.endswith(".conf") and entry not in chosen:
                    full = os.path.join(path, entry)
                    if full in exclude:
                        chosen[entry] = None
                        continue
                    chosen[entry] = full
    files = [chosen[k] for k in sorted(chosen)]
    return [f for f in files if f is not None and os.path.isfile(f)]


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


def parse_env_file(text: str) -> Tuple[Dict[str, str], List[str]]:
    """systemd's EnvironmentFile= grammar. Returns (dict in order, [warnings])."""
    out: Dict[str, str] = {}
    warnings: List[str] = []
    i = 0
    n = len(text)
    lineno = 1
    while i < n:
        # skip leading whitespace and blank lines
        while i < n and text[i] in " \t\r\n":
            if text[i] == "\n":
                lineno += 1
            i += 1
        if i >= n:
            break
        if text[i] in "#;":
            while i < n and text[i] != "\n":
                i += 1
            continue
        start_line = lineno
        chars = []
        while i < n and text[i] not in "=\n":
            chars.append(text[i])
            i += 1
        key = "".join(chars).strip()
        if i >= n or text[i] == "\n":
            if key:
                warnings.append("line %d: %r has no '=' and is ignored" % (start_line, key))
            continue
        i += 1  # '='
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] in "\"'":
            value, i, lineno = _quoted_value(text, i, lineno)
        else:
            value, i, lineno = _bare_value(text, i, lineno)
        if not ENV_NAME.match(key):
            warnings.append("line %d: %r is not a valid variable name; ignored" % (start_line, key))
            continue
        out[key] = value
    return out, warnings


def _quoted_value(text: str, i: int, lineno: int) -> Tuple[str, int, int]:
    """An env-file value opening with a quote at ``i`` -> (value, index after it, line number)."""
    n = len(text)
    value = []
    quote = text[i]
    i += 1
    while i < n and text[i] != quote:
        ch = text[i]
        if ch == "\\" and quote == '"' and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "\n":
                i += 2
                lineno += 1
                continue
            if nxt in '"\\`$':
                value.append(nxt)
                i += 2
                continue
        if ch == "\n":
            lineno += 1
        value.append(ch)
        i += 1
    i += 1  # closing quote
    # anything after the closing quote up to end of line is appended (systemd keeps going)
    tail = []
    while i < n and text[i] != "\n":
        tail.append(text[i])
        i += 1
    return "".join(value) + "".join(tail).rstrip(), i, lineno


def _bare_value(text: str, i: int, lineno: int) -> Tuple[str, int, int]:
    """An unquoted env-file value from ``i`` -> (value, index after it, line number)."""
    n = len(text)
    value = []
    while i < n and text[i] != "\n":
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            if text[i + 1] == "\n":
                i += 2
                lineno += 1
                continue
            value.append(text[i + 1])
            i += 2
            continue
        value.append(ch)
        i += 1
    return "".join(value).strip(), i, lineno


# --------------------------------------------------------------------------- a whole unit

RESTRICTION_KEYS = ("RestrictNamespaces", "SystemCallFilter", "ProcSubset", "ProtectKernelTunables",
                    "RestrictSUIDSGID", "DynamicUser", "NoNewPrivileges", "PrivateUsers", "ProtectProc",
                    "PrivateTmp", "ProtectSystem", "ProtectHome", "CapabilityBoundingSet", "SystemCallArchitectures",
                    "LockPersonality", "PrivateDevices", "ProtectKernelModules", "ProtectClock", "RestrictRealtime",
                    "MemoryDenyWriteExecute", "PrivateNetwork", "IPAddressDeny", "ReadOnlyPaths",
                    "InaccessiblePaths", "TemporaryFileSystem", "RestrictAddressFamilies", "SystemCallErrorNumber")
_LIST_KEYS = ("SystemCallFilter", "RestrictNamespaces", "ReadOnlyPaths", "InaccessiblePaths",
              "TemporaryFileSystem", "CapabilityBoundingSet", "RestrictAddressFamilies")


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
    if frag is not None and not frag.get("masked"):
        files.append(frag["real"])
    files.extend(dropins)
    state: Dict[str, Any] = {
        "fragment": frag["path"] if frag else None, "masked": bool(frag and frag.get("masked")),
        "dropins": dropins, "environment": [], "environment_files": [], "unset_environment": [],
        "rejected_assignments": [], "settings": {}, "sources": {}, "exec_start": []}
    for path in files:
        try:
            with open(path, "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
        except (IOError, OSError):
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


def default_service_path(root: str = "/", runner: Optional[B.Runner] = None) -> str:
    """systemd's compiled-in PATH for services: `systemd-path search-binaries-default` when we can
    ask this host's systemd; else Debian/Ubuntu builds (split-usr compat) add /sbin:/bin."""
    if root in ("", "/") and runner is not None:
        for tool in ("/usr/bin/systemd-path", "/bin/systemd-path"):
            if os.path.exists(tool):
                rc, out, _err = runner([tool, "search-binaries-default"])
                if rc == 0 and out.strip().startswith("/"):
                    return out.strip()
    if os.path.exists(_r(root, "/etc/debian_version")):
        return DEFAULT_SYSTEM_PATH + ":/sbin:/bin"
    return DEFAULT_SYSTEM_PATH


def compose_environment(state: Mapping[str, Any], root: str = "/", manager_env: Optional[Mapping[str, str]] = None,
                        default_path: str = DEFAULT_SYSTEM_PATH) -> Tuple[Dict[str, str], Dict[str, str],
                                                                          List[Dict[str, Any]]]:
    """The environment the service's processes get: returns (env, provenance, problems)."""
    env = {"PATH": default_path}
    prov = {"PATH": "systemd default"}
    for key, value in (manager_env or {}).items():
        env[key] = value
        prov[key] = "manager environment"
    for item in state["environment"]:
        env[item["name"]] = item["value"]
        prov[item["name"]] = "Environment= (%s)" % item["where"]
    problems = []
    for ef in state["environment_files"]:
        path = ef["path"]
        try:
            with open(_r(root, path), "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
        except (IOError, OSError) as exc:
            problems.append({"path": path, "optional": ef["optional"], "where": ef["where"],
                             "error": exc.strerror or str(exc)})
            continue
        values, warnings = parse_env_file(text)
        for warning in warnings:
            problems.append({"path": path, "optional": ef["optional"], "where": ef["where"], "warning": warning})
        for key, value in values.items():
            env[key] = value
            prov[key] = "EnvironmentFile=%s%s" % ("-" if ef["optional"] else "", path)
    for item in state["unset_environment"]:
        name, eq, val = item.partition("=")
        if eq:
            if env.get(name) == val:
                env.pop(name, None)
                prov[name] = "UnsetEnvironment=%s" % item
        elif name in env:
            env.pop(name)
            prov[name] = "UnsetEnvironment=%s" % item
    return env, prov, problems


def manager_default_environment(root: str = "/") -> Dict[str, str]:
    """DefaultEnvironment= of /etc/systemd/system.conf and system.conf.d/*.conf."""
    env: Dict[str, str] = {}
    paths = [_r(root, "/etc/systemd/system.conf")]
    for directory in ("/usr/lib/systemd/system.conf.d", "/run/systemd/system.conf.d", "/etc/systemd/system.conf.d"):
        try:
            paths += [os.path.join(_r(root, directory), n) for n in sorted(os.listdir(_r(root, directory)))
                      if n.endswith(".conf")]
        except OSError:
            pass
    for path in paths:
        try:
            with open(path) as handle:
                items = parse_unit_text(handle.read())
        except (IOError, OSError, UnicodeDecodeError):
            continue
        for section, key, value, _lineno in items:
            if section == "Manager" and key == "DefaultEnvironment":
                if value == "":
                    env = {}
                    continue
                words, ok = split_words(value)
                for word in words if ok else []:
                    name, eq, val = word.partition("=")
                    if eq and ENV_NAME.match(name):
                        env[name] = val
    return env


# --------------------------------------------------------------------------- systemctl show

SHOW_PROPERTIES = ("Id", "LoadState", "ActiveState", "FragmentPath", "DropInPaths", "NeedDaemonReload",
                   "Environment", "EnvironmentFiles", "UnsetEnvironment", "User", "Group", "DynamicUser",
                   "ExecSearchPath", "MainPID", "WorkingDirectory", "ExecStart") + RESTRICTION_KEYS


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
    for key in RESTRICTION_KEYS + ("User", "Group", "ExecSearchPath", "WorkingDirectory"):
        value = show.get(key)
        if value not in (None, ""):
            settings[key] = [value] if key in _LIST_KEYS else value
    return {"fragment": show.get("FragmentPath") or None, "masked": show.get("LoadState") == "masked",
            "dropins": show.get("DropInPaths", "").split() if show.get("DropInPaths") else [],
            "environment": env, "environment_files": files, "unset_environment": unset,
            "rejected_assignments": [], "settings": settings, "sources": {}}


# --------------------------------------------------------------------------- ExecStart= and the environment

SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox")
_SHELL_KEYWORDS = ("if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
                   "function", "select", "{", "}", "!", "[[", "source", ".", "eval", "set", "read", "declare",
                   "typeset", "local")
_ENV_FLAGS_NOARG = ("-0", "--null", "-v", "--debug", "--list-signal-handling")
_ENV_FLAGS_ARG = ("-C", "--chdir", "--block-signal", "--default-signal", "--ignore-signal")
_VAR_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
MAX_EXEC_WORDS = 4096


def exec_words(value: str) -> Optional[Tuple[str, List[str]]]:
    """ExecStart= value -> (prefix characters, [words]) with systemd's quoting, or None if invalid."""
    prefix = ""
    while value[:1] in ("@", "-", ":", "+", "!") and value:
        prefix += value[0]
        value = value[1:]
    words, ok = split_words(value)
    if not ok or not words or len(words) > MAX_EXEC_WORDS:
        return None
    return prefix, words


def _substitute(word: str, env: Mapping[str, str]) -> Tuple[str, List[str]]:
    """systemd's $VAR/${VAR} substitution in ExecStart= words. Returns (word, unknown names)."""
    unknown = []

    def sub(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in env:
            return env[name]
        unknown.append(name)
        return ""

    if "$$" in word:
        parts = word.split("$$")
        out = []
        for part in parts:
            text, miss = _substitute(part, env)
            out.append(text)
            unknown.extend(miss)
        return "$".join(out), unknown
    return _VAR_REF.sub(sub, word), unknown


def exec_env_effect(value: str, env: Optional[Mapping[str, str]] = None,
                    keys: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """What the start command line does to the environment before the program runs.

    Parses env(1) prefixes (``NAME=VALUE``, ``-u NAME``, ``-i``) and ``sh -c 'NAME=V exec ...'``
    style shells. Returns {"sets": {}, "unsets": [], "clears": bool, "determinable": bool,
    "how": "env"|"shell"|None, "words": [...], "prefix": str, "note": str}. ``keys`` limits the
    "undeterminable" verdict to scripts that mention one of them.
    """
    env = dict(env or {})
    keys = tuple(keys or ())
    out: Dict[str, Any] = {"sets": {}, "unsets": [], "clears": False, "determinable": True, "how": None,
                           "note": None, "words": [], "prefix": ""}
    parsed = exec_words(value)
    if parsed is None:
        out.update(determinable=False, note="the command line cannot be split with systemd's quoting rules")
        return out
    prefix, words = parsed
    out["prefix"], out["words"] = prefix, list(words)
    if "@" in prefix and len(words) > 1:
        words = [words[0]] + words[2:]          # @path argv0 args...: argv0 is only a name
    words = _substituted(words, env, keys, out)
    i = _env_prefix(words, out)
    if i is None:
        return out
    if i < len(words) and os.path.basename(words[i]) in SHELLS:
        shell = words[i:]
        if "-c" in shell[1:3] or (len(shell) > 1 and shell[1].startswith("-") and "c" in shell[1]):
            idx = next(n for n, w in enumerate(shell) if w == "-c" or (w.startswith("-") and "c" in w and n > 0))
            script = shell[idx + 1] if idx + 1 < len(shell) else ""
            out["how"] = "shell" if out["how"] is None else out["how"] + "+shell"
            _shell_effect(script, dict(env, **out["sets"]), out, keys)
    return out


def _substituted(words: Sequence[str], env: Mapping[str, str], keys: Sequence[str],
                 out: Dict[str, Any]) -> List[str]:
    """``words`` after $VAR substitution; an unknown variable where it matters makes ``out`` undeterminable."""
    subst = []
    for word in words:
        text, unknown = _substitute(word, env)
        if unknown and any(k in word for k in keys) or unknown and "=" in word.split("$")[0]:
            out.update(determinable=False, note="$%s is not set when the command line is expanded" % unknown[0])
        subst.append(text)
    return subst


def _env_prefix(words: List[str], out: Dict[str, Any]) -> Optional[int]:
    """env(1) prefixes of the start command line into ``out``: the index of the first word after them,
    or None when what they do cannot be told (``out`` says why)."""
    i = 0
    while i < len(words) and os.path.basename(words[i]) == "env":
        out["how"] = "env"
        i += 1
        while i < len(words):
            word = words[i]
            if word == "--":
                i += 1
                break
            if word in ("-i", "--ignore-environment", "-"):
                out["clears"] = True
                out["sets"] = {}
            elif word in ("-u", "--unset"):
                if i + 1 >= len(words):
                    break
                i += 1
                out["unsets"].append(words[i])
                out["sets"].pop(words[i], None)
            elif word.startswith("--unset="):
                out["unsets"].append(word.split("=", 1)[1])
            elif word.startswith("-u") and len(word) > 2:
                out["unsets"].append(word[2:])
            elif word in _ENV_FLAGS_NOARG:
                pass
            elif word in _ENV_FLAGS_ARG:
                i += 1
            elif any(word.startswith(f + "=") for f in _ENV_FLAGS_ARG) or (word.startswith("-C") and len(word) > 2):
                pass
            elif word.startswith("-S") or word.startswith("--split-string"):
                out.update(determinable=False, note="env -S splits a string itself")
                return None
            elif word.startswith("-"):
                out.update(determinable=False, note="env option %r is not understood" % word)
                return None
            elif "=" in word and ENV_NAME.match(word.split("=", 1)[0]):
                name, _eq, val = word.partition("=")
                out["sets"][name] = val
            else:
                break
            i += 1
    return i


def _shell_effect(script: str, env: Mapping[str, str], out: Dict[str, Any], keys: Sequence[str]) -> None:
    """The environment effect of a simple ``sh -c`` script: assignments before ``exec``/the command,
    ``export``, ``unset``. Anything else that mentions one of ``keys`` is undeterminable."""
    relevant = any(k in script for k in keys) or any(t in script for t in ("set -a", "source ", "eval ", ". /"))
    statements = _shell_statements(script, relevant, out)
    if statements is None:
        return
    if relevant and any(stmt and stmt[0] in _SHELL_KEYWORDS for stmt in statements):
        out.update(determinable=False, note="the shell script uses control structures")
        return
    for stmt in statements:
        if stmt:
            _shell_statement(stmt, env, out, keys, relevant)


def _shell_statements(script: str, relevant: bool, out: Dict[str, Any]) -> Optional[List[List[str]]]:
    """A script's simple commands (lists of words), or None when it is not a plain sequence of them
    (``out`` says why when the script is ``relevant``)."""
    try:
        lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        if relevant:
            out.update(determinable=False, note="the shell script cannot be parsed")
        return None
    statements: List[List[str]] = []
    current: List[str] = []
    for tok in tokens:
        if tok in (";", "&&", "\n"):
            statements.append(current)
            current = []
        elif tok in ("|", "||", "&", "|&", ";;") or tok.startswith(("(", "{")) or "$(" in tok or "`" in tok:
            if relevant:
                out.update(determinable=False, note="the shell script is not a plain sequence of commands")
            return None
        else:
            current.append(tok)
    statements.append(current)
    return statements


def _shell_statement(stmt: List[str], env: Mapping[str, str], out: Dict[str, Any], keys: Sequence[str],
                     relevant: bool) -> None:
    """One simple command's effect on the environment, into ``out``."""
    head = stmt[0]
    if head == "export":
        for word in stmt[1:]:
            name, eq, val = word.partition("=")
            if eq and ENV_NAME.match(name):
                out["sets"][name] = val
        return
    if head == "unset":
        for name in stmt[1:]:
            if ENV_NAME.match(name):
                out["unsets"].append(name)
                out["sets"].pop(name, None)
        return
    assigns = []
    rest = list(stmt)
    while rest and "=" in rest[0] and ENV_NAME.match(rest[0].split("=", 1)[0]):
        assigns.append(rest.pop(0))
    if rest and rest[0] == "exec":
        rest.pop(0)
        while rest and "=" in rest[0] and ENV_NAME.match(rest[0].split("=", 1)[0]):
            assigns.append(rest.pop(0))
    for word in assigns:
        name, _eq, val = word.partition("=")
        if "$" in val and name in keys:
            out.update(determinable=False, note="%s is assigned from a shell expansion" % name)
            continue
        if rest or name in env or name in out["sets"]:
            # prefix assignments reach the command; a bare one changes an imported (exported) variable
            out["sets"][name] = val
    if rest and rest[0] in ("env",) and relevant:
        out.update(determinable=False, note="the shell script runs env(1) itself")


def apply_exec_effect(env: Mapping[str, str], effect: Mapping[str, Any]) -> Dict[str, str]:
    """The environment the program gets: ``env`` changed as the start command line does."""
    result = {} if effect["clears"] else dict(env)
    for name in effect["unsets"]:
        result.pop(name, None)
    result.update(effect["sets"])
    return result


def quote_exec_word(word: str) -> str:
    """A word for an ExecStart= line: quoted when needed, specifiers and $ references kept as written."""
    if word and not re.search(r"[\s\"'\\;]", word) and all(32 <= ord(c) < 127 or ord(c) > 159 for c in word):
        return word
    out = []
    for ch in word:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    return '"%s"' % "".join(out)


def neutralised_exec(value: str, keys: Sequence[str]) -> Tuple[Optional[str], Optional[str]]:
    """An ExecStart= value with env(1)'s assignments and unsets of ``keys`` removed.

    Returns (value, None) -- the same value when there is nothing to remove -- or (None, reason)
    when a drop-in cannot neutralise it (shell scripts, ``env -i``, ``env -S``).
    """
    parsed = exec_words(value)
    if parsed is None:
        return None, "the command line cannot be split with systemd's quoting rules"
    prefix, words = parsed
    head = 2 if "@" in prefix else 1          # '@path argv0 args': argv0 is only a name
    if len(words) < head:
        return None, "the command line has no argv[0]"
    rest = list(words[head:])
    kept, i, changed, refusal = _strip_env_words(rest, keys, os.path.basename(words[0]) == "env")
    if refusal is not None:
        return None, refusal
    out = list(words[:head]) + kept
    tail = rest[i:]
    shell = os.path.basename(tail[0]) in SHELLS if tail else os.path.basename(words[0]) in SHELLS
    if (shell or os.path.basename(words[0]) in SHELLS) and any(k in " ".join(words) for k in keys):
        return None, "the command runs a shell script that sets %s; edit ExecStart= by hand" % "/".join(keys)
    if not changed:
        return value, None
    return prefix + " ".join(quote_exec_word(w) for w in out + tail), None


def _strip_env_words(rest: List[str], keys: Sequence[str],
                     in_env: bool) -> Tuple[List[str], int, bool, Optional[str]]:
    """The env(1) words of ``rest`` (after argv[0]) without the assignments and unsets of ``keys``:
    (words kept, index of the first word after env's, whether any was removed, refusal or None)."""
    out: List[str] = []
    changed = False
    i = 0
    while in_env and i < len(rest):
        word = rest[i]
        if word == "--":
            out.append(word)
            i += 1
            in_env = i < len(rest) and os.path.basename(rest[i]) == "env"
            if in_env:
                out.append(rest[i])
                i += 1
            continue
        if word in ("-i", "--ignore-environment", "-") or word.startswith(("-S", "--split-string")):
            return out, i, changed, "env %s replaces or re-splits the whole environment; edit ExecStart= by hand" \
                % word
        if word in ("-u", "--unset") and i + 1 < len(rest):
            if rest[i + 1] in keys:
                changed = True
            else:
                out += [word, rest[i + 1]]
            i += 2
            continue
        if word.startswith("--unset=") or (word.startswith("-u") and not word.startswith("--") and len(word) > 2):
            target = word.split("=", 1)[1] if word.startswith("--unset=") else word[2:]
            if target in keys:
                changed = True
            else:
                out.append(word)
            i += 1
            continue
        if word.startswith("-"):
            out.append(word)
            if word in _ENV_FLAGS_ARG and i + 1 < len(rest):
                out.append(rest[i + 1])
                i += 1
            i += 1
            continue
        if "=" in word and ENV_NAME.match(word.split("=", 1)[0]):
            if word.split("=", 1)[0] in keys:
                changed = True
            else:
                out.append(word)
            i += 1
            continue
        if os.path.basename(word) == "env":
            out.append(word)
            i += 1
            continue
        break
    return out, i, changed, None
