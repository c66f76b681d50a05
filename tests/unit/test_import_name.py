"""One import name for the core: ``ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox``,
the collection's module_utils. Modules get it from Ansible's packager, the filter and action plugins from
Ansible's collection loader (the checkout is the collection through collections/), tests and scripts from
scripts/core_path.py. Only files that run where Ansible is not installed keep the bare ``metnos_sandbox``
(tests/helpers/import_names.py KEEP, with the reason); no other file names the bare name or the old
``ansible.module_utils.metnos_sandbox``. No plugin appends to ``ansible.module_utils.__path__``."""
import importlib
import os
import re
import sys

import pytest

from conftest import ROOT
from helpers import import_names

NAME = import_names.NAME
DIRS = ("tests", "scripts", "benchmarks", "filter_plugins", "library", "action_plugins", "callback_plugins", "roles")
OLD = re.compile(r"\bansible\.module_utils\.metnos_sandbox\b|sys\.path\.insert\(.*\"module_utils\"|"
                 r"ansible\.module_utils\.__path__")


def test_no_second_name_outside_the_documented_list():
    found = []
    for path in import_names.files([os.path.join(ROOT, d) for d in DIRS]):
        rel = os.path.relpath(path, ROOT)
        if rel in import_names.KEEP or rel == "tests/unit/test_import_name.py":
            continue
        with open(path) as handle:
            text = handle.read()
        found += ["%s:%d: bare import" % (rel, n) for n in sorted(import_names.bare_imports(text))]
        found += ["%s: %s" % (rel, m.group(0).strip()) for m in OLD.finditer(text)]
    assert not found, "the core's old import names:\n" + "\n".join(found)


@pytest.mark.parametrize("name", ["base.diagnostics", "profile.renderer"])
def test_tests_see_the_core_under_its_one_name_from_the_checkout(name):
    module = importlib.import_module(NAME + "." + name)
    core = os.path.join(ROOT, "module_utils", "metnos_sandbox")
    assert os.path.realpath(module.__file__) == os.path.join(core, *name.split(".")) + ".py"


def test_the_old_name_is_the_same_module_objects_never_a_second_copy():
    """A file not yet rewritten gets the very objects of the one name (a second copy would have its own
    Diagnostic class, registry and monkeypatch targets)."""
    from ansible.module_utils.metnos_sandbox.profile import renderer

    one = importlib.import_module(NAME + ".profile.renderer")
    assert renderer is one
    assert importlib.import_module("ansible.module_utils.metnos_sandbox.base.diagnostics") is one.diagnostics
    assert not [m for m in sys.modules.values()
                if getattr(m, "__name__", "").startswith("ansible.module_utils.metnos_sandbox")]
