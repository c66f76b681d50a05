# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service's environment judged as a channel (issue 40): the profile has no --clearenv, so every variable
the service's process has reaches every executor. Credential-like names (a secret handed to every executor),
agent sockets (a channel to a key agent), and variables that make an interpreter, the dynamic loader or a shell
load code (a load path another executor can write lets executor A plant code executor B runs).

Names are reported, values never: a value is read only to find the paths a load variable names, and no
message, detail or remediation carries it. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import re
from typing import Dict, List, Mapping, Optional

from ..base import diagnostics
from . import run_user

# Variables systemd (or the kernel's exec) sets itself whose names look like a credential but hold none.
NOT_CREDENTIALS = frozenset(["CREDENTIALS_DIRECTORY", "PWD", "OLDPWD", "KEYMAP", "XKB_DEFAULT_KEYMAP"])
# Whole names that are credentials although no word of them says so.
CREDENTIAL_NAMES = frozenset([
    "AWS_ACCESS_KEY_ID", "MYSQL_PWD", "PGPASSFILE", "DATABASE_URL", "REDIS_URL", "SENTRY_DSN", "NETRC",
    "KUBECONFIG", "DOCKER_AUTH_CONFIG", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_CERTIFICATE_PATH",
    "VAULT_ADDR_TOKEN", "HTPASSWD", "KRB5CCNAME", "KRB5_KTNAME"])
# A word of the name (split at '_') that makes it a credential; a last word ending in one of CREDENTIAL_SUFFIXES
# too (API_KEY, APITOKEN, AUTHKEY). Not SESSION: XDG_SESSION_ID and DBUS_SESSION_BUS_ADDRESS name no secret.
CREDENTIAL_WORDS = frozenset(["TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS",
                              "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "APIKEY", "PRIVATE", "COOKIE", "AUTH",
                              "DSN"])
CREDENTIAL_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "APIKEY")
ANYWHERE = ("SECRET", "PASSWORD", "PASSWD")           # *_SECRET*, *PASSWORD*: anywhere in the name
# Sockets of agents that sign or decrypt for whoever reaches them.
AGENT_NAMES = frozenset(["SSH_AUTH_SOCK", "GPG_AGENT_INFO", "GNUPGHOME", "SSH_AGENT_PID", "KRB5CCNAME"])
# Variables that tell a process where a channel to another process is (issue 50): a bus that starts units and
# calls session services, a display server that reads every keystroke and injects input, the folder of a user's
# sockets, descriptors handed over by socket activation, systemd's notify socket. What each one opens.
CHANNEL_NAMES: Dict[str, str] = {
    "DBUS_SESSION_BUS_ADDRESS": "a D-Bus session bus (an abstract socket needs no bind: a net: executor reaches it)",
    "DBUS_SYSTEM_BUS_ADDRESS": "the D-Bus system bus, unfiltered",
    "DISPLAY": "an X11 display server (reads keystrokes, injects input; abstract @/tmp/.X11-unix sockets)",
    "WAYLAND_DISPLAY": "a Wayland compositor's socket",
    "XDG_RUNTIME_DIR": "a user's runtime folder (its bus, agents, pipewire and compositor sockets)",
    "LISTEN_FDS": "descriptors handed over by socket activation (the service's own listening sockets)",
    "LISTEN_FDNAMES": "descriptors handed over by socket activation (the service's own listening sockets)",
    "LISTEN_PID": "descriptors handed over by socket activation (the service's own listening sockets)",
    "NOTIFY_SOCKET": "systemd's notify socket (READY=1, MAINPID=, FDSTORE= for the service)",
}
# Variables that make the dynamic loader, an interpreter or a shell load code. The value's shape: "paths" (a
# list of folders or files, ':' or ' ' separated), "file" (one file run at start), "options" (command-line
# options of the interpreter, which can name files to load), "code" (the value itself is code).
LOADERS: Dict[str, str] = {
    "LD_PRELOAD": "paths", "LD_LIBRARY_PATH": "paths", "LD_AUDIT": "paths", "GCONV_PATH": "paths",
    "PYTHONPATH": "paths", "PYTHONHOME": "paths", "PYTHONSTARTUP": "file", "PYTHONUSERBASE": "paths",
    "PYTHONBREAKPOINT": "code", "PYTHONINSPECT": "code",
    "BASH_ENV": "file", "ENV": "file", "ZDOTDIR": "paths", "PROMPT_COMMAND": "code", "SHELLOPTS": "code",
    "PS4": "code",
    "PERL5LIB": "paths", "PERLLIB": "paths", "PERL5OPT": "options", "PERL5DB": "code",
    "RUBYOPT": "options", "RUBYLIB": "paths",
    "NODE_OPTIONS": "options", "NODE_PATH": "paths",
    "JAVA_TOOL_OPTIONS": "options", "_JAVA_OPTIONS": "options", "JDK_JAVA_OPTIONS": "options", "CLASSPATH": "paths",
    "LUA_PATH": "paths", "LUA_CPATH": "paths", "LUA_INIT": "code", "TCLLIBPATH": "paths",
    "GIT_EXEC_PATH": "paths", "GIT_SSH_COMMAND": "code", "GIT_CONFIG_GLOBAL": "file",
}
# Prefixes whose every variable loads code: bash's exported functions, the dynamic loader's own.
LOADER_PREFIXES = ("BASH_FUNC_", "LD_")
MAX_REPORTED = 32          # variables reported per class (the rest are counted)
MAX_PATH_WORDS = 64        # words of one load variable's value that are judged


