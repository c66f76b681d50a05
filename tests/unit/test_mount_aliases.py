"""Bind mounts are aliases realpath cannot see: the same folder under two paths. A host tree with
the bind mounts an admin plausibly has (tests/helpers/mount_aliases.py: the Metnos install on a
data disk bind-mounted at its configured path, /etc or a part of it mounted again elsewhere, a bind
of /, /proc or /run) is built in a private mount namespace (unshare, root only); every case is
rendered there by every in-process face. A path at, below or above a refused tree *through a bind
mount* is refused like the tree itself (scope_mount_alias; host paths: host_path_refused), and the
final check withholds an argv with such a bind. Real bwrap evidence (the write through the alias
lands in the protected tree) is in tests/integration/test_profile_objects_real.py."""
import os
import shutil

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import paths
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    host_context,
    mounts,
    renderer,
)
from helpers import mount_aliases

needs_namespace = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                                     reason="bind mounts need root and unshare (a private mount namespace)")
ACTIVE = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return mount_aliases.run(str(tmp_path_factory.mktemp("mounts")))


@needs_namespace
@pytest.mark.parametrize("case_id", [c[0] for c in mount_aliases.CASES])
def test_every_face_gives_the_expected_decision(results, case_id):
    got = results[case_id]
    expect = ["wrapped", None] if got["expect"] == "wrapped" else ["refused", got["expect"]]
    assert got["core"] == expect, got["messages"]
    for face in ("filter", "probe", "audit"):
        if face in got:
            assert got[face] == got["core"], (face, got)
    for message in got["messages"]:
        assert "bind mount" in message or got["expect"] == "host_path_refused" or "symlink" in message, message


@needs_namespace
@pytest.mark.parametrize("weakening", sorted(mount_aliases.WEAKENINGS))
def test_final_check_catches_a_bind_through_an_alias(results, weakening):
    assert results["final_check"]["unchanged"] == []
    assert results["final_check"][weakening], "the final check missed %s" % weakening


MOUNTINFO = (
    "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
    "30 22 254:0 /data/metnos /srv/metnos rw,relatime - ext4 /dev/vda rw\n"
    "31 22 254:0 /etc/ssh /srv/with\\040space rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "32 22 0:4 net:[4026532177] /run/netns/x rw - nsfs nsfs rw\n"
    "33 22 0:21 / /proc rw - proc proc rw\n"
    "34 22 0:21 /sys /srv/procsys rw - proc proc rw\n"
    "35 22 254:0 / /mnt/host rw - ext4 /dev/vda rw\n"
    "cut line\n")


def test_mount_table_aliases_from_a_mountinfo_file(tmp_path):
    """The parser and the alias rules on a written mountinfo (escapes, optional fields, nsfs roots)."""
    path = tmp_path / "mountinfo"
    path.write_text(MOUNTINFO)
    table = mounts.MountTable.read(str(path))
    assert table.complete and table.count == 6
    assert table.aliases("/srv/metnos/runtime") == ["/data/metnos/runtime", "/mnt/host/data/metnos/runtime",
                                                   "/mnt/host/srv/metnos/runtime"]
    assert "/srv/with space" in table.aliases("/etc") and "/srv/with space" not in table.aliases("/etc", False)
    assert table.aliases("/etc/ssh/sshd_config") == ["/mnt/host/etc/ssh/sshd_config", "/srv/with space/sshd_config"]
    assert table.aliases("/proc") == ["/mnt/host/proc", "/srv/procsys"]
    assert table.aliases("/", parts=False) == ["/mnt/host"]
    assert mounts.MountTable.read(str(tmp_path / "missing")).aliases("/etc") == []


def test_a_mount_table_too_large_to_read_whole_refuses_every_profile(monkeypatch):
    monkeypatch.setattr(mounts, "MAX_MOUNTINFO_BYTES", 64)
    prof = renderer.render_safe({"name": "ex", "origin": "t", "capabilities": []}, host_context.HostContext({}), {},
                                ACTIVE)
    assert prof["refusal"] == "host_path_refused" and "mountinfo" in prof["diagnostics"][0]["message"]


_COMPONENTS = ["a", "ab", "a.b", "etc", "etc2", "-"]


def _path(parts):
    return "/" + "/".join(parts)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_COMPONENTS), max_size=4).map(_path), max_size=6),
       st.lists(st.sampled_from(_COMPONENTS), max_size=5).map(_path))
@example(["/etc"], "/etc2")
@example(["/etc/"], "/etc/a")
@example(["/"], "/a")
@example(["/a/b"], "/a")
def test_roots_is_the_rule_of_under_and_related(roots, path):
    """paths.(Related)Roots (the renderer's fast form, a set and a prefix tuple) answers exactly what
    paths.under / paths.related answer root by root ('/etc2' is not under '/etc'; '/' holds all)."""
    fast = paths.RelatedRoots(roots)
    assert fast.under(path) == any(paths.under(path, r) for r in roots), (roots, path)
    assert fast.related(path) == any(paths.related(path, r) for r in roots), (roots, path)
    # the labelled form's which() (the renderer names the tree it matched): the same rule, in order
    labelled = host_context.TreeSet(host_context.Labelled("t%d" % i, r) for i, r in enumerate(roots))
    assert labelled.which(path) == [e for e in labelled.labelled if paths.related(path, e.root)], (roots, path)
    assert labelled.which(path, related=False) == [e for e in labelled.labelled if paths.under(path, e.root)]
