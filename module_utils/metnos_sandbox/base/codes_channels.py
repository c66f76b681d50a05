# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnostic codes of the command channels a grant would expose (profile/channels.py, issue 40), the system
bus's proxy and the layout of the admin's index and resource roots.

The codes of the profile/ package's checks, kept on the ground floor (base/ imports nothing above it): data
only, importing base/registry.py alone; base/diagnostics.py gathers every codes_*.py's CODES into the one
registry (docs/diagnostics.md is generated from it). Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import List

from .registry import ERROR, INFO, SANDBOX_ACTIVE, WARNING, Code

CODES: List[Code] = []
# ---- command channels: the sockets, FIFOs and device nodes a grant would expose, named or below a granted
# folder (docs/profile-invariants.md; issue 40) ----
_CHANNEL_WORDS = {
    "named": "{what}: {path} is {kind}; a command channel is never granted unless the admin allows that exact path "
             "(host.allow_channels)",
    "below": "{what}: {path}, {kind}, lies below the granted folder {folder}: bwrap binds the whole tree, so the "
             "sandbox could command the host process behind it; refused unless the admin allows that exact path "
             "(host.allow_channels)"}
_ALLOW_HINT = ("If, and only if, the executor must reach it, allow exactly that path with a reason in the host "
               "context (the inventory's host_vars): metnos_sandbox_host.allow_channels: [{path: {path}, reason: "
               "'<why>'}].")
_ALLOW_STEP = "\"${EDITOR:-vi}\" <host_vars_file>"
_CHANNEL_DETECTION = ("The grant's path as named, and a bounded walk of every granted folder as bwrap binds it "
                      "(recursively, with the mounts below it; symbolic links not followed: inside the sandbox they "
                      "resolve in the new root), d_type/lstat of each entry; the final check refuses a bind of one "
                      "that is not allowed.")
for _code, _title, _cause, _steps, _hint in [
    ("channel_refused", "A grant would expose a socket, a FIFO or a device node",
     "A socket, FIFO or device node is a channel to a host process or to the kernel: through a read-only bind the "
     "sandbox can still connect to a socket and send commands, write into a FIFO, open a device. Command channels "
     "are denied by default (no list of dangerous daemons can be complete).",
     ["find <folder> -type s -o -type p -o -type c -o -type b"],
     "Move {path} out of the granted folder, or grant a narrower folder without it (the command lists them)."),
    ("channel_system_bus", "A grant would expose the D-Bus system bus",
     "The system bus (/run/dbus/system_bus_socket) lets its clients call systemd (Manager.StartUnit, KillUnit), "
     "logind, NetworkManager, ...; as root BecomeMonitor reads every message on the bus. A read-only bind of the "
     "socket is still the whole bus.",
     ["ansible-playbook metnos.sandbox.site -e metnos_sandbox_dbus_proxy=true"],
     "Grant the bus through the filtering proxy instead (xdg-dbus-proxy, the role's metnos_sandbox_dbus_proxy: "
     "true), which binds its socket where the bus is expected; remove {path} from the read paths."),
    ("channel_user_bus", "A grant would expose a user's D-Bus session bus",
     "A user bus (/run/user/<uid>/bus) lets its clients start transient units in that user's systemd manager "
     "(outside every sandbox) and call every session service.",
     [], "Remove {path} (and the folder holding it) from the grant."),
    ("channel_journal", "A grant would expose the journal's or syslog's socket",
     "journald's sockets (/run/systemd/journal/*) and /dev/log accept log lines from anyone who can connect: a "
     "sandbox could forge any program's messages (an 'Accepted publickey for root' line).",
     [], "Remove {path} from the grant; executors log on stdout and stderr, which the runtime collects."),
    ("channel_systemd", "A grant would expose one of systemd's own sockets",
     "/run/systemd holds systemd's private API (/run/systemd/private), its notify socket and the sockets of "
     "its daemons (userdb, resolved, ...): a client commands the service manager.",
     [], "Remove {path} from the grant; read unit state through the filtered system bus."),
    ("channel_container_engine", "A grant would expose a container engine's socket",
     "A container engine's API socket (podman, docker, containerd, CRI-O, buildkit) creates privileged containers "
     "with the host's / bound inside: root on the host.",
     [], "Remove {path} from the grant; a container engine's socket is never given to an executor."),
    ("channel_agent", "A grant would expose an ssh-agent or gpg-agent socket",
     "An agent socket signs with the keys it holds for anyone who can connect (ssh logins as that user, gpg "
     "signatures), without the key ever leaving the agent.",
     [], "Remove {path} (and the folder holding it) from the grant."),
]:
    CODES.append(Code(code=_code, severity=ERROR, rule="R-CAP-SYS", section=SANDBOX_ACTIVE, title=_title,
                      cause=_cause, detection=_CHANNEL_DETECTION,
                      remediation=_steps + ([] if _code in ("channel_system_bus", "channel_container_engine")
                                            else [_ALLOW_STEP]),
                      messages=_CHANNEL_WORDS,
                      hint=_hint + ("" if _code in ("channel_system_bus", "channel_container_engine") else
                                    " " + _ALLOW_HINT)))
