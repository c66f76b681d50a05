"""The modules' options: one spec per module (documented exactly as validated), one spelling per idea
(timeout, python as a path, unit/scope/user), the old names as aliases, one preamble refusing bad
options with invalid_option, and the audit action validating with Ansible's own validator."""
import ast
import glob
import json
import os

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec
from conftest import ROOT
from helpers import faces

MODULES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "library", "*.py")))
KEYS = ("type", "default", "choices", "elements", "aliases")


def load(name):
    """library/<name>.py as Ansible runs it (its imports resolve under ansible.module_utils)."""
    return faces.load("library/%s.py" % name, "face_" + name)


def _constants(path, cls=None):
    with open(path) as handle:
        tree = ast.parse(handle.read())
    body = tree.body if cls is None else [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls][0].body
    return dict((n.targets[0].id, n.value.value) for n in body
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant))


def documented(name):
    """The module's documented options, its doc fragments' merged in as ansible-doc does (its own win)."""
    doc = yaml.safe_load(_constants(os.path.join(ROOT, "library", name + ".py"))["DOCUMENTATION"])
    options = {}
    for slug in doc.get("extends_documentation_fragment") or []:
        fragment, _dot, var = slug[len("metnos.sandbox."):].partition(".")   # this collection's fragments
        texts = _constants(os.path.join(ROOT, "doc_fragments", fragment + ".py"), "ModuleDocFragment")
        options.update(yaml.safe_load(texts[(var or "documentation").upper()]).get("options") or {})
    options.update(doc.get("options") or {})
    return options


def _norm(option):
    out = dict((k, option.get(k)) for k in KEYS if option.get(k) not in (None, [], {}))
    if out.get("type") == "float" and "default" in out:
        out["default"] = float(out["default"])
    return out


@pytest.mark.parametrize("name", MODULES)
def test_documentation_matches_the_validated_spec(name):
    argument_spec = load(name).ARGUMENT_SPEC
    docs = documented(name)
    assert sorted(docs) == sorted(argument_spec)
    for option, entry in argument_spec.items():
        assert _norm(docs[option]) == _norm(entry), option


def test_one_name_per_idea():
    specs = dict((m, load(m).ARGUMENT_SPEC) for m in ("bwrap_facts", "sandbox_probe", "metnos_audit",
                                                       "metnos_service_env"))
    assert all("timeout" in specs[m] for m in ("bwrap_facts", "sandbox_probe", "metnos_audit"))
    assert specs["bwrap_facts"]["timeout"]["aliases"] == ["smoke_timeout"]
    assert specs["metnos_audit"]["timeout"]["aliases"] == ["probe_timeout"]
    assert specs["sandbox_probe"]["python"]["type"] == specs["metnos_audit"]["python"]["type"] == "path"
    for name in ("sandbox_probe", "metnos_audit", "metnos_service_env"):
        assert dict((k, specs[name][k]) for k in ("unit", "scope", "user")) == spec.SERVICE
    assert not any(k.endswith("_timeout") for argument_spec in specs.values() for k in argument_spec)


def run_face(name, args, capsys):
    from ansible.module_utils.testing import patch_module_args
    module = load(name)
    capsys.readouterr()
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            module.main()
    out = capsys.readouterr().out
    return json.loads(out[out.index("{"):])


@pytest.mark.parametrize("name, args, msg", [
    ("bwrap_facts", {"timeout": 0, "smoke_test": False}, "bwrap_facts: timeout must be a positive number of seconds"),
    ("bwrap_facts", {"smoke_timeout": -1, "smoke_test": False}, "bwrap_facts: timeout must be a positive number"),
    ("bwrap_facts", {"smoke_user": "no-such-user-here"}, "bwrap_facts: "),
    ("sandbox_probe", {"timeout": 0}, "sandbox_probe: timeout must be a positive number of seconds, got 0.0"),
    ("sandbox_probe", {"unit": "../x.service"}, "sandbox_probe: unit: '../x.service' is not a unit name"),
    ("sandbox_probe", {"probe_user": "no-such-user-here"}, "sandbox_probe: "),
    ("sandbox_probe", {"host": {"no_such_key": "/x"}}, "sandbox_probe: "),
    ("metnos_service_env", {"unit": "../x.service"}, "metnos_service_env: unit: '../x.service' is not a unit name"),
    ("metnos_service_env", {"dropin_name": "a/b"}, "metnos_service_env: dropin_name: 'a/b' must be a file name"),
    ("sandbox_profile", {"manifest": {}, "path": 12}, "sandbox_profile: path must be a string"),
    ("sandbox_profile", {"manifest": {}, "host": {"no_such_key": "/x"}, "discover_python_roots": False},
     "sandbox_profile: "),
])
def test_one_preamble_refuses_bad_options_with_invalid_option(name, args, msg, capsys):
    res = run_face(name, args, capsys)
    assert res.get("failed") and res["code"] == "invalid_option", res
    assert res["msg"].startswith(msg), res["msg"]


def test_the_audit_spec_validates_and_defaults_once():
    result = ArgumentSpecValidator(spec.spec(spec.AUDIT)).validate({"probe_timeout": 5, "python": "/usr/bin/python3"})
    assert not result.error_messages
    args = spec.with_defaults(spec.AUDIT, result.validated_parameters)
    assert args["timeout"] == 5.0 and "probe_timeout" not in args
    assert args["unit"] == "metnos.service" and args["probe"] is True and args["manifests"] == []
    bad = ArgumentSpecValidator(spec.spec(spec.AUDIT)).validate({"bogus": 1, "scope": "galaxy", "probe": "maybe"})
    text = " ".join(bad.error_messages)
    assert "bogus" in text and "scope" in text and "probe" in text
    # A caller of the core without the action (scripts, tests) gets the same defaults.
    assert spec.with_defaults(spec.AUDIT, {"unit": ""})["unit"] == ""
    assert spec.with_defaults(spec.AUDIT, {})["profile_dir"] == "/etc/metnos/sandbox/profiles"


def _mutables(value, out):
    """The ids of every dict and list in ``value``."""
    if isinstance(value, (dict, list)):
        out.add(id(value))
        for item in (value.values() if isinstance(value, dict) else value):
            _mutables(item, out)
    elif isinstance(value, tuple):
        for item in value:
            _mutables(item, out)
    return out


@pytest.mark.parametrize("name", MODULES + ["AUDIT", "AUDIT_REPORT"])
def test_a_spec_copy_equals_a_deep_copy_and_shares_nothing_mutable(name):
    """spec.spec copies each option without copy.deepcopy (each audited host's worker copies the audit's spec):
    the copy equals deepcopy's and holds no dict or list of the original (mutation: returning the option itself
    or a shallow dict() of it shares the 'default' and 'choices' objects, and this fails)."""
    import copy
    original = getattr(spec, name) if name.isupper() else load(name).ARGUMENT_SPEC
    copied = spec.spec(original)
    assert copied == copy.deepcopy(original)
    assert not _mutables(copied, set()) & _mutables(original, set())


def test_the_validator_hands_out_the_copys_defaults_not_the_specs():
    """Why the copy: Ansible's validator returns an option's default object itself; a caller that changes it
    (host_audit.audit_host fills 'host') would change the spec for the next host validated in the same process."""
    audit_spec = spec.spec(spec.AUDIT)
    validated = ArgumentSpecValidator(audit_spec).validate({}).validated_parameters
    assert validated["host"] is audit_spec["host"]["default"]
    assert validated["host"] is not spec.AUDIT["host"]["default"]
