"""This collection's modules, filters and roles named by their FQCN (``metnos.sandbox.NAME``) in what users read
and run: ``unqualified()`` lists each line that names one without it (tests/unit/test_fqcn.py asserts there is
none); ``Rewriter.text`` is that line qualified.

What is qualified, each only for a name the collection really has (modules: library/*.py, filters: the
doc sidecars filter_plugins/*.yml, roles: roles/*; never a fixed list):
- a module as a task's key: ``  sandbox_profile:`` inside a list item (a task), YAML files, the EXAMPLES of
  modules and filters, YAML inside tests' strings and inside the Markdown's code blocks. A key at the top of a
  mapping that is no list item (a RETURN entry named ``bwrap_facts``) is data, never rewritten;
- a filter after a Jinja pipe: ``| shell_join``, or named to ``map``: ``map('metnos_manifest_source')``;
- a role: ``role: bwrap_host``, ``- bwrap_host`` right under ``roles:``, ``name: bwrap_host`` under
  ``include_role:``/``import_role:``;
- a doc fragment in ``extends_documentation_fragment`` (``metnos_sandbox.service``);
- documentation markup: ``M(sandbox_probe)``, ``C(sandbox_probe)`` (a module named as code becomes
  ``M(...)``), ``O(metnos_audit_report#module:hosts)``, ``module: NAME`` in ``seealso``, and ``-m NAME``
  or ``ansible-doc [-t TYPE] NAME`` in shell lines;
- in Markdown prose, a backticked name of a module or filter
  (`` `bwrap_facts` `` -> `` `metnos.sandbox.bwrap_facts` ``).
  Roles are not rewritten in prose: ``metnos_sandbox`` is the role's name and also the core's package name;
- in tests, the module a helper runs: ``run_module("bwrap_facts", ...)``, ``host.module("sandbox_probe", ...)``,
  ``"-m", "sandbox_profile"``.

A message's own prefix (``sandbox_profile: path must be a string``) is the face speaking, not a name to
call, and is not touched.
"""
import glob
import os
import re

from helpers.paths import ROOT

NS = "metnos.sandbox."
DEFAULT_PATHS = ("roles", "playbooks", "molecule", "examples", "inventory", "library", "filter_plugins",
                 "doc_fragments", "action_plugins", "callback_plugins", "tests", "docs", "README.md")
SUFFIXES = (".yml", ".yaml", ".py", ".md", ".j2")
# Files that write unqualified names on purpose: this checker and its test (the forms it qualifies).
EXEMPT = ("tests/helpers/fqcn.py", "tests/unit/test_fqcn.py")


def names(root=ROOT):
    """(modules, filters, roles, doc fragments) of the collection, from the tree itself."""
    modules = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(root, "library", "*.py")))
    filters = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(root, "filter_plugins", "*.yml")))
    roles = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(root, "roles", "*", "tasks")))
    fragments = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(root, "doc_fragments", "*.py")))
    return modules, filters, roles, fragments


def _alt(words):
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) or "(?!)"