_FILESYSTEM_DETECTION = ("The host's mount table (/proc/self/mountinfo, each mount's type): the filesystem holding "
                         "each granted folder and every filesystem mounted below it (bwrap binds them along) against "
                         "an allow-list of plain directory trees (ext4, xfs, btrfs, tmpfs, overlay, ...).")
CODES.extend([
    Code(code="channel_message_queue", severity=ERROR, rule="R-CAP-SYS", section=SANDBOX_ACTIVE,
         title="A grant would expose a POSIX message-queue filesystem",
         cause="A message-queue filesystem (mqueue) is bound with the granted folder: each entry is a kernel message "
               "queue that host processes send jobs through, and a read-only bind does not stop mq_open/mq_receive "
               "(a sandbox takes or forges a host daemon's queued jobs). Refused unless the admin allows that exact "
               "mount point.",
         detection=_FILESYSTEM_DETECTION,
         remediation=["findmnt -T {path}", "umount {path}", _ALLOW_STEP],
         messages={"": "{what}: {path} is a POSIX message-queue filesystem ({fstype}) bound with the granted "
                       "folder {folder}: every queue in it is a channel to the host processes using it; refused "
                       "unless the admin allows that exact path (host.allow_channels)"},
         hint=("Unmount {path} if nothing needs it there (the queues stay reachable at /dev/mqueue), or grant a "
               "folder that does not hold it. " + _ALLOW_HINT)),
    Code(code="channel_filesystem_unjudged", severity=ERROR, rule="R-CAP-SYS", section=SANDBOX_ACTIVE,
         title="A grant would expose a filesystem that is not a plain directory tree",
         cause="A filesystem of a type that is not a plain directory tree (proc, sysfs, cgroup, a FUSE daemon's, an "
               "unknown type) is bound with the granted folder: what it exposes (kernel state, host processes, a "
               "daemon answering every read) cannot be judged by a search for sockets and FIFOs, so it is refused "
               "(deny by default) unless the admin allows that exact mount point.",
         detection=_FILESYSTEM_DETECTION,
         remediation=["findmnt -T {path}", "umount {path}", _ALLOW_STEP],
         messages={"": "{what}: {path} is a {fstype} mount bound with the granted folder {folder}: not a plain "
                       "directory tree, so what it exposes cannot be judged; refused unless the admin allows that "
                       "exact path (host.allow_channels)"},
         hint=("Unmount {path} if it is not needed there, or grant a folder that does not hold it (findmnt shows "
               "what it is). " + _ALLOW_HINT)),
    Code(code="network_host_namespace", severity=WARNING, rule="R-NET-1", section=SANDBOX_ACTIVE,
         title="system:read:network_interfaces is the host's network",
         cause="The grant keeps the host's network namespace (no --unshare-net): the sandbox sees every interface and "
               "reaches every service that listens on loopback or on all addresses (an admin API on 127.0.0.1, a "
               "database on ::1), and every abstract Unix socket of the host (a D-Bus or X11 address needs no bind).",
         detection="The capability; the listeners are read from /proc/net/tcp, tcp6, udp, udp6 and unix of the "
                   "renderer.",
         remediation=["ss -lntupx"],
         messages={"": "{what}: the executor runs in the host's network namespace: it reaches the {count} "
                       "loopback, wildcard or abstract listener(s) listed with it"},
         hint="Grant it only to an executor that must see the host's interfaces; each listener listed with it "
              "answers that executor."),
    Code(code="network_loopback_listener", severity=WARNING, rule="R-NET-1", section=SANDBOX_ACTIVE,
         title="A host listener that a host-network grant exposes",
         cause="A service of the host listens on a loopback or wildcard address (or on an abstract Unix socket): an "
               "executor in the host's network namespace reaches it, though nothing outside the host can.",
         detection="/proc/net/tcp, tcp6 (LISTEN), udp, udp6 (unconnected) on 127.0.0.0/8, ::1, ::ffff:127.x, 0.0.0.0 "
                   "or ::; /proc/net/unix listening sockets whose name starts with @.",
         remediation=["ss -lntupx"],
         messages={"tcp": "{what}: the host's TCP listener {address} answers the executor",
                   "udp": "{what}: the host's UDP socket {address} answers the executor",
                   "unix": "{what}: the host's abstract Unix socket {address} answers the executor"},
         hint="Bind the service to a Unix socket in a folder no executor is granted, or firewall it by uid (nft "
              "meta skuid), or do not grant system:read:network_interfaces."),
    Code(code="channel_walk_bound", severity=ERROR, rule="R-CAP-SYS", section=SANDBOX_ACTIVE,
         title="A granted folder could not be searched for command channels",
         cause="Every granted folder is searched for sockets, FIFOs and device nodes before it is bound; the search is "
               "bounded (entries per render) and needs every folder readable. A folder too large to search, or one "
               "the renderer cannot read, is not bound: an unsearched tree is never passed as clean.",
         detection="The bounded walk of the granted tree (module_utils/metnos_sandbox/profile/channels.py).",
         remediation=["ls -ld {folder}"],
         messages={"entries": "{what}: {folder} holds more than {limit} entries (this render's bound): it cannot "
                              "be searched for command channels, so it is not bound",
                   "deep": "{what}: {folder} is nested more than {limit} folders deep: the granted tree cannot be "
                           "searched for command channels, so it is not bound",
                   "unreadable": "{what}: {folder} cannot be read ({error}): the granted tree cannot be searched "
                                 "for command channels, so it is not bound"},
         hint="Grant a smaller folder (a subfolder the executor needs), or make {folder} readable by the renderer."),
    Code(code="channel_walk_changed", severity=ERROR, rule="R-CAP-SYS", section=SANDBOX_ACTIVE,
         title="A granted folder changed while it was searched for command channels",
         cause="The search opens every folder by descriptor in its parent, never through a symbolic link, and checks "
               "it is the folder it listed. A folder or entry that vanished, or was swapped (a link put in its place), "
               "while the render searched it means the search cannot be trusted: the tree is not bound.",
         detection="The walk by descriptor of the granted tree (module_utils/metnos_sandbox/base/tree_walk.py).",
         remediation=["ls -la {folder}"],
         messages={"": "{what}: {folder} changed while searched for command channels (it vanished or was "
                       "swapped): the search cannot be trusted, so it is not bound: render again"},
         hint="Render again when nothing renames folders in the granted tree; a repeated refusal means someone "
              "swaps folders there (look at who owns {folder})."),
    Code(code="system_bus_not_granted", severity=INFO, rule="R-CAP-SYS", section=SANDBOX_ACTIVE,
         title="The system bus is not granted: no filtering proxy",
         cause="systemd:read and system:read reach the system bus only through a filtering proxy (xdg-dbus-proxy, "
               "letting only systemd1's Get*/List* and Properties.Get/GetAll through); without one the bus socket "
               "is not bound (the bus itself is a command channel: StartUnit, BecomeMonitor).",
         detection="host.system_bus_proxy unset, or its socket missing when the profile is rendered.",
         remediation=["ansible-playbook metnos.sandbox.site -e metnos_sandbox_dbus_proxy=true"],
         messages={"no_proxy": "{what}: the system bus is not granted: no filtering proxy is configured "
                               "(host.system_bus_proxy)",
                   "missing": "{what}: the system bus is not granted: the proxy's socket {path} does not exist"},
         hint=("Enable the proxy in the role (metnos_sandbox_dbus_proxy: true), which runs it as a hardened unit "
               "and sets metnos_sandbox_host.system_bus_proxy to its socket; then render again.")),
])
# ---- the proxy's socket swapped for the bus itself (issue 50 item 2): the sandbox would get the unfiltered bus ----
_BUS_CAUSE = ("host.system_bus_proxy must be the filtering proxy's own socket (xdg-dbus-proxy). %s: the sandbox would "
              "get the unfiltered system bus (systemd's StartUnit, KillUnit, every other name), and the proxy's policy "
              "would filter nothing.")
