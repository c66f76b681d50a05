# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnostic codes of the runtime's status() and its outcome, the bwrap binary, the kernel's knobs.

The codes of the host/ package's checks, kept on the ground floor (base/ imports nothing above it): data
only, importing base/registry.py alone; base/diagnostics.py gathers every codes_*.py's CODES into the one
registry (docs/diagnostics.md is generated from it). Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import List

from .registry import (
    BWRAP_BINARY,
    CLASSIFIED,
    CLASSIFIED_HINT,
    ERROR,
    INFO,
    KERNEL_USERNS,
    NOT_ROOTS_FIXES,
    NOT_ROOTS_HINT,
    SANDBOX_ACTIVE,
    SMOKE_TEST,
    WARNING,
    Code,
    not_roots_messages,
)

CODES: List[Code] = []
CODES.extend([
    # ---- the runtime's status() and its outcome (R-DIAG-1, R-FAIL-1) ----
    Code(code="executor_os_sandbox_unavailable", severity=ERROR, rule="R-FAIL-1", section=SANDBOX_ACTIVE,
         title="The runtime would refuse every ordinary executor",
         cause="bwrap is not on the PATH that was checked, or METNOS_SANDBOX disables the sandbox. "
               "runtime/sandbox.py fails closed before any subprocess starts.",
         detection="status(): bwrap_available is false or disabled_via_env is true.",
         remediation=[],
         messages={"profile_no_bwrap": "{executor} refused: bwrap is not on PATH (R-FAIL-1)",
                   "profile_disabled": "{executor} refused: METNOS_SANDBOX disables it (R-FAIL-1)",
                   "why": "The runtime would refuse every ordinary executor with executor_os_sandbox_unavailable: "
                          "{why}.",
                   "running": "The running process would refuse every ordinary executor with "
                              "executor_os_sandbox_unavailable ({view})."},
         hint=("Fix the diagnostics listed with it (bwrap_missing, sandbox_disabled_via_env, "
               "service_path_missing_bwrap); this one clears when they do.")),
    Code(code="bwrap_missing", severity=ERROR, rule="R-DIAG-2", section=SANDBOX_ACTIVE,
         title="bwrap is not on PATH",
         cause="No executable named bwrap was found in the PATH that was checked ({path}).",
         detection="Lookup of 'bwrap' through each PATH entry, as execvp would.",
         remediation=["ansible-playbook metnos.sandbox.site --tags bwrap_host_install"],
         hint=("Install the distribution's bubblewrap package: the bwrap_host role picks apt-get, dnf or pacman (by "
               "hand: apt-get install bubblewrap, dnf install bubblewrap, pacman -S bubblewrap). If bwrap is "
               "installed elsewhere, add its directory to the PATH the service uses.")),
    Code(code="sandbox_disabled_via_env", severity=ERROR, rule="R-FAIL-1", section=SANDBOX_ACTIVE,
         title="METNOS_SANDBOX disables the sandbox",
         cause="METNOS_SANDBOX is set to a disabling value (0, off, no, false; any case).",
         detection="The effective METNOS_SANDBOX value is compared case-insensitively with 0/off/no/false.",
         remediation=["systemctl show '{unit}' -p Environment -p EnvironmentFiles"],
         messages={"where": "METNOS_SANDBOX={shown} in the {where} disables the sandbox (R-FAIL-1)."},
         hint=("Remove METNOS_SANDBOX from the service's environment, or set METNOS_SANDBOX=1 (enforce mode's "
               "drop-in unsets it); the command shows where it is set.")),
    Code(code="sandbox_env_value_ambiguous", severity=WARNING, rule="R-FAIL-1", section=SANDBOX_ACTIVE,
         title="METNOS_SANDBOX has a surprising value",
         cause="The value is not one the runtime treats as disabling, but it looks like an attempt to "
               "disable (surrounding whitespace, another spelling of false such as n/f/disabled) or is "
               "empty. The runtime keeps the sandbox on; the admin may believe it is off, or the reverse.",
         detection="The value is compared with systemd's boolean spellings and stripped/lower-cased forms.",
         remediation=["systemctl show <unit> -p Environment -p EnvironmentFiles"],
         messages={"reason": "METNOS_SANDBOX: {reason}."},
         hint=("Set an explicit value, METNOS_SANDBOX=1 (sandbox on), or remove the variable; do not rely on "
               "spellings other than 0/off/no/false to disable it. The command shows where it is set.")),
    # ---- the bwrap binary ----
    Code(code="bwrap_setuid", severity=WARNING, rule="R-SEC-6", section=BWRAP_BINARY,
         title="bwrap is installed setuid root",
         cause="The bwrap binary has the setuid bit. bubblewrap 0.12 refuses setuid use; setuid mode "
               "refuses several options, scrubs LD_LIBRARY_PATH/TMPDIR and is disabled by NoNewPrivileges.",
         detection="stat() of the resolved bwrap: mode & 04000.",
         remediation=["dpkg-statoverride --quiet --remove {bwrap_path} || true",
                      "chmod 0755 {bwrap_path}"],
         messages={"": "{bwrap_path} is setuid root (mode {mode}).",
                   "refused": "{bwrap_path} is setuid root (mode {mode}); bubblewrap {version} refuses setuid use."},
         hint=("On Debian and Ubuntu the two commands drop the setuid bit for good; on Arch install "
               "bubblewrap in place of bubblewrap-suid (pacman -S bubblewrap). Then enable unprivileged "
               "user namespaces (the userns_* diagnostics).")),
    Code(code="bwrap_not_root_owned", severity=ERROR, rule="R-SEC-6", section=BWRAP_BINARY,
         title="bwrap is not owned by root or is writable by others",
         cause="The resolved bwrap binary (or a directory above it) is not owned by root, or is group/"
               "world-writable: anyone with that access can replace the sandbox.",
         detection="stat() of the binary and of every parent directory up to /.",
         remediation=["chown root:root {bwrap_path}",
                      "chmod 0755 {bwrap_path}"],
         messages={"": "{problems}."},
         hint=("Or reinstall the distribution's package (apt-get install --reinstall bubblewrap, dnf reinstall "
               "bubblewrap, pacman -S bubblewrap).")),
    Code(code="bwrap_not_packaged", severity=WARNING, rule="R-DIAG-2", section=BWRAP_BINARY,
         title="bwrap is not owned by a distro package",
         cause="The bwrap that resolves on PATH is not owned by any installed package (self-built or "
               "copied), so it gets no security updates and may shadow the packaged one.",
         detection="dpkg -S / rpm -qf / pacman -Qo on the resolved path.",
         remediation=["rm {bwrap_path}",
                      "ansible-playbook metnos.sandbox.site --tags bwrap_host_install"],
         messages={"": "{bwrap_path} is not owned by any installed package."},
         hint=("Remove the unmanaged copy, install the distribution's bubblewrap package, and keep /usr/bin first in "
               "the service's PATH.")),
    Code(code="bwrap_feature_missing", severity=ERROR, rule="R-BASE-6", section=BWRAP_BINARY,
         title="bwrap lacks an option the profile needs",
         cause="'bwrap --help' does not list {missing}. The version string alone is not trusted "
               "(distros backport options).",
         detection="Options parsed from 'bwrap --help'.",
         remediation=["ansible-playbook metnos.sandbox.site --tags bwrap_host_install -e bwrap_host_state=latest"],
         messages={"": "bwrap {version} at {bwrap_path} lacks {missing} (parsed from --help)."},
         hint=("Upgrade bubblewrap from the distribution (by hand: apt-get install --only-upgrade bubblewrap, dnf "
               "upgrade bubblewrap, pacman -Syu bubblewrap).")),
    Code(code="bwrap_smoke_failed", severity=ERROR, rule="R-DIAG-3", section=SMOKE_TEST,
         title="A real bwrap invocation failed",
         cause="bwrap could not set up the sandbox when run as {user}: {cause_text}",
         detection="A real bwrap run with --unshare-user --unshare-ipc --unshare-uts --unshare-net "
                   "--die-with-parent and --json-status-fd; a missing exit-code record means setup failed; "
                   "stderr is classified by pattern.",
         remediation=[], variants=CLASSIFIED,
         hint="See the remediation of the classified cause ({cause}).", hints={"classified": CLASSIFIED_HINT}),
    Code(code="bwrap_smoke_skipped", severity=INFO, rule="R-DIAG-3", section=SMOKE_TEST,
         title="The smoke test was not run",
         cause="{reason}",
         detection="smoke_test option or missing prerequisites.",
         remediation=[],
         variants={"no_bwrap": ["ansible-playbook metnos.sandbox.site --tags bwrap_host_install"]},
         hint="Run with smoke_test=true as root (so that the module can switch to an unprivileged user).",
         hints={"no_bwrap": "Install bubblewrap first (see bwrap_missing)."}),
    Code(code="smoke_ran_as_root", severity=WARNING, rule="R-DIAG-3", section=SMOKE_TEST,
         title="The smoke test ran as root",
         cause="Running bwrap as root hides user-namespace failures: root does not need a user "
               "namespace, the service user does.",
         detection="The effective uid of the smoke test was 0.",
         remediation=["systemctl show <unit> -p User -p DynamicUser"],
         hint="Run the smoke test as the service user: smoke_user=<the unit's User=>, which the command shows."),
    # ---- kernel knobs (F1, F2, F3, F4, F6) ----
    Code(code="userns_disabled_sysctl", severity=ERROR, rule="R-BASE-6", section=KERNEL_USERNS,
         title="kernel.unprivileged_userns_clone is 0",
         cause="Unprivileged user namespaces are disabled by kernel.unprivileged_userns_clone=0 "
               "(Debian/Ubuntu/Arch kernels; often set by hardening roles such as dev-sec os_hardening). "
               "bwrap fails with 'No permissions to create new namespace'.",
         detection="/proc/sys/kernel/unprivileged_userns_clone; the file that sets it via "
                   "systemd-sysctl --cat-config.",
         remediation=["echo 'kernel.unprivileged_userns_clone = 1' > /etc/sysctl.d/99-zz-metnos-bwrap.conf",
                      "sysctl --system"],
         hint=("If a hardening role sets it to 0, override it there (dev-sec: sysctl_overwrite) rather than "
               "fighting it on every run.")),
    Code(code="userns_max_namespaces_zero", severity=ERROR, rule="R-BASE-6", section=KERNEL_USERNS,
         title="user.max_user_namespaces is 0",
         cause="No user namespaces may be created (RHEL/STIG default RHEL-09-213105, or Debian's "
               "recommended way to disable them). bwrap fails with ENOSPC.",
         detection="/proc/sys/user/max_user_namespaces.",
         remediation=["echo 'user.max_user_namespaces = 15000' > /etc/sysctl.d/99-zz-metnos-bwrap.conf",
                      "sysctl --system"],
         hint=("On STIG-managed hosts record a documented exception instead of flipping the value back and forth "
               "with the compliance tool.")),
    Code(code="userns_apparmor_restricted", severity=ERROR, rule="R-BASE-6", section=KERNEL_USERNS,
         title="AppArmor restricts unprivileged user namespaces",
         cause="kernel.apparmor_restrict_unprivileged_userns=1 (Ubuntu 24.04+) and no AppArmor profile "
               "grants userns to bwrap. bwrap fails with 'setting up uid map: Permission denied' or "
               "'loopback: Failed RTM_NEWADDR'.",
         detection="/proc/sys/kernel/apparmor_restrict_unprivileged_userns; profiles attached to bwrap in "
                   "/sys/kernel/security/apparmor/profiles.",
         remediation=["grep -rl bwrap /etc/apparmor.d",
                      "apt-get install apparmor-profiles apparmor-utils",
                      "install -m0644 /usr/share/apparmor/extra-profiles/bwrap-userns-restrict /etc/apparmor.d/",
                      "apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict"],
         messages={"profiles_loaded": "AppArmor restricts unprivileged user namespaces, and profile(s) for bwrap "
                                      "are loaded ({profiles}); if bwrap still fails, two attachments may conflict."},
         hint=("Check first that no other profile already attaches to /usr/bin/bwrap (the first command lists the "
               "profiles that name it): two attachments cancel each other.")),
    Code(code="selinux_enforcing", severity=INFO, rule="R-BASE-6", section=KERNEL_USERNS,
         title="SELinux is enforcing",
         cause="SELinux may deny user_namespace create for confined domains "
               "('Creating new namespace failed: Permission denied').",
         detection="/sys/fs/selinux/enforce.",
         remediation=["ausearch -m AVC,USER_AVC -c bwrap"],
         hint=("Nothing to do while bwrap works. If it fails, read the denials (the command), then build a local "
               "policy module from the reviewed AVCs (audit2allow); do not setenforce 0.")),
    Code(code="running_in_container", severity=INFO, rule="R-BASE-6", section=KERNEL_USERNS,
         title="The host is a container",
         cause="Running inside {container}: the outer runtime's seccomp, AppArmor and /proc masking "
               "decide whether bwrap can work.",
         detection="systemd-detect-virt --container, /run/.containerenv, /.dockerenv, /proc/1/environ.",
         remediation=["systemd-detect-virt --container",
                      "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status"],
         hint=("The outer container runtime decides whether bwrap can work: podman needs --security-opt unmask=ALL "
               "(bwrap --proc needs an unmasked /proc); docker needs a seccomp profile that allows unshare and "
               "clone(CLONE_NEWUSER).")),
    # ---- root runs only what root owns (issue 49; base/owners.py) ----
    Code(code="bwrap_not_run_not_roots", severity=ERROR, rule="R-SEC-6", section=BWRAP_BINARY,
         title="The bwrap on the service's PATH is not root's: it was not run as root",
         cause="A component of the bwrap the service's PATH finds first (a folder on the way, a link, the file, its "
               "interpreter) is owned or writable by someone other than root: whoever that is could make root run "
               "their code, so the check did not run it (no --version, no --help) and judged it from the filesystem "
               "alone.",
         detection="lstat() of every component from /, each link judged in its folder and its target walked, the "
                   "file's #! or ELF interpreter walked again (base/owners.py), before anything runs it.",
         remediation=list(NOT_ROOTS_FIXES["unknown"]), variants=NOT_ROOTS_FIXES,
         messages=not_roots_messages("{program} was not run as root"), hint=NOT_ROOTS_HINT),
])
