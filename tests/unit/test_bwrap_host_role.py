"""The bwrap_host role's platform logic, proven here without Fedora, EL or Arch hosts.

What cannot exist on this Debian machine is faked, and only that: the platform facts
(role_fixtures/action_plugins/metnos_test_facts.py returns them as ansible_facts) and the package tools
(role_fixtures/fake_pkgtools.py stands in for pacman, rpm, dpkg-query, apt-get and dnf, first on
PATH, records every call and keeps a package state in a JSON file). The role's own task files run
unchanged through ansible-playbook: set_vars.yml (the first_found chain), install.yml (the plan,
the refusals, check mode) and install_pacman.yml (the pacman transactions). The apt and dnf
modules themselves need real package managers: the Debian Molecule scenario runs apt for real,
the Fedora/EL scenarios run dnf in users' CI.

The fake's output formats and its conflict behaviour are the tools' own, read in their sources:
pacman src/pacman/query.c (-Q prints "%s %s"), src/pacman/callback.c (the conflict question
defaults to "no" under --noconfirm; --ask inverts the answer of the question types in its bit
mask) and lib/libalpm/alpm.h (ALPM_QUESTION_CONFLICT_PKG = 1 << 2 = 4); rpm lib/query.cc.
"""
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, ansible_env, ansible_tool

FIX = os.path.join(ROOT, "tests", "unit", "role_fixtures")
ARCH = {"distribution": "Archlinux", "distribution_major_version": "rolling", "os_family": "Archlinux",
        "pkg_mgr": "pacman", "architecture": "x86_64"}
DEBIAN12 = {"distribution": "Debian", "distribution_major_version": "12", "os_family": "Debian",
            "pkg_mgr": "apt", "architecture": "x86_64"}
FEDORA44 = {"distribution": "Fedora", "distribution_major_version": "44", "os_family": "RedHat",
            "pkg_mgr": "dnf5", "architecture": "x86_64"}
ALMA9 = {"distribution": "AlmaLinux", "distribution_major_version": "9", "os_family": "RedHat",
         "pkg_mgr": "dnf", "architecture": "x86_64"}
ALPINE = {"distribution": "Alpine", "distribution_major_version": "3", "os_family": "Alpine",
          "pkg_mgr": "apk", "architecture": "x86_64"}
SUID = {"bubblewrap": ["bubblewrap-suid"]}
PROV = {"bubblewrap-suid": ["bubblewrap"]}   # pacman -Q bubblewrap answers with the provider
ALA = "https://archive.archlinux.org/packages/b/bubblewrap/bubblewrap-%s-x86_64.pkg.tar.zst"
# Calls that only read: anything else in a check-mode run is a bug.
READ_ONLY = (("pacman", "-Q"), ("pacman", "-Qu"), ("rpm", "-q"), ("dpkg-query", "-W"),
             ("apt-get", "-s"), ("dnf", "-q"))


@pytest.fixture(scope="module")
def fakebin(tmp_path_factory):
    d = tmp_path_factory.mktemp("fakebin")
    for tool in ("pacman", "rpm", "dpkg-query", "apt-get", "dnf"):
        os.symlink(os.path.join(FIX, "fake_pkgtools.py"), str(d / tool))
    return str(d)


class Run(object):
    """ONE ansible-playbook call over many cases, started at once and collected on demand, so
    that the two runs of this module (applied, checked) use both cores of a CI machine."""

    def __init__(self, tmp_path, fakebin, cases, check=False, extra_roles=()):
        self.cases = cases
        for c in cases:
            c["state_file"] = str(tmp_path / ("%s.state.json" % c["name"]))
            c["log_file"] = str(tmp_path / ("%s.calls.jsonl" % c["name"]))
            state = {"installed": {}, "repo": {}, "conflicts": {}}
            state.update(c.pop("state", {}))
            with open(c["state_file"], "w") as f:
                json.dump(state, f)
        extra = tmp_path / "extra.json"
        self.results_file = tmp_path / "results.json"
        extra.write_text(json.dumps({"cases": cases, "fakebin": fakebin, "results_file": str(self.results_file)}))
        env = ansible_env(ANSIBLE_ACTION_PLUGINS="%s/action_plugins" % FIX,
                          ANSIBLE_ROLES_PATH=":".join(extra_roles))   # the role itself: metnos.sandbox.bwrap_host
        argv = [ansible_tool("ansible-playbook"), os.path.join(FIX, "cases.yml"), "-i", "localhost,",
                "-e", "@%s" % extra] + (["--check"] if check else [])
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self._done = None

    def get(self):
        """({name: result}, {name: [calls]}, {name: final package state})"""
        if self._done is None:
            out, _ = self.proc.communicate(timeout=900)
            assert self.proc.returncode == 0, out[-6000:]
            results = {r["name"]: r for r in json.loads(self.results_file.read_text())}
            assert set(results) == {c["name"] for c in self.cases}
            calls, states = {}, {}
            for c in self.cases:
                log = c["log_file"]
                calls[c["name"]] = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
                with open(c["state_file"]) as f:
                    states[c["name"]] = json.load(f)
            self._done = results, calls, states
        return self._done


