#!/usr/bin/env python3
"""Move the core's flat modules into its capability packages and rewrite every reference (idempotent).

    python3 scripts/core-layout.py            # git mv what is not moved yet, then rewrite the references

The map (issue 22) is MAP: old flat module -> (package, module). Run it again and nothing changes:
a moved file is not moved twice, and every rewrite matches the old names only.

- inside the core: relative imports are rewritten from the AST for the file's new place
  (``from . import bwrap as B`` in probe/ -> ``from ..host import bwrap as B``);
- everywhere else (faces, tests, scripts, docs): ``from <core> import a as X, b`` (one statement per
  package), ``from <core> import (a as X, ...)``, dotted names ``<core>.a`` in code and strings, and the
  paths ``metnos_sandbox/a.py``, where <core> is the one import name or the bare ``metnos_sandbox``.
"""
import ast
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = os.path.join(ROOT, "module_utils", "metnos_sandbox")
MAP = {
    "diagnostics": ("base", "diagnostics"), "paths": ("base", "paths"), "files": ("base", "files"),
    "envflags": ("base", "envflags"),
    "bwrap": ("host", "bwrap"), "bwrap_trust": ("host", "bwrap_trust"), "kernel": ("host", "kernel"),
    "facts": ("host", "facts"), "procfs": ("host", "procfs"),
    "systemd_unit": ("service", "systemd_unit"), "unit_context": ("service", "unit_context"),
    "service_env": ("service", "service_env"), "systemd_exit": ("service", "systemd_exit"),
    "relaxations": ("service", "relaxations"),
    "manifest": ("profile", "manifest"), "profile": ("profile", "profile"), "mounts": ("profile", "mounts"),
    "mountmodel": ("profile", "mountmodel"), "descriptors": ("profile", "descriptors"),
    "store": ("profile", "store"),
    "probe": ("probe", "probe"), "reaper": ("probe", "reaper"), "proctree": ("probe", "proctree"),
    "proc_covers": ("probe", "proc_covers"), "blame": ("probe", "blame"), "blame_trials": ("probe", "blame_trials"),
    "audit": ("audit", "audit"), "report": ("audit", "report"), "summary": ("audit", "summary"),
    "monitor": ("audit", "monitor"), "monitor_install": ("audit", "monitor_install"),
    "monitor_journal": ("audit", "monitor_journal"), "monitor_state": ("audit", "monitor_state"),
    "monitor_textfile": ("audit", "monitor_textfile"), "transport": ("audit", "transport"),
    "options": ("options", "spec"), "validate": ("options", "checks"),
}
PACKAGES = sorted(set(p for p, _m in MAP.values()))
# A package's modules: the moved ones and whatever it holds now (the pieces later split out of them).
SUBMODULES = dict((p, sorted(set(m for q, m in MAP.values() if q == p) | set(
    n[:-3] for n in (os.listdir(os.path.join(CORE, p)) if os.path.isdir(os.path.join(CORE, p)) else [])
    if n.endswith(".py")))) for p in PACKAGES)
PREFIX = r"(?:ansible_collections\.metnos\.sandbox\.plugins\.module_utils\.metnos_sandbox|" \
    r"ansible\.module_utils\.metnos_sandbox|(?<![\w.])metnos_sandbox)"
SKIP = ("scripts/core-layout.py", "CHANGELOG.md",         # and the generated docs: make docs rewrites them
        "docs/diagnostics.md", "docs/unit-directives.md", "docs/spec-coverage.md")
SKIP_DIRS = ("changelogs/",)
SUFFIXES = (".py", ".md", ".yml", ".yaml", ".j2", ".cfg", ".ini", ".sh", ".txt", "Makefile", ".toml", "-exec")


def git(*args):
    return subprocess.run(["git", "-C", ROOT] + list(args), check=True, stdout=subprocess.PIPE,
                          universal_newlines=True).stdout


def move():
    for old, (pkg, new) in sorted(MAP.items()):
        src = os.path.join(CORE, old + ".py")
        if not os.path.exists(src):
            continue
        os.makedirs(os.path.join(CORE, pkg), exist_ok=True)
        init = os.path.join(CORE, pkg, "__init__.py")
        if not os.path.exists(init):
            open(init, "w").close()
            git("add", init)
        git("mv", src, os.path.join(CORE, pkg, new + ".py"))


def _target(name):
    """(package, module) of a flat name, or of a name already in the new layout."""
    if name in MAP:
        return MAP[name]
    return None


def _relative(own_pkg, pkg, mod=None):
    base = "." if pkg == own_pkg else ".." + pkg
    if mod is None:
        return base
    return (base + "." if pkg != own_pkg else ".") + mod


def core_import(node, own_pkg):
    """New lines for one relative ImportFrom of a moved core file, or None (already in the new layout)."""
    if node.level != 1:
        return None
    out = []
    if node.module is None:
        groups = {}
        for alias in node.names:
            target = _target(alias.name)
            if target is None or (target[0] == own_pkg and target[1] == alias.name and alias.name not in MAP):
                return None
            pkg, mod = target
            asname = alias.asname or (alias.name if mod != alias.name else None)
            groups.setdefault(pkg, []).append(mod + (" as " + asname if asname else ""))
        for pkg in sorted(groups, key=lambda p: [a.name for a in node.names].index(
                next(a.name for a in node.names if MAP[a.name][0] == p))):
            out.append("from %s import %s" % (_relative(own_pkg, pkg), ", ".join(groups[pkg])))
        return out
    head = node.module.split(".")[0]
    if head not in MAP or "." in node.module:
        return None
    pkg, mod = MAP[head]
    names = ", ".join(a.name + (" as " + a.asname if a.asname else "") for a in node.names)
    return ["from %s import %s" % (_relative(own_pkg, pkg, mod), names)]


