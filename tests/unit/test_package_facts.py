"""Which package owns bwrap, on every package manager: the parsers on the tools' exact outputs.

Only dpkg exists on this machine, so rpm's and pacman's outputs are reproduced here from their
sources (and the fake runner answers with them):
- rpm: lib/query.cc (rpm-software-management/rpm) -- `-qf` prints one --queryformat expansion
  per owning package; a path nobody owns logs "file %s is not owned by any package" (NOTICE, to
  stdout) and rc 1; docs/man/rpm-queryformat.7.scd for %{NAME}, %{EPOCHNUM}, %{VERSION},
  %{RELEASE}.
- pacman: src/pacman/query.c -- print_query_fileowner() prints "%s is owned by %s %s\\n" (path
  with its directory canonicalised by lrealpath(), name, version; colour strings are empty
  when stdout is not a terminal), `-q` only the name; a path nobody owns:
  "error: No package owns %s" on stderr, rc 1.
- dpkg: `dpkg-query -S` prints "pkg: path", "pkg:arch: path" (Multi-Arch), "a, b: dir", and
  "diversion by X from: path" / "diversion by X to: path" lines for a diverted file.
"""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap, package_owner

RPM_FEDORA = "bubblewrap\t0:0.12.0-1.fc44\n"
RPM_EPOCH = "bubblewrap\t2:0.6.3-1.el9\n"
RPM_MULTILIB = "bubblewrap\t0:0.6.3-1.el9\nbubblewrap\t0:0.6.3-1.el9\n"
RPM_NOT_OWNED = "file /usr/local/bin/bwrap is not owned by any package\n"
PACMAN_OWNED = "/usr/bin/bwrap is owned by bubblewrap 0.12.0-1\n"
PACMAN_EPOCH = "/usr/bin/bwrap is owned by bubblewrap-git 1:0.11.0.r12.gabc123-1\n"
PACMAN_SUID = "/usr/bin/bwrap is owned by bubblewrap-suid 0.11.0-1\n"
DPKG_PLAIN = "bubblewrap: /usr/bin/bwrap\n"
DPKG_MULTIARCH = "bubblewrap:amd64: /usr/bin/bwrap\n"
DPKG_DIVERTED = ("diversion by metnos-shim from: /usr/bin/bwrap\n"
                 "diversion by metnos-shim to: /usr/bin/bwrap.distrib\n"
                 "bubblewrap: /usr/bin/bwrap\n")
DPKG_SHARED_DIR = "coreutils, bubblewrap: /usr/bin\n"


@pytest.mark.parametrize("out, expected", [
    (RPM_FEDORA, ("bubblewrap", "0.12.0-1.fc44")),       # a zero epoch is dropped, as rpm -q does
    (RPM_EPOCH, ("bubblewrap", "2:0.6.3-1.el9")),
    (RPM_MULTILIB, ("bubblewrap", "0.6.3-1.el9")),
    (RPM_NOT_OWNED, None),
    ("", None),
    ("bubblewrap 0:0.12.0-1\n", None),                    # not our --queryformat: refused, not guessed
])
def test_parse_rpm_owner(out, expected):
    assert package_owner.parse_rpm_owner(out) == expected


@pytest.mark.parametrize("out, expected", [
    (PACMAN_OWNED, ("bubblewrap", "0.12.0-1")),
    (PACMAN_EPOCH, ("bubblewrap-git", "1:0.11.0.r12.gabc123-1")),
    (PACMAN_SUID, ("bubblewrap-suid", "0.11.0-1")),
    ("/opt/my dir/bwrap is owned by mybwrap 1.0-1\n", ("mybwrap", "1.0-1")),   # spaces in the path
    ("error: No package owns /usr/local/bin/bwrap\n", None),
    ("bubblewrap\n", None),                              # -Qqo output is not what we asked for
    ("/usr/bin/bwrap gehört zu bubblewrap 0.12.0-1\n", None),  # a translated line never parses
])
def test_parse_pacman_owner(out, expected):
    assert package_owner.parse_pacman_owner(out) == expected


