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
from helpers import faces

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

# (case, platform, registered query, version, state, architecture) -> (action, installed, conflicts, others, spec)
CASES = [
    ("unknown platform: no query", "default", SKIPPED, "", "present", "x86_64",
     ("delegate", "", [], [], "bubblewrap")),
    ("unknown platform, state=latest", "default", SKIPPED, "", "latest", "x86_64",
     ("delegate", "", [], [], "bubblewrap")),
    ("apt: installed", "Debian", query("installed\t0.8.0-2+deb12u1"), "", "present", "x86_64",
     ("none", "0.8.0-2+deb12u1", [], [], "bubblewrap")),
    ("apt: removed, its config files kept", "Debian", query("config-files\t0.8.0-2+deb12u1"), "", "present",
     "x86_64", ("install", "", [], [], "bubblewrap")),
    ("apt: never installed (dpkg-query says so on stderr)", "Debian", query(), "", "present", "x86_64",
     ("install", "", [], [], "bubblewrap")),
    ("apt: state=latest", "Debian", query("installed\t0.8.0-2"), "", "latest", "x86_64",
     ("latest", "0.8.0-2", [], [], "bubblewrap")),
    ("apt: missing, state=latest", "Debian", query(), "", "latest", "x86_64",
     ("install", "", [], [], "bubblewrap")),
    ("apt: pin another build", "Debian", query("installed\t0.8.0-2+deb12u1"), "0.8.0-2", "present", "x86_64",
     ("pin", "0.8.0-2+deb12u1", [], [], "bubblewrap=0.8.0-2")),
    ("apt: pin the installed build", "Debian", query("installed\t0.8.0-2"), "0.8.0-2", "present", "x86_64",
     ("none", "0.8.0-2", [], [], "bubblewrap=0.8.0-2")),
    ("apt: pin, nothing installed", "Debian", query(), "0.8.0-2", "present", "x86_64",
     ("pin", "", [], [], "bubblewrap=0.8.0-2")),
    ("dnf: installed, zero epoch dropped", "RedHat", query("0:0.6.3-1.el9"), "", "present", "x86_64",
     ("none", "0.6.3-1.el9", [], [], "bubblewrap")),
    ("dnf: not installed (rpm's sentence on stdout)", "RedHat", query("package bubblewrap is not installed"), "",
     "present", "x86_64", ("install", "", [], [], "bubblewrap")),
    ("dnf: pin with a zero epoch equals the build without", "RedHat", query("0:0.6.3-1.el9"), "0:0.6.3-1.el9",
     "present", "x86_64", ("none", "0.6.3-1.el9", [], [], "bubblewrap-0:0.6.3-1.el9")),
    ("dnf: pin with epoch 1", "RedHat", query("1:0.6.3-1.el9"), "1:0.6.3-1.el9", "present", "x86_64",
     ("none", "1:0.6.3-1.el9", [], [], "bubblewrap-1:0.6.3-1.el9")),
    ("dnf: epochs differ", "RedHat", query("1:0.6.3-1.el9"), "0.6.3-1.el9", "present", "x86_64",
     ("pin", "1:0.6.3-1.el9", [], [], "bubblewrap-0.6.3-1.el9")),
    ("dnf: two arches installed, the first line read", "RedHat", query("0:0.6.3-1.el9", "0:0.6.3-1.el9"), "",
     "latest", "x86_64", ("latest", "0.6.3-1.el9", [], [], "bubblewrap")),
    ("pacman: installed", "Archlinux", query("bubblewrap 0.12.0-1"), "", "present", "x86_64",
     ("none", "0.12.0-1", [], [], "bubblewrap")),
    ("pacman: the setuid build", "Archlinux", query("bubblewrap-suid 0.11.0-1"), "", "present", "x86_64",
     ("replace", "", ["bubblewrap-suid"], [], "bubblewrap")),
    ("pacman: the setuid build, state=latest", "Archlinux", query("bubblewrap-suid 0.11.0-1"), "", "latest",
     "x86_64", ("replace", "", ["bubblewrap-suid"], [], "bubblewrap")),
    ("pacman: pin over the setuid build", "Archlinux", query("bubblewrap-suid 0.12.0-1"), "0.12.0-1", "present",
     "x86_64", ("pin", "", ["bubblewrap-suid"], [], ALA + "/b/bubblewrap/bubblewrap-0.12.0-1-x86_64.pkg.tar.zst")),
    ("pacman: pin an older build on aarch64", "Archlinux", query("bubblewrap 0.12.0-1"), "0.11.0-1", "present",
     "aarch64", ("pin", "0.12.0-1", [], [], ALA + "/b/bubblewrap/bubblewrap-0.11.0-1-aarch64.pkg.tar.zst")),
    ("pacman: a user's own build provides bubblewrap", "Archlinux", query("bubblewrap-git 0.12.0.r3-1"), "",
     "present", "x86_64", ("install", "", [], ["bubblewrap-git"], "bubblewrap")),
    ("pacman: state=latest", "Archlinux", query("bubblewrap 0.11.0-1"), "", "latest", "x86_64",
     ("latest", "0.11.0-1", [], [], "bubblewrap")),
    ("pacman: missing", "Archlinux", query(), "", "present", "x86_64", ("install", "", [], [], "bubblewrap")),
]


@pytest.mark.parametrize("case, name, registered, version, state, arch, want", CASES, ids=[c[0] for c in CASES])
def test_each_action_from_what_the_tools_print(case, name, registered, version, state, arch, want):
    got = FILTERS.bwrap_install_plan(registered, platform(name), version=version, state=state, architecture=arch)
    assert (got["action"], got["installed"], got["conflicts"], got["others"], got["spec"]) == want, case


def test_every_action_has_a_case():
    assert sorted(set(c[-1][0] for c in CASES)) == sorted(install_plan.ACTIONS)


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
