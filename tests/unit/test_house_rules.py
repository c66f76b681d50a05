# -*- coding: utf-8 -*-
"""The house rules of issue 44, read from the sources' syntax trees:

a. a module of the core is imported by its own name (``from ..profile import model``), never under an alias: no
   letter, and (issue 55) no ``<package>_<module>`` either - a module is named so that it does not repeat its
   package, and where its name is taken in a file, the types it gives are imported by name;
b. no file uses another module's underscore name: neither ``model._refuse`` (an attribute of a name bound to a
   core module) nor ``from ..profile.model import _refuse``: what another module uses is public;
c. one mountinfo parser: host/mountinfo.py alone splits mountinfo lines and undoes their \\ooo escapes (issue 55).
d. one walk of a bwrap argv: host/bwrap_options.options() (issue 55);
e. no function takes more than MAX_PARAMETERS parameters (self and cls aside): more travel as a typed record;
f. no module of the core is longer than MAX_LOGICAL_LINES logical lines: a line joining statements with ``;``, or
   ``import a, b``, counts once per statement or module (joining lines does not dodge the limit).

Each rule is guarded once (issue 55): code in strings by tests/unit/test_code_in_files.py, base/ importing nothing
above it (and no package importing upwards) by tests/unit/test_core_layout.py.

Issue 44's codemod (house.py, kept with the issue) rewrites a tree to rules a and b. Each rule is also run on a planted
breach (a made-up source), so a check that has stopped looking fails here."""
from __future__ import absolute_import, annotations, division, print_function

import ast
import functools
import os

import pytest

from helpers.paths import CORE, ROOT, read_text

# Where rules a and b hold: every first-party Python folder.
FOLDERS = ("module_utils", "library", "action_plugins", "callback_plugins", "filter_plugins", "tests", "scripts",
           "benchmarks", "roles")
# The core's import names (the old one is tests/unit/test_import_name.py's alone).
CORE_NAMES = ("ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox", "metnos_sandbox")
# Where rules e and f hold: the core and the plugins.
CODE_FOLDERS = ("module_utils", "library", "action_plugins", "callback_plugins", "filter_plugins")
MAX_PARAMETERS = 7
MAX_LOGICAL_LINES = 650

# Offenders being removed by work not merged yet (issue 55). An entry whose offence is gone fails
# test_the_allow_lists_hold_only_live_offenders, so a list cannot go stale.
UNTIL_MERGED = {
    # rule e: (file, function) taking more than MAX_PARAMETERS parameters
    "parameters": {},
}
# Rule f's one exception, with its reason (the same as tests/unit/test_core_layout.py's).
OWN_LIMITS = {"module_utils/metnos_sandbox/profile/descriptors.py": 740}     # the launcher's core ships alone


# ---------------------------------------------------------------------------------------------- the tree
def _python_files(folders):
    for top in folders:
        for folder, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            for name in sorted(names):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    yield os.path.relpath(path, ROOT), path


@functools.lru_cache(maxsize=None)
def _tree(source):
    return ast.parse(source)


def _core_modules():
    """{dotted name under the core ('profile.model', 'base')} for every module and package of the core."""
    found = set()
    for rel, _path in _python_files(["module_utils"]):
        parts = os.path.relpath(os.path.join(ROOT, rel), CORE)[:-3].split(os.sep)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found.add(".".join(parts))
    return found


MODULES = _core_modules()


def _own_parts(rel):
    """The core module a file is (['profile', 'model']), or None for a file outside the core."""
    path = os.path.join(ROOT, rel)
    if not path.startswith(CORE + os.sep):
        return None
    parts = os.path.relpath(path, CORE)[:-3].split(os.sep)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _package(rel):
    """The package parts a relative import in ``rel`` starts from, or None outside the core."""
    parts = _own_parts(rel)
    if parts is None:
        return None
    return parts if rel.endswith("__init__.py") else parts[:-1]


def _base_of(rel, node):
    """The core package parts an ImportFrom names, or None if it is not the core."""
    if node.level:
        package = _package(rel)
        if package is None or node.level - 1 > len(package):
            return None
        return package[:len(package) - (node.level - 1)] + (node.module.split(".") if node.module else [])
    for name in CORE_NAMES:
        if node.module == name:
            return []
        if node.module and node.module.startswith(name + "."):
            return node.module[len(name) + 1:].split(".")
    return None


