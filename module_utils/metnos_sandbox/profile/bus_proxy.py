# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filtering proxy's socket (host.system_bus_proxy) is not the system bus itself (issue 50 item 2).

systemd:read / system:read bind host.system_bus_proxy where the bus is expected; if that path is the bus's own
socket, a symbolic link to it, or the same inode under another name (a hard link, a bind mount), the sandbox gets
the unfiltered bus and the proxy's policy filters nothing. Each of the three is refused with its own code
(base/codes_channels.py). The real bus's sockets: BUS_SOCKETS, the unix:path of the renderer's
DBUS_SYSTEM_BUS_ADDRESS, and host.system_bus_sockets (the sockets the proxy itself connects to).

The proxy runs as its own user; a profile that binds its socket gives the sandbox that user's uid number inside
its user namespace (mapped_uid: why, and why it grants nothing).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
from typing import List, Mapping, Optional

from ..base import diagnostics
from . import host_context, mountmodel

BUS_SOCKETS = ("/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket")
MAX_ADDRESS = 4096          # DBUS_SYSTEM_BUS_ADDRESS read no further (the environment is input)


def address_paths(address: str) -> List[str]:
    """The absolute unix:path=... values of a D-Bus address (';'-separated transports, ','-separated keys,
    values %-escaped); any other transport (abstract, tcp) names no file."""
    found = []
    for transport in address[:MAX_ADDRESS].split(";"):
        kind, _colon, keys = transport.partition(":")
        if kind != "unix":
            continue
        for pair in keys.split(","):
            key, _equals, value = pair.partition("=")
            if "%" in value:
                # only for an escaped value: urllib.parse imports ipaddress, which builds its tables (~1.5 ms of
                # every audit's imports on the host, where this module is imported for every render)
                from urllib.parse import unquote
                value = unquote(value)
            path = value
            if key == "path" and path.startswith("/") and "\x00" not in path:
                found.append(os.path.normpath(path))
    return found


def bus_sockets(configured: List[str], environ: Mapping[str, str]) -> List[str]:
    """The real bus's sockets as written: the well-known ones, the environment's, the admin's."""
    found: List[str] = []
    for path in list(BUS_SOCKETS) + address_paths(environ.get("DBUS_SYSTEM_BUS_ADDRESS", "")) + list(configured):
        if path not in found:
            found.append(path)
    return found


def swapped(proxy: str, real: str, sockets: List[str],
            state: host_context.RenderState) -> Optional[diagnostics.Diagnostic]:
    """The refusal when the proxy's socket ``proxy`` (resolved: ``real``) is one of the bus's ``sockets``: as
    written (bus_proxy_is_bus), resolved through a link (bus_proxy_symlink_to_bus), or the same device and inode
    (bus_proxy_same_inode_as_bus); None when it is none of them. A bus socket missing on this host is no match."""
    mine = state.stats.lstat(real)
    for bus in sockets:
        bus_real = state.real_or_none(bus)
        code = None
        if proxy == bus or proxy == bus_real:
            code = "bus_proxy_is_bus"
        elif real == bus_real:
            code = "bus_proxy_symlink_to_bus"
        elif bus_real is not None and mine is not None:
            theirs = state.stats.lstat(bus_real)
            if theirs is not None and (theirs.st_dev, theirs.st_ino) == (mine.st_dev, mine.st_ino):
                code = "bus_proxy_same_inode_as_bus"
        if code is not None:
            return diagnostics.make(code, wording="bus", host_key="system_bus_proxy",
                                    path=diagnostics.excerpt(proxy, 600), bus=diagnostics.excerpt(bus, 600))
    return None


def mapped_uid(source: Optional[str], stats: mountmodel.Stats) -> Optional[int]:
    """The uid the sandbox is given inside its user namespace (bwrap --uid) when it binds the proxy's socket: the
    socket's owner, the proxy's own user (it made the socket), never root. ``source``: what the profile binds at
    channels.SYSTEM_BUS (None: nothing).

    The proxy runs as its own system user, so that no sandbox can signal or ptrace it. The bus checks the identity
    a client claims in its SASL line (``AUTH EXTERNAL <hex uid>``, which xdg-dbus-proxy forwards as written)
    against the proxy connection's SO_PEERCRED: libdbus and GDBus claim getuid(), and are refused unless the
    sandbox's uid reads as the proxy's. The mapping is a number inside the namespace only: the kernel still sees
    the executors' uid for every file, signal and socket (SO_PEERCRED, SCM_CREDENTIALS are translated back), and
    the claimed identity is plain text any client could write by hand, so it grants nothing. None: no proxy bound,
    its owner unknown, or root (no mapping: uid 0 inside is refused)."""
    info = stats.lstat(source) if source is not None else None
    return info.st_uid if info is not None and info.st_uid != 0 else None
