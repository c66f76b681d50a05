"""bwrap stderr classification: every message of the field notes maps to its cause.

Texts are copied from shared/knowledge/BWRAP_FIELD_NOTES.md (several versions and
distro patches of each); patterns must match them all.
"""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap_errors

DEB_EPERM = ("bwrap: No permissions to create new namespace, likely because the kernel does not allow "
             "non-privileged user namespaces. See <https://deb.li/bubblewrap> or "
             "<file:///usr/share/doc/bubblewrap/README.Debian.gz>.")

CASES = [
    (DEB_EPERM, "userns_eperm"),
    ("bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
     "non-privileged user namespaces. On e.g. debian this can be enabled with "
     "'sysctl kernel.unprivileged_userns_clone=1'.", "userns_eperm"),
    ("bwrap: No permissions to create a new namespace, likely because the kernel does not allow "
     "non-privileged user namespaces.", "userns_eperm"),
    ("<3>bwrap: No permissions to create a new namespace, likely because", "userns_eperm"),
    ("No permissions to creating new namespace, likely because the kernel", "userns_eperm"),
    ("bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)",
     "userns_enospc"),
    ("bwrap: Creating new namespace failed: No space left on device", "userns_enospc"),
    ("bwrap: Creating new namespace failed, likely because the kernel does not support user namespaces.  "
     "bwrap must be installed setuid on such systems.", "userns_einval"),
    ("bwrap: Creating new namespace failed: Permission denied", "userns_eacces"),
    ("bwrap: Creating new namespace failed: Function not implemented", "userns_enosys"),
    ("bwrap: Creating new namespace failed: Operation not permitted", "ns_create_eperm_root"),
    ("bwrap: setting up uid map: Permission denied", "uid_map_denied"),
    ("bwrap: setting up uid map: Operation not permitted", "uid_map_eperm"),
    ("bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted", "netlink_denied"),
    ("bwrap: loopback: Failed to create NETLINK_ROUTE socket: Address family not supported by protocol",
     "netlink_socket_refused"),
    ("bwrap: Failed to make / slave: Permission denied", "make_slave_denied"),
    ("bwrap: Failed to make / slave: Operation not permitted", "make_slave_denied"),
    ("pivot_root: Operation not permitted", "pivot_root_denied"),
    ("bwrap: Can't mount proc on /newroot/proc: Operation not permitted", "proc_mount_denied"),
    ("bwrap: Failed to mount tmpfs: Permission denied", "tmpfs_denied"),
    ("bwrap: Can't read /proc/sys/kernel/overflowuid: No such file or directory", "overflowuid_unreadable"),
    ("bwrap: cannot open /proc/sys/user/max_user_namespaces: Read-only file system", "proc_sys_readonly"),
    ("bwrap: cannot open /proc/sys/user/max_user_namespaces: Permission denied", "proc_sys_readonly"),
    ("bwrap: Can't mkdir parents for /tmp: Function not implemented", "openat2_enosys"),
    ("bwrap: Can't mkdir parents for /home/u/.cache: Permission denied", "mkdir_parents_denied"),
    ("bwrap: setuid use of bubblewrap is not supported", "setuid_unsupported"),
    ("bwrap: setuid use of bubblewrap is not supported in this build", "setuid_unsupported"),
    ("bwrap: The --size option is not permitted in setuid mode", "setuid_option_refused"),
    ("The --overlay-src option is not permitted in setuid mode", "setuid_option_refused"),
    ("bwrap: --userns doesn't work in setuid mode", "setuid_option_refused"),
    ("bwrap: --cap-add in setuid mode can be used only by root", "setuid_option_refused"),
    ("bwrap: capset failed: Operation not permitted", "capset_failed"),
    ("bwrap: Unknown option --disable-userns", "unknown_option"),
    ("bwrap: Unknown option --level-prefix", "unknown_option"),
    ("bwrap: Can't find source path /nonexistent: No such file or directory", "source_missing"),
    ("bwrap: execvp /tmp/probe: Permission denied", "execvp_failed"),
    ("bwrap: execvp X: No such file or directory", "execvp_failed"),
    ("bwrap: Can't write data to file X: Bad file descriptor", "bad_fd"),
]


@pytest.mark.parametrize("text,cause", CASES, ids=[c for _t, c in CASES])
def test_classify_field_notes_texts(text, cause):
    result = bwrap_errors.classify("some preamble\n" + text + "\n", 1)
    assert result["cause"] == cause
    assert result["remediation"] or result["hint"], "every cause carries a remediation (its words: the hint)"
    assert result["stderr_line"].endswith(text.split("bwrap: ")[-1][:20]) or text in result["stderr_line"] \
        or result["stderr_line"] in text


def test_sigsys_without_message_is_seccomp_kill():
    # systemd SystemCallFilter= kills with SIGSYS: status 159, empty stderr (field notes F10).
    assert bwrap_errors.classify("", 159)["cause"] == "killed_by_seccomp"
    assert bwrap_errors.classify("", -31)["cause"] == "killed_by_seccomp"


def test_unknown_text_keeps_bwrap_line():
    result = bwrap_errors.classify("bwrap: something new and strange\n", 1)
    assert result["cause"] == "unknown"
    assert "something new and strange" in result["cause_text"]


def test_points_at_kernel_codes():
    assert bwrap_errors.classify(DEB_EPERM, 1)["points_at"] == "userns_disabled_sysctl"
    assert bwrap_errors.classify("bwrap: setting up uid map: Permission denied",
                                 1)["points_at"] == "userns_apparmor_restricted"


# Measured in systemd units on Debian 12 and 13 hosts (tests/system/test_blame_fleet.py), bwrap 0.8 and 0.12, and
# the probe's launcher (dash) when the unit does not let it execute bwrap.
@pytest.mark.parametrize("text,cause", [
    ("bwrap: Unexpected capabilities but not setuid, old file caps config?", "unexpected_capabilities"),
    ("bwrap: setting up uid map: Read-only file system", "uid_map_readonly"),
    ("bwrap: Creating new namespace failed: Resource temporarily unavailable", "clone_eagain"),
    ("sh: 1: exec: /usr/bin/bwrap: Permission denied", "bwrap_exec_denied"),
    ("sh: 1: exec: /usr/bin/bwrap: not found", "bwrap_exec_missing"),
    ("bwrap: Can't open source /usr: Function not implemented", "openat2_enosys"),
])
def test_causes_of_units_measured_in_the_fleet(text, cause):
    assert bwrap_errors.classify(text, 1)["cause"] == cause