@pytest.mark.parametrize("out, expected", [
    (DPKG_PLAIN, "bubblewrap"),
    (DPKG_MULTIARCH, "bubblewrap"),
    (DPKG_DIVERTED, "bubblewrap"),                       # not "diversion by metnos-shim from"
    (DPKG_SHARED_DIR, "coreutils"),
    ("dpkg-query: no path found matching pattern /usr/local/bin/bwrap\n", None),
])
def test_parse_dpkg_owner(out, expected):
    owners, _diverted = package_owner.parse_dpkg_search(out)       # the first owning package (diversions: _dpkg_owner)
    assert (owners[0] if owners else None) == expected


class FakeHost(object):
    """A runner answering as one distro's package tools would (formats above)."""

    def __init__(self, tools, answers):
        self.tools, self.answers, self.calls = set(tools), answers, []

    def tool_on(self, tool):
        return "/usr/bin/" + tool if tool in self.tools else None

    def run(self, argv, env=None, timeout=30):
        self.calls.append(list(argv))
        return self.answers.get(tuple(argv), (1, "", "not found"))


def test_package_facts_fedora():
    host = FakeHost(["rpm"], {("rpm", "-qf", "--qf", package_owner.RPM_OWNER_QF, "/usr/bin/bwrap"): (0, RPM_FEDORA,
                                                                                                     "")})
    assert package_owner.package_facts("/usr/bin/bwrap", runner=host.run, tool_on=host.tool_on) == \
        {"manager": "rpm", "name": "bubblewrap", "revision": "0.12.0-1.fc44"}
    assert host.calls == [["rpm", "-qf", "--qf", "%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\n", "/usr/bin/bwrap"]]


def test_package_facts_fedora_laptop_with_dpkg_installed():
    """dpkg-query exists (Fedora ships it for Debian tooling) but owns nothing: rpm answers."""
    host = FakeHost(["dpkg-query", "rpm"], {
        ("dpkg-query", "-S", "/usr/bin/bwrap"): (1, "", "dpkg-query: no path found matching pattern /usr/bin/bwrap"),
        ("rpm", "-qf", "--qf", package_owner.RPM_OWNER_QF, "/usr/bin/bwrap"): (0, RPM_EPOCH, "")})
    assert package_owner.package_facts("/usr/bin/bwrap", runner=host.run, tool_on=host.tool_on) == \
        {"manager": "rpm", "name": "bubblewrap", "revision": "2:0.6.3-1.el9"}


def test_package_facts_arch_and_not_owned():
    host = FakeHost(["pacman"], {("pacman", "-Qo", "/usr/bin/bwrap"): (0, PACMAN_OWNED, "")})
    assert package_owner.package_facts("/usr/bin/bwrap", runner=host.run, tool_on=host.tool_on) == \
        {"manager": "pacman", "name": "bubblewrap", "revision": "0.12.0-1"}
    nobody = FakeHost(["pacman", "rpm"], {})
    assert package_owner.package_facts("/usr/local/bin/bwrap", runner=nobody.run, tool_on=nobody.tool_on) == {}
    assert nobody.calls == [["rpm", "-qf", "--qf", package_owner.RPM_OWNER_QF, "/usr/local/bin/bwrap"],
                            ["pacman", "-Qo", "/usr/local/bin/bwrap"]]


def test_package_facts_resolves_a_symlinked_path(tmp_path):
    """A PATH entry that is a symlink to the packaged binary: asked as given, then resolved."""
    link = tmp_path / "bwrap"
    target = tmp_path / "real-bwrap"
    target.write_text("")
    link.symlink_to(target)
    host = FakeHost(["pacman"], {("pacman", "-Qo", str(target)): (0, PACMAN_OWNED, "")})
    assert package_owner.package_facts(str(link), runner=host.run, tool_on=host.tool_on)["name"] == "bubblewrap"
    assert host.calls == [["pacman", "-Qo", str(link)], ["pacman", "-Qo", str(target)]]


def test_default_runner_parses_in_the_c_locale():
    """Every package query goes through a runner that forces the C locale (translated output
    would not parse: see the German line above)."""
    rc, out, _ = bwrap.default_runner(["sh", "-c", 'echo "$LC_ALL $LANG $LANGUAGE"'], env=None)
    assert (rc, out.split()) == (0, ["C", "C", "C"])
