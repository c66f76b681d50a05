# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Classify what bwrap says when it fails: its stderr (and exit status) matched against the known causes.

bwrap's stderr differs by version and distro patch (Debian rewrites the EPERM
text, 0.11.1 fixed its grammar, 0.12 reworded several), so classification is
by pattern, never by exact string. See shared/knowledge/BWRAP_FIELD_NOTES.md.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import re
import signal
from typing import Any, Dict, Optional, Pattern, Sequence


class Cause(object):
    """One known cause. Its pattern is compiled when a failure is first classified, not at import: a host
    whose bwrap works never needs them (31 patterns; their cost: docs/benchmarks.md)."""
    __slots__ = ("cause", "source", "_pattern", "text", "remediation", "diagnostic")

    def __init__(self, cause: str, pattern: str, text: str, remediation: Sequence[str],
                 diagnostic: Optional[str] = None) -> None:
        self.cause = cause
        self.source = pattern
        self._pattern: Optional[Pattern[str]] = None
        self.text = text
        self.remediation = tuple(remediation)
        self.diagnostic = diagnostic  # a kernel-side code this cause points at

    @property
    def pattern(self) -> Optional[Pattern[str]]:
        if self._pattern is None and self.source:
            self._pattern = re.compile(self.source, re.I)
        return self._pattern


_USERNS_FIX = ["Check the userns_* diagnostics of this host (sysctls, AppArmor).",
               "In a container: allow unshare/clone(CLONE_NEWUSER) in its seccomp profile.",
               "In a systemd unit: RestrictNamespaces= must allow user, mnt, net, ipc, uts."]

