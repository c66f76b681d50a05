#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: sandbox_probe
short_description: Run one real sandboxed invocation in the Metnos service's context and prove its isolation
version_added: "1.0.0"
description:
  - Implements spec R-DIAG-3 ("verify a real invocation in the service's environment").
  - Reads the service's environment (see M(metnos.sandbox.metnos_service_env)); if the runtime would fail closed
    (bwrap not on the service's PATH, or C(METNOS_SANDBOX) disabling it) it reports
    C(executor_os_sandbox_unavailable) without starting bwrap.
  - Otherwise renders the profile of a manifest (by default a built-in manifest with no
    capabilities, the strictest profile) and runs it for real with a small Python payload, as the
    service's user, with bwrap resolved through the service's PATH (the live process's, when it
    runs). Where systemd runs, inside a transient unit that carries the service's whole execution
    context - every directive of the unit's files minus a documented deny list (docs/unit-directives.md),
    proven equal to the service with C(systemctl show); what cannot be carried is named and lowers
    C(confidence). Without systemd, directly as the service user (a weaker context, reported as such).
  - Every check has two witnesses. Outside, from the host's C(/proc), bwrap's C(--json-status-fd)
    child-pid must be the payload process (exact command line, a child of the bwrap that was started);
    its namespace inodes are compared with bwrap's parent context (read before bwrap ran), and its
    mount table and interfaces are read while the payload waits (a handshake on its stdin, also
    through C(systemd-run --pipe)). Where root
    may not read another user's namespace links (no CAP_SYS_PTRACE, e.g. in containers) they are read
    with the payload's own uid and gid. Inside, the payload reports C(statfs)/C(statvfs)/C(stat) of
    each mount, C(lstat) of hidden paths, a real write per writable grant, its interfaces and its
    parent-death signal; its own C(/proc/self/ns) links count only once C(/proc) is proven to be a
    procfs whose C(/proc/self) is the payload.
  - Checks, each with the rule it proves - bwrap's child is the payload, C(/proc) is a procfs showing
    the payload, private user/mnt/ipc/uts (and net, with only C(lo)) namespaces, no PID namespace,
    C(/tmp) a fresh empty tmpfs (a device no host mount has), C(/dev) bwrap's minimal tmpfs (only
    binds of the parent's own device nodes and a new devpts), every read-only bind mounted read-only
    (mount flags, never a refused write), every bind and every mount below it the declared host path
    (device and root of each mount, against bwrap's parent context), nothing mounted where the
    profile mounts nothing, writable grants accept a real write, undeclared sensitive paths absent
    (ENOENT) on the sandbox's own root, the parent-death signal set, no capabilities (run by uid 0,
    none added; root is not contained, as a second run of the argv proves from the host's /proc that it
    remounts a read-only bind writable and opens /proc/sys for writing, nothing written, and the probe
    fails with C(probe_root_not_contained), else warns C(probe_payload_root)) and no_new_privs, no
    seccomp filter beyond the parent context's (R-BASE-8), no descriptor from outside but its stdio
    (a directory or socket descriptor reaches the host past every mount), the interpreter and every
    library it mapped from the declared binds (never a library planted on the sandbox's own root),
    and no other process on the host in a namespace said to be private. The payload runs isolated
    (C(python -I -S)). A permission error is "not proven" and
    fails the check.
  - Outcomes have distinct codes - C(probe_not_isolated) (the payload ran without isolation, e.g. a
    bwrap look-alike; the message lists the checks that show it), C(probe_check_failed),
    C(probe_setup_failed) (bwrap failed before the payload ran, with bwrap's text),
    C(probe_payload_failed) (the payload could not report), C(probe_timeout). A timeout kills the
    whole process tree; if the payload had already reported and been read from outside, its checks
    are still judged. Processes bwrap leaves holding its output are killed, never waited for.
    Nothing is left on the host.
  - The bwrap the probe runs is also judged as a binary (root ownership, setuid), with or without a unit, and
    only the packaged bwrap is trusted - verified against the package database (C(dpkg --verify), C(rpm -V),
    C(pacman -Qkk)) or accepted by its sha256 (O(accept_bwrap_sha256)) - C(probe_bwrap_unpackaged),
    C(probe_bwrap_modified), C(probe_bwrap_unverified), C(probe_bwrap_accepted) (info, listed). The process
    that started must execute such a file (check C(bwrap_exe_verified), its device and inode read from outside).
  - Everything bwrap (or a look-alike) starts is accounted for - run directly, bwrap is the child of a child
    subreaper; in a transient unit, the unit's cgroup is the tree - C(probe_tree_not_empty) (the unit held a
    process before bwrap ran), C(probe_process_unaccounted) (beside bwrap and the payload, left after it
    exited, or orphaned), C(probe_payload_outside) (the payload's code ran outside the sandbox), each with the
    process's pid, executable, namespaces and command line. C(/proc) must carry the read-only covers bwrap adds
    for the caller (check C(proc_covers)). A bwrap that dies at once is a setup failure within seconds.
  - Read-only for the host; it behaves the same in check mode.
options:
  probe_user:
    description: Run as this user instead of the unit's User= (default the unit's user, or nobody).
    type: str
  manifest:
    description: A manifest (mapping or YAML/JSON text) to probe instead of the built-in strict one.
    type: raw
  invocation:
    description: Invocation for the manifest (arguments, turn_id, sender).
    type: dict
  host:
    description: Host-context overrides, as for M(metnos.sandbox.sandbox_profile).
    type: dict
    default: {}
  python:
    description: Interpreter that runs the payload (default host.python_executable, else /usr/bin/python3).
    type: path
  context:
    description: C(systemd) (transient unit), C(direct) (as the service user), or C(auto).
    type: str
    choices: [auto, systemd, direct]
    default: auto
  timeout:
    description: Seconds before the probe's process tree is killed.
    type: float
    default: 60
  extra_absent:
    description: More host paths that must not be visible inside the sandbox.
    type: list
    elements: path
    default: []
  accept_bwrap_sha256:
    description:
      - The sha256 digests (64 hexadecimal digits) of self-built bwraps to trust besides the packaged one.
      - Without it only a bwrap the package database verifies (dpkg --verify, rpm -V, pacman -Qkk) is trusted;
        an accepted one is listed in every result (C(probe_bwrap_accepted)).
    type: list
    elements: str
    default: []
  blame:
    description:
      - When the probe fails in the service's transient unit, find the unit directives that make it fail by
        experiment - the probe re-runs in transient units carrying the unit's context with groups of directives
        removed - and the smallest relaxation of each, tried for real (docs/unit-directives.md, "Blame by
        experiment"). Read-only for the service. C(false) turns it off.
    type: bool
    default: true
  blame_max_runs:
    description: At most this many runs per experiment (the result says when it stopped there).
    type: int
    default: 128
  blame_max_seconds:
    description: At most this many seconds per experiment.
    type: float
    default: 300
extends_documentation_fragment: [metnos.sandbox.metnos_sandbox, metnos.sandbox.metnos_sandbox.service]
"""

EXAMPLES = r"""
- name: Prove the strict profile in metnos.service's own context
  metnos.sandbox.sandbox_probe:
  register: probe
  failed_when: not probe.passed

- name: Probe a real executor's profile
  metnos.sandbox.sandbox_probe:
    manifest: "{{ lookup('ansible.builtin.file', 'manifests/export_report.yml') }}"
"""

RETURN = r"""
passed:
  description: Every check held.
  returned: always
  type: bool
checks:
  description: One entry per check.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: >-
        Check name, e.g. net_namespace_private, read_only:/usr, bind_source:/usr, fresh_tmpfs:/tmp,
        no_undeclared_mounts.
      type: str
    rule:
      description: Spec rule it proves.
      type: str
    expected:
      description: What the profile promises.
      type: raw
    observed:
      description: Both witnesses (outside, inside) and, when it failed, the problems found.
      type: raw
    ok:
      description: Whether it held (false also when it could not be proven).
      type: bool
evidence:
  description: Whose processes the outside witness looked at, and who read their namespace links.
  returned: when the payload reported
  type: dict
  contains:
    bwrap_pid:
      description: The bwrap process that was started.
      type: int
    bwrap_exe:
      description: What that process executes (/proc/PID/exe), or why it could not be read.
      type: str
    child_pid:
      description: The child-pid bwrap reported (null when it reported none).
      type: int
    payload_pid:
      description: The payload process found on the host.
      type: int
    read_by:
      description: The probe itself, or the same-credential reader.
      type: str
    left_behind:
      description: >-
        bwrap exited but processes it left behind still held its output (a look-alike's decoy, a background
        child); they were killed, not waited for.
      type: bool
context:
  description: How the probe ran (systemd transient unit, direct, or not started and why).
  returned: always
  type: str
status:
  description: The runtime's status() in the service's context (its view, not a proof; see status_view).
  returned: always
  type: dict
status_view:
  description: Whose view status is (the live process, the configuration, the admin's environment).
  returned: always
  type: str
verdict_view:
  description: Says that C(passed) is the probe's proven verdict (a real wrapped invocation) and where it ran.
  returned: when the probe ran
  type: str
confidence:
  description: full, or reduced when the probe's context is weaker than the service's (see unit_context).
  returned: when the probe ran
  type: str
unit_context:
  description:
    - The service's execution context carried to the transient unit - carried, excluded (deny list),
      not_carried (with systemd's reason), carried_as, differences (systemctl show), verified, confidence,
      reasons.
  returned: when the probe ran in a transient unit for a service
  type: dict
bwrap_trust:
  description: >-
    The bwrap the service runs (bwrap) and, when that is another file, the packaged /usr/bin/bwrap (packaged), each
    with path, realpath, sha256, package, state (packaged, accepted, unpackaged, modified, unverifiable) and detail.
  returned: when the probe ran
  type: dict
device:
  description:
    - A paired Linux device's profile (host.placement device, R-SCOPE-4) proven as its client runs it - bwrap started
      in a process group of its own, that group killed at the deadline - checks (device_pid_namespace,
      device_process_group, device_network, device_private_tmp, device_deadline_kills_group; each with expected,
      observed and ok) and diagnostics (probe_device_* codes; it passed when none is an error, no flag beside them).
  returned: when the profile is a device's
  type: dict
blame:
  description:
    - The experiment's record when the probe failed in a service's transient unit - ran (false with why when bwrap
      fails in a plain context too), plain_context, culprits (directives, code, lines, where, alone, kind, cause,
      said, relaxation, tried), relaxation (the whole drop-in and whether the probe passed with it), runs,
      full_runs, interpreter_runs, seconds, bounds, exhausted, inconsistent, interpreter_killed, complete, log.
  returned: when the probe failed in a transient unit carrying a service's context
  type: dict
unit_failure:
  description: >-
    How systemd failed before bwrap could run (kind systemd_status with the status and systemd's name, or
    signal_before_bwrap), with systemd's own reason from the journal.
  returned: when the probe's unit failed before bwrap ran
  type: dict
blamed_directives:
  description: The unit directives blamed for the failure (found by experiment, or named by the directive table).
  returned: when the probe failed in a service's context
  type: list
  elements: str
bwrap_rc:
  description: bwrap's exit status in the probe (data, not the module's outcome).
  returned: when bwrap ran
  type: int
diagnostics:
  description: Findings with stable codes (same shape as M(metnos.sandbox.bwrap_facts)).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import run
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import environment

ARGUMENT_SPEC = spec.spec(
    spec.SERVICE,
    probe_user={"type": "str"},
    manifest={"type": "raw"},
    invocation={"type": "dict"},
    host=spec.HOST,
    python=spec.PYTHON,
    context={"type": "str", "choices": ["auto", "systemd", "direct"], "default": "auto"},
    timeout=spec.timeout(60.0),
    extra_absent={"type": "list", "elements": "path", "default": []},
    accept_bwrap_sha256=spec.ACCEPT_BWRAP,
    blame={"type": "bool", "default": True},
    blame_max_runs={"type": "int", "default": 128},
    blame_max_seconds={"type": "float", "default": 300.0},
)


def build_module():
    return spec.utf8_module(AnsibleModule)(argument_spec=ARGUMENT_SPEC, required_if=spec.USER_SCOPE_NEEDS_USER,
                                           supports_check_mode=True)


def _probe(p, runner):
    """The option preamble, then the probe (a bad host-context key is an option error too)."""
    spec.unit_name(p["unit"], required=False)
    spec.positive_seconds(p["timeout"])
    spec.positive_seconds(p["blame_max_seconds"], "blame_max_seconds")
    if p["blame_max_runs"] < 1:
        raise spec.OptionError("blame_max_runs must be at least 1, got %r" % p["blame_max_runs"])
    spec.users(p["probe_user"], p["user"])
    spec.sha256_list(p["accept_bwrap_sha256"])
    if p["context"] == "systemd":
        spec.systemd_running("context", "auto or direct")
    return run.probe_service(p, runner)


def main():
    module = build_module()
    p = dict(module.params)

    runner = bwrap.module_runner(module)
    try:
        result = spec.checked(module.fail_json, "sandbox_probe", lambda: _probe(p, runner))
    except environment.SystemctlError as exc:
        module.fail_json(msg="sandbox_probe: %s" % exc, code="systemctl_failed")
    except Exception as exc:   # never "Unknown error": a message, a code and the traceback
        import traceback
        module.fail_json(msg="sandbox_probe: unexpected %s: %s" % (type(exc).__name__, exc), code="internal_error",
                         exception=traceback.format_exc())
    result["verdict"] = "pass" if result["passed"] else "fail"
    # bwrap's exit status is data, not this module's outcome: a top-level "rc" other than 0 would
    # make Ansible mark the task failed without a message ("Unknown error").
    if "rc" in result:
        result["bwrap_rc"] = result.pop("rc")
    module.exit_json(changed=False, **diagnostics.utf8_safe(result))     # every string valid UTF-8: Ansible reads it


if __name__ == "__main__":
    main()
