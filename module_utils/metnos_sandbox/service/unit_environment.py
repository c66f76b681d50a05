# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The environment systemd gives a service's processes, composed from disk: systemd's default PATH, the
manager's DefaultEnvironment=, the unit's Environment=, its EnvironmentFile= files (systemd's env-file
grammar: their values override Environment=), then UnsetEnvironment= (systemd.exec(5)).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..host import bwrap
from .systemd_unit import DEFAULT_SYSTEM_PATH, ENV_NAME, in_root, parse_unit_text, split_words


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


def default_service_path(root: str = "/", runner: Optional[bwrap.Runner] = None) -> str:
    """systemd's compiled-in PATH for services: `systemd-path search-binaries-default` when we can
    ask this host's systemd; else Debian/Ubuntu builds (split-usr compat) add /sbin:/bin."""
    if root in ("", "/") and runner is not None:
        for tool in ("/usr/bin/systemd-path", "/bin/systemd-path"):
            if os.path.exists(tool):
                rc, out, _err = runner([tool, "search-binaries-default"])
                if rc == 0 and out.strip().startswith("/"):
                    return out.strip()
    if os.path.exists(in_root(root, "/etc/debian_version")):
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
            with open(in_root(root, path), "rb") as handle:
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
    paths = [in_root(root, "/etc/systemd/system.conf")]
    for directory in ("/usr/lib/systemd/system.conf.d", "/run/systemd/system.conf.d", "/etc/systemd/system.conf.d"):
        try:
            paths += [os.path.join(in_root(root, directory), n) for n in sorted(os.listdir(in_root(root, directory)))
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
