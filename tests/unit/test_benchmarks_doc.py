"""docs/benchmarks.md is the reference: it opens with the machine and what the numbers mean, then one section per
benchmark with the command that reproduces it (a script of benchmarks/ and options it accepts) and today's table;
every figure in it is one measured in the appendix docs/benchmarks-history.md (moved, never invented or
rounded away), and the appendix keeps the history."""
import os
import re

from helpers.paths import ROOT, read_text

DOC = os.path.join(ROOT, "docs", "benchmarks.md")
HISTORY = os.path.join(ROOT, "docs", "benchmarks-history.md")
FIGURE = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?(?: ?(?:ms|s|MB|MiB|KB|×)(?!\w))")
SECTIONS = ("## Rendering", "## Fleet audit", "## Reports and merges", "## Continuous proof")


def figures(text):
    return set(m.group(0).replace(" ", "") for m in FIGURE.finditer(text))


def test_the_reference_opens_with_the_machine_and_the_meaning():
    text = read_text(DOC)
    head = text.split("\n## ", 2)
    assert "**The machine**" in head[0] and "benchmarks-history.md" in head[0]
    assert text.split("\n## ")[1].startswith("What the numbers mean")
    assert len(text.splitlines()) <= 150


def test_every_benchmark_has_its_command_and_a_table():
    text = read_text(DOC)
    for title in SECTIONS:
        assert title in text, title
        body = text.split(title, 1)[1].split("\n## ", 1)[0]
        assert "\n|---" in body, title
    for command in re.findall(r"python3? (benchmarks/bench-[a-z]+\.py)([^\n#]*)", text):
        script, args = command
        source = read_text(os.path.join(ROOT, script))
        for option in re.findall(r"(--[a-z][a-z-]*)", args):
            assert '"%s"' % option in source, (script, option)


def test_every_figure_is_one_of_the_history():
    history = figures(read_text(HISTORY))
    missing = sorted(figures(read_text(DOC)) - history)
    assert not missing, "figures in docs/benchmarks.md not measured in docs/benchmarks-history.md: %s" % missing
    assert len(history) > 300                       # the history is kept, not summarised away