# Order matters: first match wins.
CAUSES = (
    Cause("setuid_unsupported", r"setuid use of bubblewrap is not supported",
          "this bwrap build refuses to run setuid (0.12+, or built without support_setuid)",
          ["dpkg-statoverride --quiet --remove /usr/bin/bwrap || true", "chmod 0755 /usr/bin/bwrap",
           "Enable unprivileged user namespaces (see userns_* diagnostics)."], "bwrap_setuid"),
    Cause("setuid_option_refused", r"not permitted in setuid mode|doesn't work in setuid mode|"
          r"in setuid mode can be used only by root",
          "a profile option is refused by a setuid bwrap",
          ["Install a non-setuid bwrap (chmod 0755 /usr/bin/bwrap) or drop the option."], "bwrap_setuid"),
    Cause("userns_eperm", r"No permissions to creat(e|ing)( a)? new namespace",
          "creating a user namespace was refused (EPERM): kernel.unprivileged_userns_clone=0, a "
          "container's seccomp profile, or the unit's RestrictNamespaces=",
          _USERNS_FIX, "userns_disabled_sysctl"),
    Cause("userns_enospc", r"max_\*_namespaces exceeded|Creating new namespace failed: No space left on device",
          "the user-namespace limit is exhausted (user.max_user_namespaces=0, or nesting depth)",
          ["echo 'user.max_user_namespaces = 15000' > /etc/sysctl.d/99-zz-metnos-bwrap.conf",
           "sysctl --system"], "userns_max_namespaces_zero"),
    Cause("userns_einval", r"kernel does not support user namespaces|must be installed setuid",
          "the kernel refused user namespaces with EINVAL (no CONFIG_USER_NS, RHEL 7 userns disabled, "
          "or a filter returning EINVAL)",
          ["RHEL 7: add user_namespace.enable=1 to the kernel command line and set "
           "user.max_user_namespaces > 0", "Otherwise use a kernel built with CONFIG_USER_NS=y."]),
    Cause("userns_eacces", r"Creating new namespace failed: Permission denied",
          "creating a namespace was denied with EACCES (SELinux user_namespace create, or an LSM)",
          ["ausearch -m AVC,USER_AVC -c bwrap", "Review and load a local policy module (audit2allow)."],
          "selinux_enforcing"),
    Cause("userns_enosys", r"Creating new namespace failed: Function not implemented",
          "the kernel does not implement the namespace call (custom kernel or seccomp ENOSYS)",
          ["Use a kernel with CONFIG_USER_NS=y and namespaces enabled."]),
    Cause("ns_create_eperm_root", r"Creating new namespace failed: Operation not permitted",
          "namespace creation as root without CAP_SYS_ADMIN (typical inside containers) and no "
          "user namespace requested",
          ["Run bwrap with --unshare-user, or grant the container CAP_SYS_ADMIN."]),
    Cause("unexpected_capabilities", r"Unexpected capabilities but not setuid",
          "bwrap was started holding capabilities and is not setuid, so it refuses to run: the unit gives its "
          "processes capabilities (AmbientCapabilities=) or bwrap has file capabilities",
          ["In the unit: AmbientCapabilities= (an empty assignment clears the ambient set; drop-in; see "
           "unit_ambient_capabilities)", "getcap /usr/bin/bwrap   (must print nothing; setcap -r removes them)"]),
    Cause("uid_map_readonly", r"setting up uid map: Read-only file system",
          "/proc is read-only where bwrap runs, so it cannot write the new user namespace's uid map (systemd "
          "ReadOnlyPaths=/ or a read-only bind over /proc)",
          ["In the unit: ReadWritePaths=/proc (drop-in; see unit_read_only_proc)"]),
    Cause("clone_eagain", r"Resource temporarily unavailable",
          "creating the sandbox's process failed with EAGAIN: the user's process limit (RLIMIT_NPROC, the "
          "unit's LimitNPROC=) or a task limit (TasksMax=) is reached",
          ["In the unit: raise LimitNPROC= (drop-in; see unit_resource_limit_blocks_bwrap)",
           "Count the user's processes: ps -u <user> --no-headers | wc -l"]),
    Cause("bwrap_exec_denied", r"exec: .*: Permission denied",
          "bwrap could not be executed in the service's context (a noexec mount: the unit's NoExecPaths=/"
          "ExecPaths=, or a mode that denies execute)",
          ["In the unit: ExecPaths=/usr/bin/bwrap (drop-in; see unit_noexec_bwrap)"]),
    Cause("bwrap_exec_missing", r"exec: .*: not found",
          "bwrap does not exist in the service's view of the file system (InaccessiblePaths=, "
          "TemporaryFileSystem= or RootDirectory= hide it)",
          ["Check the unit's InaccessiblePaths=, TemporaryFileSystem= and RootDirectory= against the bwrap path."]),
    Cause("uid_map_denied", r"setting up uid map: Permission denied",
          "the user namespace was created but capabilities are denied in it (Ubuntu 24.04+ AppArmor "
          "unprivileged_userns restriction)",
          ["install -m0644 /usr/share/apparmor/extra-profiles/bwrap-userns-restrict /etc/apparmor.d/",
           "apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict"], "userns_apparmor_restricted"),
    Cause("uid_map_eperm", r"setting up uid map: Operation not permitted",
          "writing the uid map was refused (capabilities dropped, e.g. --cap-drop=ALL, or hidepid)",
          ["Do not drop CAP_SETUID/CAP_SETGID from the caller; check /proc mount options (hidepid)."]),
    Cause("netlink_socket_refused", r"loopback: Failed to create NETLINK_ROUTE socket",
          "the process may not open netlink sockets, so bwrap cannot bring up loopback in the new network "
          "namespace (systemd RestrictAddressFamilies= without AF_NETLINK; measured in docs/unit-directives.md)",
          ["In the unit: RestrictAddressFamilies=AF_NETLINK (drop-in; see unit_address_families_block_netlink)"]),
    Cause("netlink_denied", r"loopback: Failed RTM_NEWADDR",
          "bringing up loopback in the new network namespace was denied (AppArmor userns "
          "restriction or gVisor)",
          ["See userns_apparmor_restricted; two AppArmor profiles attached to bwrap cancel each other."],
          "userns_apparmor_restricted"),
    Cause("capset_failed", r"capset failed",
          "a setuid bwrap could not set its capabilities (unprivileged container or NoNewPrivileges)",
          ["chmod 0755 /usr/bin/bwrap (use the unprivileged path)"], "bwrap_setuid"),
    Cause("proc_mount_denied", r"Can't mount proc on /newroot/proc",
          "mounting /proc was refused: the container masks parts of /proc, or extra mounts exist "
          "under /proc",
          ["podman: run the container with --security-opt unmask=ALL",
           "docker: --security-opt systempaths=unconfined"]),
    Cause("make_slave_denied", r"Failed to make / slave",
          "mount propagation change was refused (a container's AppArmor profile or seccomp blocks mount)",
          ["Run the container with a profile that allows mount (e.g. apparmor=unconfined) or on the host."]),
    Cause("pivot_root_denied", r"pivot_root",
          "pivot_root was refused (container seccomp)",
          ["Allow pivot_root in the container's seccomp profile."]),
    Cause("tmpfs_denied", r"Failed to mount tmpfs",
          "mounting a tmpfs was refused (SELinux container_t, or /tmp missing)",
          ["podman/docker: --security-opt label=type:spc_t", "Make sure /tmp exists as a directory."]),
    Cause("overflowuid_unreadable", r"Can't read /proc/sys/kernel/overflowuid",
          "/proc shows only PIDs (ProcSubset=pid or proc mounted subset=pid)",
          ["Remove ProcSubset=pid from the unit (drop-in: ProcSubset=all)."]),
    Cause("proc_sys_readonly", r"max_user_namespaces: Read-only file system|max_user_namespaces: Permission denied",
          "/proc/sys is read-only (ProtectKernelTunables=yes, nspawn, LXC) and --disable-userns was used",
          ["Drop --disable-userns, or set ProtectKernelTunables=no for the unit."]),
    Cause("openat2_enosys", r"Can't (mkdir parents for|open source) .*: Function not implemented",
          "openat2() returns ENOSYS (systemd RestrictSUIDSGID=/DynamicUser= with bwrap 0.12, or gVisor)",
          ["Remove RestrictSUIDSGID=yes from the unit (drop-in: RestrictSUIDSGID=no)."]),
    Cause("mkdir_parents_denied", r"Can't mkdir parents for .*: Permission denied",
          "bwrap 0.12 (or a backport of CVE-2026-87766) needs read permission on every directory "
          "of a bind destination",
          ["chmod 0755 on the parent directories of the bind destination."]),
    Cause("unknown_option", r"Unknown option",
          "bwrap is too old for an option in the command",
          ["Upgrade bubblewrap, or render the profile for this bwrap's feature set."]),
    Cause("source_missing", r"Can't find source path",
          "a bind source does not exist",
          ["Create the path or use --ro-bind-try for optional paths."]),
    Cause("execvp_failed", r"execvp ",
          "the command inside the sandbox could not be executed (missing, or on a noexec mount)",
          ["Check that the payload exists inside the sandbox and is not on a noexec mount."]),
    Cause("bad_fd", r"Bad file descriptor",
          "a file descriptor passed to bwrap was invalid or reused",
          ["Give each --*-data/--file option its own file descriptor."]),
    Cause("mount_denied", r"Operation not permitted|Permission denied",
          "a mount or namespace operation was refused by the kernel or an LSM",
          ["Check dmesg/journalctl -k for AppArmor/SELinux denials around the time of the run."]),
)