def argvs(calls):
    return [[c["tool"]] + c["argv"] for c in calls]


def assert_c_locale(calls):
    assert calls and all(c["lc_all"] == "C" for c in calls), [(c["argv"], c["lc_all"]) for c in calls]


def assert_read_only(calls):
    assert all((c["tool"], c["argv"][0]) in READ_ONLY for c in calls), argvs(calls)


def fact(dist, ver, family, pkg):
    return {"distribution": dist, "distribution_major_version": ver, "os_family": family,
            "pkg_mgr": pkg, "architecture": "x86_64"}


PLATFORMS = {
    "debian12": (fact("Debian", "12", "Debian", "apt"), "Debian.yml", "apt"),
    "debian13": (fact("Debian", "13", "Debian", "apt"), "Debian.yml", "apt"),
    "ubuntu2404": (fact("Ubuntu", "24", "Debian", "apt"), "Debian.yml", "apt"),
    "fedora44": (fact("Fedora", "44", "RedHat", "dnf5"), "RedHat.yml", "dnf"),
    "fedora43": (fact("Fedora", "43", "RedHat", "dnf5"), "RedHat.yml", "dnf"),
    "alma9": (fact("AlmaLinux", "9", "RedHat", "dnf"), "RedHat.yml", "dnf"),
    "alma10": (fact("AlmaLinux", "10", "RedHat", "dnf"), "RedHat.yml", "dnf"),
    "rocky9": (fact("Rocky", "9", "RedHat", "dnf"), "RedHat.yml", "dnf"),
    "rhel10": (fact("RedHat", "10", "RedHat", "dnf"), "RedHat.yml", "dnf"),
    "arch": (fact("Archlinux", "rolling", "Archlinux", "pacman"), "Archlinux.yml", "pacman"),
    "alpine": (fact("Alpine", "3", "Alpine", "apk"), "default.yml", "package"),
    "suse": (fact("openSUSE Leap", "15", "Suse", "zypper"), "default.yml", "package"),
}


NEW, OLD = "0.12.0-1", "0.11.0-1"
GIT = "0.12.0.r3.g1a2b3c4-1"
CHAIN_COPY = ("fedora44", "fedora43", "alma9", "alpine")


# bwrap_host_package_manager: an explicit choice wins over the facts (a derivative distribution,
# or the dnf/pacman test hosts of tests/system/test_pkghosts.py, which are Debian underneath).
# name -> (platform whose facts the host reports, choice, vars file, install method, module)
MANAGERS = {
    "manager-debian-dnf": ("debian13", "dnf", "RedHat.yml", "dnf", "dnf"),
    "manager-debian-dnf5": ("debian13", "dnf5", "RedHat.yml", "dnf", "dnf5"),
    "manager-debian-pacman": ("debian13", "pacman", "Archlinux.yml", "pacman", "pacman"),
    "manager-fedora-dnf4": ("fedora44", "dnf", "RedHat.yml", "dnf", "dnf"),
    "manager-arch-apt": ("arch", "apt", "Debian.yml", "apt", "apt"),
    "manager-alpine-pacman": ("alpine", "pacman", "Archlinux.yml", "pacman", "pacman"),
    "manager-auto-fedora": ("fedora44", "auto", "RedHat.yml", "dnf", "dnf5"),
    "manager-auto-alma": ("alma9", "auto", "RedHat.yml", "dnf", "dnf"),
    "manager-auto-alpine": ("alpine", "auto", "default.yml", "package", "package"),
}
MANAGER_REFUSED = ("yum", "DNF", "pacman ", "")


