# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnostic codes of the real wrapped probe, blame by experiment, the probe's process tree and the packaged bwrap.

The codes of the probe/ package's checks, kept on the ground floor (base/ imports nothing above it): data
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
    PROBE,
    WARNING,
    Code,
    Restriction,
    restriction,
)

CODES: List[Code] = []
CODES.extend([
    # ---- the real wrapped probe (R-DIAG-3) ----
    Code(code="probe_not_isolated", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="bwrap ran the payload without isolation",
         cause="The probe payload ran and reported, but not inside a sandbox: the process that ran it is not the "
               "child bwrap reported (no or a false --json-status-fd child-pid: a bwrap look-alike), or it shares "
               "every namespace the profile unshares with bwrap's parent context. The message lists the checks that "
               "show it.",
         detection="Outside evidence from the host's /proc: the payload process is found by its exact command line and "
                   "tied to bwrap's child-pid and to the bwrap that was started; its namespace inodes are compared "
                   "with bwrap's.",
         remediation=["ls -l {bwrap_path}", "dpkg -S {bwrap_path}", "apt-get install --reinstall bubblewrap"],
         messages={"unisolated": "{tool} ran the payload (as {user}) without isolation: {failed}.{traced}"},
         hint=("Check which binary ran (rpm -qf or pacman -Qo on other distributions), then reinstall the "
               "distribution's package and remove look-alikes from the service's PATH.")),
    # ---- a paired Linux device's profile (R-SCOPE-4; device.py) ----
    Code(code="probe_device_pid_shared", severity=ERROR, rule="R-SCOPE-4", section=PROBE,
         title="The device sandbox sees the host's processes: no PID namespace of its own",
         cause="The host is placed as a paired Linux device, whose profile runs the executor in a PID namespace of its "
               "own (--unshare-pid); the sandbox the probe ran is in the probe's PID namespace, or lists in its /proc "
               "processes that are not its own: the executor can see (and signal, as its user) the host's processes.",
         detection="The payload's /proc/PID/ns/pid read from outside against the probe's, and every pid the payload "
                   "lists in its /proc matched to a process of its own namespace (NSpid, from the host's /proc).",
         remediation=[
             'ansible-playbook -i <inventory> metnos.sandbox.site --limit <host> --tags metnos_sandbox_profiles',
             "grep -c -- --unshare-pid /etc/metnos/sandbox/profiles/<executor>.args"],
         messages={"": "{check}: {problems}"},
         hint=("Render the profiles again with metnos_sandbox_placement: device and compare the runtime's argv with "
               "the rendered one; a platform that cannot give a PID namespace declares it in "
               "metnos_sandbox_host.device_downgrades (flag --unshare-pid, with the reason).")),
    Code(code="probe_device_group_shared", severity=ERROR, rule="R-SCOPE-4", section=PROBE,
         title="The device sandbox has no process group of its own",
         cause="The host is placed as a paired Linux device, whose profile gives the executor a session, so a process "
               "group, of its own (--new-session); the sandboxed process is in the process group or session of the "
               "probe or of bwrap, or a process outside the sandbox is in its group: a deadline on the group reaches "
               "processes that are not the sandbox's, and the sandbox keeps the caller's terminal.",
         detection="The payload's pgrp and session from the host's /proc/PID/stat against the probe's and bwrap's, and "
                   "every member of its process group matched to the sandbox.",
         remediation=[
             'ansible-playbook -i <inventory> metnos.sandbox.site --limit <host> --tags metnos_sandbox_profiles',
             "grep -c -- --new-session /etc/metnos/sandbox/profiles/<executor>.args"],
         messages={"": "{check}: {problems}"},
         hint=("Render the profiles again with metnos_sandbox_placement: device; the client starts bwrap in a "
               "process group of its own (setsid) and kills that group at the deadline.")),
    Code(code="probe_device_deadline_escaped", severity=ERROR, rule="R-SCOPE-4", section=PROBE,
         title="A process of the device sandbox outlived the deadline",
         cause="The probe killed bwrap's process group at the deadline, as the device's client does; a process the "
               "payload planted (it ignores hangups and terminations and outlives its parent) or any process of the "
               "sandbox's PID namespace was still alive afterwards: without a PID namespace of its own, a process that "
               "leaves its parent is out of the deadline's reach.",
         detection="After SIGKILL to bwrap's process group and a settling time, the host's /proc searched for the "
                   "payload's marked processes and for any process of the sandbox's PID namespace (the probe then "
                   "kills them).",
         remediation=[
             'ansible-playbook -i <inventory> metnos.sandbox.site --limit <host> --tags metnos_sandbox_profiles',
             "grep -c -- --unshare-pid /etc/metnos/sandbox/profiles/<executor>.args"],
         messages={"": "{check}: {problems}"},
         hint="The device profile's --unshare-pid is what makes the deadline final: render the profiles again."),
    Code(code="probe_device_check_failed", severity=ERROR, rule="R-SCOPE-4", section=PROBE,
         title="The device sandbox does not hold the rest of the spec's Linux device row",
         cause="The host is placed as a paired Linux device; the device proof's payload did not run, or the sandbox's "
               "/tmp is the host's, or it has a network although the profile keeps none.",
         detection="The payload's report (its /tmp written and the host's marker looked for, its interfaces) against "
                   "the host's /tmp and the payload's /proc/PID/ns/net read from outside.",
         remediation=[
             'ansible-playbook -i <inventory> metnos.sandbox.site --limit <host> --tags metnos_sandbox_profiles'],
         messages={"": "{check}: {problems}"},
         hint="Compare the runtime's argv with the rendered one (metnos.sandbox.sandbox_profile) and render again."),
    Code(code="probe_check_failed", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="The sandbox does not hold what the profile promises",
         cause="A check of the probe failed or could not be proven: a namespace is shared, a read-only bind is mounted "
               "read-write, a bind (or a mount below it) is not the declared host path, something is mounted where the "
               "profile mounts nothing, a hidden path is visible, /tmp or /dev is not a fresh tmpfs (or /dev holds "
               "device nodes bwrap's --dev does not make), /proc is not a procfs showing the payload, the network is "
               "not isolated, another process holds a namespace said to be private, the payload holds capabilities, a "
               "seccomp filter of its own, a descriptor from outside or code mapped from outside the binds, or the "
               "parent-death signal is missing. A permission error is never taken as proof (\"not proven\").",
         detection="Two witnesses per check: the kernel's view from outside (the payload's /proc/PID/ns, mountinfo, "
                   "status, fd, maps and net/dev on the host, against bwrap's parent context) and the payload's own "
                   "(statfs, statvfs, lstat, a real write, if_nameindex, prctl).",
         remediation=["ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles"],
         messages={"failed": "{said}{traced}"},
         hint=("Compare the rendered argv (metnos.sandbox.sandbox_profile) with the one the runtime uses and render "
               "the profiles again; if bwrap itself misbehaves, upgrade bubblewrap.")),
    Code(code="probe_payload_root", severity=WARNING, rule="R-BASE-6", section=PROBE,
         title="The sandboxed payload runs as root",
         cause="The probe ran as {user} (uid 0 outside the sandbox): bwrap keeps root's capabilities in the "
               "sandbox's user namespace, so an executor can remount the read-only binds read-write and write "
               "the host's /usr and /etc (measured with bubblewrap 0.8). The checks pass - the mounts are as "
               "the profile says when the payload starts - but they are not a boundary for root.",
         detection="The payload's uid and capability sets, read from /proc/PID/status on the host.",
         remediation=["useradd --system --no-create-home --shell /usr/sbin/nologin metnos",
                      "mkdir -p /etc/systemd/system/<unit>.d",
                      "printf '[Service]\\nUser=metnos\\n' > /etc/systemd/system/<unit>.d/10-metnos-user.conf",
                      "systemctl daemon-reload", "systemctl restart <unit>"],
         hint=("Run the Metnos service as an unprivileged user: a drop-in with User=metnos (see "
               "service_runs_as_root).")),
    Code(code="probe_root_not_contained", severity=ERROR, rule="R-BASE-6", section=PROBE,
         title="Root inside the sandbox is not contained",
         cause="The payload ran as uid 0, and a second run of the same profile proved what that means: inside the "
               "sandbox's own mount namespace a read-only bind was remounted writable, or a /proc/sys file opened for "
               "writing. bwrap --unshare-user maps uid 0 to itself and the sandbox keeps every capability of its user "
               "namespace: no read-only grant of the profile holds. Nothing was written (the remount changes only the "
               "sandbox's copy of the mount; the file was opened and closed).",
         detection="The witness (probe/root_witness.py) run as the profile's command; from the host's /proc: its "
                   "mountinfo (the bind's per-mount options) and its descriptors (fdinfo flags of a /proc/sys file).",
         remediation=["useradd --system --no-create-home --shell /usr/sbin/nologin <user>",
                      "mkdir -p /etc/systemd/system/<unit>.d",
                      "printf '[Service]\\nUser=<user>\\n' > /etc/systemd/system/<unit>.d/10-metnos-user.conf",
                      "systemctl daemon-reload", "systemctl restart <unit>"],
         messages={"": "as {user} (uid 0): {seen}. The sandbox is no boundary for root."},
         hint=("Run the Metnos service as an unprivileged user (see service_runs_as_root for the drop-in; "
               "DynamicUser=yes in place of User=<user> needs no account).")),
    Code(code="probe_setup_failed", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="bwrap failed before the payload ran",
         cause="bwrap failed before the payload ran, in the service's context (as {user}): {cause_text}",
         detection="The payload never reported and --json-status-fd has no exit-code record; bwrap's stderr is "
                   "classified by pattern and quoted.",
         remediation=[],
         variants=CLASSIFIED,
         hint="See the remediation of the classified cause ({cause}) and the unit directives listed with it.",
         hints={"classified": CLASSIFIED_HINT + " The unit directives listed with it are part of the fix."}),
    Code(code="probe_timeout", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="The probe timed out",
         cause="The probe did not finish in time; its whole process group was killed. If the payload had already "
               "reported and been read from outside (e.g. a bwrap look-alike that never exits after running it), its "
               "checks are still judged and their findings are reported with this one.",
         detection="A timer around the probe's process group.",
         remediation=["findmnt -t nfs,nfs4,cifs,fuse", "systemctl list-units --state=activating"],
         messages={"killed": "the probe did not finish within {timeout}s; its whole process group was killed",
                   "judged": "the probe did not finish within {timeout}s; its whole process group was killed (after "
                             "the payload had reported and been read from outside: its checks are judged)"},
         hint="Look for hung mounts (NFS) or a stuck service unit; raise the probe timeout if the host is slow."),
    Code(code="probe_payload_failed", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="The probe payload could not report",
         cause="bwrap set up the sandbox and ran the payload (a Python program run by the runtime's interpreter), "
               "but it exited without a result.",
         detection="--json-status-fd has an exit-code record, and the payload's stdout has no result line.",
         remediation=["ansible-inventory --host <host>"],
         messages={"silent": "bwrap ran the payload (as {who}) but it did not report: it exited {exit}; {stderr}"},
         hint=("Check that the runtime's interpreter exists inside the sandbox (host.python_executable, which the "
               "command shows among the host's variables) and runs.")),
    Code(code="probe_context_incomplete", severity=WARNING, rule="R-DIAG-3", section=PROBE,
         title="The probe's unit does not carry the service's whole context",
         cause="Some of the service's directives could not be carried to the probe's transient unit (systemd-run "
               "refuses them in this systemd version, a specifier is unknown, or copying would act on the service's "
               "own directories), or `systemctl show` of the probe's unit differs from the service's on a property: "
               "a passing probe proves less there.",
         detection="Every directive of the unit minus the documented deny list (docs/unit-directives.md) is passed to "
                   "systemd-run; refusals are retried without the directive; then `systemctl show` of both units is "
                   "compared property by property.",
         remediation=["systemctl show {unit} -p <directive>"],
         messages={"reasons": "{unit}: the probe's transient unit does not carry the service's whole execution "
                              "context, so a pass proves less: {why}."},
         hint=("Review the directives named in the message: each is one the probe could not reproduce; the command "
               "shows one of them.")),
])

