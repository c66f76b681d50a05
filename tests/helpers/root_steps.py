"""The calls in the toolkit's own code that run a program, open a path or rename one: the root steps
docs/threat-model.md must name (tests/unit/test_threat_model.py). A step is named ``file::function``: the
file relative to the core (``host/bwrap.py``) or to the checkout (``library/x.py``), the function with its
enclosing classes and functions (``bounded_runner.run``), ``<module>`` at the top level."""
import ast
import os
import re

from helpers.paths import CORE, ROOT

# The code that runs as root on a host or acts for the admin on the controller.
FOLDERS = (CORE, os.path.join(ROOT, "library"), os.path.join(ROOT, "action_plugins"),
           os.path.join(ROOT, "callback_plugins"), os.path.join(ROOT, "filter_plugins"),
           os.path.join(ROOT, "roles", "metnos_sandbox", "files"))
RUNS = {"subprocess": None, "os": ("execv", "execve", "execvp", "execvpe", "execl", "execlp", "execle",
                                   "spawnv", "spawnve", "posix_spawn", "posix_spawnp", "system", "popen")}
OPENS = {"os": ("open",), "io": ("open",)}
RENAMES = {"os": ("replace", "rename", "renames")}
NAMED = re.compile(r"`([A-Za-z0-9_./-]+::[A-Za-z0-9_.<>]+)`")


def act(call):
    """'run', 'open' or 'rename' for a call that is one, else None."""
    func = call.func
    if isinstance(func, ast.Name):
        return "open" if func.id == "open" else None
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "run_command":
        return "run"
    owner = func.value.id if isinstance(func.value, ast.Name) else None
    if owner == "subprocess":
        return "run"
    for kind, table in (("run", RUNS), ("open", OPENS), ("rename", RENAMES)):
        names = table.get(owner or "", ())
        if names and func.attr in names:
            return kind
    return None


def steps_in(source):
    """{(function, act)} of the root steps in one file's source."""
    found = set()

    def walk(node, where):
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = where + "." + child.name if where else child.name
            if isinstance(child, ast.Call):
                kind = act(child)
                if kind:
                    found.add((where or "<module>", kind))
            walk(child, inner)

    walk(ast.parse(source), "")
    return found


def _files():
    for top in FOLDERS:
        for base, dirs, names in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
            for name in sorted(names):
                path = os.path.join(base, name)
                if name.endswith(".py") or (top.endswith("files") and name.startswith("metnos-")):
                    yield path


def name_of(path):
    """A file's name in the threat model: relative to the core, or to the checkout."""
    if path.startswith(CORE + os.sep):
        return os.path.relpath(path, CORE)
    return os.path.relpath(path, ROOT)


def all_steps():
    """{'file::function': {act, ...}} over the toolkit's code."""
    steps = {}
    for path in _files():
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        for where, kind in steps_in(source):
            steps.setdefault("%s::%s" % (name_of(path), where), set()).add(kind)
    return steps


def named_in(text):
    """The ``file::function`` names the threat model's text lists."""
    return set(NAMED.findall(text))
