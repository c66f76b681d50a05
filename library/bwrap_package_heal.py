#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: bwrap_package_heal
short_description: Heal what a killed package-manager run left before bubblewrap is installed
version_added: "1.0.0"
description:
  - A package manager killed mid-run (a power loss, the OOM killer, a stopped container) leaves the host in a
    state every later run of it refuses. This module finds that state and heals it, then the bwrap_host role
    installs bubblewrap.
  - apt - dpkg's journal of an interrupted run (numbered files in C(/var/lib/dpkg/updates)) or packages left
    unpacked, half-configured or waiting on triggers; apt then stops with "dpkg was interrupted". Healed with
    C(dpkg --configure -a) (a half-installed package is installed again by the apt task that follows).
  - pacman - a stale C(/var/lib/pacman/db.lck) (no process holds it open); removed when it is root's regular
    file in a folder only root can write. A lock a live process holds is a failure naming its pids.
  - dnf, dnf5, package - nothing to heal (rpm's lock is an fcntl lock the kernel drops with the process).
  - Check mode says what it would heal (changed) and changes nothing. Failures name the command to run by hand.
options:
  manager:
    description: The package manager the role installs with (the role's C(__bwrap_host_pkg_mgr)).
    type: str
    required: true
    choices: [apt, dnf, dnf5, pacman, package]
  timeout:
    description: Seconds C(dpkg --configure -a) and C(dpkg-query) may run before their process group is killed.
    type: int
    default: 900
extends_documentation_fragment: [metnos.sandbox.metnos_sandbox]
"""

EXAMPLES = r"""
- name: Heal what an interrupted package-manager run left
  metnos.sandbox.bwrap_package_heal:
    manager: apt
"""

RETURN = r"""
left:
  description: What a killed run had left, one line each ([] when nothing).
  returned: always
  type: list
  elements: str
healed:
  description: What was done (in check mode, what would be done), one line each.
  returned: always
  type: list
  elements: str
msg:
  description: One line for the play's output ("healed - ..." / "check mode - would heal ..."), '' when nothing.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import package_heal
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host.bwrap import bounded_runner
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec

ARGUMENT_SPEC = spec.spec(
    manager={"type": "str", "required": True, "choices": list(package_heal.MANAGERS)},
    timeout={"type": "int", "default": 900},
)


def main():
    module = spec.utf8_module(AnsibleModule)(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    manager, run = module.params["manager"], bounded_runner(module.params["timeout"])
    left, done, msg = [], [], ""
    try:
        if module.check_mode:
            left = package_heal.left_behind(manager, run)
            done = package_heal.would_do(manager) if left else []
            msg = "check mode: would heal %s" % package_heal.sentence(left, done) if left else ""
        else:
            left, done = package_heal.heal(manager, run)
            msg = "healed: %s" % package_heal.sentence(left, done) if left else ""
    except package_heal.HealError as exc:
        module.fail_json(msg="%s: %s" % (manager, exc), left=[], healed=[])
    module.exit_json(changed=bool(left), left=left, healed=done, msg=msg)


if __name__ == "__main__":
    main()
