# -*- coding: utf-8 -*-
"""The audit's defaults, applied once on each path and by the option spec (options/spec.py AUDIT, issue 44 item 4):
the metnos_audit action (Ansible's validator with the spec; the host's audit_host applies none), the library module
(AnsibleModule with the spec), the monitor (options.with_defaults). Each path counted, and what audit_host is
handed the same as when the action, the module and audit_host each applied them again.

Ansible's validator and the core run for real; what is counted is wrapped, not replaced. The action is built
without a play (its constructor's task, connection and loader are what only a running play has) and audit_host
is stood in for where the path's own work ends there (the checks themselves are the other tests')."""
from __future__ import absolute_import, division, print_function

import types

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import proof
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec
from helpers import faces

GIVEN = {"probe_timeout": 5, "unit": "other.service", "placement": "device"}


@pytest.fixture
def counted(monkeypatch):
    """How often the spec's defaults are applied: by options.with_defaults, by Ansible's validator."""
    calls = {"with_defaults": 0, "validator": 0}
    with_defaults, validate = spec.with_defaults, ArgumentSpecValidator.validate

    def counting_with_defaults(option_spec, params):
        calls["with_defaults"] += 1
        return with_defaults(option_spec, params)

    def counting_validate(self, parameters, *args, **kwargs):
        calls["validator"] += 1
        return validate(self, parameters, *args, **kwargs)
    monkeypatch.setattr(spec, "with_defaults", counting_with_defaults)
    monkeypatch.setattr(ArgumentSpecValidator, "validate", counting_validate)
    return calls


def _before(given):
    """What audit_host worked on before issue 44: the validator's parameters, then with_defaults (twice)."""
    validated = ArgumentSpecValidator(spec.spec(spec.AUDIT)).validate(dict(given)).validated_parameters
    return spec.with_defaults(spec.AUDIT, spec.with_defaults(spec.AUDIT, validated))


def test_the_action_path_applies_them_once(counted, monkeypatch):
    """The action: Ansible's validator once, no with_defaults; the host's audit_host applies none either (a
    mutation putting with_defaults back in the action or in audit_host fails here)."""
    before = _before(GIVEN)
    counted.update(validator=0, with_defaults=0)
    action_module = faces.load("action_plugins/metnos_audit.py", "metnos_audit_action_defaults")
    action = action_module.ActionModule.__new__(action_module.ActionModule)
    action._task = types.SimpleNamespace(args=dict(GIVEN))
    args = action._options({}, {})
    assert counted == {"validator": 1, "with_defaults": 0}
    before.pop("manifest_sources")
    assert args == before
    assert args["timeout"] == 5.0 and args["profile_dir"] == "/etc/metnos/sandbox/profiles"
    # On the host: the envelope's params (run() takes result and from_vars off) go to audit_host as they are.
    args.pop("result"), args.pop("from_vars")
    monkeypatch.setattr(host_audit.os, "uname", _Uname)
    record = host_audit.audit_host(args)
    assert counted == {"validator": 1, "with_defaults": 0}
    assert record["containment"]["placement"] == "device"


class _Uname(tuple):
    """os.uname() of a macOS host (faked: the audit's only question there, before anything runs; no macOS kernel
    can run on this machine), so that audit_host returns at once."""

    def __new__(cls):
        return tuple.__new__(cls, ("Darwin", "mac-runner", "23.6.0", "", "arm64"))

    sysname = property(lambda self: self[0])


def test_the_module_path_applies_them_once(counted, monkeypatch):
    """library/metnos_audit.py: AnsibleModule's validator once, no with_defaults, audit_host handed what it
    worked on before (a mutation putting with_defaults back fails on the count)."""
    from ansible.module_utils.testing import patch_module_args

    module = faces.load("library/metnos_audit.py", "metnos_audit_module_defaults")
    before = _before(GIVEN)
    counted.update(validator=0, with_defaults=0)
    handed = []
    monkeypatch.setattr(module.host_audit, "audit_host", lambda params: handed.append(params) or {"verdict": "pass"})
    with patch_module_args(dict(GIVEN)):
        with pytest.raises(SystemExit):
            module.main()
    assert counted == {"validator": 1, "with_defaults": 0}
    assert handed == [before]


def test_the_monitor_path_applies_them_once(counted, monkeypatch):
    """The monitor: its configuration's audit options (checked, never defaulted, by check_config), with_defaults
    once, audit_host handed what it worked on before (a mutation dropping the call fails on the count)."""
    config = proof.check_config({"schema": proof.CONFIG_SCHEMA, "audit": {"unit": "other.service",
                                                                         "timeout": 5.0}})
    before = spec.with_defaults(spec.AUDIT, config["audit"])
    counted.update(validator=0, with_defaults=0)
    handed = []
    monkeypatch.setattr(proof.host_audit, "checks", lambda params, runner: handed.append(params) or {
        "diagnostics": []})
    proof.audit(config, lambda *a, **k: (0, "", ""), "host", [])
    assert counted == {"validator": 0, "with_defaults": 1}
    assert handed == [before] and before["timeout"] == 5.0 and before["probe"] is True
    assert before["profile_dir"] == "/etc/metnos/sandbox/profiles"


def test_the_spec_is_the_one_source():
    """with_defaults reads the spec's defaults; one_name reads old names only (what follows a validator)."""
    assert spec.one_name(spec.AUDIT, {"probe_timeout": 5}) == {"timeout": 5}
    assert spec.with_defaults(spec.AUDIT, {"probe_timeout": 5})["timeout"] == 5
    assert spec.with_defaults(spec.AUDIT, {})["timeout"] == spec.AUDIT["timeout"]["default"]


def test_the_action_loads_each_manifest_once(monkeypatch, tmp_path):
    """transport() once per manifest on the action's path (issue 55): the task's manifests by the action, the
    manifest_sources by from_source (which applies it itself; the action applied it a second time on its answer).
    A real file, inline text and a refused file; a mutation putting the action's own transport() back on the
    sources fails here (each of them counted twice)."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import manifest
    good = tmp_path / "notes.yml"
    good.write_text("name: notes\norigin: metnos/core\ncapabilities: ['fs:read:/srv/notes/**']\n")
    bad = tmp_path / "bad.yml"
    bad.write_text("[not, a, mapping]\n")
    calls = []
    transport = manifest.transport

    def counting_transport(source):
        calls.append(source)
        return transport(source)
    monkeypatch.setattr(manifest, "transport", counting_transport)
    action_module = faces.load("action_plugins/metnos_audit.py", "metnos_audit_action_transport")
    action = action_module.ActionModule.__new__(action_module.ActionModule)
    inline = "name: inline\norigin: metnos/core\n"
    action._task = types.SimpleNamespace(args={"manifests": [inline], "manifest_sources": [
        str(good), {"file": str(bad)}, {"manifest": inline}]})
    args = action._options({}, {})
    assert len(calls) == 4, calls                          # one per manifest
    assert args["manifests"][0] == args["manifests"][3] == {"name": "inline", "origin": "metnos/core"}
    assert args["manifests"][1]["name"] == "notes"
    assert args["manifests"][2][manifest.model.REFUSAL_KEY]      # refused on the host, with its code
