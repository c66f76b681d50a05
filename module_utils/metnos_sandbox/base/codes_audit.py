# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnostic codes of the fleet audit (unreachable hosts, drift) and the continuous proof (the monitor).

The codes of the audit/ package's checks, kept on the ground floor (base/ imports nothing above it): data
only, importing base/registry.py alone; base/diagnostics.py gathers every codes_*.py's CODES into the one
registry (docs/diagnostics.md is generated from it). Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import List

from .registry import (
    BWRAP_BINARY,
    ERROR,
    INFO,
    MODULE,
    MONITOR,
    NOT_ROOTS_FIXES,
    NOT_ROOTS_HINT,
    PROBE,
    PROFILES,
    REACHABILITY,
    SANDBOX_ACTIVE,
    WARNING,
    Code,
    not_roots_messages,
)

CODES: List[Code] = []
CODES.extend([
    # ---- fleet audit ----
    # Every state of a manifest the audit renders is a finding with its own code (profile_states.py).
    Code(code="profile_drift", severity=ERROR, rule="R-SCOPE-3", section=PROFILES,
         title="A rendered profile differs from its manifest",
         cause="The profile on disk is not what the manifest renders today on this host (the manifest, the "
               "host's paths or the toolkit changed).",
         detection="Rendering each manifest on the host and comparing the mounts and options of "
                   "<profile_dir>/<executor>.args with the render's.",
         remediation=["ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles"],
         messages={"": "{executor}: the profile on disk ({path}) differs from what the manifest renders today: "
                       "{changes}."},
         hint=("Render the profiles again (make run in the checkout), or find why the manifest, the "
               "host's paths or the toolkit changed.")),
    Code(code="cross_executor_channel", severity=WARNING, rule="R-SCOPE-3", section=PROFILES,
         title="A folder one executor writes and another reads or writes",
         cause="One executor's read-write grant is at, below or above a folder another executor is granted: the first "
               "can leave files for the second, or listen on a socket there that the second connects to (made after "
               "rendering, so no render-time channel search saw it) - a channel between two sandboxes.",
         detection="Every manifest rendered on the host; each pair of wrapped profiles whose granted binds meet (the "
                   "writer's read-write source against the other's source, written paths resolved as bound).",
         remediation=["ls -ld {folder} {reach}"],
         messages={"write": "{writer} writes {folder} and {other} writes {reach}: the two folders meet, a "
                            "channel between the two executors",
                   "read": "{writer} writes {folder} and {other} reads {reach}: the two folders meet, a channel "
                           "from {writer} to {other}"},
         hint="Give each executor its own folder (a subfolder each), or make the hand-over explicit and one-way "
              "(one writes, the runtime moves the files); {writer} and {other} should not share {folder}."),
    Code(code="profile_missing", severity=WARNING, rule="R-SCOPE-3", section=PROFILES,
         title="No rendered profile for a manifest",
         cause="The manifest renders, but no profile was rendered for it on this host: the runtime has nothing to run "
               "the executor with.",
         detection="Looking for <profile_dir>/<executor>.args of each manifest that renders.",
         remediation=["ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles"],
         messages={"": "{executor}: no rendered profile at {path}."},
         hint=("Render the profiles (make run in the checkout).")),
    Code(code="profile_name_duplicate", severity=ERROR, rule="R-SCOPE-1", section=PROFILES,
         title="Two manifests render to one profile",
         cause="Two manifests of this host have the same executor name, so both render to one profile file: one would "
               "be written over the other, and the runtime would run one executor with the other's sandbox.",
         detection="Rendering each manifest on the host and counting the executor names (each is "
                   "<profile_dir>/<name>.args).",
         remediation=["ansible-inventory --host '<host>' --yaml"],
         messages={"": "{executor}: {first} and {second} both render to {path}: one profile file for two "
                       "manifests.",
                   "withheld": "{executor}: {first} and {second} both render to {path}: neither is written (nothing "
                               "was written for {executor} by this run; a profile already there is left as it "
                               "was)."},
         hint=("Give each manifest its own name (metnos_sandbox_manifests lists them in order; the inventory "
               "command shows the list).")),
    Code(code="profile_refused", severity=ERROR, rule="R-SCOPE-1", section=PROFILES,
         title="A manifest is refused",
         cause="The manifest cannot be rendered (not valid YAML/JSON, an unknown or forbidden capability, ...): the "
               "runtime refuses this executor.",
         detection="Loading and rendering each manifest on the host as sandbox_profile does.",
         remediation=["ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles"],
         messages={"": "{executor}: the manifest is refused ({refusal}): {reason}"},
         hint=("Fix the manifest as the refusal's own code says (details.refusal; docs/diagnostics.md), then render "
               "the profiles again.")),
    Code(code="profile_context_error", severity=ERROR, rule="R-SCOPE-1", section=PROFILES,
         title="The host context of the profiles is invalid",
         cause="The host context the profiles are rendered with (metnos_sandbox_host, metnos_sandbox_writable_roots) "
               "is refused: no manifest of this host can be rendered or compared.",
         detection="Building the host context before rendering the manifests.",
         remediation=["ansible-inventory --host '<host>' --yaml"],
         messages={"": "no manifest can be rendered on this host: {reason}"},
         hint=("Fix the host context named in the message (metnos_sandbox_host, metnos_sandbox_writable_roots) in "
               "the inventory: the command shows the host's variables.")),
    Code(code="profile_in_sync", severity=INFO, rule="R-SCOPE-3", section=PROFILES,
         title="A rendered profile matches its manifest",
         cause="The profile on disk is what the manifest renders today.",
         detection="Rendering each manifest on the host and comparing with <profile_dir>/<executor>.args.",
         remediation=["cat '{path}'"],
         messages={"": "{executor}: the profile at {path} is what the manifest renders today."},
         hint=("Nothing to do: the command shows the profile.")),
    Code(code="bwrap_package_drift", severity=WARNING, rule="R-DIAG-2", section=BWRAP_BINARY,
         title="bwrap package revision differs from the fleet majority",
         cause="This host's bubblewrap package revision is not the one most of the fleet runs.",
         detection="Comparing the package revision of every audited host.",
         remediation=["ansible-playbook metnos.sandbox.site --limit '{host}' --tags bwrap_host_install "
                      "-e 'bwrap_host_version={majority}'"],
         messages={"": "{host} runs bubblewrap {revision}; most of the fleet ({majority_hosts} of {hosts} hosts) "
                       "runs {majority}."},
         hint=("Align this host's bubblewrap with the fleet's majority revision {majority} (the "
               "bwrap_host role pins it with the host's package manager).")),
    # ---- containment levels (R-SCOPE-4; audit/containment.py): a host not proven isolated is never counted so
    Code(code="containment_none", severity=ERROR, rule="R-SCOPE-4", section=SANDBOX_ACTIVE,
         title="Executors run here without isolation (containment level none)",
         cause="Where this host runs executors there is no containment: macOS has no native module, an unknown "
               "platform has none this toolkit knows, and a Linux host without a usable bwrap has no bubblewrap. Only "
               "the deadline on the process group holds; the host is never counted as isolated.",
         detection="The platform from the host's facts (ansible_system, ansible_os_family) or its kernel's name, and "
                   "on Linux the runtime's status() and the probe.",
         remediation=["ansible '{host}' -m ansible.builtin.setup -a 'filter=ansible_system,ansible_os_family'",
                      "ansible-playbook metnos.sandbox.audit --limit '{host}'"],
         messages={"": "{host} ({placement}, {platform}) runs executors at level none: {reason}; {executors}."},
         hint=("Move the executors that need isolation to a server or a Linux device with bubblewrap (the "
               "bwrap_host role installs it), or accept the level with a waiver that says why.")),
    Code(code="containment_declared", severity=WARNING, rule="R-SCOPE-4", section=SANDBOX_ACTIVE,
         title="The containment level is declared, not proven",
         cause="A Windows device contains executors with an AppContainer inside a Job Object (or the Job Object "
               "alone): the level comes from the host's facts and AppContainer's prerequisite, and no Windows check "
               "runs here to prove it, so the host is not counted as isolated.",
         detection="The platform and the Windows version from the host's facts (ansible_system, ansible_os_family, "
                   "ansible_distribution_version).",
         remediation=["ansible '{host}' -m ansible.builtin.setup -a 'filter=ansible_distribution_version'"],
         messages={"": "{host} ({placement}, {platform}) runs executors at level {level}, declared and not "
                       "proven: {reason}; {executors}."},
         hint=("The client's own result says the level it really used (its sandbox field and "
               "sandbox_downgrade_reason); a Windows check that proves it is described in docs/audit-report.md.")),
    Code(code="containment_not_proven", severity=INFO, rule="R-SCOPE-4", section=SANDBOX_ACTIVE,
         title="bubblewrap is configured but its isolation was not proven",
         cause="The audit ran without the probe (metnos_audit_probe=false): bubblewrap is usable here, but no real "
               "wrapped invocation proved the isolation, so the host is not counted as isolated.",
         detection="Whether the probe ran on the host.",
         remediation=["ansible-playbook metnos.sandbox.audit --limit '{host}' -e metnos_audit_probe=true"],
         messages={"": "{host} ({placement}, {platform}) is at level {level}, not proven: {reason}."},
         hint=("Audit the host with the probe to prove its isolation.")),
    Code(code="host_unreachable", severity=ERROR, rule="R-DIAG-3", section=REACHABILITY,
         title="The host could not be audited",
         cause="Ansible could not connect to the host, or the audit payload failed there.",
         detection="The connection or the payload's exit status.",
         remediation=["ansible '{host}' -m ansible.builtin.ping",
                      "ansible-playbook metnos.sandbox.audit --limit '{host}'"],
         messages={"": "{host}: {why}"},
         hint=("Check the connection to the host, then audit it again.")),
])
CODES.append(Code(
    code="host_no_python", severity=ERROR, rule="R-DIAG-3", section=REACHABILITY,
    title="The host has no Python for the audit",
    cause="Ansible reached the host, but the interpreter the audit runs ({python}) is missing there, so nothing "
          "could be checked. Not the same as an unreachable host: the connection works.",
    detection="After the audit payload fails, `command -v` for the interpreter, python3 and python, run over the raw "
              "connection (no Python needed).",
    remediation=["ansible '{host}' -m ansible.builtin.raw -a 'apt-get install -y python3'",
                 "ansible-playbook metnos.sandbox.audit --limit '{host}'"],
    messages={"": "{host}: {msg}"},
    hint=("Install Python over the raw connection (on dnf hosts: dnf install -y python3; on pacman hosts: pacman -S "
          "--noconfirm python), or point ansible_python_interpreter at an interpreter the host has; then audit it "
          "again.")))