# ---- blame by experiment (blame.py, issue 21): what the probe finds when it fails in the service's context ----
_FOUND_BY_EXPERIMENT = ("Found by experiment (blame.py): the probe re-ran in transient units carrying the unit's "
                        "context with directives removed, and passed only without this one; the relaxation offered "
                        "was tried for real the same way (docs/unit-directives.md, \"Blame by experiment\").")
CODES.extend([
    Code(code="probe_unit_start_failed", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="systemd could not start the probe's process in the service's context",
         cause="The transient unit carrying the service's context ended with one of systemd's own exit statuses "
               "(200-245: EXEC, USER, NAMESPACE, ...) before its command ran: systemd failed to set the process up "
               "(change user, build the mount namespace, execute the command). bwrap never ran; the status is not "
               "bwrap's.",
         detection="systemd-run's \"Main processes terminated with: code=exited, status=N/NAME\" while the probe's "
                   "launcher had not reported its pid; systemd's own reason from the transient unit's journal.",
         remediation=["systemd-analyze exit-status {status}"],
         messages={"": "systemd could not start the probe's process in the service's context (as {user}): exit "
                       "status {status}/{name}: {meaning}; bwrap never ran.{said}"},
         hint=("This is a failure of the unit's settings, not of bwrap: see the directives found by experiment with"
               " it; the command says what the status means.")),
    Code(code="probe_unit_killed", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="The unit's own process was killed before bwrap started",
         cause="A signal ended the probe's process in the service's context before it started bwrap (it had not "
               "reported its pid): the unit's settings killed it, not bwrap (SIGSYS: the unit's SystemCallFilter=).",
         detection="systemd-run's \"Main processes terminated with: code=killed, status=N/NAME\" while the probe's "
                   "launcher had not reported.",
         remediation=["systemctl show <unit> -p SystemCallFilter"],
         messages={"": "the probe's process in the service's context (as {user}) was killed by SIG{signal} before it "
                       "started bwrap: the unit's settings killed it, not bwrap.{said}",
                   "interpreter": "{unit}: the runtime's interpreter ({python}) is killed by SIG{signal} in the "
                                  "service's context as it starts bwrap (shown by experiment): the unit's settings "
                                  "kill it before bwrap runs, so bwrap's own failure there says nothing about bwrap."},
         hint="SIGSYS comes from the unit's SystemCallFilter=: see the directives found by experiment with it."),
    restriction(Restriction(
        code="unit_ambient_capabilities", rule="R-BASE-6",
        title="The unit gives the service capabilities, and bwrap refuses to run with them",
        cause="AmbientCapabilities= puts capabilities into the permitted set of the service's processes (a non-root "
              "User=); a bwrap that is not setuid refuses to start holding any ('Unexpected capabilities but not "
              "setuid, old file caps config?'), so every executor fails inside the service only.",
        detection=_FOUND_BY_EXPERIMENT + " bwrap's text 'Unexpected capabilities but not setuid'.",
        fix="AmbientCapabilities=",
        messages={}, fix_note="An empty assignment clears the ambient set; or have the runtime clear its ambient "
                              "capabilities before it executes bwrap.")),
    restriction(Restriction(
        code="unit_resource_limit_blocks_bwrap", rule="R-BASE-6",
        title="A resource limit of the unit stops bwrap",
        cause="A Limit*= of the unit is too small for bwrap: LimitNPROC= counts every process of the service's user on "
              "the host (its own included), so bwrap cannot create its sandbox process ('Creating new namespace "
              "failed: Resource temporarily unavailable'), or systemd cannot even execute the command (EAGAIN at "
              "execve: 203/EXEC).",
        detection=(_FOUND_BY_EXPERIMENT + " Values are tried in powers of two, and one more process for the runtime, "
                   "which forks bwrap where the probe's launcher executes it."),
        fix="LimitNPROC=<nproc>",
        messages={}, fix_note="<nproc> is the value the probe passed with (the message names it).")),
    restriction(Restriction(
        code="unit_read_only_proc", rule="R-BASE-6",
        title="The unit makes /proc read-only",
        cause="ReadOnlyPaths=/ (or another read-only mount of /proc) makes /proc read-only in the service: bwrap "
              "cannot write its user namespace's uid map ('setting up uid map: Read-only file system').",
        detection=_FOUND_BY_EXPERIMENT + " bwrap's text 'setting up uid map: Read-only file system'.",
        fix="ReadWritePaths=/proc",
        messages={}, fix_note="ReadOnlyPaths= minus /proc.")),
    restriction(Restriction(
        code="unit_noexec_bwrap", rule="R-FAIL-1",
        title="The unit does not let the service execute bwrap",
        cause="NoExecPaths= covers bwrap (e.g. NoExecPaths=/) and ExecPaths= does not name it: the runtime cannot "
              "execute bwrap ('Permission denied'; systemd's 203/EXEC when it is the unit's own command).",
        detection=(_FOUND_BY_EXPERIMENT + " The probe's launcher (/bin/sh) stands for the service's own process and is "
                   "given an ExecPaths= of its own; bwrap and the payload's interpreter are not."),
        fix="ExecPaths=/usr/bin/bwrap",
        messages={})),
    restriction(Restriction(
        code="unit_syscall_filter_kills_interpreter", rule="R-DIAG-3",
        title="The unit's SystemCallFilter kills the runtime's own interpreter",
        cause="SystemCallFilter= does not allow a system call the runtime's interpreter makes to start a process "
              "(fork/clone, pipes, ...): the interpreter itself is killed by SIGSYS before bwrap runs, so no "
              "executor can start, sandboxed or not. Reported as the unit's, never as 'bwrap was killed by SIGSYS'.",
        detection=(_FOUND_BY_EXPERIMENT + " The runtime's interpreter starting a process (bwrap --version) in a "
                   "transient unit with the same context is killed by SIGSYS; without the filter it is not."),
        fix="SystemCallFilter=@system-service @mount",
        messages={}, fix_note="The smallest group set the probe passed with.")),
    restriction(Restriction(
        code="unit_directive_breaks_bwrap", rule="R-DIAG-3",
        title="A unit directive breaks bwrap (found by experiment)",
        cause="A directive of the unit that the directive table (docs/unit-directives.md) does not name breaks bwrap "
              "inside the service, alone or only together with the other directives named with it.",
        detection=_FOUND_BY_EXPERIMENT,
        fix="<directive>=<value>",
        messages={}, fix_note="<directive>=<value> is the relaxation named in the message (each tried for real).")),
    Code(code="probe_relaxation_found", severity=INFO, rule="R-DIAG-3", section=PROBE,
         title="A drop-in that makes the probe pass in the service's context",
         cause="Every culprit found by experiment relaxed at once, as one drop-in on top of the unit's files: the "
               "probe ran with it in a transient unit carrying the service's context, and passed.",
         detection="One more probe run with the unit's whole context plus the drop-in's lines.",
         remediation=["mkdir -p /etc/systemd/system/{unit}.d",
                      "printf '%s\\n' '[Service]' {relax_words} >> /etc/systemd/system/{unit}.d/zz-metnos-relax.conf",
                      "systemctl daemon-reload", "systemctl restart {unit}"],
         messages={"": "{unit}: the probe passes in the service's context with this drop-in (tried for real): "
                       "{lines}."}),
    Code(code="probe_blame_inconclusive", severity=WARNING, rule="R-DIAG-3", section=PROBE,
         title="The experiment could not name every culprit",
         cause="Blame by experiment stopped before it had the smallest set of directives whose removal makes the probe "
               "pass (its bounds in runs or time were reached), the results were not consistent (a run that passed "
               "once failed again), or no relaxation it tried made the probe pass with all of them at once.",
         detection="The experiment's own record (blame.runs, blame.seconds, blame.bounds).",
         remediation=["systemctl show {unit}"],
         messages={"exhausted": "{unit}: the experiment stopped after {runs} runs and {seconds}s (bounds: {max_runs} "
                                "runs, {max_seconds}s){named}.",
                   "inconsistent": "{unit}: the experiment's runs disagree ({why}){named}.",
                   "no_relaxation": "{unit}: no relaxation the experiment tried made the probe pass with every "
                                    "culprit relaxed at once ({why})."},
         hint=("Run the probe again on a quieter host, or with a larger bound (sandbox_probe blame_max_runs, "
               "blame_max_seconds); check the directives it did name by hand (the command).")),
])
# ---- issue 20: the probe accounts for everything its bwrap starts, and trusts only the packaged bwrap ----
_REINSTALL = "apt-get install --reinstall bubblewrap"
_REINSTALL_HINT = ("Reinstall the distribution's package (the command is Debian's: dnf reinstall bubblewrap, "
                   "pacman -S bubblewrap elsewhere).")