class Rewriter(object):
    def __init__(self, modules, filters, roles, fragments=()):
        mods, flts, rls = _alt(modules), _alt(filters), _alt(roles)
        self.fragment_line = re.compile(r"^\s*extends_documentation_fragment:\s*\[")
        self.fragment = re.compile(r"(?<![\w.])(%s)(?=[\s,\].]|$)" % _alt(fragments))
        self.fragment_item = re.compile(r"^(\s*- )(%s)((?:\.\w+)?\s*)$" % _alt(fragments))
        self.task_key = re.compile(r"^(?P<ind>\s*)(?P<dash>- )?(?P<name>%s):(?=\s|$)" % mods)
        self.pipe = re.compile(r"(\|\s*)(%s)\b(?!\.)" % flts)
        self.map_arg = re.compile(r"(\bmap\(\s*)(['\"])(%s)\2" % flts)
        self.role_key = re.compile(r"^(\s*(?:- )?role:\s+)(['\"]?)(%s)\2(\s*(?:#.*)?)$" % rls)
        self.role_item = re.compile(r"^(\s*- )(['\"]?)(%s)\2(\s*(?:#.*)?)$" % rls)
        self.role_name = re.compile(r"^(\s*name:\s+)(['\"]?)(%s)\2(\s*(?:#.*)?)$" % rls)
        self.markup = re.compile(r"\b([MO])\((%s)([#)])" % _alt(modules + filters))
        self.code_module = re.compile(r"\bC\((%s)\)" % mods)
        self.seealso = re.compile(r"^(\s*- module:\s+)(%s)(\s*)$" % mods)
        self.adhoc = re.compile(r"(\s-m\s+|ansible-doc(?:\s+-t\s+\w+)?\s+)(%s)\b(?!\.)" % _alt(modules + filters))
        self.prose = re.compile(r"`(%s)`" % _alt(modules + filters))
        # tests: the module a helper runs (run_module("bwrap_facts", ...), host.module(...), host.ansible(...)),
        # and "-m", "NAME" in an argv list
        self.call = re.compile(r"(\b(?:run_module|module|ansible|adhoc)\((?:[^()\"']*,\s*)?)([\"'])(%s)\2" % mods)
        self.argv_m = re.compile(r"([\"']-m[\"'],\s*)([\"'])(%s)\2" % mods)

    # ------------------------------------------------------------------ one line, with its context
    @staticmethod
    def _in_list_item(lines, index, indent):
        """Is line ``index`` (a key at ``indent``) a key of a mapping that is a list item (a task)?"""
        for back in range(index - 1, -1, -1):
            text = lines[back]
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            ind = len(text) - len(text.lstrip())
            if ind < indent or (ind == indent - 2 and text.lstrip().startswith("- ")):
                return ind == indent - 2 and text.lstrip().startswith("- ")
            if ind == indent and text.lstrip().startswith("- "):
                return False
        return False

    @staticmethod
    def _parent_key(lines, index):
        """The key of the nearest less-indented line above ``index`` ('' if none)."""
        indent = len(lines[index]) - len(lines[index].lstrip())
        for back in range(index - 1, -1, -1):
            text = lines[back]
            if text.strip() and len(text) - len(text.lstrip()) < indent:
                return text.strip().lstrip("- ").split(":", 1)[0].split(".")[-1]
        return ""

    def line(self, lines, index, markdown_prose=False):
        text = lines[index]
        m = self.task_key.match(text)
        if m and (m.group("dash") or self._in_list_item(lines, index, len(m.group("ind")))):
            text = text[:m.start("name")] + NS + text[m.start("name"):]
        text = self.pipe.sub(lambda x: x.group(1) + NS + x.group(2), text)
        text = self.map_arg.sub(lambda x: x.group(1) + x.group(2) + NS + x.group(3) + x.group(2), text)
        text = self.role_key.sub(lambda x: x.group(1) + x.group(2) + NS + x.group(3) + x.group(2) + x.group(4), text)
        if self.role_item.match(text) and self._parent_key(lines, index) == "roles":
            text = self.role_item.sub(lambda x: x.group(1) + x.group(2) + NS + x.group(3) + x.group(2) + x.group(4),
                                      text)
        if self.role_name.match(text) and self._parent_key(lines, index) in ("include_role", "import_role"):
            text = self.role_name.sub(lambda x: x.group(1) + x.group(2) + NS + x.group(3) + x.group(2) + x.group(4),
                                      text)
        text = self.markup.sub(lambda x: "%s(%s%s%s" % (x.group(1), NS, x.group(2), x.group(3)), text)
        text = self.code_module.sub(lambda x: "M(%s%s)" % (NS, x.group(1)), text)
        text = self.seealso.sub(lambda x: x.group(1) + NS + x.group(2) + x.group(3), text)
        text = self.adhoc.sub(lambda x: x.group(1) + NS + x.group(2), text)
        if self.fragment_line.match(text):
            text = self.fragment.sub(lambda x: NS + x.group(1), text)
        if self.fragment_item.match(text) and self._parent_key(lines, index) == "extends_documentation_fragment":
            text = self.fragment_item.sub(lambda x: x.group(1) + NS + x.group(2) + x.group(3), text)
        text = self.call.sub(lambda x: x.group(1) + x.group(2) + NS + x.group(3) + x.group(2), text)
        text = self.argv_m.sub(lambda x: x.group(1) + x.group(2) + NS + x.group(3) + x.group(2), text)
        if markdown_prose:
            text = self.prose.sub(lambda x: "`%s%s`" % (NS, x.group(1)), text)
        return text

    def text(self, text, markdown=False):
        lines = text.split("\n")
        fence = False
        out = []
        for index, line in enumerate(lines):
            if markdown and line.lstrip().startswith("```"):
                fence = not fence
                out.append(line)
                continue
            out.append(self.line(lines, index, markdown_prose=markdown and not fence))
        return "\n".join(out)


def files(paths):
    for top in paths:
        if os.path.isfile(top):
            yield top
            continue
        for base, dirs, fnames in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "artifacts"))
            for name in sorted(fnames):
                if name.endswith(SUFFIXES):
                    yield os.path.join(base, name)


def changes(path, rewriter):
    """(new text, [(line number, old, new)]) for one file."""
    with open(path, encoding="utf-8") as handle:
        old = handle.read()
    new = rewriter.text(old, markdown=path.endswith(".md"))
    diff = [(n + 1, a, b) for n, (a, b) in enumerate(zip(old.split("\n"), new.split("\n"))) if a != b]
    return new, diff


def unqualified(paths=None):
    """Each line under ``paths`` (default: DEFAULT_PATHS) that names a module, filter or role of the collection
    without its FQCN, as ``path:line: text``."""
    paths = paths or [os.path.join(ROOT, p) for p in DEFAULT_PATHS]
    rewriter = Rewriter(*names())
    found = []
    for path in files(paths):
        rel = os.path.relpath(os.path.abspath(path), ROOT)
        if rel in EXEMPT:
            continue
        _new, diff = changes(path, rewriter)
        found += ["%s:%d: %s" % (rel, n, a.strip()) for n, a, _b in diff]
    return found