# ---- the continuous proof (proof.py on the host, monitor_state.py in the audit) ----
_MONITOR_RERUN = "ansible-playbook metnos.sandbox.site --limit '{host}' -e metnos_sandbox_monitor=true"
CODES.extend([
    Code(code="monitor_proof_stale", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="The monitor's last proof is too old",
         cause="The audit collected the monitor's stored result instead of running the checks, and that proof is older "
               "than the limit: the sandbox may have broken since, so it is not a pass.",
         detection="The stored result's proof time (metnos_audit collect_monitor) against monitor_max_age.",
         remediation=["systemctl status metnos-sandbox-monitor.timer metnos-sandbox-monitor.service",
                      "journalctl -u metnos-sandbox-monitor.service -n 50",
                      "systemctl start metnos-sandbox-monitor.service"],
         messages={"": "The monitor's last proof ({finished}) is {age} s old, more than the limit of {max_age} s "
                       "({result}): not a pass."},
         hint=("See why the timer did not run, then prove it now; or audit the host live "
               "(ansible-playbook metnos.sandbox.audit --limit {host}, without "
               "metnos_audit_collect_monitor).")),
    Code(code="monitor_systemd_not_running", severity=WARNING, rule="R-DIAG-3", section=MONITOR,
         title="The monitor is enabled but systemd is not running on the host",
         cause="metnos_sandbox_monitor is true, but the host's init is not systemd (a container, another init): the "
               "timer that re-proves the sandbox is written and can never run, so no continuous proof is kept.",
         detection="Whether /run/systemd/system exists on the host (systemd's own test, sd_booted).",
         remediation=["ps -p 1 -o comm=", "ls -ld /run/systemd/system"],
         messages={"": "metnos_sandbox_monitor is true but systemd is not running on this host: {timer} was "
                       "written, not started; no continuous proof is kept."},
         hint="Run the monitor on a host booted with systemd, or set metnos_sandbox_monitor: false for this host; "
              "the audit (playbooks/audit.yml) proves the sandbox without it."),
    Code(code="monitor_result_unusable", severity=WARNING, rule="R-DIAG-3", section=MONITOR,
         title="The monitor's stored result cannot be used",
         cause="The monitor's last result on the host is not what the monitor writes (unreadable, too large, not JSON, "
               "another schema, a proof time in the future, a diagnostic outside the registry) or is not root's alone; "
               "the audit does not trust it and ran the checks itself.",
         detection="Reading the stored result bounded and exactly (monitor_state.check_record).",
         remediation=["systemctl start metnos-sandbox-monitor.service",
                      "ls -ld /var/lib/metnos-sandbox-monitor /var/lib/metnos-sandbox-monitor/last.json"],
         messages={"": "The monitor's stored result {path} cannot be used: {why}."},
         hint="Let the monitor write it again (the first command), and check who can write it (the second)."),
    Code(code="monitor_config_invalid", severity=ERROR, rule="R-DIAG-3", section=MONITOR,
         title="The monitor's configuration is invalid",
         cause="The monitor's configuration file is missing, too large, not JSON, of another schema, or has an unknown "
               "key or a value of the wrong kind; the monitor ran no check and the sandbox counts as not proven.",
         detection="Reading the configuration bounded and exactly (proof.read_config).",
         remediation=[_MONITOR_RERUN, "python3 -m json.tool {path}"],
         messages={"": "The monitor's configuration {path} is refused: {why}."},
         hint="Write it again with the role (the first command), or read it (the second)."),
    Code(code="monitor_config_unsafe", severity=ERROR, rule="R-DIAG-3", section=MONITOR,
         title="The monitor's configuration is not root's alone",
         cause="The configuration (or a directory above it) is not owned by root or is writable by group or others: "
               "whoever can change it decides what the monitor, running as root, checks and reports. The monitor did "
               "not use it.",
         detection="stat() of the file and of every directory above it.",
         remediation=["chown root:root {path}", "chmod 0644 {path}", "chmod go-w \"$(dirname {path})\""],
         messages={"": "The monitor's configuration {path} is not trusted: {why}."}),
    Code(code="monitor_core_writable", severity=ERROR, rule="R-DIAG-3", section=MONITOR,
         title="The monitor's installed core can be changed by others",
         cause="A file or folder of the core the monitor runs is not owned by root or is writable by group or others "
               "(the service user among them): the continuous proof is only as trustworthy as the code that makes it.",
         detection="stat() of the installed folder, every file in it and every directory above it.",
         remediation=["chown -R root:root {folder}", "chmod -R go-w {folder}", _MONITOR_RERUN],
         messages={"": "The monitor's core at {folder} can be changed by others: {problems}."},
         hint=("Make the monitor's files root's and not group- or world-writable, then reinstall the monitor with "
               "the role.")),
    Code(code="monitor_core_modified", severity=ERROR, rule="R-DIAG-3", section=MONITOR,
         title="The monitor's installed core is not its release",
         cause="The digest of the core's sources in the installed folder is not the one its versioned folder name says "
               "(a file was changed, added or removed after the install), so nobody can tell which code made the "
               "proof.",
         detection="sha256 of the installed sources (monitor_state.release) against the folder's name "
                   "(<toolkit version>+<digest>).",
         remediation=["rm -rf {folder}", _MONITOR_RERUN],
         messages={"": "The monitor's core at {folder} has digest {digest}; its folder names {expected}."},
         hint="Remove the modified copy and reinstall the monitor with the role."),
    Code(code="monitor_run_failed", severity=ERROR, rule="R-DIAG-3", section=MONITOR,
         title="The monitor's run failed",
         cause="The checks raised an unexpected error (a defect of the toolkit, not a verdict about the sandbox); the "
               "sandbox counts as not proven.",
         detection="Any exception of the audit inside the monitor's run.",
         remediation=["journalctl -u metnos-sandbox-monitor.service -n 20 -o verbose"],
         messages={"": "The monitor's run failed: {why}."},
         hint=("Read the run's journal entry; report the message with the toolkit version "
               "(metnos_sandbox_info{toolkit_version=...}).")),
    Code(code="monitor_output_failed", severity=ERROR, rule="R-DIAG-3", section=MONITOR,
         title="The monitor could not write its result",
         cause="The textfile for node_exporter or the stored result could not be written (the directory is missing or "
               "not writable in the monitor's unit), so monitoring does not see this run.",
         detection="The atomic write of each output (a temporary file in the same folder, then a rename).",
         remediation=["mkdir -p \"$(dirname {path})\"",
                      "systemctl show metnos-sandbox-monitor.service -p ReadWritePaths"],
         messages={"": "The monitor could not write {path}: {why}."},
         hint="Create the folder, and check the unit's writable paths (the second command)."),
])

