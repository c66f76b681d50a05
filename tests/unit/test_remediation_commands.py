"""Remediation as data (issue 42, item 2): every code's ``remediation`` is a list of commands that run as written -
each one parses with ``sh -n`` once its placeholders ({name}: filled by the toolkit, <name>: filled by the reader) are
a plain token, and starts with a command, never prose ('Debian/Ubuntu: apt-get install bubblewrap', 'Check the unit
name ...: systemctl ...'); the words go in the ``hint``. A gate over every registered code, every remediation variant,
every classified bwrap cause (bwrap_errors.CAUSES, the classified variant's steps) and the handover commands of
service_runs_as_root. The read-only commands are also run here once, for real."""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap_errors, facts
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import render_json, site_summary
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import root_service
from helpers import report_text
from helpers.paths import ROOT

HINTED = ("unit_not_found", "running_in_container", "bwrap_package_drift", "host_unreachable", "host_no_python",
          "bwrap_missing", "bwrap_not_root_owned", "bwrap_feature_missing", "bwrap_setuid", "bwrap_not_packaged",
          "manifest_parse_error", "manifest_missing", "audit_report_no_results", "monitor_proof_stale",
          "capability_unknown", "userns_disabled_sysctl", "sandbox_disabled_via_env", "service_path_missing_bwrap",
          "probe_check_failed", "profile_drift", "profile_missing", "profile_refused", "profile_context_error",
          "profile_in_sync", "capability_whitespace")
# The first word of a command: a program of the host or of this toolkit's tooling (the machine running the tests
# need not have every distribution's package manager).
COMMANDS = {"ansible", "ansible-config", "ansible-playbook", "ansible-doc", "ansible-inventory", "apt-get",
            "apparmor_parser", "ausearch", "bwrap", "cat", "chmod", "chown", "command", "dnf", "dpkg",
            "dpkg-statoverride", "echo", "find", "findmnt", "getcap", "getent", "gpasswd", "grep", "iconv",
            "install", "journalctl", "ls", "make", "mkdir", "mv", "pacman", "printf", "ps", "python3", "readlink",
            "realpath", "rm", "setfacl", "setpriv", "ss", "sysctl", "systemctl", "systemd-analyze",
            "systemd-detect-virt", "umount", "uname", "useradd", "${EDITOR:-vi}"}
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")        # filled by the toolkit (diagnostics.make)
EXPLICIT = re.compile(r"<([A-Za-z_][A-Za-z0-9_-]*)>")             # filled by the reader: <unit>, <path>


def filled(step, values=None):
    """The step as a user would paste it: each placeholder a plain token (``values``: the real ones, by name)."""
    def token(match):
        name = match.group(1)
        if values is not None and name in values:
            return shlex.quote(values[name])
        return "/usr/bin/bwrap" if name.endswith("path") else "value-of-" + name
    return EXPLICIT.sub(token, PLACEHOLDER.sub(token, step))


def problems(step):
    """Why ``step`` is not a command that runs as written (None when it is)."""
    text = filled(step)
    parsed = subprocess.run(["sh", "-n", "-c", text], capture_output=True, text=True)
    if parsed.returncode != 0:
        return "sh -n: %s" % parsed.stderr.strip()
    first = shlex.split(text)[0]
    if first not in COMMANDS:
        return "starts with %r, not a command" % first
    if text.rstrip().endswith(".") or re.search(r"[a-z]: [a-z]", text.split("'")[0].split('"')[0]):
        return "reads as a sentence"
    return None


def handover_steps():
    """The commands service_runs_as_root's {handover} stands for: made for real, from a root-owned folder the unit
    writes (we are root; the folder is a real one)."""
    folder = "/var/tmp/metnos-remediation-handover"
    os.makedirs(folder, exist_ok=True)
    try:
        diag = root_service.root_diagnostics("metnos.service", {"uid": 0}, {"ReadWritePaths": folder}, None)[0]
    finally:
        os.rmdir(folder)
    steps = [s for s in diag["remediation"] if s.startswith("chown -R")]
    assert steps, diag["remediation"]
    return steps


def cause_steps():
    """Every classified cause's commands: the known causes and classify()'s own fallbacks."""
    out = [s for cause in bwrap_errors.CAUSES for s in cause.remediation]
    for stderr, rc in (("", -31), ("", -9), ("bwrap: something new", 1)):
        out.extend(bwrap_errors.classify(stderr, rc)["remediation"])
    return out


EXPANDED = {"{cause_remediation}": cause_steps, "{handover}": handover_steps}


def steps_of(code):
    """Every command a finding of ``code`` can carry: its remediation and every variant's, the whole-list
    placeholders expanded to what they stand for."""
    entry = diagnostics.spec(code)
    out = []
    for step in list(entry.remediation) + [s for variant in entry.variants.values() for s in variant]:
        out.extend(EXPANDED[step]() if step in EXPANDED else [step])
    return out


def every_step():
    return sorted(set((code, s) for code in diagnostics.REGISTRY for s in steps_of(code)))


