"""The toolkit's core under its one import name,
``ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox``, for code that runs on the
controller outside Ansible's own commands (pytest, scripts/).

The checkout is the collection metnos.sandbox (collections/ansible_collections/metnos/sandbox/, committed
symlinks). Ansible's commands find it through ansible.cfg's ``collections_path``; everything else calls
``use_core()`` once, which installs Ansible's own collection loader over the same paths (as ansible-test
does for a collection's unit tests):

    sys.path.insert(0, os.path.join(ROOT, "scripts"))   # not needed in scripts/ itself
    import core_path
    core_path.use_core()
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics as D

The old name ``ansible.module_utils.metnos_sandbox`` resolves, for a file not yet rewritten, to the very same
module objects (never a second copy of the core, whose
classes and registries would then differ); tests/unit/test_import_name.py fails on any file using it.
"""
import importlib
import importlib.abc
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox"
OLD = "ansible.module_utils.metnos_sandbox"


def collection_paths(root=ROOT):
    """Where the collections live for this checkout: the checkout itself, then the test-only collections."""
    return [os.path.join(root, "collections"), os.path.join(root, ".ansible", "collections")]


class _SameObjects(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``OLD[.x]`` -> the module object imported as ``NAME[.x]``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == OLD or fullname.startswith(OLD + "."):
            return importlib.util.spec_from_loader(fullname, self, is_package=fullname == OLD)
        return None

    def create_module(self, spec):
        return importlib.import_module(NAME + spec.name[len(OLD):])

    def exec_module(self, module):
        """Already executed under its one name."""


def use_core(root=ROOT):
    """Install Ansible's collection loader over ``collection_paths(root)`` (idempotent); return the core's
    directory."""
    from ansible.utils.collection_loader import AnsibleCollectionConfig
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
    if AnsibleCollectionConfig.collection_finder is None:
        _AnsibleCollectionFinder(paths=collection_paths(root))._install()
    if not any(isinstance(f, _SameObjects) for f in sys.meta_path):
        sys.meta_path.insert(0, _SameObjects())
    return os.path.join(root, "module_utils", "metnos_sandbox")
