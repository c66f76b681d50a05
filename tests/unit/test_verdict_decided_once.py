"""A host's verdict is decided once (issue 53, Acceptance and item 2: "one function maps findings (after waivers)
to the host's verdict, and it runs in one place").

1. The mapping runs in one place: ``verdicts.verdict`` (findings -> verdict) is called by base/verdicts.py::decide
   alone, in the whole core, the plugins and the modules. A planted second call (a waiver computing a verdict)
   makes it fail.
2. The verdict is stored in one function: the AST of every module of the host's verdict flow (the audit, the
   monitor, the report, its waivers and merge, the probe) is walked for every store of a ``verdict`` key:
   ``x["verdict"] = ...`` (alone or in a tuple), ``x.update(verdict=...)``, ``dict(x, verdict=...)`` and a
   ``"verdict": ...`` entry of a dict literal. Each must be in ``decide``, or copy a verdict decide attached (the
   value reads a ``verdict`` key). The sections of the role's summary and of the facts are not a host's verdict
   (report/site_summary.py, host/facts.py).
3. Once in a record's life: ``decide`` returns the record as output (a new mapping) and refuses one that already
   has a verdict (Decided), so no stage can decide a record again after another did; records carry findings only
   until they become output. Where that happens is listed (OUTPUTS below): each call with why it is an output.
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
            elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id == "dict":
                if any(k.arg == "verdict" and not _reads_a_verdict(k.value) for k in child.keywords):
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
    # a copy that sets it: the monitor's record with its own verdict beside the audit's
    ("monitor/proof.py", """
        def output(record):
            return dict(record, verdict="fail" if record["errors"] else "pass")
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


# Where a record becomes output (decide's callers). Records carry findings only until then; each is decided once
# in its life (decide refuses a record that has a verdict). Each call, and why it is an output:
OUTPUTS = {
    "audit/host_audit.py::finish":
        "a host's result as output: the metnos_audit module's (audit_host), the monitor's stored result (its own "
        "findings and its outputs' in), the non-Linux record the metnos_audit action makes",
    "report/document.py::build_from_hosts":
        "the report's host records as output: the fleet's findings (bwrap_package_drift) added and waived findings "
        "moved out; every format and the gate read the verdict attached here",
    "base/verdicts.py::of":
        "a bare list's verdict: the role's summary over its sections (site_summary.host_verdict), the facts "
        "module's service result (facts.verdict), the /1 migration's check (report/schema.py)",
    "host/facts.py::gather":
        "bwrap_facts as output: the facts section's verdict (not a host's)",
    "report/site_summary.py::profiles_section": "a section of the role's summary, as output (not a host's)",
    "report/site_summary.py::probe_section": "a section of the role's summary, as output (not a host's)",
    "report/site_summary.py::monitor_section": "a section of the role's summary, as output (not a host's)",
}
THE_MAPPING = "base/verdicts.py::decide"       # the one caller of verdicts.verdict


def calls_of(source, name, function):
    """[where] of every call of verdicts.<function> (or a <function> imported from verdicts) in ``source``."""
    found = []
    imported = False

    def visit(node, where):
        nonlocal imported
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = "%s::%s" % (name, child.name)
            if isinstance(child, ast.ImportFrom) and (child.module or "").endswith("verdicts") and \
                    any(alias.name == function for alias in child.names):
                imported = True
            if isinstance(child, ast.Call):
                func = child.func
                attribute = isinstance(func, ast.Attribute) and func.attr == function and \
                    isinstance(func.value, ast.Name) and func.value.id == "verdicts"
                local = name == "base/verdicts.py" and isinstance(func, ast.Name) and func.id == function
                if attribute or local or (imported and isinstance(func, ast.Name) and func.id == function):
                    found.append(inner)
            visit(child, inner)
    visit(ast.parse(source), name)
    return found


def code_modules():
    """The core, and the plugins and modules that use it (action_plugins, library, filter_plugins)."""
    for folder, _dirs, files in sorted(os.walk(CORE)):
        for file_name in sorted(files):
            if file_name.endswith(".py"):
                path = os.path.join(folder, file_name)
                yield os.path.relpath(path, CORE), path
    for top in ("action_plugins", "library", "filter_plugins"):
        folder = os.path.join(ROOT, top)
        for file_name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if file_name.endswith(".py"):
                yield "%s/%s" % (top, file_name), os.path.join(folder, file_name)


def all_calls(function):
    out = []
    for name, path in code_modules():
        with open(path, encoding="utf-8") as handle:
            out.extend(calls_of(handle.read(), name, function))
    return out


def test_the_mapping_runs_in_one_place():
    assert all_calls("verdict") == [THE_MAPPING, THE_MAPPING]       # the host's findings, its service section's


def test_decide_runs_only_where_a_record_becomes_output():
    found = all_calls("decide")
    assert sorted(set(found)) == sorted(OUTPUTS), (sorted(set(found) - set(OUTPUTS)), sorted(set(OUTPUTS) -
                                                                                           set(found)))
    assert len(found) == len(OUTPUTS)       # once in each


@pytest.mark.parametrize("function,planted", [
    ("verdict", 'from ..base import verdicts\ndef waive(hosts):\n    for h in hosts:\n'
                '        h["waived_verdict"] = verdicts.verdict(h["diagnostics"])\n'),
    ("verdict", 'from ..base.verdicts import verdict\ndef waive(hosts):\n'
                '    return [verdict(h["d"]) for h in hosts]\n'),
    ("decide", 'from ..base import verdicts\ndef waive(hosts):\n    for h in hosts:\n        verdicts.decide(h)\n'),
    ("decide", 'from ..base.verdicts import decide\ndef waive(hosts):\n    return [decide(h) for h in hosts]\n'),
], ids=["verdict-attribute", "verdict-imported", "decide-attribute", "decide-imported"])
def test_a_planted_call_fails_the_guard(function, planted):
    """The canary: a second mapping or a second decision on the report side (in the waivers, before the fleet's
    findings are in)."""
    assert calls_of(planted, "report/waivers.py", function) == ["report/waivers.py::waive"]
    if function == "verdict":
        assert all_calls("verdict") + calls_of(planted, "report/waivers.py", function) != [THE_MAPPING] * 2
    else:
        assert sorted(set(all_calls("decide") + calls_of(planted, "report/waivers.py", function))) != sorted(OUTPUTS)


def test_a_verdict_is_decided_once_in_a_records_life():
    """decide returns the record as output and leaves the record as it was (findings only); the output, or a
    record whose service section was decided, handed again is refused: no stage decides after another."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics, verdicts
    drift = diagnostics.make("bwrap_package_drift", majority="1", host="h", revision="2", majority_hosts=2, hosts=3)
    record = {"hostname": "h", "diagnostics": [drift], "service": {"unit": "m.service", "diagnostics": []}}
    out = verdicts.decide(record)
    assert (out["verdict"], out["service"]["verdict"]) == ("warn", "pass")
    assert "verdict" not in record and "verdict" not in record["service"]      # the record: findings only
    with pytest.raises(verdicts.Decided, match="h: its verdict was decided once already"):
        verdicts.decide(out)
    with pytest.raises(verdicts.Decided, match="service section"):
        verdicts.decide(dict(record, service=out["service"]))
