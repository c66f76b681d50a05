"""A manifest given as JSON text is walked once before rendering (issue 44): the decoder's plain copy is
what the validation reads, and the string lengths it would have checked on a second walk are noted on the
first and refused at the same point (after the count checks), so every refusal is the one the two walks gave."""
import json

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import manifest, model, reader

LONG = "x" * (model.MAX_STRING + 1)


def outcome(call):
    try:
        made = call()
        return ("ok", made.name, made.origin, [c.text for c in made.capabilities], made.files)
    except model.ManifestError as exc:
        return ("refused", exc.diagnostics)


CASES = [
    {"name": "ex", "origin": "o", "capabilities": ["fs:read:/srv/data"]},
    {"name": "ex", "origin": LONG, "capabilities": []},
    {"name": "ex", "origin": "o", LONG: 1},
    {"name": "ex", "origin": LONG, "capabilities": ["net:none"] * (model.MAX_CAPABILITIES + 1)},   # the count first
    {"name": "ex", "origin": "o", "files": [LONG, "y" * (model.MAX_STRING + 2)]},                  # the first of two
    {"name": "ex", "origin": LONG, "capabilities": [[[[[]]]]] * model.MAX_NODES},                  # the nodes first
    {"name": "ex", "origin": LONG, "revision": 2 ** 63},                                        # the range first
]


@pytest.mark.parametrize("data", CASES, ids=range(len(CASES)))
def test_json_text_walked_once_refuses_as_two_walks(data, monkeypatch):
    text = json.dumps(data)
    two_walks = outcome(lambda: manifest.from_dict(reader.decode(text), source="<inline>"))
    walks = []
    plain = reader.plain
    monkeypatch.setattr(reader, "plain", lambda *a, **k: walks.append(1) or plain(*a, **k))
    assert outcome(lambda: manifest.coerce(text)) == two_walks
    assert len(walks) == 1


def test_yaml_and_mappings_are_still_walked_by_the_validation(monkeypatch):
    walks = []
    plain = reader.plain
    monkeypatch.setattr(reader, "plain", lambda *a, **k: walks.append(1) or plain(*a, **k))
    manifest.coerce("name: ex\norigin: o\n")
    manifest.coerce({"name": "ex", "origin": "o"})
    assert len(walks) == 2
