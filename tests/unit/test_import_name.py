"""One import name for the core: ``ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox``,
the collection's module_utils. Modules get it from Ansible's packager, the filter and action plugins from
Ansible's collection loader (the checkout is the collection through collections/), tests and scripts from
scripts/core_path.py. Only files that run where Ansible is not installed keep the bare ``metnos_sandbox``
(scripts/one-import-name.py KEEP, with the reason); ``python3 scripts/one-import-name.py`` rewrites any
other, and the old ``ansible.module_utils.metnos_sandbox`` too. No plugin appends to
``ansible.module_utils.__path__``."""
import importlib
import importlib.util
import os
import re
import sys

import pytest

from conftest import ROOT

NAME = "ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox"
DIRS = ("tests", "scripts", "filter_plugins", "library", "action_plugins", "roles")
OLD = re.compile(r"\bansible\.module_utils\.metnos_sandbox\b|sys\.path\.insert\(.*\"module_utils\"|"
                 r"ansible\.module_utils\.__path__")


def _tool():
    spec = importlib.util.spec_from_file_location("one_import_name", os.path.join(ROOT, "scripts",
                                                                                   "one-import-name.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_second_name_outside_the_documented_list():
    tool = _tool()
    found = []
    for path in tool.files([os.path.join(ROOT, d) for d in DIRS]):
        rel = os.path.relpath(path, ROOT)
        if rel in tool.KEEP or rel == "tests/unit/test_import_name.py":
            continue
        with open(path) as handle:
            text = handle.read()
        found += ["%s:%d: bare import" % (rel, n) for n in sorted(tool.bare_imports(text))]
        found += ["%s: %s" % (rel, m.group(0).strip()) for m in OLD.finditer(text)]
    assert not found, "the core's old import names (python3 scripts/one-import-name.py fixes it):\n" + "\n".join(found)


def test_the_rewrite_is_mechanical_and_idempotent(tmp_path):
    tool = _tool()
    src = tmp_path / "t.py"
    src.write_text("from metnos_sandbox.profile import profile as P\n"
                   "def f():\n    from metnos_sandbox.host.bwrap import run\n"
                   "BOOT = 'from metnos_sandbox.audit import audit'\n"
                   "from ansible.module_utils.metnos_sandbox.base import diagnostics as D\n"
                   "patch = 'ansible.module_utils.metnos_sandbox.host.bwrap.which'\n")
    want = ("from %s.profile import profile as P\ndef f():\n    from %s.host.bwrap import run\n"
            "BOOT = 'from metnos_sandbox.audit import audit'\n"     # a string, run where Ansible is not: kept
            "from %s.base import diagnostics as D\npatch = '%s.host.bwrap.which'\n") % (NAME, NAME, NAME, NAME)
    tool.main([str(src)])
    assert src.read_text() == want
    tool.main([str(src)])
    assert src.read_text() == want


@pytest.mark.parametrize("name", ["base.diagnostics", "profile.profile"])
def test_tests_see_the_core_under_its_one_name_from_the_checkout(name):
    module = importlib.import_module(NAME + "." + name)
    core = os.path.join(ROOT, "module_utils", "metnos_sandbox")
    assert os.path.realpath(module.__file__) == os.path.join(core, *name.split(".")) + ".py"


def test_the_old_name_is_the_same_module_objects_never_a_second_copy():
    """A file not yet rewritten gets the very objects of the one name (a second copy would have its own
    Diagnostic class, registry and monkeypatch targets)."""
    from ansible.module_utils.metnos_sandbox.profile import profile as old_profile

    one = importlib.import_module(NAME + ".profile.profile")
    assert old_profile is one
    assert importlib.import_module("ansible.module_utils.metnos_sandbox.base.diagnostics") is one.D
    assert not [m for m in sys.modules.values()
                if getattr(m, "__name__", "").startswith("ansible.module_utils.metnos_sandbox")]
