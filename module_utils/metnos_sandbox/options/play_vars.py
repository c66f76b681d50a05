# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's options taken from the host's variables (metnos_audit with from_vars=true, issue 22).

playbooks/audit.yml used to spell each option as a Jinja expression over the role's variables
(``metnos_sandbox_unit if metnos_sandbox_unit is defined else 'metnos.service'``, ...). Ansible compiles
every such template again in every forked worker, for every host: more CPU than the rest of the
controller's work for the host (docs/benchmarks.md). With from_vars the action reads the same variables here,
in the same order, and only the values that are templates themselves are templated.

Pure Python, no Ansible imports: ``lookup(name)`` is the caller's (the action's) reading of one variable,
``(True, value)`` when the host has it (whatever its value, as Jinja's ``is defined``), ``(False, None)`` else.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Callable, Dict, Mapping, Optional, Tuple

Lookup = Callable[[str], Tuple[bool, Any]]

# option -> (the variables that give it, first defined wins); the option's own default (options.AUDIT) else.
FIRST_DEFINED: Dict[str, Tuple[str, ...]] = {
    "unit": ("metnos_audit_unit", "metnos_sandbox_unit"),
    "scope": ("metnos_sandbox_unit_scope",),
    "manifest_sources": ("metnos_audit_manifests", "metnos_sandbox_manifests"),
    "profile_dir": ("metnos_sandbox_profile_dir",),
    "probe": ("metnos_audit_probe",),
    "placement": ("metnos_sandbox_placement",),
    "collect_monitor": ("metnos_audit_collect_monitor",),
    "monitor_max_age": ("metnos_audit_monitor_max_age",),
    "deadline": ("metnos_audit_host_timeout",),
    "exec_link": ("metnos_sandbox_exec_link",),
}
WRITABLE_ROOTS = "metnos_sandbox_writable_roots"
HOST = "metnos_sandbox_host"
PLACEMENT = "metnos_sandbox_placement"      # the host context's placement (it wins over metnos_sandbox_host's)
DEFAULT_WRITABLE_ROOTS = ["/var/lib/metnos"]      # the role's default (roles/metnos_sandbox/defaults)


class VarsError(ValueError):
    """A variable that cannot give its option (metnos_sandbox_host not a mapping): invalid_option."""


def options(args: Mapping[str, Any], lookup: Lookup, given: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """``args`` (the task's own options: they win) plus each option they lack that the host's variables give.
    ``host`` is {writable_roots: metnos_sandbox_writable_roots (else the role's default)} updated with
    metnos_sandbox_host and the placement metnos_sandbox_placement, as the role builds it. ``given``, when passed,
    receives option -> the variable that gave it (a refusal names the variable the user set, not the option)."""
    out = dict(args)
    for option, names in FIRST_DEFINED.items():
        if option in out:
            continue
        for name in names:
            found, value = lookup(name)
            if found:
                out[option] = value
                if given is not None:
                    given[option] = name
                break
    if "host" not in out:
        found, roots = lookup(WRITABLE_ROOTS)
        host: Dict[str, Any] = {"writable_roots": roots if found else list(DEFAULT_WRITABLE_ROOTS)}
        found, more = lookup(HOST)
        if found and more is not None:
            if not isinstance(more, Mapping):
                raise VarsError("%s must be a mapping, got %s" % (HOST, type(more).__name__))
            host.update(more)
        found, placement = lookup(PLACEMENT)
        if found and placement is not None:
            host["placement"] = placement
        out["host"] = host
    return out
