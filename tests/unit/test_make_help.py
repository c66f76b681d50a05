"""``make help`` lists every target that has a ``## target:`` comment, with its words, and only targets the
Makefile really has (issue 54). It runs the real make on the real Makefile (help needs no venv)."""
import os
import re
import shutil
import subprocess

from conftest import ROOT


def make_help(makefile):
    proc = subprocess.run(["make", "-s", "-f", makefile, "help"], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def listed_targets(output):
    return [line.split()[0] for line in output.splitlines() if line.strip() and not line.startswith(" " * 3)]


def test_make_help_lists_every_commented_target_with_its_words():
    makefile = os.path.join(ROOT, "Makefile")
    with open(makefile) as handle:
        text = handle.read()
    # a block of ## lines starts with "## target: words"; its next lines continue the words
    starts, previous = [], ""
    for line in text.splitlines():
        found = re.match(r"## ([a-z-]+): ", line)
        if found and not previous.startswith("## "):
            starts.append(found.group(1))
        previous = line
    assert {"run", "audit", "test", "help", "install-collection"} <= set(starts), starts
    output = make_help(makefile)
    assert listed_targets(output) == starts, output
    rules = set(re.findall(r"(?m)^([a-z-]+):", text))
    assert set(starts) <= rules, sorted(set(starts) - rules)
    assert "the read-only fleet audit, reports in ./reports" in output
    # a continuation line is words, never a target: "would: ansible-galaxy run ..." of install-collection
    assert "would" not in listed_targets(output)


def test_a_target_added_with_its_comment_is_listed(tmp_path):
    """The canary: a copy of the Makefile with one more commented target lists it."""
    copy = tmp_path / "Makefile"
    shutil.copy(os.path.join(ROOT, "Makefile"), copy)
    with open(copy, "a") as handle:
        handle.write("\n## canary-target: a target planted by the test\n##   on two lines\ncanary-target:\n\t@true\n")
    output = make_help(str(copy))
    assert "canary-target" in listed_targets(output)
    assert "a target planted by the test" in output and "on two lines" in output