# ---- the audit's transport and the report's input (issue 22): each refusal its own code
CODES.extend([
    Code(code="audit_result_unframed", severity=ERROR, rule="R-DIAG-3", section=REACHABILITY,
         title="The host's answer holds no audit result",
         cause="The audit ran on the host, but its output holds no single complete result framed with this run's "
               "one-time token: the payload was killed or crashed before it answered, or its output was cut. Text "
               "around the frame (a banner, a MOTD, a wrapper's stray brace) is never taken for the result.",
         detection="The controller looks for exactly one frame named by the random token it sent with the payload, of "
                   "the length the frame states, holding a JSON object.",
         remediation=["ansible-playbook metnos.sandbox.audit --limit '{host}' -vvv",
                      "ansible '{host}' -m ansible.builtin.raw -a '{python} -V'"],
         messages={"": "{host}: no framed audit result in the host's output (rc={rc}): {detail}"},
         hint=("Run the audit for this host alone with -vvv and read the payload's stderr; check that the "
               "interpreter runs (the second command).")),
    Code(code="audit_transport_unsupported", severity=ERROR, rule="R-DIAG-3", section=REACHABILITY,
         title="The audit cannot travel over this connection",
         cause="The payload travels on the command's standard input (connections that pipeline: local, ssh) or as "
               "the arguments of one shell-less command (podman, docker). This connection does neither for it (for "
               "instance become on a connection without pipelining, which folds the arguments into one), and the "
               "audit never writes a temporary file on the host instead.",
         detection="The connection's has_pipelining, the task's become, the size of the message.",
         remediation=["ansible-config dump --only-changed"],
         messages={"": "{host}: {why}"},
         hint=("Enable pipelining for the host (ansible.cfg [connection] pipelining = True, or "
               "ansible_pipelining=true) or audit without become (the audit reads as the connection's user; podman "
               "and docker connect as root); the command shows the settings in force.")),
    Code(code="host_not_audited", severity=ERROR, rule="R-DIAG-3", section=REACHABILITY,
         title="The host has no audit result in this run",
         cause="The report was asked about a host for which metnos_audit kept no result in this ansible-playbook run "
               "(an earlier task failed for it, the play ended first, or the audit was never run for it). Not an "
               "unreachable host: nothing is known about it.",
         detection="No result kept for the host in the run's controller-side temp dir.",
         remediation=["ansible-playbook metnos.sandbox.audit --limit '{host}'"],
         messages={"": "{host}: no metnos_audit result for this host in this run"},
         hint="Run the audit and the report in the same play (playbooks/audit.yml)."),
    Code(code="host_timeout", severity=ERROR, rule="R-DIAG-3", section=REACHABILITY,
         title="The host's audit ran past its time limit",
         cause="metnos_audit gave the host metnos_audit_host_timeout seconds (default 300) and had no result by then: "
               "the interpreter, the payload or the connection hung. The payload on the host ran under timeout(1) and "
               "was killed with its whole process group; the other hosts' results are reported as usual.",
         detection="No framed result within the deadline (the command killed at it, or the controller stopped "
                   "waiting).",
         remediation=[
             "ansible '{host}' -m ansible.builtin.raw -a 'uptime; ps -eo pid,etimes,args --sort=-etimes | head -20'"],
         messages={"": "{host}: no audit result within {timeout} s (gave up after {elapsed} s); the payload was "
                       "killed"},
         hint=("See what hangs on the host (the command lists its oldest processes), or raise the limit "
               "(-e metnos_audit_host_timeout=SECONDS) for a host that is only slow.")),
    Code(code="host_interrupted", severity=ERROR, rule="R-DIAG-3", section=REACHABILITY,
         title="The run was interrupted before the host's audit finished",
         cause="The user interrupted ansible-playbook (Ctrl-C, SIGINT) while the host's audit was running or before it "
               "started. The hosts that had finished are reported as usual; this host has no result, and the run's "
               "gate fails (exit status 99). Its payload on the host ends at the deadline timeout(1) was given "
               "(metnos_audit_host_timeout) at the latest.",
         detection="No result kept for the host when the run was interrupted (strategy metnos.sandbox.audit_linear).",
         remediation=["ansible-playbook -i <inventory> metnos.sandbox.audit --limit '{host}'"],
         messages={"": "{host}: the run was interrupted before its audit finished"},
         hint="Audit the host again (the command); nothing is known about it from this run."),
    Code(code="audit_report_no_results", severity=ERROR, rule="R-DIAG-3", section=REACHABILITY,
         title="The report has no audit results to read",
         cause="metnos_audit_report reads the results metnos_audit kept in the same ansible-playbook run; none of the "
               "hosts it was asked about has one (the report ran in another run, or before the audit). It refuses "
               "instead of reporting every host unreachable.",
         detection="No result kept for any of the hosts in the run's controller-side temp dir.",
         remediation=["ansible-playbook metnos.sandbox.audit"],
         messages={"": "metnos_audit_report: none of the {count} host(s) asked about ({hosts}) has a metnos_audit "
                       "result in this run: the report must run in the same ansible-playbook run as the audit"},
         hint=("Run the audit and the report in one ansible-playbook run (or pass the registered "
               "results to metnos_audit_report's results option).")),
])

