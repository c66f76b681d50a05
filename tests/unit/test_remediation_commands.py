"""Remediation as data (issue 42, item 2): a code with a ``hint`` keeps its ``remediation`` to commands that run as
written - each one parses with ``sh -n`` once its {placeholders} are filled, and starts with a command, never prose
('Debian/Ubuntu: apt-get install bubblewrap', 'Check the unit name ...: systemctl ...'); the words go in the hint.
The codes the audit emits most are converted (HINTED below must all have a hint); the others are counted."""
import re
import shlex
import subprocess

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics as D

HINTED = ("unit_not_found", "running_in_container", "bwrap_package_drift", "host_unreachable", "host_no_python",
          "bwrap_missing", "bwrap_not_root_owned", "bwrap_feature_missing", "bwrap_setuid", "bwrap_not_packaged",
          "manifest_parse_error", "manifest_missing", "audit_report_no_results", "monitor_proof_stale",
          "capability_unknown", "userns_disabled_sysctl", "sandbox_disabled_via_env", "service_path_missing_bwrap",
          "probe_check_failed", "profile_drift", "profile_missing", "profile_refused", "profile_context_error",
          "profile_in_sync", "capability_whitespace")
# The first word of a command: a program of the host or of this toolkit's tooling (the machine running the tests
# need not have every distribution's package manager).
COMMANDS = {"ansible", "ansible-playbook", "ansible-doc", "ansible-inventory", "apt-get", "dnf", "pacman", "cat",
            "chmod", "chown", "dpkg-statoverride", "echo", "grep", "journalctl", "ls", "make", "python3", "rm",
            "sysctl", "systemctl", "systemd-detect-virt", "mkdir", "printf"}
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def filled(step):
    """The step as a user would paste it: each {placeholder} a plain value."""
    return PLACEHOLDER.sub(lambda m: "/usr/bin/bwrap" if m.group(1).endswith("path") else "value-of-" + m.group(1),
                           step)


def problems(step):
    """Why ``step`` is not a command that runs as written (None when it is)."""
    text = filled(step)
    parsed = subprocess.run(["sh", "-n", "-c", text], capture_output=True, text=True)
    if parsed.returncode != 0:
        return "sh -n: %s" % parsed.stderr.strip()
    first = shlex.split(text)[0]
    if first not in COMMANDS:
        return "starts with %r, not a command" % first
    return None


def steps_of(code):
    entry = D.spec(code)
    return list(entry.remediation) + [s for variant in entry.variants.values() for s in variant]


def test_the_codes_the_audit_emits_most_have_a_hint():
    assert [c for c in HINTED if not D.spec(c).hint] == []


@pytest.mark.parametrize("code", sorted(c for c, entry in D.REGISTRY.items() if entry.hint))
def test_every_command_of_a_hinted_code_runs_as_written(code):
    bad = dict((s, problems(s)) for s in steps_of(code) if problems(s))
    assert not bad, bad


def test_the_check_catches_prose():
    """The mutation: the remediations these codes had before issue 42 are refused by the check."""
    for prose in ("Debian/Ubuntu: apt-get install bubblewrap",
                  "Check the unit name (metnos_sandbox_unit) and scope (system/user): systemctl list-unit-files "
                  "'metnos*'", "Render the profiles: make run", "Use one of the accepted forms listed in the message.",
                  "Re-run the audit for this host: --limit {host}"):
        assert problems(prose), prose
    assert problems("chmod 0755 {bwrap_path}") is None


def test_the_hint_travels_with_the_finding_and_is_shown():
    diag = D.make("bwrap_package_drift", majority="0.8.0-2", host="web-1", revision="0.8.0-1", majority_hosts=2,
                  hosts=3)
    assert diag["remediation"] == ["ansible-playbook metnos.sandbox.site --limit 'web-1' --tags bwrap_host_install "
                                   "-e 'bwrap_host_version=0.8.0-2'"]
    assert diag["hint"].startswith("Align this host's bubblewrap with the fleet's majority revision 0.8.0-2")


def test_how_many_codes_are_left(capsys):
    """Not a gate: the codes whose remediation still mixes words and commands (no hint yet), counted."""
    left = sorted(c for c, entry in D.REGISTRY.items() if not entry.hint and any(problems(s) for s in steps_of(c)))
    with capsys.disabled():
        print("\nremediations still prose (no hint yet): %d codes" % len(left))
    assert len(left) < len(D.REGISTRY)