_TREE_FIX = ("ps -o pid,ppid,user,args -p <pid>", "ls -l /proc/<pid>/exe",
             "systemctl show -p Environment <unit>", "command -v bwrap", "dpkg -S \"$(command -v bwrap)\"",
             _REINSTALL)
_TREE_HINT = ("Find what started it (its parent, executable and command line are in the details; the first two "
              "commands), check which bwrap the service runs and remove look-alikes from its PATH (the next three), "
              "then reinstall the distribution's package (dnf reinstall bubblewrap, pacman -S bubblewrap elsewhere).")
CODES.extend([
    Code(code="probe_bwrap_unpackaged", severity=ERROR, rule="R-DIAG-2", section=PROBE,
         title="The probe's bwrap is not the packaged one",
         cause="The bwrap the service would run is owned by no installed package and its sha256 is not accepted: "
               "the probe trusts only the packaged bwrap (a look-alike first on the service's PATH, a copy, a "
               "self-built binary nobody vouched for).",
         detection="dpkg -S / rpm -qf / pacman -Qo of the path the service resolves (and its real path), then its "
                   "sha256 against metnos_sandbox_probe_accept_bwrap_sha256.",
         remediation=["rm {bwrap_path}", _REINSTALL],
         messages={"": "{bwrap_path} (sha256 {sha256}) is not owned by any installed package and its sha256 is not "
                       "accepted: the probe trusts only the packaged bwrap."},
         hint=("Remove the unmanaged file from the service's PATH and reinstall the distribution's package (dnf "
               "reinstall bubblewrap, pacman -S bubblewrap elsewhere). A self-built bwrap you trust: add its sha256"
               " ({sha256}) to metnos_sandbox_probe_accept_bwrap_sha256 instead.")),
    Code(code="probe_bwrap_modified", severity=ERROR, rule="R-SEC-6", section=PROBE,
         title="The probe's bwrap differs from its package",
         cause="The bwrap the service would run belongs to a package, but the package database says the file "
               "differs from what the package installed (its digest, size, mode or owner), or that it is missing.",
         detection="dpkg --verify PKG (the md5sums dpkg keeps), rpm -V PKG, pacman -Qkk PKG.",
         remediation=[_REINSTALL, "dpkg --verify bubblewrap"],
         messages={"": "{bwrap_path} belongs to {package} ({manager}) but the package database says it differs: "
                       "{detail} (sha256 {sha256})."},
         hint=("Reinstall the distribution's package, then verify it (rpm -V bubblewrap, pacman -Qkk bubblewrap "
               "elsewhere).")),
    Code(code="probe_bwrap_unverified", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="The probe's bwrap could not be verified",
         cause="The bwrap the service would run could not be verified against the package database (no verifier for "
               "its package manager, a verifier that failed or printed what the probe does not know, or a file that "
               "changed while it was verified): it is not trusted.",
         detection="The exit status and output of dpkg --verify / rpm -V / pacman -Qkk, and the file's device, inode, "
                   "size and times before and after.",
         remediation=["dpkg --verify bubblewrap", _REINSTALL],
         messages={"": "{bwrap_path} could not be verified against the package database: {detail}."},
         hint=("Run the verifier by hand (rpm -V bubblewrap, pacman -Qkk bubblewrap elsewhere), then reinstall the "
               "distribution's package.")),
    Code(code="probe_bwrap_accepted", severity=INFO, rule="R-DIAG-2", section=PROBE,
         title="The probe's bwrap is trusted by its sha256",
         cause="The bwrap the service would run is not the packaged one; it is trusted because its sha256 is listed in "
               "metnos_sandbox_probe_accept_bwrap_sha256 (a self-built bwrap). Listed so that every report shows it.",
         detection="The sha256 of the file, against the accepted digests.",
         remediation=[],
         messages={"": "{bwrap_path} is not the packaged bwrap; it is trusted because its sha256 {sha256} is "
                       "accepted."},
         hint=("Nothing to do if this is the build you meant; remove the digest from "
               "metnos_sandbox_probe_accept_bwrap_sha256 to trust only the packaged bwrap again.")),
    Code(code="probe_tree_not_empty", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="The probe's unit held a process before bwrap ran",
         cause="Before bwrap ran, the transient unit the probe started held a process the probe did not start: "
               "something else runs in the probe's context.",
         detection="cgroup.procs of the unit's cgroup, read while its launcher waits to execute bwrap.",
         remediation=list(_TREE_FIX),
         messages={"before": "before bwrap ran, the probe's unit held a process the probe did not start: pid {pid} "
                             "({details})"},
         hint=_TREE_HINT),
    Code(code="probe_process_unaccounted", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="bwrap's process tree held a process that is neither bwrap nor the payload",
         cause="A process in the tree the probe started bwrap in (direct: below the probe's child subreaper; in a "
               "unit: the unit's cgroup) is neither what the probe started, nor bwrap, its sandboxed child and the "
               "payload, nor a process of bwrap's own setup: it ran beside them, was still running after bwrap exited, "
               "or left its parent and exited on its own. A bwrap look-alike that execs the real one can start work "
               "beside the sandbox this way (double fork, setsid, descriptors closed, argv[0] changed) or after it "
               "exited.",
         detection="The tree polled from the host's /proc while the run lasts (every process's parent chain, or the "
                   "unit's cgroup.procs), the orphans the subreaper reaps (read while they are zombies), and the tree "
                   "once bwrap has exited, before anything is killed. Everything left is killed.",
         remediation=list(_TREE_FIX),
         messages={"beside": "pid {pid} ran in bwrap's process tree beside bwrap and the payload: {details}",
                   "left": "pid {pid} was still running in bwrap's process tree after bwrap exited: {details}",
                   "orphaned": "pid {pid} left its parent inside bwrap's process tree and exited on its own (reaped "
                               "by the probe's subreaper): {details}",
                   "reaper": "the probe's subreaper could not account for bwrap's tree ({details}): a process "
                             "could have left it",
                   "unreadable": "bwrap's process tree could not be read or was too large (pid {pid}, {details}): "
                                 "what else bwrap started is not proven"},
         hint=_TREE_HINT),
    Code(code="probe_payload_outside", severity=ERROR, rule="R-DIAG-3", section=PROBE,
         title="The payload's code ran outside the sandbox",
         cause="A process in bwrap's tree other than the sandboxed payload ran the payload's code: it carries the "
               "run's marker (the payload's first act is to set its comm to it) or the payload's arguments after "
               "argv[0]. A look-alike bwrap ran a copy of the executor beside the sandbox (in the host's network "
               "namespace, say) while the sandboxed one reported.",
         detection="The tree as for probe_process_unaccounted; the copy is never released by the probe (the one-time "
                   "token is written only to the verified payload), so it stays there to be seen.",
         remediation=list(_TREE_FIX),
         messages={"seen": "pid {pid} ran the payload's code outside the sandbox (namespaces that differ from the "
                           "sandboxed payload's: {outside}): {details}",
                   "orphaned": "pid {pid} ran the payload's code outside the sandbox and exited on its own (reaped "
                               "as an orphan by the probe's subreaper): {details}",
                   "beacon": "pid {pid} ran the payload's code in the probe's own network namespace (it reached the "
                             "probe's beacon, a name only the payload's spec carries; namespaces that differ from the "
                             "sandboxed payload's: {outside}): {details}"},
         hint=_TREE_HINT),
    Code(code="bwrap_package_modified", severity=ERROR, rule="R-SEC-6", section=BWRAP_BINARY,
         title="bwrap differs from its package",
         cause="The resolved bwrap belongs to a package, but the package database says the file differs from what "
               "the package installed (digest, size, mode or owner), or that it is missing.",
         detection="dpkg --verify PKG / rpm -V PKG / pacman -Qkk PKG.",
         remediation=[_REINSTALL],
         messages={"": "{bwrap_path} belongs to {package} but the package database says it differs: {detail}."},
         hint=_REINSTALL_HINT),
])
