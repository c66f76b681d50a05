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
notes:
  - Rule ids (C(R-BASE-1), C(R-SEC-1), ...; the C(rule) of every diagnostic) name the rules of the Metnos
    executor sandbox spec, which is not part of this collection. Each id's title is in C(docs/spec-rules.yml) of
    the installed collection (C(<collections path>/ansible_collections/metnos/sandbox/docs/spec-rules.yml)), and
    C(docs/spec-coverage.md) next to it says which codes and tests check each rule.
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