def chain_cases():
    cases = [{"name": n, "facts": f, "install": False} for n, (f, _, _) in PLATFORMS.items()]
    cases += [{"name": n, "facts": PLATFORMS[p][0], "install": False, "role_vars": {"bwrap_host_package_manager": m}}
              for n, (p, m, _, _, _) in MANAGERS.items()]
    cases += [{"name": "manager-refused-%d" % i, "facts": DEBIAN12, "install": False,
               "role_vars": {"bwrap_host_package_manager": m}} for i, m in enumerate(MANAGER_REFUSED)]
    return cases + [{"name": "copy-" + n, "facts": PLATFORMS[n][0], "install": False,
                     "role": "bwrap_host_chaincopy"} for n in CHAIN_COPY]


def pacman_cases():
    cases = [
        {"name": "fresh", "state": {"repo": {"bubblewrap": NEW}, "system_outdated": True}},
        {"name": "present", "state": {"installed": {"bubblewrap": NEW}, "repo": {"bubblewrap": NEW}}},
        {"name": "suid", "state": {"installed": {"bubblewrap-suid": OLD}, "repo": {"bubblewrap": NEW},
                                   "conflicts": SUID, "provides": PROV}},
        {"name": "suid-kept", "state": {"installed": {"bubblewrap-suid": OLD}, "repo": {"bubblewrap": NEW},
                                        "conflicts": SUID, "provides": PROV},
         "role_vars": {"bwrap_host_replace_suid": False}},
        {"name": "latest", "state": {"installed": {"bubblewrap": OLD}, "repo": {"bubblewrap": NEW}},
         "role_vars": {"bwrap_host_state": "latest"}},
        {"name": "latest-nosysupgrade", "state": {"installed": {"bubblewrap": OLD}, "repo": {"bubblewrap": NEW}},
         "role_vars": {"bwrap_host_state": "latest", "bwrap_host_pacman_sysupgrade": False}},
        {"name": "fresh-nosysupgrade", "state": {"repo": {"bubblewrap": NEW}},
         "role_vars": {"bwrap_host_pacman_sysupgrade": False}},
        {"name": "pin-down", "state": {"installed": {"bubblewrap": NEW}, "repo": {"bubblewrap": NEW}},
         "role_vars": {"bwrap_host_version": OLD}},
        {"name": "pin-kept", "state": {"installed": {"bubblewrap": OLD}, "repo": {"bubblewrap": NEW}},
         "role_vars": {"bwrap_host_version": OLD}},
        {"name": "git-build", "state": {"installed": {"bubblewrap-git": GIT}, "repo": {"bubblewrap": NEW},
                                        "conflicts": {"bubblewrap": ["bubblewrap-git"]},
                                        "provides": {"bubblewrap-git": ["bubblewrap"]}}},
        {"name": "pin-suid", "state": {"installed": {"bubblewrap-suid": OLD}, "repo": {"bubblewrap": NEW},
                                       "conflicts": SUID, "provides": PROV},
         "role_vars": {"bwrap_host_version": NEW}},
    ]
    for c in cases:
        c["facts"] = ARCH
        c["ambient_locale"] = "C.UTF-8"   # a host whose own locale is not C: the role must set it
    return cases


def refusal_cases():
    return [
        {"name": "pin-unknown-platform", "facts": ALPINE, "role_vars": {"bwrap_host_version": "0.11.0-r0"}},
        {"name": "pin-and-latest", "facts": DEBIAN12,
         "role_vars": {"bwrap_host_version": "0.8.0-2", "bwrap_host_state": "latest"}},
        {"name": "pin-option-injection", "facts": ARCH, "role_vars": {"bwrap_host_version": "--ask=255"}},
        {"name": "pin-shell", "facts": FEDORA44, "role_vars": {"bwrap_host_version": "0.12.0-1; reboot"}},
        {"name": "pin-newline", "facts": DEBIAN12, "role_vars": {"bwrap_host_version": "0.8.0-2\n"}},
        {"name": "pin-too-long", "facts": DEBIAN12, "role_vars": {"bwrap_host_version": "1" * 129}},
    ]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, fakebin):
    """Both ansible-playbook runs, started together: `applied` (not in check mode: the vars
    chain, pacman, the refusals) and `checked` (--check over every package manager)."""
    tmp = tmp_path_factory.mktemp("applied")
    roles = tmp / "roles"
    shutil.copytree(os.path.join(ROOT, "roles", "bwrap_host"), str(roles / "bwrap_host_chaincopy"))
    vars_dir = roles / "bwrap_host_chaincopy" / "vars"
    for extra in ("Fedora_44.yml", "Fedora.yml"):
        (vars_dir / extra).write_text((vars_dir / "RedHat.yml").read_text())
    applied = Run(tmp, fakebin, chain_cases() + pacman_cases() + refusal_cases(), extra_roles=[str(roles)])
    checked = Run(tmp_path_factory.mktemp("checked"), fakebin, check_cases(), check=True)
    yield {"applied": applied, "checked": checked}
    for run in (applied, checked):
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait()