def test_the_codes_the_audit_emits_most_have_a_hint():
    assert [c for c in HINTED if not diagnostics.spec(c).hint] == []


@pytest.mark.parametrize("code", sorted(diagnostics.REGISTRY))
def test_every_command_of_every_code_runs_as_written(code):
    """The gate: no code's remediation holds prose, a placeholder the reader cannot see, or a line sh refuses."""
    bad = dict((s, problems(s)) for s in steps_of(code) if problems(s))
    assert not bad, bad


def test_every_classified_cause_has_a_hint_and_commands_only():
    """The classified variant's steps come from bwrap_errors: each cause's words are its hint."""
    for cause in bwrap_errors.CAUSES:
        assert cause.hint, cause.cause
        assert [s for s in cause.remediation if problems(s)] == [], cause.cause
    for stderr, rc in (("", -31), ("", -9), ("bwrap: something new", 1)):
        assert bwrap_errors.classify(stderr, rc)["hint"]


def test_the_check_catches_prose():
    """The mutation: the remediations these codes had before issue 42 are refused by the check."""
    for prose in ("Debian/Ubuntu: apt-get install bubblewrap",
                  "Check the unit name (metnos_sandbox_unit) and scope (system/user): systemctl list-unit-files "
                  "'metnos*'", "Render the profiles: make run", "Use one of the accepted forms listed in the message.",
                  "Re-run the audit for this host: --limit {host}", "chmod 0755 on the parent directories of the "
                  "bind destination.", "Create {path} or remove the EnvironmentFile= line",
                  "Drop-in: ProcSubset=all", "{relax_note}"):
        assert problems(prose), prose
    assert problems("chmod 0755 {bwrap_path}") is None
    assert problems("printf '[Service]\\nUser=<user>\\n' > /etc/systemd/system/<unit>.d/10-metnos-user.conf") is None


def test_a_hint_per_variant_travels_with_the_finding():
    """The words of a variant (no drop-in can relax it; the classified cause's) reach the finding as its hint."""
    diag = diagnostics.make("unit_proc_subset_pid", unit="metnos.service", directive="ProcSubset", relax=None,
                            relax_note="No drop-in can relax it; change the unit.", variant="no_dropin",
                            fill={"values": "pid"}, wording="seen")
    assert diag["hint"] == "No drop-in can relax it; change the unit."
    assert diag["remediation"] == ["systemctl cat metnos.service"]
    cls = bwrap_errors.classify("bwrap: Can't read /proc/sys/kernel/overflowuid: No such file", 1)
    diag = diagnostics.make("bwrap_smoke_failed", user="nobody", cause=cls["cause"], cause_text=cls["cause_text"],
                            cause_remediation=cls["remediation"], variant="classified",
                            fill={"cause_hint": cls["hint"]})
    assert diag["hint"] == cls["hint"] and diag["remediation"] == cls["remediation"]
    assert "cause_hint" not in diag["details"]
    # A cause no command fixes (its words only) still reaches the smoke test's finding as its hint.
    cls = bwrap_errors.classify("bwrap: Can't find source path /srv/x: No such file or directory", 1)
    assert cls["remediation"] == [] and cls["hint"]
    [diag] = facts.smoke_diagnostics({"uid": 65534, "passed": False, "user": "nobody", "classification": cls})
    assert (diag["remediation"], diag["hint"]) == ([], cls["hint"])


# -- the read-only commands, run here for real --------------------------------------------------------------------

# Read-only commands (by their start): they look, never change. Anything else (chmod, rm, useradd, systemctl
# restart, sysctl --system, ansible-playbook ...) is only parsed.
READ_ONLY = ("bwrap --", "cat ", "command -v ", "dpkg -S ", "dpkg --verify ", "findmnt", "getcap ", "getent ",
             "grep ", "journalctl ", "ls ", "ps ", "python3 -m json.tool ", "python3 -c ", "readlink ", "realpath ",
             "stat ", "sysctl -a ", "systemctl cat ", "systemctl list-unit-files ",
             "systemctl --user list-unit-files ", "systemctl list-units ", "systemctl show", "systemctl status ",
             "systemd-analyze exit-status ", "systemd-detect-virt", "uname ", "ausearch ")
SYSTEMD_RUNNING = os.path.isdir("/run/systemd/system")


def real_values(tmp):
    """A real value here for each placeholder that can have one; the others (a unit, a host, a pid of the
    service) do not exist on this machine."""
    bwrap = shutil.which("bwrap") or "/usr/bin/bwrap"
    path = os.path.join(tmp, "file.json")
    with open(path, "w") as handle:
        handle.write('{"schema": 1, "capabilities": []}\n')   # valid JSON and YAML (json.tool, yaml.safe_load)
    return {"bwrap_path": bwrap, "admin_bwrap": bwrap, "service_bwrap": bwrap, "path": path, "manifest": path,
            "folder": tmp, "dest": tmp, "metnos_sandbox_monitor_prefix": tmp, "user": "root", "status": "203",
            "pid": str(os.getpid()), "code": "bwrap_missing", "python": sys.executable}


