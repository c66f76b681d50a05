"""The report as the tests read it: the whole document from {host: task result}, and each renderer joined into
one string. The product never needs either: the action and scripts/merge-audit-reports.py build the document
from an iterable (document.build_from_results) and stream every renderer to its file (document.write_all)."""
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import (
    document,
    render_html,
    render_junit,
    render_markdown,
)


def build(results, generated=None, warnings_as_failures=False):
    """The report document from {host: task result}, hosts in name order."""
    return document.build_from_results(((name, results[name]) for name in sorted(results)), generated,
                                       warnings_as_failures)


def to_markdown(doc):
    return "".join(render_markdown.iter_markdown(doc))


def to_junit(doc):
    return "".join(render_junit.iter_junit(doc))


def to_html(doc):
    return "".join(render_html.iter_html(doc))
