"""One import name for the core: ``ansible.module_utils.metnos_sandbox``. Modules get it from
Ansible's packager, the filter plugin appends module_utils/ to ``ansible.module_utils.__path__``
itself, tests and scripts through scripts/core_path.py. Only files that run where Ansible is not
installed keep the bare ``metnos_sandbox`` (scripts/one-import-name.py KEEP, with the reason);
``python3 scripts/one-import-name.py`` rewrites any other."""
import importlib.util
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIRS = ("tests", "scripts", "filter_plugins", "library", "roles")
OLD = re.compile(r"^\s*(from metnos_sandbox[\s.]|import metnos_sandbox\b)|sys\.path\.insert\(.*\"module_utils\"", re.M)


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
            found += ["%s: %s" % (rel, m.group(0).strip()) for m in OLD.finditer(handle.read())]
    assert not found, "the core's old import name (python3 scripts/one-import-name.py fixes it):\n" + "\n".join(found)


def test_the_rewrite_is_mechanical(tmp_path):
    tool = _tool()
    src = tmp_path / "t.py"
    src.write_text("from metnos_sandbox import profile as P\n    from metnos_sandbox.bwrap import run\n")
    tool.main([str(src)])
    assert src.read_text() == ("from ansible.module_utils.metnos_sandbox import profile as P\n"
                               "    from ansible.module_utils.metnos_sandbox.bwrap import run\n")


@pytest.mark.parametrize("name", ["diagnostics", "profile"])
def test_tests_see_the_core_under_its_one_name(name):
    module = importlib.import_module("ansible.module_utils.metnos_sandbox." + name)
    assert module.__file__.startswith(os.path.join(ROOT, "module_utils", "metnos_sandbox"))
