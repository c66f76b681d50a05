"""docs/threat-model.md is kept true: every call in the toolkit's code that runs a program, opens a path or
renames one is named there (file::function), and every name there still exists (issue 49 item 1)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))
import root_steps  # noqa: E402

DOC = os.path.join(root_steps.ROOT, "docs", "threat-model.md")


def _doc():
    with open(DOC, encoding="utf-8") as handle:
        return handle.read()


def test_every_root_step_is_in_the_threat_model():
    named = root_steps.named_in(_doc())
    missing = sorted("%s (%s)" % (step, ", ".join(sorted(kinds)))
                     for step, kinds in root_steps.all_steps().items() if step not in named)
    assert not missing, ("root steps docs/threat-model.md does not name (add a row: what the step touches, who can "
                         "write every component of it, how it is kept safe):\n  " + "\n  ".join(missing))


def test_the_threat_model_names_no_step_that_is_gone():
    steps = root_steps.all_steps()
    stale = sorted(name for name in root_steps.named_in(_doc()) if name not in steps)
    assert not stale, "docs/threat-model.md names steps that no longer exist: " + ", ".join(stale)


@pytest.mark.parametrize("source, found", [
    ("import subprocess\ndef f():\n    subprocess.run(['x'])\n", {("f", "run")}),
    ("import os\nclass A:\n    def g(self):\n        os.replace('a', 'b')\n", {("A.g", "rename")}),
    ("def h():\n    with open('/etc/shadow') as f:\n        pass\n", {("h", "open")}),
    ("import os\nos.open('/x', os.O_RDONLY)\n", {("<module>", "open")}),
    ("def k(module):\n    module.run_command(['id'])\n", {("k", "run")}),
    ("import os\ndef e():\n    os.execv('/bin/sh', ['sh'])\n", {("e", "run")}),
    ("import os\ndef quiet():\n    os.path.join('a', 'b')\n", set()),
])
def test_the_walker_sees_each_kind_of_step(source, found):
    """The planted steps are seen (a walker that missed one would let an unlisted root step pass)."""
    assert root_steps.steps_in(source) == found


def test_an_unlisted_step_fails(monkeypatch):
    """A step planted in the code's listing but absent from the doc is reported."""
    real = root_steps.all_steps()
    monkeypatch.setattr(root_steps, "all_steps", lambda: dict(real, **{"host/planted.py::leak": {"open"}}))
    with pytest.raises(AssertionError, match="host/planted.py::leak"):
        test_every_root_step_is_in_the_threat_model()
