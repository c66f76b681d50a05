"""playbooks/site.yml end to end on localhost (real apt queries, real bwrap)."""
import os
import re

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import loopback
from conftest import run_playbook

SYSCTL_FILE = "/etc/sysctl.d/99-zz-metnos-bwrap.conf"


def recap(output):
    match = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", output)
    assert match, output[-3000:]
    return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, match.groups())))


@pytest.mark.rule("R-DIAG-3")
def test_site_runs_and_is_idempotent(tmp_path):
    profiles = "-e metnos_sandbox_profile_dir=%s" % (tmp_path / "profiles")
    first = run_playbook("playbooks/site.yml", profiles)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    # one status() view (issue 54): the admin's shell's, this machine has no metnos.service
    assert "runtime status() as the admin's shell sees it, no service unit (a view, not a proof): active=True" \
        in first.stdout and first.stdout.count("active=") == 1, first.stdout[-4000:]
    assert "skipping:" not in first.stdout      # display_skipped_hosts = False (ansible.cfg)
    # network_interfaces (read_notes' system:read) is the host's network: a host with listeners on loopback or on
    # every address gets network_loopback_listener, a warning (issue 50 item 3)
    level = "WARN" if loopback.listeners()[0] else "OK  "
    assert "%s profiles: 9 wrapped" % level in first.stdout, first.stdout[-4000:]
    assert (tmp_path / "profiles" / "read_notes.args").exists()
    second = run_playbook("playbooks/site.yml", profiles)
    assert second.returncode == 0
    assert recap(second.stdout)["changed"] == 0, second.stdout[-4000:]
    # A no-op run prints what is worth reading: the monitor off (the default) is one skipped include, not a skipped
    # line for each of its tasks (issue 42, item 7); the summary ends with the host's one verdict.
    assert "TASK [metnos.sandbox.metnos_sandbox : Monitor |" not in second.stdout, second.stdout[-4000:]
    assert re.search(r'"verdict: (PASS|WARN)"', second.stdout), second.stdout[-4000:]


def test_check_mode_changes_nothing(tmp_path):
    dest = tmp_path / "profiles"
    res = run_playbook("playbooks/site.yml", "--check", "--diff", "-e", "metnos_sandbox_profile_dir=%s" % dest)
    assert res.returncode == 0, res.stdout[-4000:]
    assert recap(res.stdout)["changed"] >= 1          # would render the profiles...
    assert not dest.exists()                          # ...but writes nothing
    run_playbook("playbooks/site.yml", "-e", "metnos_sandbox_profile_dir=%s" % dest)
    res = run_playbook("playbooks/site.yml", "--check", "--diff", "-e", "metnos_sandbox_profile_dir=%s" % dest)
    assert recap(res.stdout)["changed"] == 0


def test_check_mode_opt_in_remediation_reports_but_writes_nothing():
    assert not os.path.exists(SYSCTL_FILE)
    res = run_playbook("playbooks/site.yml", "--check", "--diff", "-e", "bwrap_host_sysctl_remediation=true")
    assert res.returncode == 0, res.stdout[-4000:]
    assert recap(res.stdout)["changed"] >= 1
    assert "user.max_user_namespaces = 15000" in res.stdout  # the diff shows the drop-in
    assert not os.path.exists(SYSCTL_FILE)


def test_bad_role_variable_fails_early_with_clear_message():
    res = run_playbook("playbooks/site.yml", "-e", "bwrap_host_state=installed")
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "bwrap_host_state" in out and "present" in out and "latest" in out
    assert "Traceback" not in out


@pytest.mark.skipif(os.path.isdir("/run/systemd/system"), reason="systemd is the init here: the monitor can run")
def test_the_monitor_on_a_host_without_systemd_is_said(tmp_path):
    """Issue 54 item 3: `make check -e metnos_sandbox_monitor=true` on a host whose init is not systemd (this
    container: /run/systemd/system is absent, checked above - the canary) said nothing; the summary now has a
    WARN monitor line with monitor_systemd_not_running, its check: commands (they only look) and the verdict
    counts it. Check mode: nothing is written."""
    prefix = tmp_path / "monitor"
    res = run_playbook("playbooks/site.yml", "--check", "-e", "metnos_sandbox_monitor=true",
                       "-e", "metnos_sandbox_profile_dir=%s" % (tmp_path / "profiles"),
                       "-e", "metnos_sandbox_monitor_prefix=%s" % prefix)
    assert res.returncode == 0, res.stdout[-4000:]
    out = res.stdout
    assert "WARN monitor: metnos-sandbox-monitor.timer written, NOT running: systemd is not the init of this host" \
        in out, out[-4000:]
    assert "[warning] monitor_systemd_not_running (R-DIAG-3)" in out
    assert "    check: ps -p 1 -o comm=" in out and "    check: ls -ld /run/systemd/system" in out, out[-4000:]
    assert '"verdict: WARN"' in out and not prefix.exists()
    assert out.count("active=") == 1 and "skipping:" not in out, out[-4000:]