# ---- waivers (report/waivers.py) and the baseline (report/baseline.py), read on the controller by the report ----
_WAIVER_FILE = "the waiver file ({path})"
_WAIVER_DOC = "${EDITOR:-vi} {path}"      # the fields: docs/audit-report.md, "Waivers"
CODES.extend([
    Code(code="audit_waiver_file_unreadable", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="The waiver file cannot be read",
         cause="The file named by metnos_audit_waivers is missing, not a regular file, too large, not UTF-8 or not "
               "YAML. The reports are still written, without any waiver and marked (gate.inputs_refused, this finding "
               "first), and the gate fails: findings someone meant to waive were counted.",
         detection="Reading the file with the manifests' bounded reader (size first, UTF-8, a YAML subset).",
         remediation=["ls -l {path}", "python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' {path}"],
         messages={"": _WAIVER_FILE + ": {problem}"}),
    Code(code="audit_waiver_file_shape", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="The waiver file is not a list of waivers",
         cause="A waiver file is a YAML list (at most 1000 entries), each entry a mapping of the waiver's fields.",
         detection="The file's top-level value and each entry's type.",
         remediation=[_WAIVER_DOC],
         messages={"": _WAIVER_FILE + ": the top level is {found}, not a list of waivers.",
                   "too_many": _WAIVER_FILE + ": {count} waivers, more than {limit}.",
                   "entry": _WAIVER_FILE + ": waiver #{index} is {found}, not a mapping of fields."}),
    Code(code="audit_waiver_field_unknown", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="A waiver has a field the report does not know",
         cause="A misspelt field (expiry for expires, host_pattern for host) would silently change what a waiver "
               "means: every field is known or the file is refused.",
         detection="Each waiver's keys against code, host, executor, justification, approved_by, expires.",
         remediation=[_WAIVER_DOC],
         messages={"": _WAIVER_FILE + ": waiver #{index} has the unknown field {field} (known: {known}).",
                   "near": _WAIVER_FILE + ": waiver #{index} has the unknown field {field}: did you mean {meant}? "
                                          "(known: {known})."}),
    Code(code="audit_waiver_field_missing", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="A waiver lacks a required field",
         cause="Every waiver names the code, the host pattern, why (justification), who approved it and when it "
               "expires.",
         detection="Each waiver's keys against the required ones.",
         remediation=[_WAIVER_DOC],
         messages={"": _WAIVER_FILE + ": waiver #{index} has no {field}."}),
    Code(code="audit_waiver_field_invalid", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="A waiver's field is not a usable text",
         cause="A waiver's fields are non-empty one-line texts of bounded length (the justification and the approver "
               "are shown in every report).",
         detection="Each field's type, length and characters.",
         remediation=[_WAIVER_DOC],
         messages={"": _WAIVER_FILE + (": waiver #{index}, field {field}: {value} is not a non-empty one-line "
                                       "text of at most {limit} characters.")}),
    Code(code="audit_waiver_code_unknown", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="A waiver names a code that cannot be waived",
         cause="The code is not a registered diagnostic code (docs/diagnostics.md), or it is one of the waivers' own "
               "codes (a waiver cannot hide that another waiver expired or is unused).",
         detection="The code against the registry.",
         remediation=["grep -n '^## <code>$' docs/diagnostics.md", _WAIVER_DOC],
         messages={"": _WAIVER_FILE + ": waiver #{index}: {value} is not a registered diagnostic code.",
                   "near": _WAIVER_FILE + ": waiver #{index}: {value} is not a registered diagnostic code: did you "
                                          "mean {meant}?",
                   "not_waivable": _WAIVER_FILE + ": waiver #{index}: {value} cannot be waived."}),
    Code(code="audit_waiver_host_invalid", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="A waiver's host pattern is not a host pattern",
         cause="The host pattern is an inventory name or a shell-style pattern (letters, digits, . _ - : and the "
               "wildcards * ? [ ]), at most 253 characters; anything else is refused rather than guessed at.",
         detection="The pattern's characters and length.",
         remediation=[_WAIVER_DOC],
         messages={"": _WAIVER_FILE + ": waiver #{index}: host {value} is not an inventory name or pattern."}),
    Code(code="audit_waiver_expires_invalid", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="A waiver's expiry is not a date within a year",
         cause="expires is a calendar date written YYYY-MM-DD, at most 366 days after the report's day: a waiver "
               "without a near end is a finding forgotten.",
         detection="The date's form, its validity and its distance from today (UTC).",
         remediation=[_WAIVER_DOC],
         messages={"": _WAIVER_FILE + ": waiver #{index}: expires {value} is not a date written YYYY-MM-DD.",
                   "too_far": _WAIVER_FILE + ": waiver #{index}: expires {value} is more than {limit} days away."}),
    Code(code="audit_waiver_duplicate", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="Two waivers waive the same thing",
         cause="Two entries have the same code, host pattern and executor: which justification and expiry hold would "
               "depend on their order.",
         detection="Each waiver's (code, host, executor) against the ones before it.",
         remediation=[_WAIVER_DOC],
         messages={"": _WAIVER_FILE + ": waiver #{index} repeats waiver #{first} ({value})."}),
    Code(code="audit_waiver_expired", severity=WARNING, rule="R-DIAG-3", section=MODULE,
         title="A waiver has expired",
         cause="The waiver's expiry date has passed: the findings it waived count again, and the entry should be "
               "renewed (with a new approval) or removed.",
         detection="The expiry date against the report's day (UTC).",
         remediation=[_WAIVER_DOC],
         messages={"": "waiver #{index} ({waived_code} on {host}{executor_text}) expired on {expires} "
                       "({days_ago} day(s) ago); its findings count again."}),
    Code(code="audit_waiver_unused", severity=WARNING, rule="R-DIAG-3", section=MODULE,
         title="A waiver matches no finding",
         cause="No audited host has the finding the waiver names: the problem was fixed (remove the waiver) or the "
               "pattern is wrong (it waives nothing).",
         detection="Each waiver against every audited host's findings.",
         remediation=[_WAIVER_DOC],
         messages={"": "waiver #{index} ({waived_code} on {host}{executor_text}) matched no finding of the "
                       "{hosts} audited host(s)."}),
    Code(code="audit_baseline_unreadable", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="The baseline report cannot be read",
         cause="The file named by metnos_audit_baseline is missing, too large, not JSON, or not an audit report of "
               "this schema; without it no finding can be called new or resolved: the reports are still written, "
               "without the comparison and marked (gate.inputs_refused, this finding first), and the gate fails.",
         detection="Reading the file (size first) and checking its schema and host records.",
         remediation=[
             "ls -lL {path}",
             "python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[\"schema\"])' {path}"],
         messages={"": "the baseline ({path}): {problem}"}),
    Code(code="audit_merge_input_invalid", severity=ERROR, rule="R-DIAG-3", section=MODULE,
         title="A report to merge is not an audit report",
         cause="The merge (the playbook metnos.sandbox.merge_reports, or scripts/merge-audit-reports.py in a checkout) "
               "reads JSON reports of schema metnos-sandbox-audit-report/2 (or /1, migrated), as playbooks/audit.yml "
               "writes them; a file that cannot be read, is too large, is not JSON, has another schema or a host "
               "record without host, verdict and diagnostics is refused, and nothing is merged.",
         detection="Each file read (bounded), parsed as JSON, its schema and every host record checked before any "
                   "merge.",
         remediation=["ansible-playbook -i localhost, metnos.sandbox.merge_reports -e merge_dest='<fleet report dir>' "
                      "-e merge_glob='<collected dir>/*.json'"],
         messages={"": "{reason}"},
         hint=("Give only the .json files the audit wrote (metnos-audit-<stamp>.json), not the .md, .junit.xml or "
               ".html next to them.")),
    # ---- root runs only what root owns (issue 49; base/owners.py) ----
    Code(code="monitor_python_not_roots", severity=ERROR, rule="R-DIAG-3", section=MONITOR,
         title="The monitor's interpreter is not root's",
         cause="The interpreter the monitor's unit runs as root (metnos_sandbox_monitor_python, its ExecStart=) can be "
               "changed by someone other than root: a folder on the way, a link, the file or its own interpreter. "
               "Whoever that is runs their code as root at the monitor's next start.",
         detection="lstat() of every component from /, each link judged in its folder, the file's #! or ELF "
                   "interpreter walked again (base/owners.py): at install (the role refuses it) and at every run (its "
                   "own interpreter).",
         remediation=list(NOT_ROOTS_FIXES["unknown"]), variants=NOT_ROOTS_FIXES,
         messages=not_roots_messages("the monitor's interpreter {program} runs as root"), hint=NOT_ROOTS_HINT),
    Code(code="launcher_installed_not_roots", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="The installed launcher or its interpreter is not root's alone",
         cause="metnos-sandbox-exec (metnos_sandbox_exec_link), which root starts to run a stored profile, or the "
               "interpreter its #! line names can be changed by someone other than root: a folder on the way, a "
               "link, the launcher, the interpreter, its loader, the pyvenv.cfg Python reads beside it or one folder "
               "up, the home that names or the standard library there. Whoever that is runs their code as root at "
               "the launcher's next start. The role judged the interpreter at install (launcher_python_not_roots); "
               "this is what the host looks like now.",
         detection="At every audit and monitor run, from the filesystem alone (nothing run): lstat() of every "
                   "component from / of the link and of the interpreter its #! line names, each link judged in its "
                   "folder, ACL entries read from the xattrs, the ELF loader, the pyvenv.cfg and its home walked "
                   "(base/owners.py problems and python_problems, audit/launcher_trust.py).",
         remediation=list(NOT_ROOTS_FIXES["unknown"]), variants=NOT_ROOTS_FIXES,
         messages=not_roots_messages("root starts {launcher} with {program}"),
         hint=NOT_ROOTS_HINT + " Or install the launcher again with metnos_sandbox_exec_python set to the host's "
                               "/usr/bin/python3."),
])
