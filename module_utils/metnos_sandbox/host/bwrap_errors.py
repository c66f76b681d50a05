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
from typing import Any, Dict, List, Optional, Pattern, Sequence


class Cause(object):
    """One known cause. Its pattern is compiled when a failure is first classified, not at import: a host
    whose bwrap works never needs them (31 patterns; their cost: docs/benchmarks.md)."""
    __slots__ = ("cause", "source", "_pattern", "text", "remediation", "diagnostic", "hint")

    def __init__(self, cause: str, pattern: str, text: str, remediation: Sequence[str],
                 diagnostic: Optional[str] = None, hint: str = "") -> None:
        self.cause = cause
        self.source = pattern
        self._pattern: Optional[Pattern[str]] = None
        self.text = text
        self.remediation = tuple(remediation)
        self.diagnostic = diagnostic  # a kernel-side code this cause points at
        # What to know before running the remediation's commands (commands that run as written, <placeholders>
        # explicit; the words here): the classified variant's hint of bwrap_smoke_failed and probe_setup_failed.
        self.hint = hint

    @property
    def pattern(self) -> Optional[Pattern[str]]:
        if self._pattern is None and self.source:
            self._pattern = re.compile(self.source, re.I)
        return self._pattern


def _dropin(line: str) -> List[str]:
    """The commands that add ``line`` to the unit's drop-in (<unit>: the service's unit) and apply it."""
    return ["mkdir -p /etc/systemd/system/<unit>.d",
            "printf '[Service]\\n%s\\n' >> /etc/systemd/system/<unit>.d/zz-metnos-sandbox.conf" % line,
            "systemctl daemon-reload", "systemctl restart <unit>"]


