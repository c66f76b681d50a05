"""No code in strings (issue 44): Python, shell, JavaScript or CSS of more than a few lines is a file of its own,
which ruff and mypy see (a script another interpreter runs is a module of the core read by base/sources.py's
script(); the HTML report's style and script are report/report_assets/). Checked on the core and the plugins;
Ansible's own documentation strings (DOCUMENTATION, EXAMPLES, RETURN, doc fragments) are YAML and stay. The check
is run on a planted breach too, so a check that has stopped looking fails here."""
import ast
import glob
import os

import pytest

from conftest import ROOT

DIRS = ("module_utils", "library", "action_plugins", "callback_plugins", "filter_plugins", "roles")
MAX_LINES = 5
ANSIBLE_DOCS = ("DOCUMENTATION", "EXAMPLES", "RETURN")


def _looks_like_code(text):
    """Python that compiles to more than bare expressions, or lines that mostly end as C-like code does
    (JavaScript, CSS, shell with ``;``, ``{`` or ``}``)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        tree = None
    if tree is not None and any(not isinstance(node, (ast.Expr, ast.AnnAssign)) for node in tree.body):
        return True
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return sum(line.endswith((";", "{", "}")) for line in lines) * 2 >= len(lines)


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
])
def test_the_check_sees_code_planted_in_a_string(planted):
    assert code_strings(planted)


@pytest.mark.parametrize("kept", [
    'def f():\n    """A docstring\n    of\n    many\n    lines\n    that\n    says\n    import os."""\n',
    'DOCUMENTATION = """\n---\nmodule: x\nshort_description: y\noptions:\n  a:\n    type: str\n"""\n',
    'TEXT = """## All hosts\n\nThe runtime\'s own view\nof the service\'s environment.\n\nHosts: %s\n\n"""\n',
])
def test_the_check_keeps_docs_and_prose(kept):
    assert code_strings(kept) == []
