"""A host's verdict is stored in exactly one function (issue 53, Acceptance): base/verdicts.py::decide.

The AST of every module of the host's verdict flow (the audit, the monitor, the report, its waivers and merge,
the probe) is walked for every store of a ``verdict`` key: ``x["verdict"] = ...`` (alone or in a tuple),
``x.update(verdict=...)`` and a ``"verdict": ...`` entry of a dict literal. Each must be in ``decide``, or copy a
verdict decide stored (the value reads a ``verdict`` key: ``result["verdict"]``). The renderers only read it; the
sections of the role's summary and of the facts are not a host's verdict (report/site_summary.py, host/facts.py).
A planted second assignment (a waiver setting the verdict again, a literal ``"fail"``) makes it fail.

Where decide itself is called is listed too (DECIDERS below, each call with why that stage decides): host side
where the record leaves the host, report side once per report after the fleet's findings and the waivers; a
planted call elsewhere makes it fail.
"""
import ast
import os
import textwrap

import pytest

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORE = os.path.join(ROOT, "module_utils", "metnos_sandbox")
FLOW = ("audit", "monitor", "probe", "report")       # packages the host's verdict flows through
THE_ONE = "base/verdicts.py::decide"


def _reads_a_verdict(node):
    """A copy of a decided verdict: ``x["verdict"]`` or ``x.get("verdict")``."""
    if isinstance(node, ast.Subscript):
        key = node.slice.value if isinstance(node.slice, ast.Index) else node.slice    # 3.8's Index
        return isinstance(key, ast.Constant) and key.value == "verdict"
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "verdict")


def _is_verdict_key(node):
    key = node.slice.value if isinstance(node.slice, ast.Index) else node.slice
    return isinstance(key, ast.Constant) and key.value == "verdict"


def stores(source, name):
    """[(where, line)] of every store of a ``verdict`` key in ``source`` that is not a copy of a decided one."""
    found = []

    def visit(node, where):
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = "%s::%s" % (name, child.name)
            if isinstance(child, ast.Assign):
                for target in child.targets:
                    pairs = (list(zip(target.elts, child.value.elts)) if isinstance(target, ast.Tuple) and
                             isinstance(child.value, ast.Tuple) else [(target, child.value)])
                    for each, value in pairs:
                        if isinstance(each, ast.Subscript) and _is_verdict_key(each) and not _reads_a_verdict(value):
                            found.append((inner, child.lineno))
            elif isinstance(child, ast.Dict):
                for key, value in zip(child.keys, child.values):
                    if isinstance(key, ast.Constant) and key.value == "verdict" and not _reads_a_verdict(value):
                        found.append((inner, child.lineno))
            elif isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and \
                    child.func.attr in ("update", "setdefault"):
                if any(k.arg == "verdict" and not _reads_a_verdict(k.value) for k in child.keywords) or (
                        child.func.attr == "setdefault" and child.args and isinstance(child.args[0], ast.Constant)
                        and child.args[0].value == "verdict"):
                    found.append((inner, child.lineno))
            visit(child, inner)
    visit(ast.parse(source), name)
    return found


def flow_modules():
    for package in FLOW:
        folder = os.path.join(CORE, package)
        for file_name in sorted(os.listdir(folder)):
            if file_name.endswith(".py") and not (package == "report" and file_name == "site_summary.py"):
                yield "%s/%s" % (package, file_name), os.path.join(folder, file_name)
    yield "base/verdicts.py", os.path.join(CORE, "base", "verdicts.py")


def all_stores():
    out = []
    for name, path in flow_modules():
        with open(path, encoding="utf-8") as handle:
            out.extend(stores(handle.read(), name))
    return out


def test_the_verdict_is_stored_in_exactly_one_function():
    found = all_stores()
    assert set(where for where, _line in found) == {THE_ONE}, found


PLANTED = [
    # the waiver special case, back: a verdict set again after waivers
    ("report/waivers.py", """
        def waive(hosts):
            for h in hosts:
                h["verdict"] = verdict(h["diagnostics"], False)
     """),
    # the monitor's output failure, as it was: a literal in a tuple
    ("monitor/proof.py", """
        def _write(record):
            record["proven"], record["verdict"] = False, "fail"
     """),
    # a record born with a placeholder verdict
    ("report/record.py", """
        def from_result(name):
            return {"host": name, "verdict": None}
     """),
    ("probe/run.py", """
        def finish(out):
            out.update(verdict="fail")
     """),
]


