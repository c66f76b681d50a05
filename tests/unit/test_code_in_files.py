"""No code in strings (issue 44): Python, shell, JavaScript or CSS of more than a few lines is a file of its own,
which ruff and mypy see (a script another interpreter runs is a module of the core read by base/sources.py's
script(); the HTML report's style and script are report/report_assets/). Checked on the core and the plugins;
Ansible's own documentation strings (DOCUMENTATION, EXAMPLES, RETURN, doc fragments) are YAML and stay. The check
is run on a planted breach too, so a check that has stopped looking fails here."""
import ast
import glob
import os
import re

import pytest

from conftest import ROOT

DIRS = ("module_utils", "library", "action_plugins", "callback_plugins", "filter_plugins", "roles")
MAX_LINES = 5
ANSIBLE_DOCS = ("DOCUMENTATION", "EXAMPLES", "RETURN")


_CSS_RULE = re.compile(r"[\w.#:\[\]=\"'>*, -]+\{[^{}]*:[^{}]*;[^{}]*\}")
_JS = re.compile(r"\bfunction\s*\w*\s*\([^)]*\)\s*\{|=>\s*\{|\bdocument\.\w|\baddEventListener\(|"
                 r"^\s*(const|let|var)\s+\w+\s*=", re.M)
_SHELL = re.compile(r"^#!\s*/|^\s*(then|fi|done|esac)\s*;?\s*$|^\s*set -[euxo]", re.M)


def _looks_like_code(text):
    """Python that compiles to more than bare expressions, lines that mostly end as C-like code does
    (JavaScript, CSS, shell with ``;``, ``{`` or ``}``), or a language's own marks (code_kind)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        tree = None
    if tree is not None and any(not isinstance(node, (ast.Expr, ast.AnnAssign)) for node in tree.body):
        return True
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return sum(line.endswith((";", "{", "}")) for line in lines) * 2 >= len(lines) or code_kind(text) is not None


def code_kind(text):
    """The language a string is written in by its own marks (a shebang, ``fi``/``done``, ``set -e``; a function,
    ``=> {``, ``document.``; two CSS rules), None when it shows none (moved from test_house_rules.py rule c:
    one guard for code in strings, issue 55)."""
    if _SHELL.search(text):
        return "shell"
    if _JS.search(text):
        return "javascript"
    if len(_CSS_RULE.findall(text)) >= 2:
        return "css"
    return None


def code_strings(source, fragments=False):
    """[(line, first words)] of the string constants of ``source`` over MAX_LINES lines that are code: docstrings,
    Ansible's documentation strings and (``fragments``) a doc fragment's strings left out."""
    tree = ast.parse(source)
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body and \
                isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            skipped.add(id(node.body[0].value))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and (t.id in ANSIBLE_DOCS or fragments)
                                                for t in node.targets):
            skipped.update(id(n) for n in ast.walk(node.value))
    return [(node.lineno, node.value.strip()[:60]) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped
            and node.value.count("\n") >= MAX_LINES and _looks_like_code(node.value)]


def _sources():
    for top in DIRS:
        yield from sorted(glob.glob(os.path.join(ROOT, top, "**", "*.py"), recursive=True))
    yield from sorted(glob.glob(os.path.join(ROOT, "doc_fragments", "*.py")))


def test_no_code_in_string_constants():
    found = []
    for path in _sources():
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        rel = os.path.relpath(path, ROOT)
        found += ["%s:%d: %s" % (rel, n, words) for n, words in code_strings(source, rel.startswith("doc_fragments"))]
    assert not found, "code in strings (make it a file of its own):\n" + "\n".join(found)


@pytest.mark.parametrize("planted", [
    'SCRIPT = r"""\nimport os, sys\nspec = sys.argv[1]\nfor p in spec:\n    os.stat(p)\nprint(spec)\n"""\n',
    'BOOT = JL.PRELUDE + """\nimport sys\nif len(sys.argv) > 1:\n    x = 1\nelse:\n    x = 2\n"""\n',
    'CSS = """\nbody {\n  margin: 0;\n}\ntable {\n  width: 100%;\n}\n"""\n',
    'JS = """\nfunction f(x) {\n  return x;\n}\ndocument.querySelectorAll("tr").forEach(f);\nvar a = 1;\n"""\n',
    # test_house_rules.py rule c's cases: a shell script, CSS, JavaScript, Python, in a function's string too
    'SH = """#!/bin/sh\necho a\necho b\necho c\necho d\necho e\n"""\n',
    'CSS = """body { color: red; }\n\n\n\n\n.x { margin: 0; }\n"""\n',
    'JS = """\n\n\n\nconst x = 1;\ndocument.getElementById(\'a\');\n"""\n',
    'def f():\n    return """import os\nx = 1\nif x:\n    print(x)\nfor y in []:\n    pass\n"""\n',
])
def test_the_check_sees_code_planted_in_a_string(planted):
    assert code_strings(planted)


@pytest.mark.parametrize("kept", [
    'def f():\n    """A docstring\n    of\n    many\n    lines\n    that\n    says\n    import os."""\n',
    'DOCUMENTATION = """\n---\nmodule: x\nshort_description: y\noptions:\n  a:\n    type: str\n"""\n',
    'TEXT = """## All hosts\n\nThe runtime\'s own view\nof the service\'s environment.\n\nHosts: %s\n\n"""\n',
    'PROSE = """A sentence of prose,\nwrapped over\nsix lines, that says\n'
    'what a thing does\nand why; nothing\nto run.\n"""\n',
    'UNIT = """[Service]\nEnvironment=A=1\nExecStart=\nExecStart=/bin/x\nUser=metnos\nNoNewPrivileges=yes\n"""\n',
])
def test_the_check_keeps_docs_and_prose(kept):
    assert code_strings(kept) == []