def core_imports(rel, source):
    """[(line, module dotted, bound name or None, imported name)] for each import naming the core:
    a module (bound name set) or a name of a module (bound name None for modules, the name otherwise)."""
    out = []
    for node in ast.walk(_tree(source)):
        if isinstance(node, ast.ImportFrom):
            base = _base_of(rel, node)
            if base is None:
                continue
            for alias in node.names:
                dotted = ".".join(base + [alias.name])
                if dotted in MODULES:
                    out.append((node.lineno, dotted, alias.asname or alias.name, None))
                else:
                    out.append((node.lineno, ".".join(base), None, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                for name in CORE_NAMES:
                    if alias.name.startswith(name + ".") and alias.name[len(name) + 1:] in MODULES:
                        bound = alias.asname or alias.name.split(".")[0]
                        out.append((node.lineno, alias.name[len(name) + 1:], bound if alias.asname else None,
                                    None))
    return out


# ------------------------------------------------------------------------------------------------ rule a
def aliased_imports(rel, source):
    """['line: module as alias'] for each core module imported under another name than its own."""
    found = []
    for line, dotted, bound, name in core_imports(rel, source):
        if bound is None or name is not None:
            continue
        if bound != dotted.split(".")[-1]:
            found.append("%d: %s as %s" % (line, dotted, bound))
    return found


def _alias_offences():
    return {(rel, hit.split(": ", 1)[1]): "%s:%s" % (rel, hit)
            for rel, path in _python_files(FOLDERS) for hit in aliased_imports(rel, read_text(path))}


def test_core_modules_are_imported_by_their_own_names():
    found = [hit for _key, hit in sorted(_alias_offences().items())]      # no allow-list: the rule is strict
    assert not found, "import the module by its own name (the types it gives by name where that is taken):\n" + \
        "\n".join(found)


@pytest.mark.parametrize("source, hits", [
    ("from ..profile import model as MD\n", ["1: profile.model as MD"]),
    ("from ...metnos_sandbox.base import diagnostics as D\n", []),      # above the core: not the core
    ("from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import result as RS\n",
     ["1: profile.result as RS"]),
    ("import metnos_sandbox.host.bwrap as B\n", ["1: host.bwrap as B"]),
    ("from ..profile import result as profile_result\nfrom ..base import diagnostics as base_diagnostics\n",
     ["1: profile.result as profile_result", "2: base.diagnostics as base_diagnostics"]),     # issue 55
    ("from ..base import diagnostics as probe_diagnostics\n", ["1: base.diagnostics as probe_diagnostics"]),
    ("from ..profile import model\nimport typing as t\n", []),
])
def test_aliased_imports_are_seen(source, hits):
    assert aliased_imports("module_utils/metnos_sandbox/audit/x.py", source) == hits


# ------------------------------------------------------------------------------------------------ rule b
def _private(name):
    return name.startswith("_") and not name.startswith("__")


_TOPS = {}


def _top_names(dotted):
    """The names module ``dotted`` of the core binds at its top (what ``module.name`` can reach)."""
    if dotted not in _TOPS:
        path = os.path.join(CORE, *dotted.split("."))
        path = os.path.join(path, "__init__.py") if os.path.isdir(path) else path + ".py"
        names = set()
        for node in ast.parse(read_text(path)).body:
            for sub in [node] + [n for n in ast.walk(node) if isinstance(node, (ast.If, ast.Try, ast.With))]:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(sub.name)
                elif isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    for target in sub.targets if isinstance(sub, ast.Assign) else [sub.target]:
                        names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
                elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                    names.update(a.asname or a.name.split(".")[0] for a in sub.names)
        _TOPS[dotted] = names
    return _TOPS[dotted]


def private_uses(rel, source, tops=_top_names):
    """['line: module._name'] for each use of another core module's underscore name."""
    own = ".".join(_own_parts(rel) or [])
    imports = core_imports(rel, source)
    bound = {b: dotted for _line, dotted, b, name in imports if b is not None and name is None}
    found = ["%d: from %s import %s" % (line, dotted, name) for line, dotted, b, name in imports
             if name is not None and _private(name) and dotted != own]
    for node in ast.walk(_tree(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound and \
                _private(node.attr) and bound[node.value.id] != own and node.attr in tops(bound[node.value.id]):
            found.append("%d: %s.%s" % (node.lineno, bound[node.value.id], node.attr))
    return sorted(set(found), key=lambda hit: (int(hit.split(":")[0]), hit))


def test_no_module_uses_another_modules_underscore_names():
    found = ["%s:%s" % (rel, hit) for rel, path in _python_files(FOLDERS) for hit in private_uses(rel, read_text(path))]
    assert not found, "what another module uses is public: rename it without the underscore, everywhere:\n" + \
        "\n".join(found)


@pytest.mark.parametrize("source, hits", [
    ("from ..profile import model\nmodel._refuse()\nmodel.refuse()\n", ["2: profile.model._refuse"]),
    ("from ..profile.model import _refuse, refuse\n", ["1: from profile.model import _refuse"]),
    ("from . import granters\nx = granters._Render\n", ["2: profile.granters._Render"]),
    ("from . import result\nresult._asdict()\n", []),         # not a name of the module: a record's method
    ("import collections\ncollections._x\n", []),
])
def test_private_uses_are_seen(source, hits):
    tops = {"profile.model": {"_refuse", "refuse"}, "profile.granters": {"_Render"}, "profile.result": set()}
    assert private_uses("module_utils/metnos_sandbox/profile/renderer.py", source, tops.__getitem__) == hits


def test_a_module_may_use_its_own_underscore_names():
    source = "from . import model\nmodel._refuse()\n"
    assert private_uses("module_utils/metnos_sandbox/profile/model.py", source, lambda d: {"_refuse"}) == []


# ------------------------------------------------------------------------------------------------ rule c
# c. one mountinfo parser (issue 55): host/mountinfo.py alone splits mountinfo lines and undoes their \ooo escapes.
ONE_MOUNT_PARSER = "module_utils/metnos_sandbox/host/mountinfo.py"
# Readers that cannot use it, each with why: (file, function or "" for the module).
OWN_PARSERS = {
    ("module_utils/metnos_sandbox/probe/root_witness.py", "mount_options"):
        "runs alone in the sandbox (python -I -S -c its own source, stdlib only); one field of its own mount",
    ("module_utils/metnos_sandbox/service/systemd_unit.py", ""): "systemd's C escapes in a unit file, not mountinfo's",
    ("module_utils/metnos_sandbox/probe/root_proof.py", "_outside"):
        "hands the witness's mountinfo to root_witness.mount_options; the text it splits is fdinfo's",
}


def _text_constants(nodes):
    """The str and bytes constants under ``nodes`` as text, docstrings aside."""
    out = []
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
                body = node.body
                if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                    body[0].value.house_docstring = True
            if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) \
                    and not getattr(node, "house_docstring", False):
                out.append(node.value if isinstance(node.value, str) else node.value.decode("latin-1"))
    return out


def _calls(nodes):
    return [node for top in nodes for node in ast.walk(top) if isinstance(node, ast.Call)]


def _octal_int(call):
    return isinstance(call.func, ast.Name) and call.func.id == "int" and len(call.args) == 2 \
        and isinstance(call.args[1], ast.Constant) and call.args[1].value == 8


def mount_parsers(source):
    """[(line, function or "", what)]: each function that names mountinfo and splits text (a line parser), and
    a module that turns backslash escapes into bytes (int(x, 8) and a backslash in one of its strings)."""
    tree = _tree(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = any("mountinfo" in text for text in _text_constants([node]))
            splits = any(isinstance(call.func, ast.Attribute) and call.func.attr in ("split", "rsplit", "partition")
                         for call in _calls([node]))
            if names and splits:
                found.append((node.lineno, node.name, "splits mountinfo lines"))
    octal = [call.lineno for call in _calls([tree]) if _octal_int(call)]
    if octal and any("\\" in text for text in _text_constants([tree])):
        found.append((octal[0], "", "undoes \\ooo escapes"))
    return found


def _mount_parser_offences():
    out = {}
    for rel, path in _python_files(["module_utils"]):
        if rel == ONE_MOUNT_PARSER:
            continue
        for line, function, what in mount_parsers(read_text(path)):
            out[(rel, function)] = "%s:%d: %s %s" % (rel, line, function or "the module", what)
    return out


def test_one_mountinfo_parser():
    found = [hit for key, hit in sorted(_mount_parser_offences().items()) if key not in OWN_PARSERS]
    assert not found, "mountinfo is parsed by %s alone (mountinfo.parse, procfs.parse_mountinfo):\n%s" % (
        ONE_MOUNT_PARSER, "\n".join(found))


def test_the_own_parsers_are_live():
    live = _mount_parser_offences()
    assert not [key for key in OWN_PARSERS if key not in live], "gone: remove from OWN_PARSERS"


def test_the_one_parser_is_what_the_rule_would_see():
    """The canary: the one parser itself is a breach anywhere else (its unescape)."""
    assert [what for _line, _function, what in mount_parsers(read_text(os.path.join(ROOT, ONE_MOUNT_PARSER)))] == [
        "undoes \\ooo escapes"]


@pytest.mark.parametrize("source, hits", [
    # the two parsers issue 55 found: procfs.py's text one and mounts.py's bytes one
    ('def _unescape(field):\n    """doc"""\n    code = field[1:4]\n    if field[0] == "\\\\" and code.isdigit():\n'
     '        return chr(int(code, 8))\n    return field\n', [(5, "", "undoes \\ooo escapes")]),
    ('import re\n_ESCAPE = re.compile(rb"\\\\([0-7]{3})")\n\n\ndef _octal(match):\n'
     '    return bytes([int(match.group(1), 8)])\n', [(6, "", "undoes \\ooo escapes")]),
    ('def read(pid):\n    with open("/proc/%d/mountinfo" % pid) as handle:\n'
     '        return [line.split() for line in handle]\n', [(1, "read", "splits mountinfo lines")]),
    ('def table(path="/proc/self/mountinfo"):\n    return open(path).read().partition(" - ")\n',
     [(1, "table", "splits mountinfo lines")]),
    # not a parser: the one parser's name in a docstring, an octal mode, a read that hands the text on
    ('def mode(text):\n    """the mode of a mountinfo line"""\n    return int(text.split()[0], 8)\n', []),
    ('def read(pid):\n    return mountinfo.parse(open("/proc/%d/mountinfo" % pid, "rb").read())\n', []),
])
def test_mount_parsers_are_seen(source, hits):
    assert mount_parsers(source) == hits


# ------------------------------------------------------------------------------------------------ rule d
# d. one walk of a bwrap argv (issue 55): host/bwrap_options.py's options() reads an argv by ARITY; no other module
#    reads ARITY to walk one itself.
ONE_ARGV_WALKER = "module_utils/metnos_sandbox/host/bwrap_options.py"
OWN_WALKERS = {
    "module_utils/metnos_sandbox/profile/invariants.py":
        "the render's final check, its hot loop: the rendered options only, a bind of a path first (bench-render)",
}


def arity_readers(source):
    """[line] of each use of the name ARITY (bwrap_options.ARITY, or ARITY imported)."""
    return [node.lineno for node in ast.walk(_tree(source))
            if (isinstance(node, ast.Attribute) and node.attr == "ARITY")
            or (isinstance(node, ast.Name) and node.id == "ARITY")
            or (isinstance(node, ast.alias) and node.name == "ARITY")]


def _argv_walkers():
    return dict((rel, lines) for rel, path in _python_files(["module_utils", "library", "action_plugins",
                                                              "filter_plugins"])
                if rel != ONE_ARGV_WALKER for lines in [arity_readers(read_text(path))] if lines)


def test_one_argv_walker():
    found = ["%s:%s" % (rel, lines) for rel, lines in sorted(_argv_walkers().items()) if rel not in OWN_WALKERS]
    assert not found, "walk a bwrap argv with bwrap_options.options(), not ARITY:\n" + "\n".join(found)
    assert sorted(OWN_WALKERS) == sorted(rel for rel in _argv_walkers() if rel in OWN_WALKERS), "gone: remove"


@pytest.mark.parametrize("source, hits", [
    # the walkers issue 55 found: payload.py's and profile_states.py's own loops
    ("def units(words):\n    i = 0\n    while i < len(words):\n        n = bwrap_options.ARITY.get(words[i], 0)\n"
     "        i += 1 + n\n", [4]),
    ("from ..host.bwrap_options import ARITY\n", [1]),
    ("for index, option, follow in bwrap_options.options(words):\n    pass\n", []),
])
def test_argv_walkers_are_seen(source, hits):
    assert arity_readers(source) == hits


# ------------------------------------------------------------------------------------------------ rule e
def many_parameters(source, most=MAX_PARAMETERS):
    """[(line, function, count)] for each function taking more than ``most`` parameters (self and cls aside)."""
    found = []
    for node in ast.walk(_tree(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            given = node.args
            names = [a.arg for a in given.posonlyargs + given.args + given.kwonlyargs]
            names += [a.arg for a in (given.vararg, given.kwarg) if a is not None]
            count = len([n for n in names if n not in ("self", "cls")])
            if count > most:
                found.append((node.lineno, node.name, count))
    return found


def _parameter_offences():
    return {(rel, name): "%s:%d: %s takes %d parameters" % (rel, line, name, count)
            for rel, path in _python_files(CODE_FOLDERS) for line, name, count in many_parameters(read_text(path))}


def test_no_function_takes_more_than_seven_parameters():
    found = [hit for key, hit in sorted(_parameter_offences().items()) if key not in UNTIL_MERGED["parameters"]]
    assert not found, "more than %d parameters travel as a typed record:\n" % MAX_PARAMETERS + "\n".join(found)


@pytest.mark.parametrize("source, hits", [
    ("def f(a, b, c, d, e, f, g, h):\n    pass\n", [(1, "f", 8)]),
    ("def f(a, b, c, d, e, f, g):\n    pass\n", []),
    ("class C:\n    def m(self, a, b, c, d, e, f, g):\n        pass\n", []),
    ("def f(a, *rest, b, c, d, e, f, **more):\n    pass\n", [(1, "f", 8)]),
    ("async def f(a, b, c, d, e, f, g, h=1):\n    pass\n", [(1, "f", 8)]),
])
def test_many_parameters_are_seen(source, hits):
    assert many_parameters(source) == hits


# ------------------------------------------------------------------------------------------------ rule f
def logical_lines(source):
    """The module's length with each line that joins statements (``;``) or modules (``import a, b``)
    counted once per statement or module."""
    count = len(source.splitlines())
    starts = {}
    for node in ast.walk(_tree(source)):
        if isinstance(node, ast.stmt):
            starts.setdefault(node.lineno, []).append(node)
    for nodes in starts.values():
        simple = [n for n in nodes if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                         ast.If, ast.For, ast.While, ast.With, ast.Try))]
        count += max(len(simple) - 1, 0)
        count += sum(len(n.names) - 1 for n in simple if isinstance(n, ast.Import))
    return count


def test_every_module_is_short_enough_in_logical_lines():
    long = {rel: n for rel, path in _python_files(CODE_FOLDERS) for n in [logical_lines(read_text(path))]
            if rel.startswith("module_utils/") and n > OWN_LIMITS.get(rel, MAX_LOGICAL_LINES)}
    assert not long, "split these by job (joined lines count as several): %s" % long


@pytest.mark.parametrize("source, count", [
    ("import os\nimport re\n", 2),
    ("import os; import re\n", 2),                       # the dodge: one line, two statements
    ("import os, re, sys\n", 3),                         # the dodge: one line, three modules
    ("x = 1; y = 2; z = 3\n", 3),
    ("from . import a, b, c\n", 1),                      # one statement, the house's own style
    ("def f():\n    return 1\n", 2),
])
def test_logical_lines_count_joined_lines(source, count):
    assert logical_lines(source) == count


# ------------------------------------------------------------------------------------------- allow lists
def test_the_allow_lists_hold_only_live_offenders():
    live = {"parameters": _parameter_offences()}
    stale = ["%s: %s" % (rule, key) for rule, keys in UNTIL_MERGED.items() for key in keys if key not in live[rule]]
    assert not stale, "fixed: remove from UNTIL_MERGED:\n" + "\n".join(stale)
