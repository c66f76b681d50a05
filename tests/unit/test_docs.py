"""The diagnostics reference is generated from the registry and cannot drift."""
import os

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from helpers import faces
from helpers.paths import ROOT


def _gen():
    return faces.load("scripts/gen-diagnostics-doc.py", "gen").render()


def test_docs_match_registry():
    with open(os.path.join(ROOT, "docs", "diagnostics.md")) as handle:
        committed = handle.read()
    assert committed == _gen(), "docs/diagnostics.md is stale: run `make docs`"


def test_registry_entries_complete():
    for code in diagnostics.REGISTRY.values():
        assert code.code.islower() and " " not in code.code
        assert code.severity in diagnostics.SEVERITIES
        assert code.rule.startswith("R-")
        assert code.title and code.cause and code.detection
        # A fix: its commands, or (a fix no command makes, issue 42: remediation as data) its words in the hint.
        assert code.remediation or code.hint, code.code