@pytest.fixture(scope="module")
def applied(runs):
    return runs["applied"].get()


@pytest.mark.rule("R-DIAG-2")
def test_first_found_chain_per_distro_and_version(applied):
    """Each platform loads its vars file, through the role's own set_vars.yml.

    The role ships os_family files and default.yml only (no platform needs more today); a copy
    of it with extra Fedora_44.yml and Fedora.yml proves the order of the chain:
    distribution_major_version -> distribution -> os_family -> default."""
    res, _, _ = applied
    for name, (_, vars_file, method) in PLATFORMS.items():
        assert (res[name]["vars_file"], res[name]["method"]) == (vars_file, method), name
    assert [res["copy-" + n]["vars_file"] for n in CHAIN_COPY] == \
        ["Fedora_44.yml", "Fedora.yml", "RedHat.yml", "default.yml"]


def test_package_manager_choice(applied):
    """bwrap_host_package_manager picks the vars file and the module whatever the facts say; auto
    keeps the facts' choice (dnf5 only where pkg_mgr says so); anything else is refused by
    set_vars.yml before a fact is gathered, with the choices listed (the role's main entry point
    also refuses it through meta/argument_specs.yml)."""
    res, calls, _ = applied
    for name, (_, _, vars_file, method, module) in MANAGERS.items():
        assert (res[name]["vars_file"], res[name]["method"], res[name]["pkg_mgr"]) == (vars_file, method, module), \
            (name, res[name])
    for i, value in enumerate(MANAGER_REFUSED):
        r = res["manager-refused-%d" % i]
        assert r["failed"], r
        assert r["msg"] == "bwrap_host_package_manager=%s is not one of: auto, apt, dnf, dnf5, pacman." \
            % json.dumps(value), r
        assert calls["manager-refused-%d" % i] == []


@pytest.mark.rule("R-DIAG-2")
def test_pacman_transactions(applied):
    """Arch, not in check mode: what pacman is asked to do, and what the package state becomes."""
    res, calls, state = applied
    reads = [["pacman", "-Q", "bubblewrap", "bubblewrap-suid"]]
    syu = ["pacman", "-Syu", "--noconfirm"]
    for name in [c["name"] for c in pacman_cases()]:
        assert_c_locale(calls[name])
        assert argvs(calls[name])[:1] == reads, name
    assert argvs(calls["fresh"])[1:] == [syu, ["pacman", "-S", "--needed", "--noconfirm", "bubblewrap"]]
    assert res["fresh"]["syu"]["changed"] and res["fresh"]["install"]["changed"]
    assert state["fresh"]["installed"] == {"bubblewrap": NEW}

    assert argvs(calls["present"])[1:] == [] and res["present"]["action"] == "none"

    # ONE transaction replaces the setuid build: it answers the conflict question (--ask=4)
    assert argvs(calls["suid"])[1:] == [syu, ["pacman", "-S", "--needed", "--noconfirm", "--ask=4", "bubblewrap"]]
    assert state["suid"]["installed"] == {"bubblewrap": NEW}

    assert res["suid-kept"]["failed"] and "bwrap_host_replace_suid=true" in res["suid-kept"]["msg"]
    assert argvs(calls["suid-kept"])[1:] == [] and state["suid-kept"]["installed"] == {"bubblewrap-suid": OLD}

    # latest: the full upgrade moves bubblewrap; the install step then has nothing to do
    assert argvs(calls["latest"])[1:] == [syu, ["pacman", "-S", "--needed", "--noconfirm", "bubblewrap"]]
    assert res["latest"]["syu"]["changed"] and not res["latest"]["install"]["changed"]
    assert state["latest"]["installed"] == {"bubblewrap": NEW}

    assert argvs(calls["latest-nosysupgrade"])[1:] == [["pacman", "-S", "--needed", "--noconfirm", "bubblewrap"]]
    assert argvs(calls["fresh-nosysupgrade"])[1:] == [["pacman", "-S", "--needed", "--noconfirm", "bubblewrap"]]
    # never a bare sync (-Sy, -Syy, -Sy pkg: a partial upgrade), only -Syu
    assert not [a for c in calls.values() for a in argvs(c) if any(x.startswith("-Sy") and x != "-Syu" for x in a)]

    # a pin is one -U of the archived build, a downgrade included; no sync, no upgrade
    assert argvs(calls["pin-down"])[1:] == [["pacman", "-U", "--needed", "--noconfirm", ALA % OLD]]
    assert state["pin-down"]["installed"] == {"bubblewrap": OLD}
    assert argvs(calls["pin-kept"])[1:] == [] and res["pin-kept"]["action"] == "none"
    # a build the role does not know provides bubblewrap: refused before any transaction
    assert res["git-build"]["failed"] and "bubblewrap-git is installed and provides bubblewrap" in \
        res["git-build"]["msg"], res["git-build"]
    assert argvs(calls["git-build"])[1:] == [] and state["git-build"]["installed"] == {"bubblewrap-git": GIT}
    assert argvs(calls["pin-suid"])[1:] == [["pacman", "-U", "--needed", "--noconfirm", "--ask=4", ALA % NEW]]
    assert state["pin-suid"]["installed"] == {"bubblewrap": NEW}


