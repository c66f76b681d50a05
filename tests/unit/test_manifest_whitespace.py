"""A manifest cannot lose a capability silently (issue 42, item 8): whitespace between two words of a capability -
the ' - ' of two list items run together, a line break, a space - is refused with its own code
(capability_whitespace) naming the lines, from a real manifest file, through every face that loads one."""
import json

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import envflags
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import host_context, model, renderer
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile.manifest import coerce, transport

MISINDENTED = """name: read_notes
origin: metnos/core
capabilities:
  - fs:read:/srv/notes/**
   - net:http
"""


def _refusal(prof):
    return [d for d in prof["diagnostics"] if d["severity"] == "error"][0]


def test_a_misindented_list_item_is_refused_naming_its_lines(tmp_path):
    path = tmp_path / "read_notes.yml"
    path.write_text(MISINDENTED)
    prof = renderer.render_safe(model.FileSource(str(path)), host_context.HostContext(), {})
    assert prof["decision"] == "refused" and prof["refusal"] == "capability_whitespace", prof["diagnostics"]
    diag = _refusal(prof)
    assert "capabilities[0] (lines 4-5): 'fs:read:/srv/notes/** - net:http' holds ' - '" in diag["message"], diag
    assert diag["details"]["line"] == 4
    # What the controller hands the host (the role's filter, the audit's action): the same refusal.
    moved = renderer.render_safe(transport(model.FileSource(str(path))), host_context.HostContext(), {})
    assert moved["refusal"] == "capability_whitespace" and "(lines 4-5)" in _refusal(moved)["message"]
    # The audit says it as the manifest's refusal, never a grant skipped.
    drift = host_audit.profile_drift([transport(model.FileSource(str(path)))], {}, str(tmp_path),
                                     envflags.status(None, {}))
    assert drift[0]["state"] == "refused" and drift[0]["refusal"] == "capability_whitespace", drift
    assert not any(d["code"] == "grant_skipped" for d in prof["diagnostics"])


@pytest.mark.parametrize("cap, wording", [
    ("fs:read:/srv/notes/** - net:http", "holds ' - '"),
    ("fs:read:/srv/a\nfs:read:/srv/b", "holds a line break"),
    ("fs:read:/srv/My Notes/**", "holds whitespace"),
    ("net:http\tnet:https", "holds whitespace"),
])
def test_whitespace_inside_is_its_own_code_in_yaml_and_json(tmp_path, cap, wording):
    for name, text in (("m.yml", "name: ex\norigin: o\ncapabilities:\n  - fs:read:/srv/x\n  - %s\n" % json.dumps(cap)),
                       ("m.json", json.dumps({"name": "ex", "origin": "o", "capabilities": ["fs:read:/srv/x", cap]}))):
        path = tmp_path / name
        path.write_text(text)
        prof = renderer.render_safe(model.FileSource(str(path)), host_context.HostContext(), {})
        assert prof["refusal"] == "capability_whitespace", (name, prof["diagnostics"])
        diag = _refusal(prof)
        assert "capabilities[1]" in diag["message"] and wording in diag["message"], diag["message"]
        if name.endswith(".yml"):
            assert "(line 5)" in diag["message"], diag["message"]


def test_a_well_indented_list_keeps_every_capability(tmp_path):
    path = tmp_path / "m.yml"
    path.write_text(MISINDENTED.replace("   - net:http", "  - net:http"))
    manifest = coerce(model.FileSource(str(path)))
    assert [c.text for c in manifest.capabilities] == ["fs:read:/srv/notes/**", "net:http"]
