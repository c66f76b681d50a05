"""Kernel knob interpretation.

The Debian/Arch ``unprivileged_userns_clone`` knob, AppArmor and SELinux do not
exist on this build machine's kernel, so these tests plant the /proc and /sys
files in a temporary tree (the reader takes the roots as parameters). The
real-kernel path is exercised by the integration tests.
"""
import os

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.diagnostics import codes
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import kernel


def plant(tmp_path, files):
    for rel, value in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value)
    return str(tmp_path / "proc"), str(tmp_path / "sys"), str(tmp_path / "root")


def test_healthy_vanilla_kernel(tmp_path):
    proc, sysr, root = plant(tmp_path, {"proc/sys/user/max_user_namespaces": "63000\n"})
    f = kernel.facts(proc, sysr, root)
    assert f["max_user_namespaces"] == 63000
    assert f["unprivileged_userns_clone"] is None
    assert f["selinux"] == "disabled"
    assert codes(kernel.diagnose(f)) == []


def test_f1_unprivileged_userns_clone_zero(tmp_path):
    proc, sysr, root = plant(tmp_path, {"proc/sys/user/max_user_namespaces": "63000",
                                        "proc/sys/kernel/unprivileged_userns_clone": "0"})
    assert codes(kernel.diagnose(kernel.facts(proc, sysr, root))) == ["userns_disabled_sysctl"]


def test_f2_max_user_namespaces_zero(tmp_path):
    proc, sysr, root = plant(tmp_path, {"proc/sys/user/max_user_namespaces": "0"})
    assert codes(kernel.diagnose(kernel.facts(proc, sysr, root))) == ["userns_max_namespaces_zero"]


def test_f3_apparmor_restriction_without_profile(tmp_path):
    proc, sysr, root = plant(tmp_path, {
        "proc/sys/user/max_user_namespaces": "63000",
        "proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1",
        "sys/kernel/security/apparmor/profiles": "firefox (enforce)\n"})
    diags = kernel.diagnose(kernel.facts(proc, sysr, root))
    assert codes(diags) == ["userns_apparmor_restricted"]
    assert diags[0]["severity"] == "error"


def test_f3_apparmor_restriction_with_bwrap_profile_is_info(tmp_path):
    proc, sysr, root = plant(tmp_path, {
        "proc/sys/user/max_user_namespaces": "63000",
        "proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1",
        "sys/kernel/security/apparmor/profiles": "bwrap (unconfined)\nunpriv_bwrap (enforce)\n"})
    diags = kernel.diagnose(kernel.facts(proc, sysr, root))
    assert codes(diags) == ["userns_apparmor_restricted"]
    assert diags[0]["severity"] == "info"


def test_f6_selinux_enforcing(tmp_path):
    proc, sysr, root = plant(tmp_path, {"proc/sys/user/max_user_namespaces": "1",
                                        "sys/fs/selinux/enforce": "1"})
    assert codes(kernel.diagnose(kernel.facts(proc, sysr, root))) == ["selinux_enforcing"]


def test_f4_container_markers(tmp_path):
    proc, sysr, root = plant(tmp_path, {"root/run/.containerenv": ""})
    assert kernel.container(root, proc) == "podman"
    proc, sysr, root = plant(tmp_path / "b", {"proc/1/environ": "PATH=/bin\0container=lxc\0"})
    assert kernel.container(root, proc) == "lxc"


def test_real_kernel_reads_something():
    f = kernel.facts()
    assert isinstance(f["max_user_namespaces"], int)
    assert os.path.exists("/proc/sys/user/max_user_namespaces")