def is_credential(name: str) -> bool:
    """Whether ``name`` looks like a variable holding a credential (by its name alone)."""
    upper = name.upper()
    if upper in NOT_CREDENTIALS:
        return False
    if upper in CREDENTIAL_NAMES:
        return True
    if any(part in upper for part in ANYWHERE):
        return True
    words = [w for w in upper.split("_") if w]
    if any(w in CREDENTIAL_WORDS for w in words):
        return True
    return bool(words) and words[-1].endswith(CREDENTIAL_SUFFIXES) and (len(words) > 1 or upper in CREDENTIAL_WORDS)


def loader_kind(name: str) -> Optional[str]:
    """How ``name`` makes code load (LOADERS' kinds), None when it does not."""
    if name in LOADERS:
        return LOADERS[name]
    if name.startswith("BASH_FUNC_"):
        return "code"
    if name.startswith("LD_") and name not in ("LD_BIND_NOW", "LD_BIND_NOT", "LD_WARN", "LD_VERBOSE"):
        return "paths"
    return None


def _path_words(kind: str, value: str, cwd: str) -> List[str]:
    """The files and folders a load variable's value names, absolute (relative ones resolved from ``cwd``, the
    service's working directory: an executor's may be another, writable one)."""
    if kind == "options":
        words = [w.partition("=")[2] or w for w in value.split()]
        words = [w for w in words if "/" in w]
    elif kind == "file":
        words = [value]
    else:
        words = [w for chunk in value.split(":") for w in chunk.split()] if value else []
        if value.startswith(":") or value.endswith(":") or "::" in value:
            words.append("")
    return [os.path.join(cwd, w) if not w.startswith("/") else w for w in words[:MAX_PATH_WORDS]]


def _writable(kind: str, value: str, cwd: str) -> List[str]:
    """Which entries of a load variable someone other than root can write (the entry or a folder on its way,
    judged as the PATH check judges a PATH entry: run_user.write_problem), and whether one is relative
    (loaded from whatever directory the process runs in): words, never the value's text."""
    if kind == "code":
        return []
    found: List[str] = []
    raw = value.split(":") if kind == "paths" else [w.partition("=")[2] or w for w in value.split()] \
        if kind == "options" else [value]
    if any(w and not w.startswith("/") and (kind != "options" or "/" in w) for w in raw) or (
            kind == "paths" and "" in raw and bool(value)):
        found.append("a relative or empty entry loads from the directory the process runs in")
    bad = [str(i + 1) for i, path in enumerate(_path_words(kind, value, cwd)) if run_user.write_problem(path)]
    if bad:
        found.append("entry %s: writable by someone other than root (the entry, or a folder on its way, is not "
                     "root's alone)" % ", ".join(bad[:8]))
    return found


def channel_diagnostics(unit: str, env: Mapping[str, str], origin: str, cwd: str = "/") -> List[diagnostics.Diagnostic]:
    """The environment ``env`` (the live process's, else the configuration's: ``origin`` says which) judged as
    a channel: service_env_credential, service_env_agent_socket, service_env_channel (a bus, display, runtime
    folder, activation descriptors or notify socket), service_env_loader (an error when the folder or file it
    loads from is writable by someone other than root, or relative). Names only."""
    credentials, agents, loaders, channels = [], [], [], []
    for name in sorted(env):
        if name in AGENT_NAMES:
            agents.append(name)
        elif name in CHANNEL_NAMES:
            channels.append(name)
        elif loader_kind(name) is not None:
            loaders.append(name)
        elif is_credential(name):
            credentials.append(name)
    diags: List[diagnostics.Diagnostic] = []
    for name in credentials[:MAX_REPORTED]:
        diags.append(diagnostics.make("service_env_credential", unit=unit, name=name, origin=origin))
    for name in agents[:MAX_REPORTED]:
        diags.append(diagnostics.make("service_env_agent_socket", unit=unit, name=name, origin=origin))
    for name in channels:
        diags.append(diagnostics.make("service_env_channel", unit=unit, name=name, origin=origin,
                                      fill={"what": CHANNEL_NAMES[name]}))
    for name in loaders[:MAX_REPORTED]:
        kind = loader_kind(name) or "code"
        found = _writable(kind, env[name], cwd)
        if found:
            why = "; ".join(found)
            diags.append(diagnostics.make("service_env_loader", unit=unit, severity=diagnostics.ERROR,
                                          wording="writable", name=name,
                                          origin=origin, fill={"why": why}))
        else:
            diags.append(diagnostics.make("service_env_loader", unit=unit, name=name, origin=origin, wording="loads"))
    left = len(credentials) + len(agents) + len(loaders) - sum(
        min(len(x), MAX_REPORTED) for x in (credentials, agents, loaders))
    if left and diags:
        diags[-1] = diagnostics.amend(diags[-1], "more_diagnostics", count=left)
    return diags


def redacted(env: Mapping[str, str]) -> Dict[str, str]:
    """``env`` with the value of every credential-like, agent or channel variable replaced by a marker (what a face may
    return when asked for the whole environment)."""
    return dict((k, REDACTED if hidden(k) else v) for k, v in env.items())


def hidden(name: str) -> bool:
    """Whether the value of ``name`` is never shown: a credential-like name, an agent's or a channel's."""
    return name in AGENT_NAMES or name in CHANNEL_NAMES or is_credential(name)


REDACTED = "<redacted: a credential-like name; the value is never returned>"
ASSIGNMENT: "re.Pattern[str]" = re.compile(r"""([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|'[^']*'|\S*)""")


def redacted_text(text: str) -> str:
    """``text`` (a start command line quoted in a message) with the value of every NAME=VALUE whose name looks
    like a credential or an agent's socket replaced by <redacted>."""
    def hide(match: "re.Match[str]") -> str:
        name = match.group(1)
        return "%s=<redacted>" % name if hidden(name) else match.group(0)
    return ASSIGNMENT.sub(hide, text)
