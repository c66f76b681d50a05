# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel knobs that decide whether unprivileged bwrap can work.

user.max_user_namespaces, kernel.unprivileged_userns_clone (Debian/Ubuntu/Arch
patch only), kernel.apparmor_restrict_unprivileged_userns (Ubuntu 23.10+),
SELinux mode, and whether we run inside a container. Paths are parameters so
unit tests can point them at a planted tree.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
from typing import Any, Dict, List, Mapping, Optional

from ..base import diagnostics

SYSCTLS = {
    "user.max_user_namespaces": "sys/user/max_user_namespaces",
    "kernel.unprivileged_userns_clone": "sys/kernel/unprivileged_userns_clone",
    "kernel.apparmor_restrict_unprivileged_userns": "sys/kernel/apparmor_restrict_unprivileged_userns",
    "kernel.apparmor_restrict_unprivileged_unconfined": "sys/kernel/apparmor_restrict_unprivileged_unconfined",
}


def _read(path: str) -> Optional[str]:
    try:
        with open(path, "r") as handle:
            return handle.read().strip()
    except (OSError, IOError, UnicodeDecodeError):
        return None


def _int(value: Optional[str]) -> Optional[int]:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def read_sysctls(proc: str = "/proc") -> Dict[str, Optional[int]]:
    """Current value of each knob, None when the knob does not exist on this kernel."""
    return dict((name, _int(_read(os.path.join(proc, rel)))) for name, rel in SYSCTLS.items())


def selinux_mode(sys_root: str = "/sys") -> str:
    enforce = _read(os.path.join(sys_root, "fs/selinux/enforce"))
    if enforce is None:
        return "disabled"
    return "enforcing" if enforce == "1" else "permissive"


def apparmor_bwrap_profiles(sys_root: str = "/sys") -> Optional[List[str]]:
    """Loaded AppArmor profiles whose name mentions bwrap (None when AppArmor is off)."""
    text = _read(os.path.join(sys_root, "kernel/security/apparmor/profiles"))
    if text is None:
        return None
    return sorted(line.strip() for line in text.splitlines() if "bwrap" in line)


def container(root: str = "/", proc: str = "/proc") -> Optional[str]:
    """Name of the container technology we run in, or None."""
    if os.path.exists(os.path.join(root, "run/.containerenv")):
        return "podman"
    if os.path.exists(os.path.join(root, ".dockerenv")):
        return "docker"
    environ: Optional[bytes] = None
    try:
        with open(os.path.join(proc, "1/environ"), "rb") as handle:
            environ = handle.read()
    except (OSError, IOError):
        pass
    if environ:
        for item in environ.split(b"\0"):
            if item.startswith(b"container="):
                return item.split(b"=", 1)[1].decode("utf-8", "replace") or "container"
    marker = _read(os.path.join(root, "run/systemd/container"))
    if marker:
        return marker
    cgroup = _read(os.path.join(proc, "1/cgroup")) or ""
    for name in ("docker", "kubepods", "libpod", "lxc"):
        if name in cgroup:
            return name
    return None


def self_status(proc: str = "/proc") -> Dict[str, str]:
    """Seccomp/NoNewPrivs/CapEff of the current process (for explaining failures)."""
    out: Dict[str, str] = {}
    text = _read(os.path.join(proc, "self/status")) or ""
    for line in text.splitlines():
        key, _sep, value = line.partition(":")
        if key in ("Seccomp", "NoNewPrivs", "CapEff"):
            out[key.lower()] = value.strip()
    return out


def facts(proc: str = "/proc", sys_root: str = "/sys", root: str = "/") -> Dict[str, Any]:
    knobs = read_sysctls(proc)
    return {
        "max_user_namespaces": knobs["user.max_user_namespaces"],
        "unprivileged_userns_clone": knobs["kernel.unprivileged_userns_clone"],
        "apparmor_restrict_unprivileged_userns": knobs["kernel.apparmor_restrict_unprivileged_userns"],
        "apparmor_restrict_unprivileged_unconfined": knobs["kernel.apparmor_restrict_unprivileged_unconfined"],
        "apparmor_bwrap_profiles": apparmor_bwrap_profiles(sys_root),
        "selinux": selinux_mode(sys_root),
        "container": container(root, proc),
        "process": self_status(proc),
    }


def diagnose(knobs: Mapping[str, Any]) -> List[diagnostics.Diagnostic]:
    """Diagnostics from the knobs alone (before any bwrap run)."""
    out: List[diagnostics.Diagnostic] = []
    if knobs.get("unprivileged_userns_clone") == 0:
        out.append(diagnostics.make("userns_disabled_sysctl"))
    if knobs.get("max_user_namespaces") == 0:
        out.append(diagnostics.make("userns_max_namespaces_zero"))
    if knobs.get("apparmor_restrict_unprivileged_userns") == 1:
        profiles = knobs.get("apparmor_bwrap_profiles") or []
        if not profiles:
            out.append(diagnostics.make("userns_apparmor_restricted"))
        else:
            out.append(diagnostics.make("userns_apparmor_restricted", severity=diagnostics.INFO,
                                        variant="profiles_loaded",
                                        profiles=", ".join(profiles)))
    if knobs.get("selinux") == "enforcing":
        out.append(diagnostics.make("selinux_enforcing"))
    if knobs.get("container"):
        out.append(diagnostics.make("running_in_container", container=knobs["container"]))
    return out
