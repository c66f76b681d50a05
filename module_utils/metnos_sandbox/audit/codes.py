# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnostic codes of the fleet audit (unreachable hosts, drift) and the continuous proof (the monitor).

Data only: base/diagnostics.py gathers every package's CODES into the one registry (docs/diagnostics.md is
generated from it). Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import List

from ..base.registry import BWRAP_BINARY, ERROR, MODULE, MONITOR, PROBE, PROFILES, REACHABILITY, WARNING, Code

CODES: List[Code] = []
CODES.extend([
    # ---- fleet audit ----
    Code("profile_drift", ERROR, "R-SCOPE-3", PROFILES,
         "A rendered profile differs from its manifest",
         "The profile on disk is not what the manifest renders today on this host (the manifest, the "
         "host's paths or the toolkit changed), or no profile was rendered.",
         "Rendering each manifest on the host and comparing with <profile_dir>/<executor>.args.",
         ["Re-render the profiles: make run (or ansible-playbook playbooks/site.yml --tags metnos_sandbox_profiles)"],
         {"missing": ["Render the profiles: make run"]},
         {"": "{executor}: the profile on disk ({path}) differs from what the manifest renders today "
              "(added {added}; removed {removed}).",
          "missing": "{executor}: no rendered profile at {path}."}),
    Code("bwrap_package_drift", WARNING, "R-DIAG-2", BWRAP_BINARY,
         "bwrap package revision differs from the fleet majority",
         "This host's bubblewrap package revision is not the one most of the fleet runs.",
         "Comparing the package revision of every audited host.",
         ["Align the package: apt-get install bubblewrap={majority} (or dnf/pacman equivalent)"],
         messages={"": "{host} runs bubblewrap {revision}; most of the fleet ({majority_hosts} of {hosts} hosts) "
                       "runs {majority}."}),
    Code("host_unreachable", ERROR, "R-DIAG-3", REACHABILITY,
         "The host could not be audited",
         "Ansible could not connect to the host, or the audit payload failed there.",
         "The connection or the payload's exit status.",
         ["Check connectivity: ansible {host} -m ping", "Re-run the audit for this host: --limit {host}"],
         messages={"": "{host}: {why}"}),
])
CODES.append(Code(
    "host_no_python", ERROR, "R-DIAG-3", REACHABILITY,
    "The host has no Python for the audit",
    "Ansible reached the host, but the interpreter the audit runs ({python}) is missing there, so nothing "
    "could be checked. Not the same as an unreachable host: the connection works.",
    "After the audit payload fails, `command -v` for the interpreter, python3 and python, run over the raw "
    "connection (no Python needed).",
    ["Install Python without Python: ansible {host} -m ansible.builtin.raw -a 'apt-get install -y python3' "
     "(dnf install -y python3; pacman -S --noconfirm python)",
     "Or point ansible_python_interpreter at an existing interpreter, then re-run the audit: --limit {host}"],
    messages={"": "{host}: {msg}"}))

# ---- the continuous proof (monitor.py on the host, monitor_state.py in the audit) ----
_MONITOR_RERUN = ("Reinstall the monitor with the role: ansible-playbook playbooks/site.yml -l {host} "
                  "-e metnos_sandbox_monitor=true")
