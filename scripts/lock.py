#!/usr/bin/env python3
"""The Python dependency locks: every distribution a venv of this project holds, pinned with its sha256.

    python scripts/lock.py compile          write every lock from its human-edited input (``make lock``)
    python scripts/lock.py extras LOCK      print the distributions this interpreter's environment holds
                                            beyond LOCK (scripts/bootstrap.sh removes them)
    python scripts/lock.py check LOCK       exit 1 and say what differs when this environment is not LOCK

The locks and their inputs (LOCKS below): ``requirements.in`` -> ``requirements.txt`` (the controller),
``requirements-test.in`` -> ``requirements-test.txt`` (tests and lint: a superset of the controller's lock
with the same versions), ``requirements-collections.in`` -> ``requirements-collections.txt`` (the 'ansible'
package the test-only collections are unpacked from), ``requirements-ee.in`` -> ``requirements-ee.txt`` (the
execution environment's Python on Python 3.13), ``requirements-sanity.in`` -> ``requirements-sanity.txt``
(the pip that ansible-test's sanity venvs are given). The controller and test locks are universal: one lock
serves every Python bootstrap accepts (3.12 and newer), environment markers choosing per interpreter.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (input, lock, extra `uv pip compile` options); in order: each later lock is constrained by the first
LOCKS = (
    ("requirements.in", "requirements.txt", ["--universal", "--python-version", "3.12"]),
    ("requirements-test.in", "requirements-test.txt",
     ["--universal", "--python-version", "3.12", "-c", "requirements.txt"]),
    ("requirements-collections.in", "requirements-collections.txt", ["--no-deps"]),
    ("requirements-ee.in", "requirements-ee.txt", ["--python-version", "3.13", "--python-platform", "linux"]),
    ("requirements-sanity.in", "requirements-sanity.txt", ["--no-deps", "--python-version", "3.12"]),
)

# locks read by a tool that takes a requirement a line (ansible-builder's introspect): no continuation lines
ONE_LINE = ("requirements-ee.txt",)


def normalize(name):
    """A distribution's name as pip compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path, environment=None):
    """{name: version} of a lock, keeping the lines whose environment marker holds for this interpreter
    (or for ``environment``, a dict of marker variables). Every pinned line must carry a hash."""
    from packaging.markers import Marker

    with open(path) as handle:
        text = handle.read().replace("\\\n", " ")
    found = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        head, hashed, _ = line.partition(" --hash=sha256:")
        requirement, _, marker = head.partition(";")
        name, pinned, version = requirement.strip().partition("==")
        if not pinned or not hashed:
            raise ValueError("%s, entry %d: not a pinned requirement with its sha256: %r" % (path, number, line[:80]))
        if marker.strip() and not Marker(marker.strip()).evaluate(environment):
            continue
        found[normalize(name.split("[", 1)[0])] = version.strip()
    return found


def installed():
    """{name: version} of every distribution this interpreter's environment holds."""
    from importlib import metadata

    return {normalize(dist.metadata["Name"]): dist.version for dist in metadata.distributions()}


def differences(lock):
    """Lines naming what this environment holds beyond, below or beside the lock (empty: it is the lock)."""
    want, have = pins(lock), installed()
    lines = []
    for name in sorted(set(want) | set(have)):
        if name not in have:
            lines.append("missing: %s==%s" % (name, want[name]))
        elif name not in want:
            lines.append("not in %s: %s==%s" % (os.path.basename(lock), name, have[name]))
        elif want[name] != have[name]:
            lines.append("%s: %s installed, %s locked" % (name, have[name], want[name]))
    return lines


def compile_all(uv):
    for source, lock, options in LOCKS:
        subprocess.run([uv, "pip", "compile", "--quiet", "--generate-hashes", "--no-header", *options,
                        source, "-o", lock], cwd=ROOT, check=True)
        if lock in ONE_LINE:
            with open(os.path.join(ROOT, lock)) as handle:
                text = handle.read()
            with open(os.path.join(ROOT, lock), "w") as handle:
                handle.write(re.sub(r" \\\n\s+", " ", text))
        print("lock: %s -> %s" % (source, lock))


def main(argv):
    if argv[:1] == ["compile"] and len(argv) == 1:
        compile_all(os.path.join(os.path.dirname(sys.executable), "uv"))
        return 0
    if argv[:1] == ["extras"] and len(argv) == 2:
        for name in sorted(set(installed()) - set(pins(argv[1]))):
            print(name)
        return 0
    if argv[:1] == ["check"] and len(argv) == 2:
        lines = differences(argv[1])
        for line in lines:
            print(line)
        return 1 if lines else 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