_BUS_DETECTION = ("host.system_bus_proxy as written, resolved, and lstat'ed (st_dev, st_ino) against the real bus's "
                  "sockets: /run/dbus/system_bus_socket, /var/run/dbus/system_bus_socket, the unix:path of "
                  "DBUS_SYSTEM_BUS_ADDRESS and host.system_bus_sockets (the sockets the proxy connects to).")
_BUS_FIX = "ansible-playbook metnos.sandbox.site -e metnos_sandbox_dbus_proxy=true"
_BUS_HINT = ("Point host.system_bus_proxy at the proxy's own socket: the role's metnos_sandbox_dbus_proxy: true runs "
             "xdg-dbus-proxy and sets it (remove the override of host.system_bus_proxy from the host_vars).")
for _code, _title, _why, _words, _look in [
    ("bus_proxy_is_bus", "The D-Bus proxy's socket is the system bus itself",
     "It names the bus's own socket", "host.system_bus_proxy = {path} is the system bus's socket ({bus}), not the "
     "filtering proxy's: refused", "ls -l {path}"),
    ("bus_proxy_symlink_to_bus", "The D-Bus proxy's socket is a symbolic link to the system bus",
     "It is a symbolic link (or passes through one) that resolves to the bus's socket",
     "host.system_bus_proxy = {path} resolves to {bus}, the system bus's socket, through a symbolic link: refused",
     "readlink -f {path}"),
    ("bus_proxy_same_inode_as_bus", "The D-Bus proxy's socket is a hard link or bind mount of the system bus",
     "It shares device and inode with the bus's socket (a hard link, or a bind mount of it)",
     "host.system_bus_proxy = {path} is the same inode as {bus}, the system bus's socket (a hard link or a bind "
     "mount): refused", "ls -li {path} {bus}"),
]:
    CODES.append(Code(code=_code, severity=ERROR, rule="R-CAP-SYS", section=SANDBOX_ACTIVE, title=_title,
                      cause=_BUS_CAUSE % _why, detection=_BUS_DETECTION,
                      remediation=[_look, _BUS_FIX], messages={"bus": _words}, hint=_BUS_HINT))
