"""docs/role-variables.md is generated from the roles' meta/argument_specs.yml and cannot drift; every variable
a role's defaults set is in its argument spec, so the generated list is complete."""
import glob
import os

import yaml

from helpers import faces
from helpers.paths import ROOT


def _gen(root=ROOT):
    return faces.load("scripts/gen-role-variables-doc.py", "gen_role_variables").render(root)


def test_role_variables_doc_matches_the_argument_specs():
    with open(os.path.join(ROOT, "docs", "role-variables.md")) as handle:
        committed = handle.read()
    assert committed == _gen(), "docs/role-variables.md is stale: run `make docs`"


def test_every_default_is_documented_with_its_value():
    text = _gen()
    for defaults in glob.glob(os.path.join(ROOT, "roles", "*", "defaults", "main.yml")):
        with open(defaults) as handle:
            names = list(yaml.safe_load(handle) or {})
        assert names, defaults
        missing = [name for name in names if "| `%s` |" % name not in text]
        assert not missing, "%s: not in meta/argument_specs.yml: %s" % (defaults, missing)


def test_a_changed_default_is_seen(tmp_path):
    """The generator reads the spec it is given: a default changed there changes the page."""
    role = tmp_path / "roles" / "r" / "meta"
    role.mkdir(parents=True)
    spec = {"argument_specs": {"main": {"short_description": "R", "options": {
        "r_x": {"type": "int", "default": 1, "description": "X."}}}}}
    (role / "argument_specs.yml").write_text(yaml.safe_dump(spec))
    first = _gen(str(tmp_path))
    assert "| `r_x` | int | `1` | X. |" in first
    spec["argument_specs"]["main"]["options"]["r_x"]["default"] = 2
    (role / "argument_specs.yml").write_text(yaml.safe_dump(spec))
    assert _gen(str(tmp_path)) != first