CODES.extend([
    Code("monitor_proof_stale", ERROR, "R-DIAG-3", PROBE,
         "The monitor's last proof is too old",
         "The audit collected the monitor's stored result instead of running the checks, and that proof is older "
         "than the limit: the sandbox may have broken since, so it is not a pass.",
         "The stored result's proof time (metnos_audit collect_monitor) against monitor_max_age.",
         ["See why the timer did not run: systemctl status metnos-sandbox-monitor.timer metnos-sandbox-monitor.service",
          "journalctl -u metnos-sandbox-monitor.service -n 50",
          "Prove it now: systemctl start metnos-sandbox-monitor.service",
          "Or audit the host live: ansible-playbook playbooks/audit.yml -l {host} "
          "(without metnos_audit_collect_monitor)"],
         messages={"": "The monitor's last proof ({finished}) is {age} s old, more than the limit of {max_age} s "
                       "({result}): not a pass."}),
    Code("monitor_result_unusable", WARNING, "R-DIAG-3", MONITOR,
         "The monitor's stored result cannot be used",
         "The monitor's last result on the host is not what the monitor writes (unreadable, too large, not JSON, "
         "another schema, a proof time in the future, a diagnostic outside the registry) or is not root's alone; "
         "the audit does not trust it and ran the checks itself.",
         "Reading the stored result bounded and exactly (monitor_state.check_record).",
         ["Let the monitor write it again: systemctl start metnos-sandbox-monitor.service",
          "Check who can write it: ls -ld /var/lib/metnos-sandbox-monitor /var/lib/metnos-sandbox-monitor/last.json"],
         messages={"": "The monitor's stored result {path} cannot be used: {why}."}),
    Code("monitor_config_invalid", ERROR, "R-DIAG-3", MONITOR,
         "The monitor's configuration is invalid",
         "The monitor's configuration file is missing, too large, not JSON, of another schema, or has an unknown "
         "key or a value of the wrong kind; the monitor ran no check and the sandbox counts as not proven.",
         "Reading the configuration bounded and exactly (monitor.read_config).",
         ["Write it again with the role: ansible-playbook playbooks/site.yml -l {host} -e metnos_sandbox_monitor=true",
          "Read it: python3 -m json.tool {path}"],
         messages={"": "The monitor's configuration {path} is refused: {why}."}),
    Code("monitor_config_unsafe", ERROR, "R-DIAG-3", MONITOR,
         "The monitor's configuration is not root's alone",
         "The configuration (or a directory above it) is not owned by root or is writable by group or others: "
         "whoever can change it decides what the monitor, running as root, checks and reports. The monitor did not "
         "use it.",
         "stat() of the file and of every directory above it.",
         ["chown root:root {path}", "chmod 0644 {path}", "chmod go-w \"$(dirname {path})\""],
         messages={"": "The monitor's configuration {path} is not trusted: {why}."}),
    Code("monitor_core_writable", ERROR, "R-DIAG-3", MONITOR,
         "The monitor's installed core can be changed by others",
         "A file or folder of the core the monitor runs is not owned by root or is writable by group or others "
         "(the service user among them): the continuous proof is only as trustworthy as the code that makes it.",
         "stat() of the installed folder, every file in it and every directory above it.",
         ["chown -R root:root {folder}", "chmod -R go-w {folder}", _MONITOR_RERUN],
         messages={"": "The monitor's core at {folder} can be changed by others: {problems}."}),
    Code("monitor_core_modified", ERROR, "R-DIAG-3", MONITOR,
         "The monitor's installed core is not its release",
         "The digest of the core's sources in the installed folder is not the one its versioned folder name says "
         "(a file was changed, added or removed after the install), so nobody can tell which code made the proof.",
         "sha256 of the installed sources (monitor_state.release) against the folder's name "
         "(<toolkit version>+<digest>).",
         ["rm -rf {folder}", _MONITOR_RERUN],
         messages={"": "The monitor's core at {folder} has digest {digest}; its folder names {expected}."}),
    Code("monitor_run_failed", ERROR, "R-DIAG-3", MONITOR,
         "The monitor's run failed",
         "The checks raised an unexpected error (a defect of the toolkit, not a verdict about the sandbox); the "
         "sandbox counts as not proven.",
         "Any exception of the audit inside the monitor's run.",
         ["Read the run's journal entry: journalctl -u metnos-sandbox-monitor.service -n 20 -o verbose",
          "Report the message with the toolkit version (metnos_sandbox_info{toolkit_version=...})."],
         messages={"": "The monitor's run failed: {why}."}),
    Code("monitor_output_failed", ERROR, "R-DIAG-3", MONITOR,
         "The monitor could not write its result",
         "The textfile for node_exporter or the stored result could not be written (the directory is missing or "
         "not writable in the monitor's unit), so monitoring does not see this run.",
         "The atomic write of each output (a temporary file in the same folder, then a rename).",
         ["mkdir -p \"$(dirname {path})\"",
          "Check the unit's writable paths: systemctl show metnos-sandbox-monitor.service -p ReadWritePaths"],
         messages={"": "The monitor could not write {path}: {why}."}),
])