def rewrite_core_file(path, own_pkg):
    with open(path) as handle:
        text = handle.read()
    lines = text.splitlines(True)
    edits = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            new = core_import(node, own_pkg)
            if new is None:
                continue
            first, last = node.lineno - 1, node.end_lineno - 1
            old_last = lines[last]
            tail = old_last[node.end_col_offset:].rstrip("\n") if first == last else ""
            indent = lines[first][:node.col_offset]
            block = "".join(indent + stmt + (tail if i == len(new) - 1 else "") + "\n" for i, stmt in enumerate(new))
            edits.append((first, last, block))
    for first, last, block in sorted(edits, reverse=True):
        lines[first:last + 1] = [block]
    new_text = "".join(lines)
    if new_text != text:
        with open(path, "w") as handle:
            handle.write(new_text)
        return True
    return False


_FROM_LINE = re.compile(r"^(?P<indent>[ \t]*)from (?P<prefix>%s) import "
                        r"(?P<names>[a-z_]+(?: as \w+)?(?:, [a-z_]+(?: as \w+)?)*)"
                        r"(?P<rest>[ \t]*(?:#.*)?)$" % PREFIX, re.M)
_FROM_PAREN = re.compile(r"from (?P<prefix>%s) import \((?P<space>\s*)(?P<name>[a-z_]+)\b(?P<alias>\s+as\s+\w+)?"
                         % PREFIX)


def _from_line(match):
    names = [n.strip() for n in match.group("names").split(",")]
    if not all(n.split(" as ")[0] in MAP for n in names):
        return match.group(0)
    groups = []
    for entry in names:
        parts = entry.split(" as ")
        pkg, mod = MAP[parts[0]]
        asname = parts[1] if len(parts) > 1 else (parts[0] if mod != parts[0] else None)
        item = mod + (" as " + asname if asname else "")
        for group in groups:
            if group[0] == pkg:
                group[1].append(item)
                break
        else:
            groups.append((pkg, [item]))
    lines = ["%sfrom %s.%s import %s" % (match.group("indent"), match.group("prefix"), pkg, ", ".join(items))
             for pkg, items in groups]
    lines[-1] += match.group("rest")
    return "\n".join(lines)


def _from_paren(match):
    name = match.group("name")
    if name not in MAP:
        return match.group(0)
    pkg, mod = MAP[name]
    alias = match.group("alias") or ("" if mod == name else " as " + name)
    return "from %s.%s import (%s%s%s" % (match.group("prefix"), pkg, match.group("space"), mod, alias)


_PATH = re.compile(r"metnos_sandbox/(?P<name>%s)\.py\b" % "|".join(sorted(MAP, key=len, reverse=True)))


def _dotted_sub(text):
    names = "|".join(sorted(MAP, key=len, reverse=True))
    pattern = re.compile(r"(?P<prefix>%s)\.(?P<name>%s)\b(?P<next>\.\w+)?(?P<imp> import \(?\s*(?P<sub>\w+))?"
                         % (PREFIX, names))

    def repl(match):
        name, nxt = match.group("name"), match.group("next")
        if name in PACKAGES and ((nxt and nxt[1:] in SUBMODULES[name]) or
                                 (not nxt and match.group("sub") in SUBMODULES[name])):
            return match.group(0)             # already <package>.<module>, or from <package> import <module>
        pkg, mod = MAP[name]
        return "%s.%s.%s%s%s" % (match.group("prefix"), pkg, mod, nxt or "", match.group("imp") or "")
    return pattern.sub(repl, text)


KEEP_LINE = "# core-layout: keep"     # a line that names the flat layout on purpose (a core from before it)


def rewrite_text(text):
    if KEEP_LINE in text:
        return "".join(line if KEEP_LINE in line else rewrite_text(line) for line in text.splitlines(True))
    text = _dotted_sub(text)
    text = _FROM_LINE.sub(_from_line, text)
    text = _FROM_PAREN.sub(_from_paren, text)
    text = _PATH.sub(lambda m: "metnos_sandbox/%s/%s.py" % MAP[m.group("name")], text)
    return text


def tracked():
    for rel in git("ls-files").splitlines():
        path = os.path.join(ROOT, rel)
        if rel in SKIP or rel.startswith(SKIP_DIRS) or os.path.islink(path) or not os.path.isfile(path):
            continue
        if rel.startswith("module_utils/metnos_sandbox/"):
            continue
        if rel.endswith(SUFFIXES) or "/" not in rel and rel in ("Makefile",):
            yield rel, path


def main(argv):
    move()
    changed = []
    for pkg in PACKAGES:
        folder = os.path.join(CORE, pkg)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py") and rewrite_core_file(os.path.join(folder, name), pkg):
                changed.append(os.path.join("module_utils/metnos_sandbox", pkg, name))
    for rel, path in tracked():
        try:
            with open(path) as handle:
                text = handle.read()
        except UnicodeDecodeError:
            continue
        new = rewrite_text(text)
        if new != text:
            with open(path, "w") as handle:
                handle.write(new)
            changed.append(rel)
    for rel in changed:
        print("rewrote", rel)


if __name__ == "__main__":
    main(sys.argv[1:])