# Order matters: first match wins.
CAUSES = (
    Cause("setuid_unsupported", r"setuid use of bubblewrap is not supported",
          "this bwrap build refuses to run setuid (0.12+, or built without support_setuid)",
          ["dpkg-statoverride --quiet --remove /usr/bin/bwrap || true", "chmod 0755 /usr/bin/bwrap"], "bwrap_setuid",
          hint="Drop the setuid bit, then enable unprivileged user namespaces (see the userns_* diagnostics)."),
    Cause("setuid_option_refused", r"not permitted in setuid mode|doesn't work in setuid mode|"
          r"in setuid mode can be used only by root",
          "a profile option is refused by a setuid bwrap",
          ["chmod 0755 /usr/bin/bwrap"], "bwrap_setuid",
          hint="Install a non-setuid bwrap (the command drops the setuid bit) or drop the option."),
    Cause("userns_eperm", r"No permissions to creat(e|ing)( a)? new namespace",
          "creating a user namespace was refused (EPERM): kernel.unprivileged_userns_clone=0, a "
          "container's seccomp profile, or the unit's RestrictNamespaces=",
          ["sysctl -a --pattern 'userns|user_namespaces'"], "userns_disabled_sysctl",
          hint=("Check the userns_* diagnostics of this host (sysctls, AppArmor; the command reads the sysctls)."
                " In a container: allow unshare/clone(CLONE_NEWUSER) in its seccomp profile. In a systemd unit: "
                "RestrictNamespaces= must allow user, mnt, net, ipc, uts.")),
    Cause("userns_enospc", r"max_\*_namespaces exceeded|Creating new namespace failed: No space left on device",
          "the user-namespace limit is exhausted (user.max_user_namespaces=0, or nesting depth)",
          ["echo 'user.max_user_namespaces = 15000' > /etc/sysctl.d/99-zz-metnos-bwrap.conf", "sysctl --system"],
          "userns_max_namespaces_zero",
          hint="Raise the user-namespace limit."),
    Cause("userns_einval", r"kernel does not support user namespaces|must be installed setuid",
          "the kernel refused user namespaces with EINVAL (no CONFIG_USER_NS, RHEL 7 userns disabled, "
          "or a filter returning EINVAL)",
          ["cat /proc/cmdline"],
          hint=("RHEL 7: add user_namespace.enable=1 to the kernel command line (the command shows it) and set "
                "user.max_user_namespaces > 0; otherwise use a kernel built with CONFIG_USER_NS=y.")),
    Cause("userns_eacces", r"Creating new namespace failed: Permission denied",
          "creating a namespace was denied with EACCES (SELinux user_namespace create, or an LSM)",
          ["ausearch -m AVC,USER_AVC -c bwrap"],
          "selinux_enforcing",
          hint="Read the denials, then review and load a local policy module (audit2allow)."),
    Cause("userns_enosys", r"Creating new namespace failed: Function not implemented",
          "the kernel does not implement the namespace call (custom kernel or seccomp ENOSYS)",
          ["uname -r"],
          hint="Use a kernel with CONFIG_USER_NS=y and namespaces enabled (the command names the running one)."),
    Cause("ns_create_eperm_root", r"Creating new namespace failed: Operation not permitted",
          "namespace creation as root without CAP_SYS_ADMIN (typical inside containers) and no "
          "user namespace requested",
          [],
          hint="Run bwrap with --unshare-user, or grant the container CAP_SYS_ADMIN."),
    Cause("unexpected_capabilities", r"Unexpected capabilities but not setuid",
          "bwrap was started holding capabilities and is not setuid, so it refuses to run: the unit gives its "
          "processes capabilities (AmbientCapabilities=) or bwrap has file capabilities",
          _dropin("AmbientCapabilities=") + ["getcap /usr/bin/bwrap"],
          hint=("Clear the unit's ambient capabilities with an empty AmbientCapabilities= in a drop-in (see "
                "unit_ambient_capabilities); getcap must print nothing (setcap -r /usr/bin/bwrap removes file "
                "capabilities).")),
    Cause("uid_map_readonly", r"setting up uid map: Read-only file system",
          "/proc is read-only where bwrap runs, so it cannot write the new user namespace's uid map (systemd "
          "ReadOnlyPaths=/ or a read-only bind over /proc)",
          _dropin("ReadWritePaths=/proc"),
          hint="In the unit: ReadWritePaths=/proc (see unit_read_only_proc)."),
    Cause("clone_eagain", r"Resource temporarily unavailable",
          "creating the sandbox's process failed with EAGAIN: the user's process limit (RLIMIT_NPROC, the "
          "unit's LimitNPROC=) or a task limit (TasksMax=) is reached",
          _dropin("LimitNPROC=<nproc>") + ["ps -u <user> --no-headers"],
          hint=("In the unit, raise LimitNPROC= (see unit_resource_limit_blocks_bwrap); the last command lists "
                "the user's processes, which the limit counts.")),
    Cause("bwrap_exec_denied", r"exec: .*: Permission denied",
          "bwrap could not be executed in the service's context (a noexec mount: the unit's NoExecPaths=/"
          "ExecPaths=, or a mode that denies execute)",
          _dropin("ExecPaths=/usr/bin/bwrap"),
          hint="In the unit: ExecPaths=/usr/bin/bwrap (see unit_noexec_bwrap)."),
    Cause("bwrap_exec_missing", r"exec: .*: not found",
          "bwrap does not exist in the service's view of the file system (InaccessiblePaths=, "
          "TemporaryFileSystem= or RootDirectory= hide it)",
          ["systemctl show <unit> -p InaccessiblePaths -p TemporaryFileSystem -p RootDirectory"],
          hint=("Check the unit's InaccessiblePaths=, TemporaryFileSystem= and RootDirectory= against the bwrap "
                "path.")),
    Cause("uid_map_denied", r"setting up uid map: Permission denied",
          "the user namespace was created but capabilities are denied in it (Ubuntu 24.04+ AppArmor "
          "unprivileged_userns restriction)",
          ["install -m0644 /usr/share/apparmor/extra-profiles/bwrap-userns-restrict /etc/apparmor.d/",
           "apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict"], "userns_apparmor_restricted",
          hint="Load the AppArmor profile that grants bwrap user namespaces (see userns_apparmor_restricted)."),
    Cause("uid_map_eperm", r"setting up uid map: Operation not permitted",
          "writing the uid map was refused (capabilities dropped, e.g. --cap-drop=ALL, or hidepid)",
          ["findmnt -o TARGET,OPTIONS /proc"],
          hint=("Do not drop CAP_SETUID/CAP_SETGID from the caller; check /proc's mount options (hidepid; the "
                "command shows them).")),
    Cause("netlink_socket_refused", r"loopback: Failed to create NETLINK_ROUTE socket",
          "the process may not open netlink sockets, so bwrap cannot bring up loopback in the new network "
          "namespace (systemd RestrictAddressFamilies= without AF_NETLINK; measured in docs/unit-directives.md)",
          _dropin("RestrictAddressFamilies=AF_NETLINK"),
          hint="In the unit: RestrictAddressFamilies=AF_NETLINK (see unit_address_families_block_netlink)."),
    Cause("netlink_denied", r"loopback: Failed RTM_NEWADDR",
          "bringing up loopback in the new network namespace was denied (AppArmor userns "
          "restriction or gVisor)",
          ["grep -rl bwrap /etc/apparmor.d"],
          "userns_apparmor_restricted",
          hint=("See userns_apparmor_restricted; two AppArmor profiles attached to bwrap cancel each other (the "
                "command lists the profiles that name it).")),
    Cause("capset_failed", r"capset failed",
          "a setuid bwrap could not set its capabilities (unprivileged container or NoNewPrivileges)",
          ["chmod 0755 /usr/bin/bwrap"], "bwrap_setuid",
          hint="Use the unprivileged path: drop the setuid bit."),
    Cause("proc_mount_denied", r"Can't mount proc on /newroot/proc",
          "mounting /proc was refused: the container masks parts of /proc, or extra mounts exist "
          "under /proc",
          [],
          hint=("Run the container with an unmasked /proc: podman --security-opt unmask=ALL, docker "
                "--security-opt systempaths=unconfined.")),
    Cause("make_slave_denied", r"Failed to make / slave",
          "mount propagation change was refused (a container's AppArmor profile or seccomp blocks mount)",
          [],
          hint="Run the container with a profile that allows mount (e.g. apparmor=unconfined) or on the host."),
    Cause("pivot_root_denied", r"pivot_root",
          "pivot_root was refused (container seccomp)",
          [],
          hint="Allow pivot_root in the container's seccomp profile."),
    Cause("tmpfs_denied", r"Failed to mount tmpfs",
          "mounting a tmpfs was refused (SELinux container_t, or /tmp missing)",
          ["ls -ld /tmp"],
          hint=("podman/docker: --security-opt label=type:spc_t; make sure /tmp exists as a directory (the "
                "command shows it).")),
    Cause("overflowuid_unreadable", r"Can't read /proc/sys/kernel/overflowuid",
          "/proc shows only PIDs (ProcSubset=pid or proc mounted subset=pid)",
          _dropin("ProcSubset=all"),
          hint="Remove ProcSubset=pid from the unit (see unit_proc_subset_pid)."),
    Cause("proc_sys_readonly", r"max_user_namespaces: Read-only file system|max_user_namespaces: Permission denied",
          "/proc/sys is read-only (ProtectKernelTunables=yes, nspawn, LXC) and --disable-userns was used",
          [],
          hint="Drop --disable-userns, or set ProtectKernelTunables=no for the unit."),
    Cause("openat2_enosys", r"Can't (mkdir parents for|open source) .*: Function not implemented",
          "openat2() returns ENOSYS (systemd RestrictSUIDSGID=/DynamicUser= with bwrap 0.12, or gVisor)",
          _dropin("RestrictSUIDSGID=no"),
          hint="Remove RestrictSUIDSGID=yes from the unit (see unit_restrict_suidsgid)."),
    Cause("mkdir_parents_denied", r"Can't mkdir parents for .*: Permission denied",
          "bwrap 0.12 (or a backport of CVE-2026-87766) needs read permission on every directory "
          "of a bind destination",
          ["chmod 0755 <folder>"],
          hint="Give every parent folder of the bind destination read permission (<folder>: each of them)."),
    Cause("unknown_option", r"Unknown option",
          "bwrap is too old for an option in the command",
          ["bwrap --version"],
          hint="Upgrade bubblewrap, or render the profile for this bwrap's feature set."),
    Cause("source_missing", r"Can't find source path",
          "a bind source does not exist",
          [],
          hint="Create the path or use --ro-bind-try for optional paths."),
    Cause("execvp_failed", r"execvp ",
          "the command inside the sandbox could not be executed (missing, or on a noexec mount)",
          [],
          hint="Check that the payload exists inside the sandbox and is not on a noexec mount."),
    Cause("bad_fd", r"Bad file descriptor",
          "a file descriptor passed to bwrap was invalid or reused",
          [],
          hint="Give each --*-data/--file option its own file descriptor."),
    Cause("mount_denied", r"Operation not permitted|Permission denied",
          "a mount or namespace operation was refused by the kernel or an LSM",
          ["journalctl -k -g 'apparmor|avc' -n 50"],
          hint="Look for AppArmor/SELinux denials around the time of the run."),
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
                    "remediation": list(cause.remediation), "hint": cause.hint, "points_at": cause.diagnostic}
    if returncode is not None and returncode in (-_SIGSYS, 128 + _SIGSYS) and not text.strip():
        return {"cause": "killed_by_seccomp",
                "cause_text": "bwrap was killed by SIGSYS with no message: a seccomp allow-list "
                              "(systemd SystemCallFilter=) omits mount/unshare/pivot_root",
                "stderr_line": "", "points_at": None,
                "remediation": ["mkdir -p /etc/systemd/system/<unit>.d",
                                "printf '[Service]\\nSystemCallFilter=@mount\\n' >> "
                                "/etc/systemd/system/<unit>.d/zz-metnos-sandbox.conf",
                                "systemctl daemon-reload", "systemctl restart <unit>"],
                "hint": "Add SystemCallFilter=@mount to the unit's drop-in (or remove the SystemCallFilter= "
                        "allow-list)."}
    if returncode is not None and returncode < 0:
        return {"cause": "killed_by_signal",
                "cause_text": "bwrap was killed by signal %d" % -returncode,
                "stderr_line": text.strip().splitlines()[-1] if text.strip() else "",
                "points_at": None, "remediation": ["journalctl -n 50"],
                "hint": "Check the journal for the process that sent it."}
    first = ""
    for line in text.splitlines():
        if line.startswith("bwrap:") or "bwrap:" in line:
            first = line.strip()
            break
    return {"cause": "unknown" if setup_failed else "payload_failed",
            "cause_text": ("bwrap failed: %s" % first) if first else
                          ("bwrap exited with status %s" % returncode),
            "stderr_line": first, "points_at": None,
            "remediation": [], "hint": "Run the same command by hand and read bwrap's message."}
