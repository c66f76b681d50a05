"""Package ownership of bwrap through dpkg, against real dpkg-query/dpkg-divert.

The fault cases (a diverted bwrap, an unowned one) are planted in a dpkg database of their own
(`--admindir` in a temp dir): real dpkg answers, without touching this machine's package database.
"""
import shutil

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap, package_owner

pytestmark = pytest.mark.skipif(not shutil.which("dpkg-query"), reason="dpkg hosts only")

PKG = """Package: {name}
Status: install ok installed
Priority: optional
Section: admin
Maintainer: Nobody <nobody@example.org>
Architecture: all
Version: {version}
Description: planted for a test

"""


def dpkg_db(tmp_path, packages, diversions=()):
    """packages: {name: (version, [paths])}; diversions: [(from, to, package or ':' for local)]."""
    (tmp_path / "info").mkdir()
    (tmp_path / "updates").mkdir()
    (tmp_path / "status").write_text("".join(PKG.format(name=n, version=v) for n, (v, _p) in packages.items()))
    for name, (_v, paths) in packages.items():
        (tmp_path / "info" / ("%s.list" % name)).write_text("/.\n/usr\n/usr/bin\n" + "".join(p + "\n" for p in paths))
    (tmp_path / "diversions").write_text("".join("%s\n%s\n%s\n" % d for d in diversions))
    calls = []

    def runner(argv, env=None, timeout=30):
        if argv[0] in ("dpkg-query", "dpkg-divert"):
            argv = [argv[0], "--admindir=%s" % tmp_path] + argv[1:]
        calls.append(argv)
        return bwrap.default_runner(argv, env=env, timeout=timeout)
    return runner, calls


def test_expected_owner_answered_from_its_own_file_list(tmp_path):
    runner, calls = dpkg_db(tmp_path, {"bubblewrap": ("0.8.0-2+deb12u1", ["/usr/bin/bwrap"]),
                                       "other": ("1", ["/usr/bin/other"])})
    assert package_owner.package_facts("/usr/bin/bwrap", runner) == {"manager": "dpkg", "name": "bubblewrap",
                                                         "revision": "0.8.0-2+deb12u1"}
    assert not [c for c in calls if "-S" in c]          # no full search of every package's list


def test_another_owner_found_by_the_full_search(tmp_path):
    runner, calls = dpkg_db(tmp_path, {"bubblewrap": ("0.8.0", []), "bwrap-fork": ("2.0", ["/usr/bin/bwrap"])})
    assert package_owner.package_facts("/usr/bin/bwrap", runner)["name"] == "bwrap-fork"
    assert [c for c in calls if "-S" in c]


def test_diverting_package_owns_the_file_at_the_path(tmp_path):
    """`dpkg-divert --package bwrap-fork --rename /usr/bin/bwrap`: the file there is bwrap-fork's."""
    runner, _calls = dpkg_db(tmp_path, {"bubblewrap": ("0.8.0", ["/usr/bin/bwrap"]),
                                        "bwrap-fork": ("2.0", ["/usr/bin/bwrap"])},
                             [("/usr/bin/bwrap", "/usr/bin/bwrap.distrib", "bwrap-fork")])
    assert package_owner.package_facts("/usr/bin/bwrap", runner) == {"manager": "dpkg", "name": "bwrap-fork",
                                                                     "revision": "2.0"}


def test_locally_diverted_bwrap_is_not_packaged(tmp_path):
    """A local diversion moved bubblewrap's bwrap away: whatever is at /usr/bin/bwrap is nobody's,
    although bubblewrap's file list still names the path (the fast path must not believe it)."""
    runner, _calls = dpkg_db(tmp_path, {"bubblewrap": ("0.8.0", ["/usr/bin/bwrap"])},
                             [("/usr/bin/bwrap", "/usr/bin/bwrap.distrib", ":")])
    assert package_owner.package_facts("/usr/bin/bwrap", runner) == {}


def test_unlisted_path_is_not_packaged(tmp_path):
    runner, _calls = dpkg_db(tmp_path, {"bubblewrap": ("0.8.0", ["/usr/bin/bwrap"])})
    assert package_owner.package_facts("/usr/local/bin/bwrap", runner) == {}


def test_fast_path_agrees_with_the_full_search_on_this_host(monkeypatch):
    """This machine's real database: the same answer with and without the expected-owner shortcut."""
    fast = package_owner.package_facts("/usr/bin/bwrap")
    monkeypatch.setattr(package_owner, "DPKG_EXPECTED_OWNERS", ())
    assert package_owner.package_facts("/usr/bin/bwrap") == fast and fast["name"] == "bubblewrap"
