#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: metnos_monitor_install
short_description: Install the release of the toolkit's core that the continuous proof runs
version_added: "1.0.0"
description:
  - Unpacks a release bundle (the filter P(metnos.sandbox.metnos_monitor_release#filter) packs the core)
    into C(<prefix>/<version>/) - the core in C(metnos_sandbox/), the entry point next to it - root's
    alone (folders and the entry point 0755, sources 0644), and removes every other release in O(prefix).
  - The bundle's sources must be the release it names (C(<toolkit version>+<digest of the sources>)),
    checked before anything is written; the release is written in a hidden folder first and renamed into
    place, so the monitor never runs a half-written one.
  - Nothing changes when that release is there exactly (sources, entry point, owner and modes) and alone.
    One round trip for the whole core, where a copy task per file would make one per file.
  - Used by the metnos_sandbox role (O(prefix) is C(metnos_sandbox_monitor_prefix)); see docs/monitoring.md.
options:
  prefix:
    description: The folder that holds the releases (created when missing).
    type: path
    required: true
  bundle:
    description: The release, as P(metnos.sandbox.metnos_monitor_release#filter) returns it in C(bundle).
    type: str
    required: true
  entry_point:
    description: The text of the entry point (roles/metnos_sandbox/files/metnos-sandbox-monitor.py).
    type: str
    required: true
  python:
    description:
      - The interpreter the monitor's unit runs as root (its C(ExecStart=)). Refused (code C(monitor_python_not_roots))
        unless it is an absolute path that root alone can change (every folder on the way, each link, the file, its
        interpreter), before anything is installed.
    type: path
extends_documentation_fragment: [metnos.sandbox.metnos_sandbox]
"""

EXAMPLES = r"""
- name: Install the core for the monitor
  metnos.sandbox.metnos_monitor_install:
    prefix: /usr/local/lib/metnos-sandbox-monitor
    bundle: "{{ ('' | metnos.sandbox.metnos_monitor_release).bundle }}"
    entry_point: "{{ lookup('ansible.builtin.file', 'metnos-sandbox-monitor.py', rstrip=false) }}"
"""

RETURN = r"""
folder:
  description: The release's folder.
  returned: always
  type: str
version:
  description: The release (the folder's name).
  returned: always
  type: str
installed:
  description: Whether the release was (or in check mode would be) written.
  returned: always
  type: bool
removed:
  description: The other releases removed (or that would be).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import core_install
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec

ARGUMENT_SPEC = spec.spec(
    prefix={"type": "path", "required": True},
    bundle={"type": "str", "required": True},
    entry_point={"type": "str", "required": True},
    python={"type": "path"},
)


def main():
    module = spec.utf8_module(AnsibleModule)(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    not_roots = core_install.python_findings(p["python"]) if p["python"] else []
    if not_roots:
        module.fail_json(msg="metnos_monitor_install: %s" % not_roots[0]["message"], code=not_roots[0]["code"],
                         diagnostics=not_roots)
    try:
        result = core_install.install(p["prefix"], p["bundle"], p["entry_point"], module.check_mode)
    except core_install.ReleaseError as exc:
        module.fail_json(msg="metnos_monitor_install: %s" % exc, code="invalid_option")
    except OSError as exc:
        module.fail_json(msg="metnos_monitor_install: %s: %s" % (getattr(exc, "filename", None) or p["prefix"],
                                                                 exc.strerror or exc), code="monitor_install_failed")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
