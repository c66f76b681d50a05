# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What system:read:network_interfaces exposes (issue 50 item 3): the grant is the host's network namespace (no
--unshare-net), so every loopback-only service of the host (an admin API on 127.0.0.1, a database on ::1, a
daemon's abstract Unix socket) answers the sandbox. The listeners are read from the kernel's tables of the
renderer's namespace - /proc/net/tcp, tcp6, udp, udp6 (LISTEN, or unconnected UDP; on a loopback or wildcard
address: both answer on 127.0.0.1) and /proc/net/unix (listening abstract sockets) - bounded, parsed as data,
and each is a finding (network_loopback_listener); the grant itself says plainly it is the host network
(network_host_namespace).

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
from typing import List, Tuple

from ..base import diagnostics

PROC_NET = "/proc/net"
MAX_TABLE_BYTES = 4 * 1024 * 1024     # of each table; the rest is not read (and said so)
MAX_REPORTED = 32
TCP_LISTEN = "0A"
UDP_UNCONNECTED = "07"
UNIX_ACCEPTING = 0x10000               # __SO_ACCEPTCON: a listening Unix socket
# Local addresses (as the kernel prints them: hex, each 32-bit word in host order) that loopback reaches.
LOOPBACK_V6 = ("00000000000000000000000001000000", "00000000000000000000000000000000")
MAPPED_V4 = "0000000000000000FFFF0000"


def _read(path: str) -> Tuple[List[str], bool]:
    """The lines of a /proc table (bounded) and whether it was read whole; no lines when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TABLE_BYTES + 1)
    except OSError:
        return [], True
    return data[:MAX_TABLE_BYTES].decode("ascii", "replace").splitlines()[1:], len(data) <= MAX_TABLE_BYTES


def _ipv4(word: str) -> str:
    """'0100007F' (little-endian on the hosts Metnos runs on) -> '127.0.0.1'."""
    octets = [int(word[i:i + 2], 16) for i in (6, 4, 2, 0)]
    return ".".join(str(o) for o in octets)


def _address(local: str) -> str:
    """The address:port of a local_address field, or '' when loopback cannot reach it."""
    host, _sep, port_hex = local.partition(":")
    try:
        port = int(port_hex, 16)
        if len(host) == 8:
            address = _ipv4(host)
            return "%s:%d" % (address, port) if address.startswith("127.") or address == "0.0.0.0" else ""
        if host in LOOPBACK_V6:
            return "[%s]:%d" % ("::1" if host == LOOPBACK_V6[0] else "::", port)
        if len(host) == 32 and host.startswith(MAPPED_V4) and _ipv4(host[24:]).startswith("127."):
            return "[::ffff:%s]:%d" % (_ipv4(host[24:]), port)
    except ValueError:
        return ""
    return ""


def listeners(proc_net: str = PROC_NET) -> Tuple[List[str], bool]:
    """Every listener the host's loopback reaches, as 'tcp 127.0.0.1:8080', 'udp [::1]:53', 'unix @name';
    and whether every table was read whole."""
    found: List[str] = []
    whole = True
    for table, state in (("tcp", TCP_LISTEN), ("tcp6", TCP_LISTEN), ("udp", UDP_UNCONNECTED),
                         ("udp6", UDP_UNCONNECTED)):
        lines, complete = _read(os.path.join(proc_net, table))
        whole = whole and complete
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == state:
                address = _address(fields[1])
                if address and "%s %s" % (table[:3], address) not in found:
                    found.append("%s %s" % (table[:3], address))
    lines, complete = _read(os.path.join(proc_net, "unix"))
    whole = whole and complete
    for line in lines:
        fields = line.split(None, 7)
        try:
            accepting = int(fields[3], 16) & UNIX_ACCEPTING
        except (IndexError, ValueError):
            continue
        if accepting and len(fields) > 7 and fields[7].startswith("@"):
            found.append("unix %s" % fields[7])
    return found, whole


def findings(what: str, found: List[str]) -> List[diagnostics.Diagnostic]:
    """network_host_namespace for the grant ``what``, then network_loopback_listener for each of ``found``
    (listeners(), read once per host context: reading /proc/net costs ~10 ms of kernel time)."""
    diags = [diagnostics.make("network_host_namespace", fill={"what": diagnostics.excerpt(what, 300),
                                                              "count": len(found)})]
    for listener in found[:MAX_REPORTED]:
        protocol, _sep, address = listener.partition(" ")
        diags.append(diagnostics.make("network_loopback_listener", wording=protocol,
                                      fill={"what": diagnostics.excerpt(what, 300)},
                                      address=diagnostics.excerpt(address, 200)))
    if len(found) > MAX_REPORTED:
        diags[-1] = diagnostics.amend(diags[-1], "more_diagnostics", count=len(found) - MAX_REPORTED)
    return diags
