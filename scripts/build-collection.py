#!/usr/bin/env python3
"""Build the collection metnos.sandbox from this tree: ``make collection`` ->
``dist/metnos-sandbox-X.Y.Z.tar.gz`` (X.Y.Z from galaxy.yml, the one version source).

    python scripts/build-collection.py [--output-path DIR] [--layout DIR]

The checkout presents itself to Ansible as the collection through the committed symlinks of
``collections/ansible_collections/metnos/sandbox/`` (``plugins/modules -> library``, ``plugins/filter ->
filter_plugins``, ``roles -> roles``, ...). That tree is the one list of what the collection holds: this
script copies it with the links followed into a generated collection layout (a temporary directory, or
``--layout DIR``), then runs ``ansible-galaxy collection build`` on it. Nothing here names the core's
files: whatever ``module_utils/`` holds, packages included, goes in. Bytecode and caches never do.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREE = os.path.join(ROOT, "collections", "ansible_collections", "metnos", "sandbox")
SKIP_DIRS = ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache")
SKIP_SUFFIXES = (".pyc", ".pyo", ".swp", "~")


def _skipped(name):
    return name in SKIP_DIRS or name.endswith(SKIP_SUFFIXES) or name.startswith(".#")


def copy_layout(dest, tree=TREE):
    """Copy ``tree`` into ``dest`` (which must not exist), links followed; return the copied files
    (relative paths, sorted). A link that points nowhere is an error, never a silently smaller collection."""
    copied = []
    for base, dirs, names in os.walk(tree, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not _skipped(d))
        rel = os.path.relpath(base, tree)
        os.makedirs(os.path.normpath(os.path.join(dest, rel)), exist_ok=True)
        for name in sorted(names):
            if _skipped(name):
                continue
            src = os.path.join(base, name)
            if not os.path.exists(src):
                raise SystemExit("build-collection: %s is a dangling link" % os.path.relpath(src, ROOT))
            target = os.path.normpath(os.path.join(dest, rel, name))
            shutil.copy2(src, target)
            copied.append(os.path.relpath(target, dest))
    return sorted(copied)


def build(output, layout=None, galaxy="ansible-galaxy"):
    """Generate the layout and build the tarball into ``output``; return the tarball's path."""
    work = None
    if layout is None:
        work = tempfile.mkdtemp(prefix="metnos-collection-")
        layout = os.path.join(work, "ansible_collections", "metnos", "sandbox")
    elif os.path.exists(layout):
        shutil.rmtree(layout)
    try:
        copy_layout(layout)
        os.makedirs(output, exist_ok=True)
        proc = subprocess.run([galaxy, "collection", "build", "--force", "--output-path", output, layout],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit("build-collection: ansible-galaxy failed:\n%s%s" % (proc.stdout, proc.stderr))
        built = [line.split(" at ", 1)[1].strip() for line in proc.stdout.splitlines() if " at " in line]
        if len(built) != 1 or not os.path.isfile(built[0]):
            raise SystemExit("build-collection: unexpected ansible-galaxy output:\n" + proc.stdout)
        return built[0]
    finally:
        if work:
            shutil.rmtree(work, ignore_errors=True)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-path", default=os.path.join(ROOT, "dist"))
    parser.add_argument("--layout", help="keep the generated layout here (replaced if it exists)")
    args = parser.parse_args(argv)
    galaxy = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
    print(build(os.path.abspath(args.output_path), args.layout and os.path.abspath(args.layout),
                galaxy if os.path.exists(galaxy) else "ansible-galaxy"))


if __name__ == "__main__":
    main(sys.argv[1:])
