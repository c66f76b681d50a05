# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bwrap_host role's install plan, decided from a read-only query of what the host's package manager has
installed (roles/bwrap_host/tasks/install.yml runs the query, asks for the plan through the filter
metnos.sandbox.bwrap_install_plan, and carries it out):

- ``delegate``: a platform without a known query (roles/bwrap_host/vars/default.yml):
  ansible.builtin.package decides;
- ``none``: nothing to do (installed, the pin matched, state=present);
- ``pin``: bwrap_host_version differs from the installed build (up or down), or a conflicting build is there;
- ``replace``: a conflicting build (Arch: bubblewrap-suid) is installed;
- ``install``: bubblewrap is missing;
- ``latest``: installed and state=latest: the package manager decides.

The query's output is read with the platform's own expressions (its vars file): ``query_regex`` (group 1 of its
first match, lines anchored, is the installed version), the first word of each line (a conflicting build listed
there is installed), ``provider_regex`` (group 1 of each line that matches names an installed package that
provides bubblewrap: pacman -Q answers with a user's bubblewrap-git). Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import re
from typing import Any, Dict, List, Mapping, Sequence

ACTIONS = ("delegate", "none", "pin", "replace", "install", "latest")
# The platform variables the plan reads (roles/bwrap_host/vars/*.yml, without their __bwrap_host_ prefix).
PLATFORM_KEYS = ("package", "conflicting_packages", "query_argv", "query_regex", "provider_regex", "pin_template")


def installed_version(stdout: str, query_regex: str) -> str:
    """Group 1 of the first match of ``query_regex`` in the query's output (``^`` and ``$`` at each line),
    '' when nothing matches (not installed, or no query)."""
    if not query_regex:
        return ""
    found = re.search(query_regex, stdout, re.M)
    return (found.group(1) or "") if found else ""


def conflicts_found(lines: Sequence[str], conflicting: Sequence[str]) -> List[str]:
    """The conflicting builds the query listed as installed (the first word of a line), in the platform's order."""
    names = [re.sub(" .*$", "", line) for line in lines]
    return [name for name in conflicting if name in names]


def other_providers(lines: Sequence[str], provider_regex: str, package: str, conflicting: Sequence[str]) -> List[str]:
    """Installed packages that provide ``package`` but are neither it nor a known conflicting build (group 1 of
    ``provider_regex`` on each line; each once, in the order listed)."""
    if not provider_regex:
        return []
    out: List[str] = []
    for line in lines:
        found = re.search(provider_regex, line)
        if found and found.group(1) not in out:
            out.append(found.group(1))
    return [name for name in out if name not in [package] + list(conflicting)]


def pin_spec(template: str, package: str, version: str, architecture: str) -> str:
    """The package manager's spec of one build: ``template``'s @INITIAL@, @NAME@, @VERSION@ and @ARCH@ replaced."""
    return (template.replace("@INITIAL@", package[:1]).replace("@NAME@", package).replace("@VERSION@", version)
            .replace("@ARCH@", architecture).strip())


def without_zero_epoch(version: str) -> str:
    """rpm's "0:0.6.3-1.el9" and "0.6.3-1.el9" are one build."""
    return re.sub("^0:", "", version)


def plan(stdout: str, lines: Sequence[str], platform: Mapping[str, Any], version: str, state: str,
         architecture: str) -> Dict[str, Any]:
    """The plan from the query's output (``stdout`` and its ``lines``; '' and [] when there was no query): the
    installed version, the conflicting builds and other providers found, the spec to install, and the action."""
    package = str(platform["package"])
    conflicting = list(platform["conflicting_packages"])
    installed = installed_version(stdout, str(platform["query_regex"]))
    conflicts = conflicts_found(lines, conflicting)
    others = other_providers(lines, str(platform["provider_regex"]), package, conflicting)
    spec = pin_spec(str(platform["pin_template"]), package, version, architecture) if version != "" else package
    if not platform["query_argv"]:
        action = "delegate"
    elif version != "":
        action = "none" if without_zero_epoch(installed) == without_zero_epoch(version) and not conflicts else "pin"
    elif conflicts:
        action = "replace"
    elif installed == "":
        action = "install"
    elif state == "latest":
        action = "latest"
    else:
        action = "none"
    return {"installed": installed, "conflicts": conflicts, "others": others, "spec": spec, "action": action}
