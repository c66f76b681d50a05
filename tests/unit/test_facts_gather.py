"""facts.gather() reads the kernel's knobs where its HostRoots say and runs the smoke test its SmokeTest says
(issue 55: the two records that replaced six of its eleven parameters)."""
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import facts


def _plant(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


@pytest.fixture
def planted(tmp_path):
    """A /proc and a /sys that forbid user namespaces and enforce SELinux, as real files read by kernel.facts."""
    proc, sys_root = str(tmp_path / "proc"), str(tmp_path / "sys")
    _plant(proc, "sys/user/max_user_namespaces", "0\n")
    _plant(proc, "sys/kernel/unprivileged_userns_clone", "0\n")
    _plant(proc, "self/status", "Name:\tpython3\n")
    _plant(sys_root, "fs/selinux/enforce", "1\n")
    return facts.HostRoots(proc=proc, sys_root=sys_root, root=str(tmp_path))


def codes(result):
    return sorted(d["code"] for d in result["diagnostics"])


def test_the_knobs_are_read_under_the_roots_given(planted):
    got = facts.gather("/nonexistent", {}, facts.SmokeTest(run=False), roots=planted)
    assert got["userns"]["max_user_namespaces"] == 0 and got["userns"]["selinux"] == "enforcing"
    assert {"userns_disabled_sysctl", "userns_max_namespaces_zero", "selinux_enforcing"} <= set(codes(got))
    # the canary: this host's own roots have none of the three planted faults
    own = facts.gather("/nonexistent", {}, facts.SmokeTest(run=False))
    assert own["userns"]["max_user_namespaces"] != 0
    assert not {"userns_max_namespaces_zero", "selinux_enforcing"} & set(codes(own))


def test_the_smoke_test_runs_only_when_asked(planted):
    off = facts.gather("/nonexistent", {}, facts.SmokeTest(run=False), roots=planted)
    assert off["userns"]["smoke_test"] == {"ran": False, "reason": "smoke_test=false"}
    assert "bwrap_smoke_skipped" not in codes(off)
    on = facts.gather("/nonexistent", {}, roots=planted)          # the default: it runs, here without a bwrap
    assert on["userns"]["smoke_test"] == {"ran": False, "reason": "bwrap not found on PATH"}
    assert "bwrap_smoke_skipped" in codes(on)
