"""Documentation that cannot garble, and one version everywhere.

Every module's DOCUMENTATION/RETURN, every doc fragment, every filter's doc sidecar and every role's
argument spec is parsed as YAML (as ansible-doc reads it) and checked against the fields Ansible declares:
a key that is not a field of its entry fails, so does an entry without a description. That is the class of
the bug where a flow mapping's description held commas (``kind: {description: ro, rw, tmpfs, ...}``): YAML
splits it into ``description: ro`` and stray keys ``rw: null``, ``tmpfs: null``, and ansible-doc prints
them without a warning. Entries are written in block style (STYLE.md); a flow mapping as an entry fails by
itself too. test_a_planted_flow_mapping_entry_is_caught proves the checks catch the original defect.

Versions: galaxy.yml's ``version`` is the one source. Every ``version_added`` (modules, options, filters,
roles' argument specs) names a release of the changelog or that version; the changelog is released up to
it; ansible-core's pin (requirements.txt) is what meta/runtime.yml requires, what the roles' meta call
``min_ansible_version``, what the execution environment installs, and the ignore file's name of the
sanity tests; the sanity tools are pinned as ansible-test pins them for that ansible-core.
"""
import ast
import glob
import json
import os
import re

import pytest
import yaml

from conftest import ROOT

NS = "metnos.sandbox."
MODULES = sorted(glob.glob(os.path.join(ROOT, "library", "*.py")))
FILTERS = sorted(glob.glob(os.path.join(ROOT, "filter_plugins", "*.yml")))
FRAGMENTS = sorted(glob.glob(os.path.join(ROOT, "doc_fragments", "*.py")))
ROLE_SPECS = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))

# The fields Ansible declares (ansible-core's validate-modules schema, ansible-doc's fragment merge).
MODULE_TOP = {"module", "short_description", "description", "version_added", "author", "options", "attributes",
              "notes", "requirements", "seealso", "extends_documentation_fragment", "deprecated"}
FILTER_TOP = {"name", "short_description", "description", "version_added", "author", "positional", "options",
              "notes", "requirements", "seealso"}
FRAGMENT_TOP = {"options", "attributes", "author", "notes", "requirements", "seealso"}
ROLE_ENTRY = {"short_description", "description", "version_added", "author", "options", "attributes", "notes",
              "requirements", "seealso"}
OPTION = {"description", "type", "elements", "default", "choices", "required", "aliases", "suboptions",
          "version_added", "no_log", "options"}
RETURN = {"description", "returned", "type", "elements", "contains", "sample", "version_added"}
ATTRIBUTE = {"description", "support", "details", "platforms", "membership", "version_added"}
AUTHOR = re.compile(r"^\S.* \(@[A-Za-z0-9-]+\)$")
MARKUP = re.compile(r"\b([MO])\(([^)#]+)(#[^)]*)?\)")


def constants(path, cls=None):
    """The string constants of a module (or of one class in it), read without importing it."""
    with open(path) as handle:
        tree = ast.parse(handle.read())
    body = tree.body if cls is None else [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls][0].body
    return dict((n.targets[0].id, n.value.value) for n in body if isinstance(n, ast.Assign)
                and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Constant))


def galaxy():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)


def _description(where, value):
    texts = value if isinstance(value, list) else [value]
    if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
        return ["%s: no description (a non-empty string or list of strings)" % where]
    return []


def _entries(where, mapping, fields, nested, problems):
    """Check each entry of ``mapping`` (options, return values, attributes) and recurse into ``nested``."""
    if not isinstance(mapping, dict):
        problems.append("%s: not a mapping of entries" % where)
        return
    for name, entry in mapping.items():
        here = "%s.%s" % (where, name)
        if not isinstance(entry, dict):
            problems.append("%s: not a mapping" % here)
            continue
        unknown = sorted(str(k) for k in entry if k not in fields)
        if unknown:
            problems.append("%s: keys that are not fields: %s" % (here, ", ".join(unknown)))
        problems += _description(here, entry.get("description"))
        for key in nested:
            if key in entry:
                _entries("%s.%s" % (here, key), entry[key], fields, nested, problems)


def flow_entries(text, where):
    """Entries written as flow mappings (``name: {description: ...}``): any mapping node in flow style that is
    not empty and is not data (a ``sample`` or ``default``)."""
    found = []

    def walk(node, path):
        if isinstance(node, yaml.MappingNode):
            if node.flow_style and node.value and path.split(".")[-1] not in ("sample", "default"):
                found.append("%s: a flow mapping (write the entry in block style)" % (path or where))
            for key, value in node.value:
                walk(value, "%s.%s" % (path, key.value) if path else str(key.value))
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                walk(item, path)

    walk(yaml.compose(text), "")
    return ["%s: %s" % (where, f) for f in found]


