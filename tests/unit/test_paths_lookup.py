"""base/paths.lookup: how the kernel resolves a path, name by name - the directories it looks each name up in
(links' directories included), where it leads, the first missing name, and the kernel's refusals - checked
against the kernel itself (os.path.realpath with strict resolution, open) on real trees."""
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import paths


@pytest.fixture
def tree(tmp_path):
    root = os.path.realpath(str(tmp_path))
    for folder in ("a/b", "c/d", "e"):
        os.makedirs(os.path.join(root, folder))
    os.symlink(os.path.join(root, "c", "d"), os.path.join(root, "a", "link"))       # absolute
    os.symlink("../../e", os.path.join(root, "c", "d", "up"))                         # relative, with '..'
    os.symlink("loop2", os.path.join(root, "loop1"))
    os.symlink("loop1", os.path.join(root, "loop2"))
    open(os.path.join(root, "e", "file"), "w").close()
    return root


def test_a_chain_of_links_lists_every_directory_a_name_is_looked_up_in(tree):
    """<tree>/a/link/up/file: 'link' is looked up in a, 'up' in c/d (where link leads), 'file' in e (up is
    ../../e from c/d: its '..' climbs from where the link leads, not from a); the kernel's realpath agrees."""
    path = os.path.join(tree, "a", "link", "up", "file")
    found = paths.lookup(path)
    assert found.resolved == os.path.realpath(path, strict=True) == os.path.join(tree, "e", "file")
    assert found.missing is None and found.error is None
    for folder in (tree, os.path.join(tree, "a"), os.path.join(tree, "c", "d"), os.path.join(tree, "c"),
                   os.path.join(tree, "e")):
        assert folder in found.dirs, folder
    assert found.dirs[0] == "/" and len(found.dirs) == len(set(found.dirs))


def test_the_first_missing_name_and_the_kernels_refusals(tree):
    missing = paths.lookup(os.path.join(tree, "a", "link", "nothing", "deeper"))
    assert missing.resolved is None and missing.missing == os.path.join(tree, "c", "d", "nothing")
    loop = paths.lookup(os.path.join(tree, "loop1", "x"))
    assert loop.error == "links" and loop.resolved is None
    with pytest.raises(OSError):
        open(os.path.join(tree, "loop1", "x"))
    assert paths.lookup(os.path.join(tree, "e", "file", "x")).error == "notdir"
    assert paths.lookup("/" + "x" * 256).error == "long"
    assert paths.lookup("//usr/./bin/").resolved == "/usr/bin"
    assert paths.lookup("/..").resolved == "/"