def check_cases():
    cases = [
        {"name": "arch-fresh", "facts": ARCH, "state": {"repo": {"bubblewrap": NEW}}},
        {"name": "arch-present", "facts": ARCH, "state": {"installed": {"bubblewrap": NEW}}},
        {"name": "arch-suid", "facts": ARCH,
         "state": {"installed": {"bubblewrap-suid": OLD}, "repo": {"bubblewrap": NEW}, "conflicts": SUID,
                   "provides": PROV}},
        {"name": "arch-latest", "facts": ARCH, "role_vars": {"bwrap_host_state": "latest"},
         "state": {"installed": {"bubblewrap": OLD}, "repo": {"bubblewrap": NEW}}},
        {"name": "arch-latest-current", "facts": ARCH, "role_vars": {"bwrap_host_state": "latest"},
         "state": {"installed": {"bubblewrap": NEW}, "repo": {"bubblewrap": NEW}}},
        {"name": "arch-pin", "facts": dict(ARCH, architecture="aarch64"),
         "role_vars": {"bwrap_host_version": OLD, "bwrap_host_pacman_archive_url": "https://ala.example/packages//"},
         "state": {"installed": {"bubblewrap": NEW}}},
        {"name": "debian-present", "facts": DEBIAN12, "state": {"installed": {"bubblewrap": "0.8.0-2+deb12u1"}}},
        {"name": "debian-removed", "facts": DEBIAN12, "state": {"removed": {"bubblewrap": "0.8.0-2+deb12u1"}}},
        {"name": "debian-pin", "facts": DEBIAN12, "role_vars": {"bwrap_host_version": "0.8.0-2"},
         "state": {"installed": {"bubblewrap": "0.8.0-2+deb12u1"}}},
        {"name": "debian-latest", "facts": DEBIAN12, "role_vars": {"bwrap_host_state": "latest"},
         "state": {"installed": {"bubblewrap": "0.8.0-2"}, "repo": {"bubblewrap": "0.8.0-2+deb12u1"}}},
        {"name": "fedora-present", "facts": FEDORA44, "state": {"installed": {"bubblewrap": "0.12.0-1.fc44"}}},
        {"name": "fedora-latest", "facts": FEDORA44, "role_vars": {"bwrap_host_state": "latest"},
         "state": {"installed": {"bubblewrap": "0.11.0-2.fc44"}, "repo": {"bubblewrap": "0.12.0-1.fc44"}}},
        {"name": "alma-pin", "facts": ALMA9, "role_vars": {"bwrap_host_version": "0.4.1-7.el9"},
         "state": {"installed": {"bubblewrap": "0.6.3-1.el9"}}},
        {"name": "alma-pin-epoch0", "facts": ALMA9, "role_vars": {"bwrap_host_version": "0:0.6.3-1.el9"},
         "state": {"installed": {"bubblewrap": "0.6.3-1.el9"}}},
        {"name": "alma-pin-epoch1", "facts": ALMA9, "role_vars": {"bwrap_host_version": "1:0.6.3-1.el9"},
         "state": {"installed": {"bubblewrap": "1:0.6.3-1.el9"}}},
        {"name": "alma-pin-epoch-differs", "facts": ALMA9, "role_vars": {"bwrap_host_version": "0.6.3-1.el9"},
         "state": {"installed": {"bubblewrap": "1:0.6.3-1.el9"}}},
    ]
    for c in cases:
        c["ambient_locale"] = "C.UTF-8"
    return cases