# ---- the audit's transport and the report's input (issue 22): each refusal its own code
CODES.extend([
    Code("audit_result_unframed", ERROR, "R-DIAG-3", REACHABILITY,
         "The host's answer holds no audit result",
         "The audit ran on the host, but its output holds no single complete result framed with this run's "
         "one-time token: the payload was killed or crashed before it answered, or its output was cut. Text "
         "around the frame (a banner, a MOTD, a wrapper's stray brace) is never taken for the result.",
         "The controller looks for exactly one frame named by the random token it sent with the payload, of the "
         "length the frame states, holding a JSON object.",
         ["Run the audit for this host alone with -vvv and read the payload's stderr: --limit {host} -vvv",
          "Check that the interpreter runs: ansible {host} -m ansible.builtin.raw -a '{python} -V'"],
         messages={"": "{host}: no framed audit result in the host's output (rc={rc}): {detail}"}),
    Code("audit_transport_unsupported", ERROR, "R-DIAG-3", REACHABILITY,
         "The audit cannot travel over this connection",
         "The payload travels on the command's standard input (connections that pipeline: local, ssh) or as "
         "the arguments of one shell-less command (podman, docker). This connection does neither for it (for "
         "instance become on a connection without pipelining, which folds the arguments into one), and the "
         "audit never writes a temporary file on the host instead.",
         "The connection's has_pipelining, the task's become, the size of the message.",
         ["Enable pipelining for the host (ansible.cfg [connection] pipelining = True) or audit without become "
          "(the audit reads as the connection's user; podman and docker connect as root)"],
         messages={"": "{host}: {why}"}),
    Code("host_not_audited", ERROR, "R-DIAG-3", REACHABILITY,
         "The host has no audit result in this run",
         "The report was asked about a host for which metnos_audit kept no result in this ansible-playbook run "
         "(an earlier task failed for it, the play ended first, or the audit was never run for it). Not an "
         "unreachable host: nothing is known about it.",
         "No result kept for the host in the run's controller-side temp dir.",
         ["Run the audit and the report in the same play (playbooks/audit.yml): ansible-playbook "
          "playbooks/audit.yml --limit {host}"],
         messages={"": "{host}: no metnos_audit result for this host in this run"}),
    Code("audit_report_no_results", ERROR, "R-DIAG-3", REACHABILITY,
         "The report has no audit results to read",
         "metnos_audit_report reads the results metnos_audit kept in the same ansible-playbook run; none of the "
         "hosts it was asked about has one (the report ran in another run, or before the audit). It refuses "
         "instead of reporting every host unreachable.",
         "No result kept for any of the hosts in the run's controller-side temp dir.",
         ["Run the audit and the report in one run: ansible-playbook playbooks/audit.yml (or pass the registered "
          "results: metnos_audit_report: results: ...)"],
         messages={"": "metnos_audit_report: none of the {count} host(s) asked about ({hosts}) has a metnos_audit "
                       "result in this run: the report must run in the same ansible-playbook run as the audit"}),
    Code("audit_merge_input_invalid", ERROR, "R-DIAG-3", MODULE,
         "A report to merge is not an audit report",
         "The merge (the playbook metnos.sandbox.merge_reports, or scripts/merge-audit-reports.py in a checkout) "
         "reads JSON reports of schema metnos-sandbox-audit-report/1, as playbooks/audit.yml writes them; a file "
         "that cannot be read, is too large, is not JSON, has another schema or a host record without host, "
         "verdict and diagnostics is refused, and nothing is merged.",
         "Each file read (bounded), parsed as JSON, its schema and every host record checked before any merge.",
         ["Give only the .json files the audit wrote (metnos-audit-<stamp>.json), not the .md, .junit.xml or "
          ".html next to them: ansible-playbook metnos.sandbox.merge_reports -e merge_dest=<fleet report dir> "
          "-e merge_glob='<collected dir>/*.json'"],
         messages={"": "{reason}"}),
])
