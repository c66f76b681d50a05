#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: bwrap_facts
short_description: Report whether bubblewrap can sandbox Metnos executors on this host
version_added: "1.0.0"
description:
  - Answers the Metnos runtime's C(sandbox.status()) for a given PATH and environment
    (spec R-DIAG-1) and says what the runtime would do (R-FAIL-1).
  - Inspects the bwrap binary (version, distro package and full revision, owner, mode, setuid,
    the option list parsed from C(bwrap --help)), the kernel knobs that decide whether
    unprivileged user namespaces work, and runs a real smoke test as an unprivileged user with
    C(--json-status-fd) so that a setup failure is told apart from a payload failure.
  - Every finding is a diagnostic with a stable C(code), a C(severity), a C(message), a list of
    C(remediation) steps (one command per item) and the spec C(rule) it relates to.
  - Read-only. It never changes the host, so it behaves the same in check mode.
options:
  path:
    description:
      - The PATH string bwrap is resolved with, as C(execvp) would (empty and relative entries
        count, and are reported as unsafe).
      - Defaults to the module's own PATH. Pass the service's PATH to see what the service sees.
    type: raw
  environment:
    description:
      - Environment whose C(METNOS_SANDBOX) decides C(disabled_via_env). Values must be strings.
      - Defaults to the module's own environment.
    type: dict
  smoke_test:
    description: Run a real bwrap invocation (namespace flags of the server profile around C(true)).
    type: bool
    default: true
  smoke_user:
    description:
      - User (name or uid) that runs the smoke test. Root hides user-namespace failures, so the
        default is an unprivileged account (C(nobody)).
      - Switching users needs root; otherwise the test runs as the current user and a warning says so.
    type: str
  timeout:
    description: Seconds before the smoke test's whole process group is killed.
    type: float
    default: 20
    aliases: [smoke_timeout]
attributes:
  facts:
    description: Returns an C(ansible_facts) dictionary that updates the host's facts (C(metnos_bwrap)).
    support: full
notes:
  - Diagnostic codes are listed, with cause, detection and remediation, in C(docs/diagnostics.md).
seealso:
  - name: Metnos sandbox spec
    description: The rules (R-...) this module checks.
    link: https://github.com/metnos/metnos-sandbox-ops/blob/main/docs/diagnostics.md
extends_documentation_fragment: [metnos.sandbox.metnos_sandbox]
"""

EXAMPLES = r"""
- name: What the admin's shell sees
  metnos.sandbox.bwrap_facts:

- name: What the service would see, with its PATH and environment
  metnos.sandbox.bwrap_facts:
    path: /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin
    environment:
      METNOS_SANDBOX: "1"
    smoke_user: metnos

- name: Fail the play when the runtime would refuse executors
  metnos.sandbox.bwrap_facts:
  register: bw
  failed_when: not bw.status.active
"""

RETURN = r"""
status_view:
  description: Whose view C(status) is (the admin's environment unless path/environment were given).
  returned: always
  type: str
status:
  description: The runtime's C(sandbox.status()) for the PATH and environment given.
  returned: always
  type: dict
  contains:
    bwrap_available:
      description: bwrap resolved on PATH.
      type: bool
    bwrap_path:
      description: Absolute path of the resolved bwrap, or null.
      type: str
    disabled_via_env:
      description: METNOS_SANDBOX is 0/off/no/false (any case).
      type: bool
    active:
      description: "Available and not disabled: executors would run sandboxed."
      type: bool
  sample: {bwrap_available: true, bwrap_path: /usr/bin/bwrap, disabled_via_env: false, active: true}
bwrap:
  description: Facts about the resolved binary; empty when bwrap was not found.
  returned: always
  type: dict
  contains:
    version:
      description: Upstream version from C(--version) (advisory only).
      type: str
    features:
      description: Options listed by C(bwrap --help).
      type: list
      elements: str
    missing_features:
      description: Options the profile needs that this bwrap lacks.
      type: list
      elements: str
    package:
      description: "Owning package: manager, name, full revision, and what its database says of the file
        (verified: ok, modified, missing or unverifiable; verify_detail: the verifier's line); empty if
        unowned."
      type: dict
    path:
      description: Resolved path.
      type: str
    realpath:
      description: Path with symlinks resolved.
      type: str
    owner_uid:
      description: Owner uid.
      type: int
    mode:
      description: Octal permission bits.
      type: str
    setuid:
      description: The setuid bit is set.
      type: bool
    ownership_problems:
      description: Non-root owners or group/world-writable parents.
      type: list
      elements: str
userns:
  description: Kernel knobs (null when absent on this kernel) and the smoke test outcome.
  returned: always
  type: dict
  contains:
    max_user_namespaces:
      description: user.max_user_namespaces.
      type: int
    unprivileged_userns_clone:
      description: kernel.unprivileged_userns_clone (Debian/Arch patch).
      type: int
    apparmor_restrict_unprivileged_userns:
      description: Ubuntu 23.10+ AppArmor restriction.
      type: int
    selinux:
      description: enforcing, permissive or disabled.
      type: str
    container:
      description: Container technology detected, or null.
      type: str
    smoke_test:
      description: "ran, user, uid, argv, rc, stderr, json_status, setup_failed, timed_out, passed, classification."
      type: dict
diagnostics:
  description: Findings, errors first.
  returned: always
  type: list
  elements: dict
  contains:
    code:
      description: Stable snake_case code.
      type: str
    severity:
      description: error, warning or info.
      type: str
    rule:
      description: Spec rule id.
      type: str
    message:
      description: What was seen on this host.
      type: str
    remediation:
      description: One command or step per item.
      type: list
      elements: str
  sample:
    - code: bwrap_missing
      severity: error
      rule: R-DIAG-2
      message: No executable named bwrap was found in the PATH that was checked (/nonexistent).
      remediation: ["Debian/Ubuntu: apt-get install bubblewrap"]
verdict:
  description: pass, warn or fail (worst severity).
  returned: always
  type: str
ansible_facts:
  description: The same result under C(metnos_bwrap).
  returned: always
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import facts
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import checks, spec

ARGUMENT_SPEC = spec.spec(
    path={"type": "raw"},
    environment={"type": "dict"},
    smoke_test={"type": "bool", "default": True},
    smoke_user={"type": "str"},
    timeout=spec.timeout(20.0, "smoke_timeout"),
)


def build_module():
    return spec.utf8_module(AnsibleModule)(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)


def _options(p):
    """(PATH text, environment, smoke user) from the options, or an option error."""
    path_text = checks.path_string("path", p["path"], default=os.environ.get("PATH", ""))
    environment = checks.environment("environment", p["environment"], default=dict(os.environ))
    user = facts.resolve_user(p["smoke_user"]) if p["smoke_user"] is not None else facts.default_smoke_user()
    spec.positive_seconds(p["timeout"])
    return path_text, environment, user


def main():
    module = build_module()
    p = module.params
    path_text, environment, user = spec.checked(module.fail_json, "bwrap_facts", lambda: _options(p))
    result = facts.gather(path_text, environment, facts.SmokeTest(run=p["smoke_test"], user=user, timeout=p["timeout"]))
    result["status_view"] = ("runtime status() for the %s (a view, not the service's and not a proof; see "
                             "metnos_service_env and sandbox_probe)" % (
                                 "PATH/environment given" if p["path"] is not None or p["environment"] is not None
                                 else "module's own PATH and environment (the admin's)"))
    module.exit_json(changed=False, ansible_facts={"metnos_bwrap": result}, **result)


if __name__ == "__main__":
    main()
