# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation shared by the modules (extends_documentation_fragment), written once like the options it
documents (module_utils/metnos_sandbox/options/spec.py). A module's own entries win over these."""
from __future__ import absolute_import, annotations, division, print_function


class ModuleDocFragment(object):
    # Every module: full check mode, no diff unless the module says otherwise; the authors.
    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Can run in check mode and return the changed status it predicts without modifying the host.
    support: full
  diff_mode:
    description: Returns details on what has changed (or would change in check mode) when run with C(--diff).
    support: none
author:
  - metnos-sandbox-ops contributors (@metnos)
"""

    # The service unit and its manager (options.SERVICE): sandbox_probe, metnos_audit, metnos_service_env.
    SERVICE = r"""
options:
  unit:
    description:
      - The Metnos service unit (a unit name such as C(metnos.service)).
      - Empty in M(metnos.sandbox.sandbox_probe) probes in the admin context, in M(metnos.sandbox.metnos_audit)
        skips the service checks; M(metnos.sandbox.metnos_service_env) needs a unit.
    type: str
    default: metnos.service
  scope:
    description: The unit's manager - the system manager, or a user's manager.
    type: str
    choices: [system, user]
    default: system
  user:
    description: With I(scope=user), the user whose manager runs the unit.
    type: str
"""
