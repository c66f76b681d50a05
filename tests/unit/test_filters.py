"""The filter plugins: thin faces over the core, with errors that name the filter and the value."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import host_context, model, renderer
from helpers import faces

F = faces.load("filter_plugins/metnos_sandbox.py", "mfilters")


def test_filters_registered():
    assert set(F.FilterModule().filters()) >= {"metnos_capabilities", "metnos_profile", "metnos_argv", "shell_join",
                                               "metnos_manifest_source", "sandbox_summary"}


def test_capabilities_and_argv():
    caps = F.metnos_capabilities(["fs:read:/srv/x/**", "net:http"])
    assert [c["kind"] for c in caps] == ["fs", "network"] and caps[1]["network"] is True
    argv = F.metnos_argv({"name": "x", "origin": "o", "capabilities": []})
    assert argv[0] == "bwrap" and "--unshare-net" in argv
    assert F.shell_join(["a b", "c"]) == "'a b' c"


@pytest.mark.parametrize("call,text", [
    (lambda: F.metnos_capabilities("net:http"), "expected a list"),
    (lambda: F.metnos_capabilities(["fs:exec:/x"]), "capability_unknown"),
    (lambda: F.metnos_argv({"name": "x", "origin": "o", "capabilities": ["fs:write:/**"]}), "scope_too_broad"),
    (lambda: F.metnos_profile(5), "expected a manifest"),
    (lambda: F.metnos_profile({"name": "x", "origin": "o"}, host={"bad_key": 1}), "bad_key"),
    (lambda: F.shell_join("abc"), "expected a list of strings"),
])
def test_errors_name_filter_and_value(call, text):
    with pytest.raises(AnsibleFilterError, match=text):
        call()


def test_manifest_source_parses_on_the_controller(tmp_path):
    good = tmp_path / "m.yml"
    good.write_text("name: x\norigin: o\ncapabilities: [net:a]\n")
    assert F.metnos_manifest_source(str(good))["name"] == "x"
    assert F.metnos_manifest_source({"file": str(good), "invocation": {}})["origin"] == "o"
    assert F.metnos_manifest_source({"manifest": {"name": "y"}}) == {"name": "y"}
    # Issue 10: a manifest the core refuses to load is no longer raised here nor passed on as
    # text; the filter hands over the core's refusal record, and the host refuses it with the
    # same code (one reader, one decoder, one decision for every face).
    bad = tmp_path / "bad.yml"
    bad.write_bytes(b"name: caf\xe9\n")
    record = F.metnos_manifest_source(str(bad))
    assert record[model.REFUSAL_KEY]["code"] == "manifest_not_utf8"
    assert renderer.render_safe(record, host_context.HostContext())["refusal"] == "manifest_not_utf8"
    broken = tmp_path / "broken.yml"
    broken.write_text("name: [unclosed\n")
    record = F.metnos_manifest_source(str(broken))
    assert renderer.render_safe(record, host_context.HostContext())["refusal"] == "manifest_parse_error"


def test_profile_filter_is_a_preview():
    prof = F.metnos_profile({"name": "x", "origin": "o", "capabilities": []})
    assert prof["preview"] is True and "profile_preview" in [d["code"] for d in prof["diagnostics"]]