CODES.extend([
    Code(code="layout_roots_nested", severity=ERROR, rule="R-CAP-INDEX", section=SANDBOX_ACTIVE,
         title="A configured index or resource root holds another one",
         cause="The admin's layout crosses: the granted index (or resource) root is at, below or above another "
               "configured index or resource root, as written or resolved, so the grant would read (or write) that "
               "one too, or inside another's folder.",
         detection="Each configured root of host.indexes and host.resources, written and resolved, against the "
                   "grant's.",
         remediation=["\"${EDITOR:-vi}\" <host_vars_file>"],
         messages={"nested": "{what}: {path} (host.{key}) is at, below or above {other} (host.{other_key}): "
                             "the layout crosses"},
         hint="Give each index and resource its own folder, side by side (not one inside another)."),
    Code(code="layout_root_symlink", severity=ERROR, rule="R-CAP-METNOS", section=SANDBOX_ACTIVE,
         title="A configured index or resource root is a symbolic link to another folder",
         cause="The root the admin configures for a resource (or an index) is itself a symbolic link: the grant would "
               "read or write wherever it leads (another resource, another service's data), not the folder named.",
         detection="The root's last component lstat'ed on the host (a symbolic link is refused; its parents may "
                   "resolve).",
         remediation=["readlink -f {path}"],
         messages={"symlink": "{what}: {path} (host.{key}) is a symbolic link to {real}"},
         hint="Point host.{key} at the real folder (the command shows where it leads)."),
])
