#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: metnos_root_python
short_description: Refuse a Python interpreter root will run unless root alone can change it
version_added: "1.0.0"
description:
  - Judges, from the filesystem alone (nothing is run), the interpreter root will run a program of this collection
    with (the launcher's C(metnos_sandbox_exec_python)) the way the core judges every program root runs
    (base/owners.py) - every component from C(/) (no link followed by the system, each link judged in its folder
    and its target walked), the file, its ELF loader or C(#!) interpreter, the C(pyvenv.cfg) Python reads beside the
    unresolved path or one folder up, the C(home) that names and the standard library found there.
  - Refused (code C(launcher_python_not_roots)) when any of those is owned by another user than root, writable by
    a group or by everyone, carries an ACL entry that lets a named user or group write it, or cannot be judged;
    one diagnostic per component, naming it, its owner and a fix that runs as pasted. Changes nothing.
  - Used by the metnos_sandbox role before it installs metnos-sandbox-exec.
options:
  path:
    description: The interpreter's absolute path, as it will be written (unresolved).
    type: path
    required: true
extends_documentation_fragment: [metnos.sandbox.metnos_sandbox]
"""

EXAMPLES = r"""
- name: The launcher's interpreter, root's alone
  metnos.sandbox.metnos_root_python:
    path: /usr/bin/python3
"""

RETURN = r"""
python:
  description: The interpreter judged.
  returned: always
  type: str
diagnostics:
  description: One launcher_python_not_roots finding per component someone other than root can change.
  returned: failure
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import owners
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec

ARGUMENT_SPEC = spec.spec(path={"type": "path", "required": True})
CODE = "launcher_python_not_roots"


def main():
    module = spec.utf8_module(AnsibleModule)(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    path = module.params["path"]
    found = owners.findings(CODE, path, owners.python_problems(path))
    if found:
        module.fail_json(msg="metnos_sandbox_exec_python: %s (fix: %s)" % (found[0]["message"],
                                                                           " && ".join(found[0]["remediation"])),
                         code=CODE, python=path, diagnostics=found)
    module.exit_json(changed=False, python=path)


if __name__ == "__main__":
    main()