_SIGSYS = getattr(signal, "SIGSYS", 31)


def classify(stderr: Optional[str], returncode: Optional[int] = None, setup_failed: bool = True) -> Dict[str, Any]:
    """Classify a bwrap failure. Returns a dict with cause, text, remediation, matched line."""
    text = stderr or ""
    for cause in CAUSES:
        match = cause.pattern.search(text) if cause.pattern is not None else None
        if match:
            line = text[text.rfind("\n", 0, match.start()) + 1:].split("\n", 1)[0]
            return {"cause": cause.cause, "cause_text": cause.text, "stderr_line": line.strip(),
                    "remediation": list(cause.remediation), "points_at": cause.diagnostic}
    if returncode is not None and returncode in (-_SIGSYS, 128 + _SIGSYS) and not text.strip():
        return {"cause": "killed_by_seccomp",
                "cause_text": "bwrap was killed by SIGSYS with no message: a seccomp allow-list "
                              "(systemd SystemCallFilter=) omits mount/unshare/pivot_root",
                "stderr_line": "", "points_at": None,
                "remediation": ["Add to the unit's drop-in: SystemCallFilter=@mount "
                                "(or remove the SystemCallFilter= allow-list)"]}
    if returncode is not None and returncode < 0:
        return {"cause": "killed_by_signal",
                "cause_text": "bwrap was killed by signal %d" % -returncode,
                "stderr_line": text.strip().splitlines()[-1] if text.strip() else "",
                "points_at": None, "remediation": ["Check the journal for the process that sent it."]}
    first = ""
    for line in text.splitlines():
        if line.startswith("bwrap:") or "bwrap:" in line:
            first = line.strip()
            break
    return {"cause": "unknown" if setup_failed else "payload_failed",
            "cause_text": ("bwrap failed: %s" % first) if first else
                          ("bwrap exited with status %s" % returncode),
            "stderr_line": first, "points_at": None,
            "remediation": ["Run the same command by hand and read bwrap's message."]}