def check_module_doc(name, documentation, returns):
    """Every problem of one module's DOCUMENTATION and RETURN texts (empty when clean)."""
    problems = flow_entries(documentation, name + " DOCUMENTATION") + flow_entries(returns, name + " RETURN")
    doc, ret = yaml.safe_load(documentation), yaml.safe_load(returns)
    problems += ["%s: keys that are not fields: %s" % (name, k) for k in sorted(set(doc) - MODULE_TOP)]
    problems += _description(name + ".description", doc.get("description"))
    problems += _description(name + ".short_description", doc.get("short_description"))
    _entries(name + ".options", doc.get("options") or {}, OPTION, ("suboptions", "options"), problems)
    _entries(name + ".attributes", doc.get("attributes") or {}, ATTRIBUTE, (), problems)
    _entries(name + " RETURN", ret or {}, RETURN, ("contains",), problems)
    return problems


def check_filter_doc(name, sidecar):
    problems = flow_entries(sidecar, name)
    data = yaml.safe_load(sidecar)
    doc = data.get("DOCUMENTATION") or {}
    problems += ["%s: keys that are not fields: %s" % (name, k) for k in sorted(set(doc) - FILTER_TOP)]
    problems += ["%s: sidecar sections that Ansible does not read: %s" % (name, k)
                 for k in sorted(set(data) - {"DOCUMENTATION", "EXAMPLES", "RETURN"})]
    problems += _description(name + ".description", doc.get("description"))
    _entries(name + ".options", doc.get("options") or {}, OPTION, ("suboptions", "options"), problems)
    _entries(name + " RETURN", data.get("RETURN") or {}, RETURN, ("contains",), problems)
    return problems


