# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit playbook's metnos_audit_* variables checked on the controller before any host task runs (issue 54).

The one table is options/spec.py: each variable gives one option of metnos_audit (play_vars.FIRST_DEFINED) or of
metnos_audit_report (REPORT_VARS below), and is judged by that option's entry (type, choices), plus the few
rules the actions add (seconds above zero, a unit name). A problem is one line naming the VARIABLE the user set
(never the module's option), its value and the accepted values; a path is shown absolute, with the working
directory it was taken from. A metnos_audit_* name the table does not know is a problem too (a typo is not
silently ignored), with the nearest known name. The metnos_sandbox_* variables are the role's: metnos_role_vars
judges them by the role's own argument spec.

Pure Python, no Ansible imports: ``variables`` is the host's variables as the action sees them (templated).
"""
from __future__ import absolute_import, annotations, division, print_function

import difflib
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..options import play_vars, spec
from ..service.systemd_unit import valid_unit_name

PREFIX = "metnos_audit_"
# metnos_audit_report's options the playbook takes from variables (playbooks/audit.yml's report task).
REPORT_VARS: Dict[str, str] = {
    "metnos_audit_dest": "dest",
    "metnos_audit_warnings_as_failures": "warnings_as_failures",
    "metnos_audit_waivers": "waivers",
    "metnos_audit_baseline": "baseline",
    "metnos_audit_fail_on": "fail_on",
    "metnos_audit_textfile_dir": "textfile_dir",
}
# Names the playbook itself sets later in the run (the report task's register): known, never judged here.
REGISTERED = ("metnos_audit_report",)
# Variables of the documented recipes that give no option themselves: name -> their spec entry.
RECIPES: Dict[str, Mapping[str, Any]] = {
    "metnos_audit_root": {"type": "path"},     # docs/audit-report.md, AWX: the execution nodes' shared folder
}
# Options whose value is a number of seconds above zero (the actions refuse 0 and below).
SECONDS = ("monitor_max_age", "deadline")
UNITS = ("unit",)
# Ansible's booleans (module_utils.parsing.convert_bool), strings compared in lower case.
TRUE_WORDS = ("y", "yes", "on", "1", "true", "t", "1.0")
FALSE_WORDS = ("n", "no", "off", "0", "false", "f", "0.0")
EMPTY_MEANS_NONE = ("waivers", "baseline", "textfile_dir")   # the playbook passes "" as omit


def table() -> Dict[str, Tuple[str, Mapping[str, Any]]]:
    """metnos_audit_* variable -> (the option it gives, that option's spec entry)."""
    out: Dict[str, Tuple[str, Mapping[str, Any]]] = {}
    for option, names in play_vars.FIRST_DEFINED.items():
        for name in names:
            if name.startswith(PREFIX):
                out[name] = (option, spec.AUDIT[option])
    for name, option in REPORT_VARS.items():
        out[name] = (option, spec.AUDIT_REPORT[option])
    for name, entry in RECIPES.items():
        out[name] = (name, entry)
    return out


def problems(variables: Mapping[str, Any], cwd: str) -> List[str]:
    """One line per problem of the metnos_audit_* variables in ``variables`` (empty: all valid)."""
    known = table()
    out: List[str] = []
    for name in sorted(str(key) for key in variables if str(key).startswith(PREFIX)):
        if name in REGISTERED:
            continue
        if name not in known:
            near = difflib.get_close_matches(name, sorted(known), n=1)
            out.append("%s: no such variable of the audit; %s (a variable of your own: name it without the "
                       "metnos_audit_ prefix)" % (
                           name, "did you mean %s?" % near[0] if near else "known: %s" % ", ".join(sorted(known))))
            continue
        option, entry = known[name]
        problem = value_problem(option, entry, variables[name], cwd)
        if problem:
            out.append("%s: %s" % (name, problem))
    return out


def value_problem(option: str, entry: Mapping[str, Any], value: Any, cwd: str) -> Optional[str]:
    """What is wrong with ``value`` for ``option`` (its spec ``entry``), with the accepted values; None: nothing."""
    kind = entry.get("type", "str")
    if value is None or (option in EMPTY_MEANS_NONE and value == ""):
        return None
    if kind == "bool":
        if boolean(value) is None:
            return "%r is not a boolean; accepted: true or false (also yes/no, on/off, 1/0)" % (value,)
        return None
    if kind == "float":
        seconds = number(value)
        if seconds is None or (option in SECONDS and seconds <= 0):
            return "%r is not a number of seconds above 0; accepted: e.g. 300" % (value,)
        return None
    if kind == "list":
        if not isinstance(value, (list, tuple)):
            return "%r is a %s, not a list; accepted: a YAML list, e.g. [/etc/metnos/manifests/a.yml]" % (
                value, type(value).__name__)
        return None
    if not isinstance(value, str):
        return "%r is a %s, not a string" % (value, type(value).__name__)
    if kind == "path":
        return path_problem(value, cwd)
    choices = entry.get("choices")
    if choices and value not in choices:
        near = difflib.get_close_matches(value, choices, n=1)
        return "%r is not accepted%s; accepted: %s" % (
            value, " (did you mean %s?)" % near[0] if near else "", ", ".join(choices))
    if option in UNITS and value and not valid_unit_name(value):    # "": no service unit (the action allows it)
        return "%r is not a unit name; accepted: a systemd unit name like metnos.service" % (value,)
    return None


def path_problem(value: str, cwd: str) -> Optional[str]:
    if "\0" in value or "\n" in value or not value.strip():
        return "%r is not a path; accepted: a file name, absolute or relative to the working directory %s" % (
            value, cwd)
    return None


def absolute(value: str, cwd: str) -> str:
    """``value`` as the controller's actions will read it: relative paths from ``cwd`` (ansible-playbook's)."""
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(value)))


def paths(variables: Mapping[str, Any], cwd: str) -> Dict[str, str]:
    """Each path variable set (non-empty) -> its absolute path, as the report will read or write it."""
    known = table()
    out: Dict[str, str] = {}
    for name in sorted(known):
        value = variables.get(name)
        if known[name][1].get("type") == "path" and isinstance(value, str) and value:
            out[name] = absolute(value, cwd)
    return out


def boolean(value: Any) -> Optional[bool]:
    """Ansible's reading of a boolean, None when it is none."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    return None


def number(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None
