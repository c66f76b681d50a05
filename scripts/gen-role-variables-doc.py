#!/usr/bin/env python3
"""Print docs/role-variables.md from each role's meta/argument_specs.yml (the roles' one list of variables:
Ansible validates them with it before a role runs).

    python scripts/gen-role-variables-doc.py > docs/role-variables.md

tests/unit/test_role_variables_doc.py fails when the committed file differs from this output.
"""
import glob
import json
import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Ansible's documentation markup: C(code), O(option), M(module), V(value) -> `...`
MARKUP = re.compile(r"\b[CMOV]\(([^()]*)\)")


def _cell(text):
    return MARKUP.sub(r"`\1`", " ".join(str(text).split())).replace("|", "\\|")


def _value(value):
    """A default as YAML would read it back, in one line (JSON is YAML)."""
    return "`%s`" % json.dumps(value) if not isinstance(value, str) else ("`%s`" % value if value else '`""`')


def _description(option):
    text = option.get("description", "")
    if isinstance(text, list):
        text = " ".join(text)
    if option.get("choices"):
        text += " Choices: %s." % ", ".join("`%s`" % c for c in option["choices"])
    return _cell(text)


def render(root=ROOT):
    out = ["# Role variables", "",
           "Generated from each role's `meta/argument_specs.yml` by `scripts/gen-role-variables-doc.py` "
           "(`make docs`). Do not edit by hand. A value of the wrong type or outside its choices fails before the "
           "role runs, naming the variable and the accepted values.", ""]
    for spec_file in sorted(glob.glob(os.path.join(root, "roles", "*", "meta", "argument_specs.yml"))):
        role = os.path.basename(os.path.dirname(os.path.dirname(spec_file)))
        with open(spec_file, encoding="utf-8") as handle:
            main = yaml.safe_load(handle)["argument_specs"]["main"]
        out += ["## `metnos.sandbox.%s`" % role, "", _cell(main.get("short_description", "")) + ".", "",
                "| variable | type | default | description |", "|---|---|---|---|"]
        for name, option in main.get("options", {}).items():
            kind = option.get("type", "str")
            if option.get("elements"):
                kind += " of " + option["elements"]
            default = _value(option["default"]) if "default" in option else "(required)"
            out.append("| `%s` | %s | %s | %s |" % (name, kind, default, _description(option)))
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")
