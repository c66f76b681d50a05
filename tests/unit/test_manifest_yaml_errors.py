"""Invalid YAML is refused as invalid YAML, with its line and column (issue 53, item 3): an unclosed [ flow list
used to read the next line into its last item and be refused as capability_whitespace. Real PyYAML (libyaml when
present) parses each text; cases as data. A capability that really holds whitespace in valid YAML is still
capability_whitespace (the canary that the check itself still runs)."""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import model, reader

CASES = [
    ("unclosed flow list, next key", "name: broken_yaml\norigin: metnos/core\ncapabilities: [fs:read:/srv/notes/**\n"
     "extra: 1\n", "manifest_parse_error", "(line 4, column 6)"),
    ("unclosed flow list over two lines", "name: broken_yaml\norigin: metnos/core\ncapabilities: [fs:read:/srv/a,\n"
     "  net:connect:example.org:443\nfoo: 1\n", "manifest_parse_error", "(line 5, column 4)"),
    ("unclosed origin", "name: broken\norigin: [unclosed\n", "manifest_parse_error", "(line 3, column 1)"),
    ("whitespace in valid YAML", "name: a\norigin: metnos/core\ncapabilities:\n  - fs:read:/srv/my notes\n",
     "capability_whitespace", "(line 4)"),
]


@pytest.mark.parametrize("text,code,where", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_yaml_is_refused_as_invalid_yaml(text, code, where):
    with pytest.raises(model.ManifestError) as caught:
        reader.decode(text.encode(), "m.yml")
    first = caught.value.diagnostics[0]
    assert (first["code"], where in first["message"]) == (code, True), first["message"]


def test_the_readable_name_of_a_file_that_does_not_load():
    assert reader.readable_name(b"name: broken_yaml\norigin: [unclosed\n") == "broken_yaml"
    assert reader.readable_name(b"name: 'quoted'  # c\n") == "quoted"
    assert reader.readable_name(b"origin: [x\n  name: nested\n") is None          # not top level
    assert reader.readable_name(b"name: a\nname: b\n") is None                     # two: neither
    assert reader.readable_name(b"name: ../etc\n") is None                         # not an executor name