def _texts(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _texts(value)
    elif isinstance(node, list):
        for value in node:
            yield from _texts(value)


def _versions(node, where):
    """(where, version_added) of a doc tree, recursively."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "version_added":
                yield where, value
            else:
                yield from _versions(value, "%s.%s" % (where, key))
    elif isinstance(node, list):
        for value in node:
            yield from _versions(value, where)


def all_docs():
    """{name: parsed documentation tree} of every module, fragment, filter sidecar and role spec."""
    docs = {}
    for path in MODULES:
        c = constants(path)
        docs["module " + os.path.basename(path)] = {"doc": yaml.safe_load(c["DOCUMENTATION"]),
                                                    "return": yaml.safe_load(c["RETURN"])}
    for path in FRAGMENTS:
        for var, text in constants(path, "ModuleDocFragment").items():
            docs["fragment %s %s" % (os.path.basename(path), var)] = yaml.safe_load(text)
    for path in FILTERS:
        with open(path) as handle:
            docs["filter " + os.path.basename(path)] = yaml.safe_load(handle)
    for path in ROLE_SPECS:
        with open(path) as handle:
            docs["role " + path.split(os.sep)[-3]] = yaml.safe_load(handle)
    return docs


# ---------------------------------------------------------------------------------------------- the checks
@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_module_docs_have_only_declared_fields_and_descriptions(path):
    c = constants(path)
    assert check_module_doc(os.path.basename(path), c["DOCUMENTATION"], c["RETURN"]) == []


@pytest.mark.parametrize("path", FILTERS, ids=os.path.basename)
def test_filter_sidecars_have_only_declared_fields_and_descriptions(path):
    with open(path) as handle:
        assert check_filter_doc(os.path.basename(path), handle.read()) == []


@pytest.mark.parametrize("path", FRAGMENTS, ids=os.path.basename)
def test_doc_fragments_have_only_declared_fields_and_descriptions(path):
    problems = []
    for var, text in constants(path, "ModuleDocFragment").items():
        where = "%s %s" % (os.path.basename(path), var)
        problems += flow_entries(text, where)
        doc = yaml.safe_load(text)
        problems += ["%s: keys that are not fields: %s" % (where, k) for k in sorted(set(doc) - FRAGMENT_TOP)]
        _entries(where + ".options", doc.get("options") or {}, OPTION, ("suboptions",), problems)
        _entries(where + ".attributes", doc.get("attributes") or {}, ATTRIBUTE, (), problems)
    assert problems == []


@pytest.mark.parametrize("path", ROLE_SPECS, ids=lambda p: p.split(os.sep)[-3])
def test_role_argument_specs_have_only_declared_fields_and_descriptions(path):
    with open(path) as handle:
        text = handle.read()
    problems = []
    for entry_point, spec in yaml.safe_load(text)["argument_specs"].items():
        where = "%s %s" % (path.split(os.sep)[-3], entry_point)
        problems += ["%s: keys that are not fields: %s" % (where, k) for k in sorted(set(spec) - ROLE_ENTRY)]
        _entries(where + ".options", spec.get("options") or {}, OPTION, ("options",), problems)
    assert flow_entries(text, path.split(os.sep)[-3]) + problems == []


def test_a_planted_flow_mapping_entry_is_caught():
    """The original defect, planted into sandbox_profile's RETURN: the checks name the stray keys YAML made of
    the description's commas, and the flow style itself."""
    c = constants(os.path.join(ROOT, "library", "sandbox_profile.py"))
    block = re.search(r"\n    kind:\n(      .*\n)+", c["RETURN"])
    assert block, "sandbox_profile's RETURN has no block-style mounts.kind entry to replace"
    planted = c["RETURN"].replace(block.group(0), "\n    kind: {description: ro, rw, tmpfs, proc, dev or symlink., "
                                                  "type: str}\n")
    problems = "\n".join(check_module_doc("sandbox_profile.py", c["DOCUMENTATION"], planted))
    assert "mounts.contains.kind: keys that are not fields: dev or symlink., proc, rw, tmpfs" in problems
    assert "mounts.contains.kind: a flow mapping" in problems


def test_a_missing_description_and_an_unknown_option_field_are_caught():
    doc = "module: x\nshort_description: X\ndescription: X.\noptions:\n  a:\n    type: str\n  b:\n" \
          "    description: B.\n    defualt: 1\n"
    problems = check_module_doc("x.py", doc, "{}")
    assert problems == ["x.py.options.a: no description (a non-empty string or list of strings)",
                        "x.py.options.b: keys that are not fields: defualt"]


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_authors_are_name_and_handle(path):
    doc = yaml.safe_load(constants(path)["DOCUMENTATION"])
    authors = doc.get("author") or []
    for fragment in doc.get("extends_documentation_fragment") or []:
        file, _dot, var = fragment[len(NS):].partition(".")
        texts = constants(os.path.join(ROOT, "doc_fragments", file + ".py"), "ModuleDocFragment")
        authors = authors or yaml.safe_load(texts[(var or "documentation").upper()]).get("author") or []
    assert authors and all(AUTHOR.match(a) for a in authors), authors
    assert all(AUTHOR.match(a) for a in galaxy()["authors"]), galaxy()["authors"]


def test_markup_names_this_collections_plugins_by_fqcn_and_they_exist():
    modules = set(os.path.basename(p)[:-3] for p in MODULES)
    bad = []
    for name, doc in all_docs().items():
        for text in _texts(doc):
            for kind, target, _opt in MARKUP.findall(text):
                if "=" in target or (kind == "O" and "." not in target):
                    continue                     # O(option), O(option=value): this plugin's own option
                if not target.startswith(("ansible.builtin.", NS)) or \
                        (target.startswith(NS) and target[len(NS):] not in modules):
                    bad.append("%s: %s(%s)" % (name, kind, target))
    assert bad == []


# ---------------------------------------------------------------------------------------------- versions
def _pins(path):
    with open(os.path.join(ROOT, path)) as handle:
        return dict(line.split("#")[0].strip().split("==", 1) for line in handle
                    if "==" in line.split("#")[0] and not line.startswith("-"))


def _changelog_releases():
    with open(os.path.join(ROOT, "changelogs", "changelog.yaml")) as handle:
        return sorted((yaml.safe_load(handle) or {}).get("releases") or {}, key=_semver)


def _semver(text):
    assert re.match(r"^\d+\.\d+\.\d+$", str(text)), "not a semantic version: %r" % (text,)
    return tuple(int(p) for p in str(text).split("."))


def test_galaxy_version_is_the_newest_release_or_the_next():
    version = galaxy()["version"]
    releases = _changelog_releases()
    assert releases, "changelogs/changelog.yaml has no release"
    assert _semver(version) >= _semver(releases[-1]), (version, releases)


def test_every_version_added_is_a_release_or_the_current_version():
    allowed = set(_changelog_releases()) | {galaxy()["version"]}
    found = [(where, v) for name, doc in all_docs().items() for where, v in _versions(doc, name)]
    assert found, "no version_added anywhere"
    assert [(w, v) for w, v in found if str(v) not in allowed] == []
    plugins = [(n, d["doc"]["version_added"] if n.startswith("module") else d["DOCUMENTATION"]["version_added"])
               for n, d in all_docs().items() if n.startswith(("module", "filter"))]
    assert all(isinstance(v, str) for _n, v in plugins), "quote version_added: %s" % plugins


def test_ansible_core_pin_is_what_runtime_roles_and_the_execution_environment_say():
    core = _pins("requirements.in")["ansible-core"]
    major_minor = ".".join(core.split(".")[:2])
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as handle:
        assert yaml.safe_load(handle)["requires_ansible"] == ">=%s.0" % major_minor
    for meta in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "main.yml")):
        with open(meta) as handle:
            info = yaml.safe_load(handle)["galaxy_info"]
        assert str(info["min_ansible_version"]) == major_minor, meta
        assert info["namespace"] == galaxy()["namespace"], meta
    with open(os.path.join(ROOT, "execution-environment.yml")) as handle:
        ee = yaml.safe_load(handle)
    assert ee["dependencies"]["python"] == "requirements-ee.txt"
    assert _pins("requirements-ee.in")["ansible-core"] == core
    assert os.path.isfile(os.path.join(ROOT, "tests", "sanity", "ignore-%s.txt" % major_minor))


