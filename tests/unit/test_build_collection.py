"""The checkout as the collection: collections/ansible_collections/metnos/sandbox/ is committed symlinks into
the tree, every one resolving inside the checkout, and ``make collection`` (scripts/build-collection.py)
copies exactly what they reach, links followed, bytecode left out, no file list of its own: a file added to
the core (a new package included) is in the collection without any change here."""
import os
import tarfile

import pytest

from conftest import ROOT
from helpers import faces

BUILD = faces.load("scripts/build-collection.py", "build_collection")
TREE = BUILD.TREE


def test_every_link_of_the_tree_resolves_inside_the_checkout():
    links = []
    for base, dirs, names in os.walk(TREE):
        for name in dirs + names:
            path = os.path.join(base, name)
            if os.path.islink(path):
                links.append(path)
                target = os.path.realpath(path)
                assert os.path.exists(target), path
                assert target.startswith(ROOT + os.sep) and not target.startswith(TREE), (path, target)
    assert len(links) >= 10


def _sources(top):
    out = set()
    for base, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        out |= set(os.path.relpath(os.path.join(base, n), top) for n in names if not n.endswith(".pyc"))
    return out


def test_the_layout_is_what_the_links_reach(tmp_path):
    core = os.path.join(ROOT, "module_utils", "metnos_sandbox")
    cache = os.path.join(core, "__pycache__")
    made = not os.path.isdir(cache)
    planted = os.path.join(cache, "planted.cpython-312.pyc")
    os.makedirs(cache, exist_ok=True)
    open(planted, "w").close()
    try:
        copied = set(BUILD.copy_layout(str(tmp_path / "layout")))
    finally:
        os.unlink(planted)
        if made:
            os.rmdir(cache)
    assert set("plugins/module_utils/metnos_sandbox/" + f for f in _sources(core)) <= copied
    assert set("plugins/modules/" + f for f in _sources(os.path.join(ROOT, "library"))) <= copied
    assert set("roles/" + f for f in _sources(os.path.join(ROOT, "roles"))) <= copied
    assert not [f for f in copied if "__pycache__" in f or f.endswith(".pyc")]
    assert {"galaxy.yml", "meta/runtime.yml", "LICENSE", "README.md", "CHANGELOG.md",
            "changelogs/changelog.yaml", "tests/sanity/ignore-2.21.txt"} <= copied


def test_a_dangling_link_stops_the_build(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "galaxy.yml").symlink_to(tmp_path / "nowhere")
    with pytest.raises(SystemExit, match="dangling link"):
        BUILD.copy_layout(str(tmp_path / "layout"), tree=str(tree))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    path = BUILD.build(str(tmp_path_factory.mktemp("dist")))
    with tarfile.open(path) as archive:
        return os.path.basename(path), archive.getnames()


@pytest.mark.parametrize("name", ["plugins/modules/sandbox_profile.py", "plugins/action/metnos_audit.py",
                                  "plugins/filter/shell_join.yml", "roles/bwrap_host/meta/main.yml", "MANIFEST.json"])
def test_the_built_tarball_holds_the_plugins(built, name):
    assert built[0].startswith("metnos-sandbox-") and name in built[1]
