"""The diagnostics reference is generated from the registry and cannot drift."""
import importlib.util
import os

from ansible.module_utils.metnos_sandbox import diagnostics as D

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _gen():
    spec = importlib.util.spec_from_file_location("gen", os.path.join(ROOT, "scripts", "gen-diagnostics-doc.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.render()


def test_docs_match_registry():
    with open(os.path.join(ROOT, "docs", "diagnostics.md")) as handle:
        committed = handle.read()
    assert committed == _gen(), "docs/diagnostics.md is stale: run `make docs`"


def test_registry_entries_complete():
    for code in D.REGISTRY.values():
        assert code.code.islower() and " " not in code.code
        assert code.severity in D.SEVERITIES
        assert code.rule.startswith("R-")
        assert code.title and code.cause and code.detection and code.remediation