def why_not_here(step, values):
    """Why a read-only step cannot run here (None when it can)."""
    names = set(PLACEHOLDER.findall(step)) | set(EXPLICIT.findall(step))
    missing = sorted(n for n in names if n not in values)
    if missing:
        return "needs %s, which does not exist here" % ", ".join("<%s>" % n for n in missing)
    first = step.split()[0]
    if first in ("systemctl",) and not SYSTEMD_RUNNING:
        return "systemd is not the init of this machine (a container): systemctl has no manager to ask"
    if first in ("ausearch",) and not shutil.which(first):
        return "%s is not installed here (auditd's tools)" % first
    if step.startswith("find /"):
        return "walks the whole file system"
    if first == "journalctl" and not glob.glob("/var/log/journal/*/*") + glob.glob("/run/log/journal/*/*"):
        return "this machine keeps no journal (no systemd-journald)"
    absent = [p for p in re.findall(r"(?<![\w.-])/[\w./-]+", filled(step, values)) if not os.path.exists(p)]
    if absent:
        return "reads %s, which this machine does not have" % ", ".join(absent)
    return None


# Commands whose exit status 1 means "nothing found" (a correct answer here), not a failure to run.
NOTHING_FOUND = ("grep ", "systemd-detect-virt", "journalctl -k", "dpkg --verify ")


@pytest.fixture(scope="module")
def values(tmp_path_factory):
    return real_values(str(tmp_path_factory.mktemp("remediation")))


READ_ONLY_STEPS = sorted(set(step for _code, step in every_step() if step.startswith(READ_ONLY)))


def test_some_commands_are_read_only():
    assert len(READ_ONLY_STEPS) >= 40, READ_ONLY_STEPS


@pytest.mark.parametrize("step", READ_ONLY_STEPS)
def test_the_read_only_command_runs_here(step, values):
    """A read-only command of some code, run once through sh with real values where this machine has them (skipped,
    with the reason, where it has none: a unit, a host, systemd as init). A command that is not found, or whose
    options the program refuses, fails."""
    why = why_not_here(step, values)
    if why:
        pytest.skip(why)
    text = filled(step, values)
    result = subprocess.run(["sh", "-c", text], capture_output=True, text=True, cwd=ROOT, timeout=60,
                            stdin=subprocess.DEVNULL)
    nothing_found = result.returncode == 1 and step.startswith(NOTHING_FOUND) and not result.stderr.strip()
    assert result.returncode == 0 or nothing_found, (text, result.returncode, result.stderr[-300:])


def test_the_hint_travels_with_the_finding_and_is_shown():
    diag = diagnostics.make("bwrap_package_drift", majority="0.8.0-2", host="web-1", revision="0.8.0-1",
                            majority_hosts=2, hosts=3)
    assert diag["remediation"] == ["ansible-playbook metnos.sandbox.site --limit 'web-1' --tags bwrap_host_install "
                                   "-e 'bwrap_host_version=0.8.0-2'"]
    assert diag["hint"].startswith("Align this host's bubblewrap with the fleet's majority revision 0.8.0-2")


def test_every_report_shows_the_hint_and_the_commands():
    """A finding's words (hint) and commands (remediation) reach the JSON, the Markdown, the HTML (visible, and in
    the host's details data), the JUnit failure and the role's terminal summary."""
    diag = diagnostics.make("unit_proc_subset_pid", unit="metnos.service", directive="ProcSubset", relax=None,
                            relax_note="No drop-in can relax it; change the unit.", variant="no_dropin",
                            fill={"values": "pid"}, wording="seen")
    result = {"schema": "metnos-sandbox-audit/1", "verdict": "fail", "hostname": "h",
              "bwrap_facts": {"status": {"active": True}, "bwrap": {"path": "/usr/bin/bwrap", "version": "0.8.0"}},
              "service": None, "profiles": [], "probe": None, "diagnostics": [diag]}
    doc = report_text.build({"web-1": result})
    hint, command = "No drop-in can relax it; change the unit.", "systemctl cat metnos.service"
    saved = json.loads(render_json.to_json(doc))["hosts"][0]["diagnostics"][0]
    assert (saved["hint"], saved["remediation"]) == (hint, [command])
    markdown = report_text.to_markdown(doc)
    assert hint in markdown and "Check:\n\n```sh\n%s\n```" % command in markdown     # it only looks: "Check"
    page = report_text.to_html(doc)
    assert '<p class="hint">%s</p>' % hint in page and "<code>%s</code>" % command in page
    assert '<span>Check</span>' in page and '<span>Fix</span>' not in page
    data = json.loads(page.split('<script type="application/json" id="data">')[1].split("</script>")[0])
    assert {"hints": [hint], "commands": [command], "label": "Check"} in data["r"]
    junit = report_text.to_junit(doc)
    assert "hint: " + hint in junit and "fix: " + command in junit
    lines = site_summary.host_summary(sections=[{"name": "service", "verdict": "fail", "detail": "",
                                                 "diagnostics": [diag]}])
    assert any(line.strip() == "hint: " + hint for line in lines)
    assert any(line.strip() == "check: " + command for line in lines)      # it only looks (issue 54: check:)