@pytest.mark.parametrize("name,planted", PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_second_assignment_fails_the_guard(name, planted):
    found = all_stores() + stores(textwrap.dedent(planted), name)
    assert set(where for where, _line in found) != {THE_ONE}
    assert [where for where, _line in stores(textwrap.dedent(planted), name)][0].startswith(name + "::")


def test_a_copy_of_the_decided_verdict_is_not_a_second_decision():
    """The canary's other side: the monitor's record copies the audit's decided verdict (a read, not a store)."""
    copy = 'def run(result):\n    return {"verdict": result["verdict"], "other": result.get("verdict")}\n'
    assert stores(copy, "monitor/proof.py") == []


# Where decide runs (issue 53 item 2: "one function ... runs in one place"). It runs where a record's findings are
# final for the stage that holds it; a stage that adds findings to a record decided earlier decides it again over
# all of them (decide is a pure function of the findings that count, so deciding again is a recomputation, never a
# second truth). Each call, and why that stage cannot leave it to another:
DECIDERS = {
    "audit/host_audit.py::audit_host":
        "host side: the module's result (metnos_audit, and the monitor's input) leaves the host with its verdict; "
        "the monitor on a host has no controller to decide later",
    "audit/host_audit.py::_service":
        "a section's verdict (the service's own result, shown as the service section), not the host's",
    "audit/containment.py::record":
        "the other birth of a host record: a host that is not Linux gets its record on the controller, no "
        "audit_host ran",
    "monitor/proof.py::judge":
        "the monitor adds its own findings (monitor_*) to the host's record after audit_host decided",
    "monitor/proof.py::_write":
        "an output that cannot be written adds monitor_output_failed after judge: the proof written says it",
    "report/document.py::build_from_hosts":
        "controller side: the fleet's findings (bwrap_package_drift) are added and waived findings moved out; the "
        "verdict every report shows is decided here, once per report, after both",
}


def decide_calls(source, name):
    """[where] of every call of verdicts.decide (or a decide imported from verdicts) in ``source``."""
    found = []
    imported = False

    def visit(node, where):
        nonlocal imported
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = "%s::%s" % (name, child.name)
            if isinstance(child, ast.ImportFrom) and (child.module or "").endswith("verdicts") and \
                    any(alias.name == "decide" for alias in child.names):
                imported = True
            if isinstance(child, ast.Call):
                func = child.func
                attribute = isinstance(func, ast.Attribute) and func.attr == "decide" and \
                    isinstance(func.value, ast.Name) and func.value.id == "verdicts"
                if attribute or (imported and isinstance(func, ast.Name) and func.id == "decide"):
                    found.append(inner)
            visit(child, inner)
    visit(ast.parse(source), name)
    return found


def core_modules():
    for folder, _dirs, files in sorted(os.walk(CORE)):
        for file_name in sorted(files):
            if file_name.endswith(".py"):
                path = os.path.join(folder, file_name)
                yield os.path.relpath(path, CORE), path


def all_decide_calls():
    out = []
    for name, path in core_modules():
        with open(path, encoding="utf-8") as handle:
            out.extend(decide_calls(handle.read(), name))
    return out


def test_decide_runs_only_where_a_records_findings_are_final():
    found = all_decide_calls()
    assert sorted(found) == sorted(DECIDERS), (sorted(set(found) - set(DECIDERS)), sorted(set(DECIDERS) - set(found)))


@pytest.mark.parametrize("planted", [
    'from ..base import verdicts\ndef waive(hosts):\n    for h in hosts:\n        verdicts.decide(h)\n',
    'from ..base.verdicts import decide\ndef waive(hosts):\n    return [decide(h) for h in hosts]\n',
], ids=["attribute", "imported"])
def test_a_planted_decide_call_fails_the_guard(planted):
    """The canary: a second decision on the report side (in the waivers, before the fleet's findings are in)."""
    assert decide_calls(planted, "report/waivers.py") == ["report/waivers.py::waive"]
    assert sorted(all_decide_calls() + decide_calls(planted, "report/waivers.py")) != sorted(DECIDERS)
