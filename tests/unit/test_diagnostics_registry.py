"""The code registry is the only source: every code any face emits is registered (a walk of the sources),
report sections come from it, remediation comes only from it, and one host's report lists a finding once."""
import ast
import glob
import json
import os
import re

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit, profile_states
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics, registry
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    host_context,
    model,
    reader,
    renderer,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import render_junit
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import environment, restrictions
from conftest import ROOT
from helpers import report_text

SOURCES = ("module_utils", "library", "action_plugins", "filter_plugins", "scripts", "benchmarks")
YAML_SOURCES = ("roles", "playbooks")
CODE_LIKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")
# Callables whose argument at this position is a code although their parameter is not named ``code``.
EXTRA_EMITTERS = {"make": 0, "UnitError": 0, "Cause": 4}


def _python_files(root=ROOT):
    for top in SOURCES:
        yield from glob.glob(os.path.join(root, top, "**", "*.py"), recursive=True)


def _emitters(trees):
    """Every function (or class) whose first parameter is ``code``: make, _refuse, _err, _diag, ..."""
    names = dict(EXTRA_EMITTERS)
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                params = [a.arg for a in node.args.args if a.arg not in ("self", "cls")]
                if params and params[0] == "code":
                    names[node.name] = 0
    return names


def _name(func):
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _literal(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _literals(node):
    """The string constants a code argument can be: a literal, or either branch of ``a if c else b``."""
    if isinstance(node, ast.IfExp):
        return _literals(node.body) + _literals(node.orelse)
    return [_literal(node)] if _literal(node) else []


def _is_code_key(node):
    """x["code"] or x.get("code")."""
    if isinstance(node, ast.Subscript):
        return _literal(node.slice) == "code"
    return (isinstance(node, ast.Call) and _name(node.func) == "get" and node.args
            and _literal(node.args[0]) == "code")


def _emitted_in_tree(tree, emitters):
    """(line, code) of every code literal in an emitting position of one module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            pos = emitters.get(_name(node.func))
            if pos is not None and len(node.args) > pos:
                yield from ((node.lineno, code) for code in _literals(node.args[pos]))
            for kw in node.keywords:
                if kw.arg in ("code", "diagnostic"):
                    yield from ((node.lineno, code) for code in _literals(kw.value))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is not None and _literal(key) == "code" and _literal(value):
                    yield node.lineno, _literal(value)
        elif isinstance(node, ast.Compare) and _is_code_key(node.left):
            for comp in node.comparators:
                for elt in (comp.elts if isinstance(comp, (ast.Tuple, ast.List, ast.Set)) else [comp]):
                    if _literal(elt):
                        yield node.lineno, _literal(elt)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id.endswith("CODES")
                                                  for t in node.targets):
            for sub in ast.walk(node.value):
                if _literal(sub) and CODE_LIKE.match(_literal(sub)):
                    yield node.lineno, _literal(sub)


_YAML_CODE = re.compile(r"""(?:\bcode:\s*['"]?|['"]code['"],\s*['"](?:equalto|==)['"],\s*['"])([a-z][a-z0-9_]+)""")


def emitted(root=ROOT):
    """{code: [where, ...]} for every code the sources emit or test for."""
    trees = {}
    for path in _python_files(root):
        with open(path, encoding="utf-8") as handle:
            trees[path] = ast.parse(handle.read(), path)
    emitters = _emitters(trees.values())
    found = {}
    for path, tree in trees.items():
        for line, code in _emitted_in_tree(tree, emitters):
            found.setdefault(code, []).append("%s:%d" % (os.path.relpath(path, root), line))
    for top in YAML_SOURCES:
        for path in glob.glob(os.path.join(root, top, "**", "*.y*ml"), recursive=True):
            with open(path, encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    for match in _YAML_CODE.finditer(line):
                        found.setdefault(match.group(1), []).append("%s:%d" % (os.path.relpath(path, root), number))
    return found


def test_every_emitted_code_is_registered():
    found = emitted()
    # The walk really finds the emission sites (fail_json codes, make(), _refuse(), exceptions, tables).
    for code in ("invalid_option", "systemctl_failed", "dest_unwritable", "daemon_reload_failed", "unit_not_found",
                 "host_no_python", "manifest_yaml_unsupported", "grant_skipped", "unit_proc_subset_pid",
                 "userns_disabled_sysctl", "manifest_missing"):
        assert code in found, code
    assert len(found) >= 80
    unregistered = dict((c, w) for c, w in found.items() if c not in diagnostics.REGISTRY)
    assert not unregistered, "emitted but not registered in diagnostics.py: %s" % unregistered


def test_the_walk_catches_a_planted_unregistered_code(tmp_path):
    """The mutation: an unregistered code planted in each emission pattern is found."""
    lib = tmp_path / "library"
    lib.mkdir()
    (lib / "planted.py").write_text(
        "def _refuse(code, field):\n    pass\n"
        "D.make('planted_make' if x else 'planted_else')\n_refuse('planted_refuse', 'f')\n"
        "module.fail_json(msg='x', code='planted_fail_json')\nx = {'code': 'planted_dict'}\n"
        "raise U.UnitError('planted_exception')\nif d['code'] == 'planted_compare':\n    pass\n"
        "MY_CODES = {'A': 'planted_table'}\n")
    roles = tmp_path / "roles" / "r" / "tasks"
    roles.mkdir(parents=True)
    (roles / "main.yml").write_text("- ansible.builtin.fail:\n  when: x | selectattr('code', 'equalto', "
                                    "'planted_yaml')\n")
    found = emitted(str(tmp_path))
    assert set(found) == {"planted_make", "planted_else", "planted_refuse", "planted_fail_json", "planted_dict",
                          "planted_exception", "planted_compare", "planted_table", "planted_yaml"}
    assert not any(code in diagnostics.REGISTRY for code in found)


def test_every_code_has_a_section_and_the_report_takes_it_from_the_registry():
    for code in diagnostics.REGISTRY.values():
        assert code.section in diagnostics.SECTIONS
        assert render_junit.check_of(code.code) == code.section
    assert render_junit.check_of("unit_masked") == "service_environment"
    assert render_junit.check_of("probe_timeout") == "probe"
    assert render_junit.check_of("host_no_python") == "reachability"
    with pytest.raises(diagnostics.UnregisteredCode):
        render_junit.check_of("unit_made_up")     # never silently sandbox_active
    with pytest.raises(diagnostics.UnregisteredCode):
        diagnostics.make("unit_made_up")
    with pytest.raises(diagnostics.UnregisteredCode):
        diagnostics.make("unit_masked", variant="made_up")


def test_remediation_comes_only_from_the_registry():
    with pytest.raises(TypeError):
        diagnostics.make("unit_masked", remediation=["my own fix"])
    d = diagnostics.make("service_bwrap_mismatch", variant="unpackaged", service_bwrap="/opt/bwrap",
                         unit="metnos.service")
    assert d["hint"] == "Remove /opt/bwrap or put the package's directory first in the unit's PATH."
    assert d["remediation"] == ["ls -l /opt/bwrap", "systemctl show metnos.service -p Environment"]
    steps = diagnostics.make("bwrap_smoke_failed", variant="classified", cause="x", cause_text="t",
                             cause_remediation=["one", "two"])["remediation"]
    assert steps == ["one", "two"]
    # The drop-in steps of the registry name the drop-in the module writes.
    fix = restrictions.restriction_diagnostics({"ProcSubset": "pid"}, "metnos.service")[0]["remediation"]
    assert any(step.endswith("/etc/systemd/system/metnos.service.d/%s" % restrictions.DROPIN_NAME) for step in fix)
    assert fix[-1] == "systemctl restart metnos.service"


def test_message_templates_live_in_the_registry():
    change = profile_states.describe_drift(["bwrap", "--ro-bind", "/a", "/a", "--", "python3"], ["bwrap", "--",
                                                                                                 "python3"])
    drift = host_audit.drift_diagnostics([dict(change, state="drift", executor="ex", path="/p/ex.args"),
                                          {"state": "missing", "executor": "ex", "path": "/p/ex.args"}])
    assert drift[0]["message"] == "ex: the profile on disk (/p/ex.args) differs from what the manifest renders " \
                                  "today: mount added /a (ro)."
    assert drift[1]["message"] == "ex: no rendered profile at /p/ex.args." and drift[1]["severity"] == "warning"
    assert drift[1]["code"] == "profile_missing"
    assert drift[1]["remediation"] == ["ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles"]
    doc = report_text.build({"a": {"unreachable": True, "msg": "ssh: timeout"}, "b": {"failed": True,
                                                                                      "code": "host_no_python",
                                                                          "msg": "no python"}})
    msgs = dict((h["host"], h["diagnostics"][0]["message"]) for h in doc["hosts"])
    assert msgs == {"a": "a: unreachable: ssh: timeout", "b": "b: no python"}


def test_message_variants_keep_what_users_read():
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import envflags
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import facts, kernel
    status = envflags.status(None, {"METNOS_SANDBOX": "off"})
    msgs = dict((d["code"], d["message"]) for d in envflags.diagnose(status, {"METNOS_SANDBOX": "off"}, "/x",
                                                                   where="environment given"))
    assert msgs["sandbox_disabled_via_env"] == "METNOS_SANDBOX='off' in the environment given disables the sandbox " \
                                               "(R-FAIL-1)."
    assert msgs["executor_os_sandbox_unavailable"] == "The runtime would refuse every ordinary executor with " \
        "executor_os_sandbox_unavailable: bwrap is not on PATH and METNOS_SANDBOX='off'."
    info = {"path": "/b", "setuid": True, "mode": "4755", "version": "0.12.0", "package": None,
            "ownership_problems": ["/b is owned by uid 1000"], "missing_features": ["--json-status-fd"]}
    msgs = dict((d["code"], d["message"]) for d in facts.binary_diagnostics(info))
    assert msgs == {"bwrap_setuid": "/b is setuid root (mode 4755); bubblewrap 0.12.0 refuses setuid use.",
                    "bwrap_not_root_owned": "/b is owned by uid 1000.",
                    "bwrap_not_packaged": "/b is not owned by any installed package.",
                    "bwrap_feature_missing": "bwrap 0.12.0 at /b lacks --json-status-fd (parsed from --help)."}
    old = dict(info, version="0.8.0")
    assert facts.binary_diagnostics(old)[0]["message"] == "/b is setuid root (mode 4755)."
    nnp = restrictions.restriction_diagnostics({"NoNewPrivileges": "yes"}, "m.service",
                                               {"setuid": True, "path": "/usr/bin/bwrap"})
    assert nnp[0]["message"] == "m.service: NoNewPrivileges (explicit or implied) cancels the setuid bit of " \
                                "/usr/bin/bwrap: bwrap takes the unprivileged path and needs user namespaces."
    aa = kernel.diagnose({"apparmor_restrict_unprivileged_userns": 1, "apparmor_bwrap_profiles": ["bwrap"]})
    assert aa[0]["severity"] == "info" and "are loaded (bwrap); if bwrap still fails" in aa[0]["message"]


def test_unit_not_found_has_one_builder():
    assert diagnostics.unit_not_found("m.service")["message"] == "m.service was not found on this host."
    assert diagnostics.unit_not_found("m.service", scope="user", root="/img")["message"] == \
        "m.service (user scope) was not found below /img."
    assert "systemctl failed: boom" in diagnostics.unit_not_found("m.service", error="boom")["message"]
    assert diagnostics.unit_not_found("m.service")["details"] == {"unit": "m.service"}


def test_a_missing_manifest_file_has_its_own_code(tmp_path):
    missing = str(tmp_path / "absent.yml")
    with pytest.raises(model.ManifestError) as err:
        reader.read_file(missing)
    assert err.value.diagnostics[0]["code"] == "manifest_missing"
    prof = renderer.render_safe(model.FileSource(missing), host_context.HostContext(), {})
    assert prof["decision"] == "refused" and prof["refusal"] == "manifest_missing"
    unreadable = tmp_path / "dir.yml"
    unreadable.mkdir()
    assert renderer.render_safe(model.FileSource(str(unreadable)), host_context.HostContext(),
                                {})["refusal"] == "manifest_parse_error"


def test_one_host_report_lists_a_finding_once(monkeypatch):
    """A real case: the probe fails in the unit's context and blames the unit's directive the service check
    reported already (same code, same unit and directive, the probe's message longer). The audit lists it
    once, with the probe's message; distinct subjects stay."""
    svc_diag = restrictions.restriction_diagnostics({"ProcSubset": "pid"}, "metnos.service")[0]
    blamed = diagnostics.amend(svc_diag, "blamed_by_probe")      # what the probe makes of the finding it was handed
    other = restrictions.restriction_diagnostics({"ProcSubset": "pid"}, "other.service")[0]
    svc = {"diagnostics": [svc_diag, other], "status": {"active": True}, "mode": "systemd", "user": {}}
    monkeypatch.setattr(host_audit, "gather", lambda *a, **k: {"diagnostics": [], "status": {"active": True},
                                                                "verdict": "pass"})
    monkeypatch.setattr(host_audit.environment, "inspect", lambda *a, **k: environment.Inspection(dict(svc), {}))
    monkeypatch.setattr(host_audit.run, "probe_service", lambda *a, **k: {"passed": False, "diagnostics": [blamed],
                                                                          "checks": []})
    result = host_audit.audit_host(spec.with_defaults(spec.AUDIT, {"unit": "metnos.service", "probe": True}),
                                   runner=lambda *a, **k: (1, "", ""))
    assert [(d["code"], d["details"]["unit"]) for d in result["diagnostics"]] == [
        ("unit_proc_subset_pid", "metnos.service"), ("unit_proc_subset_pid", "other.service")]
    assert result["diagnostics"][0]["message"] == blamed["message"]
    # The same code and message from two faces (the probe repeats bwrap_facts' binary findings) is one too.
    twice = [diagnostics.make("bwrap_setuid", bwrap_path="/b", mode="04755"), diagnostics.make("bwrap_setuid",
                                                                                               bwrap_path="/b",
                                                                                               mode="04755")]
    assert len(diagnostics.union(twice)) == 1
    assert len(diagnostics.union([diagnostics.make("executor_os_sandbox_unavailable", wording="why",
                                                   fill={"why": "admin: no bwrap"}),
                                  diagnostics.make("executor_os_sandbox_unavailable", wording="why",
                                                   fill={"why": "service: no bwrap"})])) == 2
    assert len(diagnostics.union([diagnostics.make("probe_check_failed", check="a"),
                                  diagnostics.make("probe_check_failed", check="b")])) == 2
    # Same code and details, different findings (the live METNOS_SANDBOX and the live PATH): both stay.
    assert len(diagnostics.union([diagnostics.make("service_env_live_differs", unit="m", wording="differs",
                                                   fill={"key": "PATH", "value": "'/x'", "configured": "'/y'"}),
                                  diagnostics.make("service_env_live_differs", unit="m", wording="differs",
                                                   fill={"key": "METNOS_SANDBOX", "value": "'0'",
                                                         "configured": "'1'"})])) == 2
    # Nothing is merged by its wording: a longer message that restates nothing is another finding.
    longer = dict(svc_diag, message=svc_diag["message"] + " The probe failed in this unit's context.")
    assert len(diagnostics.union([svc_diag], [longer])) == 2 and diagnostics.union([svc_diag], [blamed]) == [blamed]
    assert json.loads(json.dumps(blamed)) == dict(blamed)       # a restatement serialises as a plain finding


# ------------------------------------------------------------------ a Code is data, built by keywords (issue 55)
def test_every_code_is_built_by_keywords():
    """Each Code(...) and Restriction(...) of codes_*.py names every field (a Code is a record: by position, a
    title and a cause could swap silently)."""
    positional = []
    for path in sorted(glob.glob(os.path.join(ROOT, "module_utils", "metnos_sandbox", "base", "codes_*.py"))):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        positional += ["%s:%d" % (os.path.basename(path), node.lineno) for node in ast.walk(tree)
                       if isinstance(node, ast.Call) and _name(node.func) in ("Code", "Restriction") and node.args]
    assert not positional, positional


def test_the_registry_refuses_an_unknown_severity_or_section():
    planted = registry.Code(code="planted_code", severity="fatal", rule="R-DIAG-1", section=registry.PROBE,
                            title="t", cause="c", detection="d", remediation=[])
    with pytest.raises(ValueError, match="planted_code: severity 'fatal'"):
        registry.registered(planted)
    with pytest.raises(ValueError, match="section 'elsewhere'"):
        registry.registered(planted._replace(severity=registry.ERROR, section="elsewhere"))


def test_each_registered_code_owns_its_texts():
    """Codes that share one dict of messages (REFUSED, JUDGED) or variants each hold a copy: a shared text added
    to one (diagnostics.py adds "relayed" and the experiment's) reaches no other code."""
    shared = {"": "{path}"}
    first, second = (registry.registered(registry.Code(
        code=name, severity=registry.ERROR, rule="R-DIAG-1", section=registry.PROBE, title="t", cause="c",
        detection="d", remediation=["ls {path}"], messages=shared)) for name in ("first_code", "second_code"))
    added = registry.with_shared(first, {"relayed": "{relayed}", "": "not mine"}, {"other": ("true",)}, {})
    assert added.messages == {"": "{path}", "relayed": "{relayed}"} and added.variants == {"other": ("true",)}
    assert second.messages == shared == {"": "{path}"} and first.messages == {"": "{path}"}
    assert added.remediation == ("ls {path}",)
    relayed = [code for code in diagnostics.LOAD_CODES if "relayed" in diagnostics.spec(code).messages]
    assert relayed == list(diagnostics.LOAD_CODES)
    assert [c for c, entry in diagnostics.REGISTRY.items()
            if "relayed" in entry.messages and c not in diagnostics.LOAD_CODES] == []
