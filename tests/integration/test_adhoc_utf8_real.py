"""Every reply stays valid UTF-8 on the ad hoc path too (issue 50 item 6), through the real `ansible localhost -m
metnos.sandbox.<module> -a '{...}'` command: a lone surrogate ("\\udcff", an undecodable byte) in an argument value
or a top-level string option, for each face that takes one. Cases as data.

Two ways a lone surrogate reaches a module ad hoc:
- templated in the -a JSON (``{{ 'Yf9i' | b64decode }}``, the bytes a\\xffb): the module runs, its reply (with
  -vvv, which echoes module_args) is valid UTF-8 and the refusal code reaches the caller;
- written as the JSON escape "\\udcff" in -a: ansible-core's CLI refuses it while parsing -a ("Refusing to
  deserialize an invalid UTF8 string value"), before any collection code is loaded - nothing ran. Only the
  core's MODULE_STRICT_UTF8_RESPONSE setting lets it through; with it off (set here for that run alone, never in
  the project's ansible.cfg) the module's reply is valid UTF-8 and carries the code, so the module's part holds.
"""
import os

import pytest

from helpers.ansible_run import adhoc, ansible_env

TEMPLATED = "{{ 'Yf9i' | b64decode }}"
LONE = "a\udcffb"
CASES = [
    # (module, arguments with @ where the surrogate goes, the key of the code in the reply, the code)
    ("metnos.sandbox.sandbox_profile",
     {"manifest": {"name": "ex", "origin": "t", "capabilities": ["fs:read:arg:p"],
                   "arguments": {"p": {"within": ["/var/tmp/metnos-utf8/data/**"]}}},
      "invocation": {"arguments": {"p": "@"}}, "discover_python_roots": False}, "refusal", "scope_nul"),
    ("metnos.sandbox.metnos_service_env", {"unit": "@.service"}, "code", "invalid_option"),
    ("metnos.sandbox.sandbox_probe", {"unit": "@.service"}, "code", "invalid_option"),
    ("metnos.sandbox.bwrap_facts", {"smoke_user": "@"}, "code", "invalid_option"),
    ("metnos.sandbox.metnos_monitor_install", {"bundle": "/nonexistent/@", "entry_point": "x",
                                               "prefix": "/var/tmp/metnos-utf8-prefix"}, "code", "invalid_option"),
]


def _put(value, text):
    if isinstance(value, dict):
        return dict((k, _put(v, text)) for k, v in value.items())
    if isinstance(value, list):
        return [_put(v, text) for v in value]
    return value.replace("@", text) if isinstance(value, str) else value


@pytest.mark.parametrize("module,args,key,code", CASES, ids=[case[0].rsplit(".", 1)[1] for case in CASES])
def test_a_templated_lone_surrogate_ad_hoc_gets_its_refusal_code(module, args, key, code):
    """Canary: the templated value is a lone surrogate inside the module (sandbox_profile's message quotes it
    escaped, 'a\\\\udcffb'). Mutation run: options.spec.utf8_module returning AnsibleModule itself - the
    metnos_service_env, sandbox_probe, bwrap_facts and metnos_monitor_install cases fail (sandbox_profile also
    escapes its own reply)."""
    os.makedirs("/var/tmp/metnos-utf8/data", exist_ok=True)
    out, proc = adhoc("localhost", module, _put(args, TEMPLATED), options=["-vvv"])
    text = proc.stdout + proc.stderr
    assert "Refusing to deserialize" not in text and "surrogates not allowed" not in text, text[-2000:]
    assert out.get(key) == code, out
    if key == "refusal":
        assert "a\\udcffb" in out["msg"]


@pytest.mark.parametrize("module,args,key,code", CASES, ids=[case[0].rsplit(".", 1)[1] for case in CASES])
def test_the_json_escape_ad_hoc_is_refused_by_the_core_and_the_modules_reply_holds(module, args, key, code):
    """-a carrying "\\udcff": by default ansible-core refuses the -a text itself (rc != 0, no module ran, no
    result line); with the core's check off for this one run, the module's own reply is valid UTF-8 and carries
    the code (the module's part of item 6)."""
    os.makedirs("/var/tmp/metnos-utf8/data", exist_ok=True)
    with pytest.raises(AssertionError) as refused:
        adhoc("localhost", module, _put(args, LONE))
    assert "Refusing to deserialize an invalid UTF8 string value" in str(refused.value)
    env = dict(ansible_env(), ANSIBLE_MODULE_STRICT_UTF8_RESPONSE="false")
    out, proc = adhoc("localhost", module, _put(args, LONE), options=["-vvv"], env=env)
    text = proc.stdout + proc.stderr
    text.encode("utf-8")
    assert "surrogates not allowed" not in text, text[-2000:]
    assert out.get(key) == code, out