@pytest.fixture(scope="module")
def checked(runs):
    return runs["checked"].get()


def test_check_mode_reads_only_and_reports_the_plan(checked):
    """--check on every package manager: only read-only calls, the plan reported as a change.

    dnf5 (Fedora >= 41) and apt have no check mode without python3-libdnf5 / python3-apt: the
    role never calls them in check mode, so a host that has bubblewrap passes `--check` without
    those bindings."""
    res, calls, _ = checked
    for name in res:
        assert not res[name]["failed"], res[name]
        assert_c_locale(calls[name])
        assert_read_only(calls[name])

    def plan(name):
        r = res[name]
        return r["action"], r["spec"], bool(r["report"].get("changed")), r["report"].get("msg", "")

    assert plan("arch-fresh")[:3] == ("install", "bubblewrap", True)
    assert plan("arch-present")[:3] == ("none", "bubblewrap", False)
    assert plan("arch-suid")[:3] == ("replace", "bubblewrap", True)
    assert "would replace bubblewrap-suid" in plan("arch-suid")[3]
    assert plan("arch-latest")[:3] == ("latest", "bubblewrap", True)
    assert "0.11.0-1 -> 0.12.0-1" in plan("arch-latest")[3]
    assert ["pacman", "-Qu", "bubblewrap"] in argvs(calls["arch-latest"])
    assert plan("arch-latest-current")[:3] == ("latest", "bubblewrap", False)
    assert plan("arch-pin")[:3] == (
        "pin", "https://ala.example/packages/b/bubblewrap/bubblewrap-0.11.0-1-aarch64.pkg.tar.zst", True)

    assert plan("debian-present")[:3] == ("none", "bubblewrap", False)
    assert plan("debian-removed")[:3] == ("install", "bubblewrap", True)   # dpkg "config-files" is not installed
    assert plan("debian-pin")[:3] == ("pin", "bubblewrap=0.8.0-2", True)
    assert "allowing a downgrade" in plan("debian-pin")[3]
    assert plan("debian-latest")[:3] == ("latest", "bubblewrap", True)

    assert plan("fedora-present")[:3] == ("none", "bubblewrap", False)
    assert argvs(calls["fedora-present"]) == [
        ["rpm", "-q", "--qf", "%{EPOCHNUM}:%{VERSION}-%{RELEASE}\n", "bubblewrap"]]
    assert plan("fedora-latest")[:3] == ("latest", "bubblewrap", True)
    assert plan("alma-pin")[:3] == ("pin", "bubblewrap-0.4.1-7.el9", True)
    assert plan("alma-pin-epoch0")[0] == "none" and plan("alma-pin-epoch1")[0] == "none"
    assert plan("alma-pin-epoch-differs")[:2] == ("pin", "bubblewrap-0.6.3-1.el9")


def test_refusals(applied):
    """Each refusal has its own message and happens before any package tool runs."""
    res, calls, _ = applied
    names = [c["name"] for c in refusal_cases()]
    assert all(res[n]["failed"] for n in names), [res[n] for n in names]
    assert "no known pin syntax" in res["pin-unknown-platform"]["msg"]
    assert "bwrap_host_state=present with a pin" in res["pin-and-latest"]["msg"]
    for n in ("pin-option-injection", "pin-shell", "pin-newline", "pin-too-long"):
        assert "is not a package version" in res[n]["msg"], res[n]
    assert all(calls[n] == [] for n in names), calls


def test_argument_specs_match_the_defaults_and_the_manager_table():
    """meta/argument_specs.yml validates every default with the same default value, and the
    package-manager choices are exactly auto plus the managers set_vars.yml knows."""
    import yaml
    role = os.path.join(ROOT, "roles", "bwrap_host")

    def load(*path):
        with open(os.path.join(role, *path)) as f:
            return yaml.safe_load(f)
    defaults = load("defaults", "main.yml")
    options = load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(defaults) == set(options)
    assert {k: options[k]["default"] for k in options} == defaults
    managers = load("vars", "main.yml")["__bwrap_host_manager_vars"]
    assert options["bwrap_host_package_manager"]["choices"] == ["auto"] + list(managers)
