# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Thin controller-side filters over the toolkit's core (module_utils/metnos_sandbox).

One implementation, two faces: the modules and these filters call the same code.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import sys

from ansible.errors import AnsibleFilterError

_HERE = os.path.dirname(os.path.abspath(__file__))
_CORE = os.path.normpath(os.path.join(_HERE, "..", "module_utils"))
if _CORE not in sys.path:
    sys.path.insert(0, _CORE)

from metnos_sandbox import summary as _summary  # noqa: E402  pylint: disable=wrong-import-position


def sandbox_summary(facts, sections=None):
    """bwrap_facts result (+ later sections) -> list of readable lines."""
    if facts is not None and not isinstance(facts, dict):
        raise AnsibleFilterError("sandbox_summary: expected the dict registered from bwrap_facts, got %s"
                                 % type(facts).__name__)
    if sections is not None and not isinstance(sections, list):
        raise AnsibleFilterError("sandbox_summary: sections must be a list, got %s" % type(sections).__name__)
    return _summary.host_summary(facts, sections)


class FilterModule(object):
    def filters(self):
        return {
            "sandbox_summary": sandbox_summary,
        }
