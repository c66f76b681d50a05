#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: sandbox_profile
short_description: Render the exact bwrap command of a Metnos executor manifest on this host
version_added: "1.0.0"
description:
  - Loads an executor manifest (inline or a file on the host), validates it against the closed
    capability grammar, and renders the bubblewrap profile the Metnos runtime builds for one
    invocation, using this host's real paths (the spec's rules R-BASE-*, R-CAP-*, R-FAIL-* and R-SEC-*; their
    titles are in docs/spec-rules.yml, see the notes).
  - Every mount, namespace flag and the network decision carry their provenance (rule id and
    the base item or capability that caused them).
  - Fails closed like the runtime (R-FAIL-1) when bwrap is unavailable or disabled, except for
    the byte-pinned C(undo_last_turn) exception (R-FAIL-2).
  - Over-broad or dangerous requests are refused with a stable code, never rendered. Every path that
    reaches a mount is judged as written and fully resolved on this host; a final check of the rendered
    argv enforces the profile invariants (docs/profile-invariants.md) and fails closed.
  - With I(dest), writes C(<executor>.json) (structured profile) and C(<executor>.args) (one argv
    element per line) atomically; C(changed) only when content changes; C(--diff) shows the argv
    lines (mounts) a manifest change adds or removes.
options:
  manifest:
    description:
      - The manifest, as a mapping or as YAML/JSON text (or what the C(metnos_manifest_source) filter
        hands over). Exclusive with I(manifest_file).
      - Input is bounded (size, nodes with YAML aliases counted before expansion, depth, counts,
        lengths) and matched exactly; each refusal has its own code (docs/profile-invariants.md).
    type: raw
  manifest_file:
    description: Path of a manifest file on the managed host, read by the core (regular file, at most 64 KiB).
    type: path
  invocation:
    description: The concrete invocation.
    type: dict
    suboptions:
      arguments:
        description: Argument values by name (resolves C(arg:) scopes).
        type: dict
      turn_id:
        description:
          - The current turn (undo folder), a string of one path component.
          - Passed to the core as given, never converted (a number or a boolean names no folder).
        type: raw
      sender:
        description:
          - The authenticated sender (dialog folder), a string of one path component.
          - Passed to the core as given, never converted (a number or a boolean names no folder).
        type: raw
  host:
    description:
      - Host-context overrides (real paths of the Metnos install); unknown keys are refused.
      - Keys include runtime_dir, executors_dir, executor_dir, python_executable, python_prefix,
        python_package_roots, python_installation, i18n_dbs, lexicon_dbs, resources, indexes,
        integrations_dir, mail_credentials_dir, mail_accounts, dialog_dir, undo_root,
        systemd_read_paths, system_read_paths, system_bus_proxy, system_bus_sockets, allow_channels,
        undo_exception, writable_roots, placement, device_downgrades.
      - C(placement) (C(server) or C(device), default C(server); the role's C(metnos_sandbox_placement)) is
        where executors run (R-SCOPE-4). C(device), a paired Linux device, adds C(--unshare-pid) and
        C(--new-session) to the server profile; C(device_downgrades) declares a flag of those two the platform
        cannot give, as a list of mappings with flag and reason (the profile leaves it out and says so -
        device_profile_downgraded).
      - Command channels (sockets, FIFOs, device nodes) named by a grant or found below a granted
        folder are refused unless C(allow_channels) lists that exact path with a reason
        (a list of mappings with path and reason); the system bus is granted to systemd:read / system:read only through
        the filtering proxy's socket C(system_bus_proxy) (xdg-dbus-proxy), bound at
        /run/dbus/system_bus_socket. C(system_bus_proxy) may not be, resolve to, or share device and inode
        with the real bus's sockets (/run/dbus/system_bus_socket, DBUS_SYSTEM_BUS_ADDRESS's path, and
        C(system_bus_sockets), the sockets the proxy itself connects to).
      - C(writable_roots) (default C([/var/lib/metnos])) are the only folders below which fs:write
        may reach (C(scope_outside_writable_roots) otherwise, naming them).
      - Every path is resolved on the host (symlinks followed) and judged with the same rules as a
        manifest scope; a refused one is reported as C(host_path_refused) naming the key.
      - C(undo_exception) pins the undo broker (R-FAIL-2) with name, origin, revision, owner,
        capability, files and digest (and optionally entrypoint, the file that runs unsandboxed,
        default main.py); the digest must equal the one computed from the broker's files on disk.
    type: dict
    default: {}
  discover_python_roots:
    description: Ask I(host.python_executable) for its package roots (never a whole home folder).
    type: bool
    default: true
  command:
    description: The executor command; default C([python_executable, <executor_dir>/<entrypoint>]).
    type: list
    elements: str
  path:
    description: PATH string used to resolve bwrap (default the module's PATH); a non-string is refused.
    type: raw
  environment:
    description: Environment whose METNOS_SANDBOX decides the fail-closed check (default the module's).
    type: dict
  dest:
    description: Directory where C(<executor>.json) and C(<executor>.args) are written.
    type: path
  run_as:
    description:
      - The service user the executors run as (a user name of this host, not root), recorded in the stored
        profile as C(run_as) (user, uid, gid). C(metnos-sandbox-exec) started by root drops to it (no supplementary
        groups, no capabilities) before bwrap, and refuses a profile without it (C(launcher_root_refused)).
    type: str
  fail_on_refusal:
    description: Fail the task when the manifest is refused (otherwise report C(decision=refused)).
    type: bool
    default: true
attributes:
  diff_mode:
    description: Returns details on what has changed (or would change in check mode) when run with C(--diff).
    support: full
extends_documentation_fragment: [metnos.sandbox.metnos_sandbox]
"""

EXAMPLES = r"""
- name: Render a manifest from the controller into the profile directory
  metnos.sandbox.sandbox_profile:
    manifest: "{{ lookup('ansible.builtin.file', 'examples/manifests/read_notes.yml') }}"
    invocation:
      arguments: {path: /srv/notes/today.md}
    dest: /etc/metnos/sandbox/profiles

- name: Just look at the argv of a manifest on the host
  metnos.sandbox.sandbox_profile:
    manifest_file: /srv/metnos/executors/export_report/manifest.yml
  register: prof
"""

RETURN = r"""
decision:
  description: wrapped (argv starts with bwrap), direct (pinned undo exception) or refused.
  returned: always
  type: str
refusal:
  description: The code of the first error when refused, else null.
  returned: always
  type: str
argv:
  description: The exact command, one element per item; null when refused.
  returned: always
  type: list
  elements: str
command_line:
  description: The argv, shell-quoted.
  returned: always
  type: str
mounts:
  description: Ordered mounts (parents before children) with provenance.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: ro, rw, tmpfs, proc, dev or symlink.
      type: str
    src:
      description: Host path (symlink target for symlink).
      type: str
    dest:
      description: Path inside the sandbox; for a bind its resolved host path, equal to src.
      type: str
    provenance:
      description: List of {rule, source}.
      type: list
    fd:
      description: The descriptor number of a bind whose source can move (see descriptors).
      type: int
descriptors:
  description:
    - The sources bound by descriptor (someone other than root can write a folder on their way), each
      with the number it must be opened on and the object judged (path, dev, ino, type; dest when it is
      bound elsewhere than its path, as the filtering proxy's socket is).
    - Run such a profile with C(metnos-sandbox-exec --profile <executor>.json), which the metnos_sandbox role
      installs on the host (metnos_sandbox_exec, default /usr/local/sbin/metnos-sandbox-exec; see
      docs/profile-invariants.md).
  returned: when wrapped
  type: list
  elements: dict
placement:
  description:
    - A paired Linux device's profile (host.placement device, R-SCOPE-4) - placement, rule, the flags it adds and
      the declared downgrades (flag and reason).
  returned: when wrapped on a device
  type: dict
channels:
  description:
    - The command channels (sockets, FIFOs, device nodes) the profile exposes because the admin allows
      them (host.allow_channels), each with path, kind, reason and the grant that exposes it.
  returned: when wrapped and an allowed channel is exposed
  type: list
  elements: dict
namespaces:
  description: Namespace and lifetime flags with rule and source.
  returned: always
  type: list
network:
  description: "{host: bool, rule, because: [capabilities]}."
  returned: always
  type: dict
diagnostics:
  description: Refusals (errors) and skipped grants (info), same shape as M(metnos.sandbox.bwrap_facts).
  returned: always
  type: list
  elements: dict
files:
  description: Paths written (or that would be written) under I(dest).
  returned: when dest is set
  type: list
  elements: str
healed:
  description: What this render healed, one line each, naming the executor (a stored pair whose .args and .json
    did not match, from an interrupted write, rendered again).
  returned: when dest is set and something was healed
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics, envflags
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import checks, spec
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    host_context,
    model,
    python_roots,
    renderer,
    store,
)

ARGUMENT_SPEC = spec.spec(
    manifest={"type": "raw"},
    manifest_file={"type": "path"},
    # raw: the core judges the values as given (Ansible's conversion would turn 12 into '12')
    invocation={"type": "dict", "options": {"arguments": {"type": "dict"}, "turn_id": {"type": "raw"},
                                            "sender": {"type": "raw"}}},
    host=spec.HOST,
    discover_python_roots={"type": "bool", "default": True},
    command={"type": "list", "elements": "str"},
    path={"type": "raw"},
    environment={"type": "dict"},
    dest={"type": "path"},
    run_as={"type": "str"},
    fail_on_refusal={"type": "bool", "default": True},
)


def build_module():
    return spec.utf8_module(AnsibleModule)(
        argument_spec=ARGUMENT_SPEC,
        mutually_exclusive=[("manifest", "manifest_file")],
        required_one_of=[("manifest", "manifest_file")],
        supports_check_mode=True,
    )


def _options(module, p):
    """(PATH text, environment, host context) from the options, or an option error."""
    path_text = checks.path_string("path", p["path"], default=os.environ.get("PATH", ""))
    environment = checks.environment("environment", p["environment"], default=dict(os.environ))
    host_over = dict(p["host"] or {})
    if p["discover_python_roots"]:
        not_run = []        # the interpreter runs as root only when root's, else as its one owner, else not at all
        host_over = python_roots.with_python_roots(host_over, bwrap.module_runner(module), not_run)
        if not_run:
            module.fail_json(msg="sandbox_profile: %s" % not_run[0]["message"], code=not_run[0]["code"],
                             diagnostics=not_run)
    return path_text, environment, host_context.HostContext(host_over)


def main():
    module = build_module()
    p = module.params
    path_text, environment, host = spec.checked(module.fail_json, "sandbox_profile", lambda: _options(module, p))

    # The one core path: the manifest (inline, or a file read on this host by the core) is
    # coerced, validated, rendered and checked by renderer.render_safe.
    source = model.FileSource(p["manifest_file"]) if p["manifest_file"] else p["manifest"]
    status = envflags.status(bwrap.which("bwrap", path_text), environment)
    invocation = dict((k, v) for k, v in (p["invocation"] or {}).items() if v is not None)
    result = renderer.render_safe(source, host, invocation, status, p["command"])

    if p["run_as"] is not None and result["decision"] == "wrapped":
        try:
            result["run_as"] = store.run_as(p["run_as"])
        except store.StoreError as exc:
            module.fail_json(msg="sandbox_profile: run_as: %s" % exc, code="invalid_option")
    out = dict(changed=False, **result)
    unsafe = store.folder_problem(p["dest"]) if p["dest"] else None
    if unsafe is not None:
        module.fail_json(msg="sandbox_profile: %s: %s" % (unsafe["code"], unsafe["message"]), code=unsafe["code"],
                         **dict(out, diagnostics=out["diagnostics"] + [unsafe]))
    if p["dest"] and result["decision"] != "refused":
        try:
            written = store.write(p["dest"], result, module.check_mode, move=module.atomic_move)
        except store.StoreError as exc:
            module.fail_json(msg="sandbox_profile: %s" % exc, code="dest_unwritable")
        out["changed"] = written["changed"]
        out["files"] = written["files"]
        if written["healed"]:
            out["healed"] = written["healed"]
        if module._diff and written["diff"]:
            out["diff"] = written["diff"]

    out = diagnostics.utf8_safe(out)             # a reply Ansible refuses to read would lose the refusal code
    if result["decision"] == "refused" and p["fail_on_refusal"]:
        first = [d for d in out["diagnostics"] if d["severity"] == "error"][0]
        module.fail_json(msg="sandbox_profile: %s refused (%s): %s" % (
            result["executor"] or "manifest", result["refusal"], first["message"]), **out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