def test_sanity_tools_are_pinned_as_ansible_test_pins_them():
    """The sanity run (scripts/sanity.py) uses requirements-test.in's pins: they are ansible-test's own for
    the pinned ansible-core (PyYAML and Jinja2 excepted: requirements.in pins them for the controller)."""
    import ansible_test
    ours = _pins("requirements-test.in")
    theirs = {}
    data = os.path.join(os.path.dirname(ansible_test.__file__), "_data", "requirements")
    for path in glob.glob(os.path.join(data, "sanity.*.txt")):
        with open(path) as handle:
            theirs.update(dict(line.strip().split("==", 1) for line in handle if "==" in line))
    for name in ("pylint", "astroid", "pycodestyle", "voluptuous", "antsibull-docs-parser", "antsibull-changelog",
                 "yamllint", "rstcheck"):
        assert ours.get(name) == theirs[name], (name, ours.get(name), theirs[name])


CORE_SAID = re.compile(r"ansible-core\W{0,3}(?:>=|≥)?\s*(\d+\.\d+)")
PYTHON_SAID = re.compile(r"Python\W{0,3}(?:>=|≥)\s*(3\.\d+)|Python \**(3\.\d+)\+")


def test_one_version_statement_everywhere():
    """ansible-core X.Y (requirements.in's pin) and the controller's Python >= the one ansible-core requires, said
    the same way in scripts/bootstrap.sh, the README, galaxy.yml and meta/runtime.yml; each of the first three
    says both."""
    from importlib import metadata
    core = ".".join(_pins("requirements.in")["ansible-core"].split(".")[:2])
    python = metadata.metadata("ansible-core")["Requires-Python"].replace(">=", "").strip()
    for rel in ("scripts/bootstrap.sh", "README.md", "galaxy.yml", "meta/runtime.yml"):
        with open(os.path.join(ROOT, rel), encoding="utf-8") as handle:
            text = handle.read()
        cores = set(CORE_SAID.findall(text)) | set(re.findall(r"requires_ansible: \">=(\d+\.\d+)", text))
        pythons = set(a or b for a, b in PYTHON_SAID.findall(text))
        assert cores == {core}, (rel, cores, core)
        if rel != "meta/runtime.yml":
            assert pythons == {python}, (rel, pythons, python)


def test_module_pages_say_where_the_rule_titles_are():
    """A module page (its docs with the fragments it extends, as ansible-doc shows it) that names spec rules
    (R-...) or the spec says where the user finds their titles."""
    docs = all_docs()
    for name, doc in docs.items():
        if not name.startswith("module"):
            continue
        text = json.dumps(doc)
        for fragment in doc["doc"].get("extends_documentation_fragment", []):
            var = fragment.split(".")[3].upper() if fragment.count(".") == 3 else "DOCUMENTATION"
            text += json.dumps(docs["fragment %s.py %s" % (fragment.split(".")[2], var)])
        if re.search(r"\bR-[A-Z]+-|\bspec\b", text):
            assert "docs/spec-rules.yml" in text, name
        assert not re.search(r"spec sections? \d", text), name
