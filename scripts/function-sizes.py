#!/usr/bin/env python3
"""Print the largest function (or method) of each Python file under module_utils/, library/,
action_plugins/ and filter_plugins/: lines from its `def` to its last line, decorators excluded.

    python scripts/function-sizes.py [--all] [DIR ...]

--all lists every function over 60 lines instead of one per file. Measured with the ast module
(no import), so it runs on any checkout with Python 3.8+.
"""
import argparse
import ast
import os
import signal
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ("module_utils", "library", "action_plugins", "callback_plugins", "filter_plugins")
LIMIT = 60


def functions(path):
    """(lines, qualified name, first line) of every function in the file at ``path``."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((child.end_lineno - child.lineno + 1, prefix + child.name, child.lineno))
                walk(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
    walk(tree, "")
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="every function over %d lines" % LIMIT)
    ap.add_argument("dirs", nargs="*", default=DIRS)
    args = ap.parse_args(argv)
    rows = []
    for top in args.dirs:
        for base, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(n for n in names if n.endswith(".py")):
                path = os.path.join(base, name)
                found = sorted(functions(path), reverse=True)
                if args.all:
                    rows += [(n, os.path.relpath(path, ROOT), f, line) for n, f, line in found if n > LIMIT]
                elif found:
                    rows.append((found[0][0], os.path.relpath(path, ROOT), found[0][1], found[0][2]))
    if args.all:
        rows.sort(reverse=True)
    width = max([len(r[1]) for r in rows] + [4])
    print("%5s  %-*s  %s" % ("lines", width, "file", "function (line)"))
    for lines, path, func, line in rows:
        print("%5d  %-*s  %s (%d)%s" % (lines, width, path, func, line, "  > %d" % LIMIT if lines > LIMIT else ""))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)      # `| head` ends it quietly
    main(sys.argv[1:])
