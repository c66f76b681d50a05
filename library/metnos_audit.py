#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: metnos_audit
short_description: Read-only audit of one host's Metnos sandbox, in one round trip
version_added: "1.0.0"
description:
  - Everything the fleet report needs about one host, read-only - the runtime's status(), bwrap
    binary and package, kernel knobs and the smoke test (as M(metnos.sandbox.bwrap_facts)), the service's
    environment (as M(metnos.sandbox.metnos_service_env) in validate mode), drift of the rendered profiles
    against what the manifests render today, and the real probe (as M(metnos.sandbox.sandbox_probe)).
  - Runs as an action plugin that ships the toolkit's core as one compressed payload in one command,
    instead of one packaged module per check. One message (this run's frame token, the options, the
    core) goes on the command's stdin where the connection pipelines (local, ssh), else as the arguments
    of one shell-less command (podman, docker). On stdin the host reads the core only when it has to
    compile part of it (never when the core compiled by an earlier audit is kept on the host), and what the
    audit starts there gets C(/dev/null) as its standard input. Nothing is written on the host but that
    kept core; a connection that can do neither (become without pipelining) is refused with
    C(audit_transport_unsupported).
  - The result comes back framed by a random token made for each call, so a banner, a MOTD or a stray
    brace on stdout is never taken for it; no complete frame is C(audit_result_unframed).
  - The interpreter is found as Ansible finds it for a module - O(python), else
    C(ansible_python_interpreter) or C(interpreter_python), else Ansible's interpreter discovery for the
    host (kept as its C(discovered_interpreter_python) fact); one that does not start is C(host_no_python).
  - This file documents the action (and is what Ansible would run as an ordinary module without it).
  - The action also keeps each host's result in Ansible's per-run temp dir on the controller, where
    M(metnos.sandbox.metnos_audit_report) with O(metnos.sandbox.metnos_audit_report#module:hosts) reads it.
  - Never changes the host; the result is the same in check mode.
options:
  manifests:
    description: Manifests (mappings or YAML/JSON text) whose profiles are checked for drift.
    type: list
    elements: raw
    default: []
  manifest_sources:
    description:
      - Manifests as C(metnos_sandbox_manifests) lists them - a controller path, or a mapping with C(file) (a
        path) or C(manifest) (the manifest itself) - loaded on the controller as the
        P(metnos.sandbox.metnos_manifest_source#filter) filter loads them, then checked after O(manifests).
      - What playbooks/audit.yml passes, so that its task needs no Jinja filter (each forked worker would load
        every filter plugin).
    type: list
    elements: raw
    default: []
  host:
    description: Host-context overrides (as for M(metnos.sandbox.sandbox_profile)).
    type: dict
    default: {}
  profile_dir:
    description: Where the rendered profiles live on the host.
    type: path
    default: /etc/metnos/sandbox/profiles
  probe:
    description: Run the real probe.
    type: bool
    default: true
  placement:
    description:
      - Where the host runs executors (C(metnos_sandbox_placement) with O(from_vars=true)) - a server, or a
        user's paired device (R-SCOPE-4). Reported in RV(containment) with the level.
    type: str
    choices: [server, device]
    default: server
  timeout:
    description: Seconds before the probe is killed.
    type: float
    default: 60
    aliases: [probe_timeout]
  smoke_user:
    description: Unprivileged user for the smoke test (default nobody).
    type: str
  accept_bwrap_sha256:
    description: The sha256 digests of self-built bwraps the probe trusts besides the packaged one.
    type: list
    elements: str
    default: []
  python:
    description: Interpreter on the host (default ansible_python_interpreter, else Ansible's discovery).
    type: path
  collect_monitor:
    description:
      - Take the continuous proof's stored result (written by the metnos_sandbox role's monitor,
        O(monitor_result)) instead of running the checks again. A host without one is audited live;
        one that cannot be used is audited live with C(monitor_result_unusable).
      - A proof older than O(monitor_max_age) is not a pass (C(monitor_proof_stale), verdict fail).
    type: bool
    default: false
  monitor_max_age:
    description: Seconds a collected proof may be old before it is stale.
    type: float
    default: 3600
  deadline:
    description:
      - Seconds one host's whole audit may take (more than 0, at most 86400; not O(timeout), the probe's).
        Past it the host is reported C(host_timeout) (an error) in every report and the other hosts' results
        are written as usual; the payload on the host runs under C(timeout -s KILL) (its own process group,
        killed whole at the deadline) where the host has C(timeout), over every connection (with the
        arguments carrier of podman and docker the host's C(/bin/sh) starts it so, the message its positional
        arguments), and the controller stops waiting a few seconds later in any case.
      - Only the controller's concern; it never travels to the host.
    type: float
    default: 300
  monitor_result:
    description: The monitor's stored result on the host.
    type: path
    default: /var/lib/metnos-sandbox-monitor/last.json
  exec_link:
    description:
      - Where metnos-sandbox-exec is installed on the host (the role's C(metnos_sandbox_exec_link)). The launcher,
        every component on its way and the interpreter its C(#!) line names (with the C(pyvenv.cfg) and C(home)
        that interpreter reads) must be root's alone, else C(launcher_installed_not_roots) per component; nothing
        there, nothing is judged.
    type: path
    default: /usr/local/sbin/metnos-sandbox-exec
  from_vars:
    description:
      - "Take each option the task does not set from the host's variables, as playbooks/audit.yml names them -
        O(unit) from C(metnos_audit_unit), else C(metnos_sandbox_unit); O(scope) from C(metnos_sandbox_unit_scope);
        O(manifest_sources) from C(metnos_audit_manifests), else C(metnos_sandbox_manifests); O(host) is
        C(writable_roots) from C(metnos_sandbox_writable_roots) (else C([/var/lib/metnos])), updated with
        C(metnos_sandbox_host), its C(placement) from C(metnos_sandbox_placement); O(profile_dir) from
        C(metnos_sandbox_profile_dir); O(probe), O(collect_monitor)
        and O(monitor_max_age) from C(metnos_audit_probe), C(metnos_audit_collect_monitor) and
        C(metnos_audit_monitor_max_age); O(deadline) from C(metnos_audit_host_timeout); O(exec_link) from
        C(metnos_sandbox_exec_link). A variable the host does
        not have leaves the option at its default."
      - The values are validated as the task's own options are, and templated only when they are templates.
        Ansible compiles every template of a task's arguments again for each host, in each forked worker; read by
        the action, these variables cost none.
    type: bool
    default: false
  result:
    description:
      - What the task returns - V(full), the whole record (every key under RETURN), or V(summary), only
        RV(schema), RV(verdict), RV(codes), RV(counts), RV(duration), RV(cpu) and RV(payload_cache).
      - The whole record is kept for M(metnos.sandbox.metnos_audit_report) in both cases, so a play that only
        writes the reports (playbooks/audit.yml) asks for V(summary) and does not register it - Ansible sends
        every result back to its main process, and registering the whole record costs it far more CPU per host.
      - Run as a plain module (without the action plugin), the result is always V(full).
    type: str
    choices: [full, summary]
    default: full
extends_documentation_fragment: [metnos.sandbox.metnos_sandbox, metnos.sandbox.metnos_sandbox.service]
"""

EXAMPLES = r"""
- name: Audit this host
  metnos.sandbox.metnos_audit:
    unit: metnos.service
  register: metnos_audit_result
"""

RETURN = r"""
schema:
  description: Result schema id (metnos-sandbox-audit/1).
  returned: always
  type: str
verdict:
  description: pass, warn or fail.
  returned: always
  type: str
bwrap_facts:
  description: The M(metnos.sandbox.bwrap_facts) result.
  returned: when O(result=full)
  type: dict
service:
  description: The M(metnos.sandbox.metnos_service_env) result, or null when the unit is missing.
  returned: when O(result=full)
  type: dict
profiles:
  description: Per-manifest drift state (in_sync, drift, missing, refused).
  returned: when O(result=full)
  type: list
probe:
  description: The M(metnos.sandbox.sandbox_probe) result, or null when not run.
  returned: when O(result=full)
  type: dict
containment:
  description:
    - Where the host runs executors and at what level (R-SCOPE-4) - placement, platform (linux, windows, macos,
      unknown), level (bubblewrap, appcontainer, job_object, none), proven (true only when the probe proved
      bubblewrap on this host), evidence, reason, and the executors refused or downgraded at that level.
    - A host whose facts (ansible_system, ansible_os_family) say it is not Linux gets no payload; its record is
      this level and its finding only.
  returned: when O(result=full)
  type: dict
diagnostics:
  description: All findings, errors first.
  returned: when O(result=full)
  type: list
  elements: dict
codes:
  description: The code of each of RV(diagnostics), in their order (errors first).
  returned: when O(result=summary)
  type: list
  elements: str
  sample: ["unit_hardening_weak", "probe_check_failed"]
counts:
  description: How many of RV(diagnostics) have each severity.
  returned: when O(result=summary)
  type: dict
  sample: {"error": 1, "warning": 2}
monitor:
  description:
    - The continuous proof of this host - monitored (its timer loaded and active), the timer's state, the
      stored result's path and its last proof (finished, age_seconds, proven, verdict) or null, and
      collected (this result is that proof; then also max_age and stale).
  returned: when O(result=full)
  type: dict
duration:
  description: Wall seconds the audit took on the host.
  returned: always
  type: float
payload_cache:
  description:
    - Whether the host's interpreter took the core compiled by an earlier audit (C(state) C(hit)), compiled it
      (C(miss); kept for the next one in C(/run/metnos-audit), root's alone, when the audit runs as root), or
      refused a kept one that failed its checks (C(refused) - owner, mode, links, magic number or checksum),
      or had no cache (C(off)), and how many modules it compiled (C(compiled)).
  returned: when the action ran the audit on the host
  type: dict
  sample: {"state": "hit", "compiled": 0}
cpu:
  description:
    - CPU seconds (user + system) the audit used on the host, commands it waited for included (a probe
      in a systemd transient unit runs under systemd and is not counted).
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec

ARGUMENT_SPEC = spec.AUDIT     # the action plugin validates with the same spec


def main():
    module = spec.utf8_module(AnsibleModule)(argument_spec=spec.spec(ARGUMENT_SPEC), supports_check_mode=True)
    result = host_audit.audit_host(spec.one_name(ARGUMENT_SPEC, module.params))   # AnsibleModule applied the defaults
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
