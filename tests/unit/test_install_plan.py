"""The bwrap_host role's install plan (module_utils/metnos_sandbox/host/install_plan.py), case by case: each action
from the query outputs the package tools really print (dpkg-query -W -f, rpm -q --qf, pacman -Q: the formats
tests/unit/test_bwrap_host_role.py's fakes encode), read with the role's own platform variables
(roles/bwrap_host/vars/*.yml). The role's tasks carry the plan out (tests/unit/test_bwrap_host_role.py)."""
import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import install_plan
from conftest import ROOT
from helpers import case_table, faces

FILTERS = faces.load("filter_plugins/metnos_sandbox.py", "metnos_sandbox_filters")
ALA = "https://archive.archlinux.org/packages"


def platform(name):
    """The platform's variables as the role passes them (the pacman archive URL rendered as its default)."""
    with open(os.path.join(ROOT, "roles", "bwrap_host", "vars", name + ".yml")) as handle:
        loaded = yaml.safe_load(handle)
    out = dict((key, loaded["__bwrap_host_" + key]) for key in install_plan.PLATFORM_KEYS)
    out["pin_template"] = out["pin_template"].replace(
        "{{ bwrap_host_pacman_archive_url | regex_replace('/+$', '') }}", ALA).strip()
    return out


def query(*lines):
    return {"stdout": "\n".join(lines), "stdout_lines": list(lines)}


SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
CASES = case_table.params(__file__)        # tests/unit/cases/test_install_plan.yaml


def registered(lines):
    """What the role registered from the platform's query: its lines, or the skipped task's result (None)."""
    return SKIPPED if lines is None else query(*lines)


@pytest.mark.parametrize("case", CASES)
def test_each_action_from_what_the_tools_print(case):
    given = case["input"]
    got = FILTERS.bwrap_install_plan(registered(given["query"]), platform(given["platform"]),
                                     version=given["version"], state=given["state"],
                                     architecture=given["architecture"])
    case_table.check(case, dict((key, got[key]) for key in case["output"]))


def test_every_action_has_a_case():
    assert sorted(set(c.values[0]["output"]["action"] for c in CASES)) == sorted(install_plan.ACTIONS)


def test_a_failing_case_names_its_file_and_id():
    case = CASES[0].values[0]
    with pytest.raises(AssertionError,
                       match="tests/unit/cases/test_install_plan.yaml, case 'unknown platform: no query'"):
        case_table.check(case, dict(case["output"], action="install"))


def test_the_filter_refuses_what_is_not_the_roles_input():
    good = platform("Debian")
    with pytest.raises(AnsibleFilterError, match="registered result"):
        FILTERS.bwrap_install_plan("installed\t1", good)
    with pytest.raises(AnsibleFilterError, match="platform must be a dict of exactly"):
        FILTERS.bwrap_install_plan({}, dict(good, extra=1))
    with pytest.raises(AnsibleFilterError, match="platform.query_argv must be a list"):
        FILTERS.bwrap_install_plan({}, dict(good, query_argv="dpkg-query"))
    with pytest.raises(AnsibleFilterError, match="version must be a string"):
        FILTERS.bwrap_install_plan({}, good, version=1)
