#!/usr/bin/env python3
"""Print docs/diagnostics.md from the code registry (module_utils/metnos_sandbox/base/diagnostics.py).

    python scripts/gen-diagnostics-doc.py > docs/diagnostics.md

tests/unit/test_docs.py fails when the committed file differs from this output.
"""
import sys

import core_path  # noqa: E402  (scripts/: the core as ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox)

core_path.use_core()

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics  # noqa: E402
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap_errors  # noqa: E402


def render():
    out = ["# Diagnostics reference", "",
           "Generated from `module_utils/metnos_sandbox/base/diagnostics.py` by "
           "`scripts/gen-diagnostics-doc.py` (`make docs`). Do not edit by hand.", "",
           "Every finding of every module has this shape: `code` (stable), `severity` "
           "(error/warning/info), `rule` (spec rule id), `title`, `message` (what was seen), "
           "`remediation` (commands that run as written in sh, one per item; `<name>` is a placeholder the reader "
           "fills, `{name}` one the toolkit fills), optional `hint` (the words: what to know before running them, or "
           "the fix itself when no command makes it) and optional `details`. "
           "The registry is the only source of a code's severity, rule, report section, title, cause, message "
           "template and remediation; a call site fills `{placeholders}` and may pick one of a code's named "
           "variants. Codes of section `module` are a module's own failure (`fail_json` with `code`), not "
           "findings of a host.", "",
           "| code | severity | rule | report section | title |", "|---|---|---|---|---|"]
    codes = sorted(diagnostics.REGISTRY.values(), key=lambda c: c.code)
    for c in codes:
        out.append("| [`%s`](#%s) | %s | %s | %s | %s |" % (c.code, c.code, c.severity, c.rule, c.section, c.title))
    out.append("")
    for c in codes:
        out += ["## %s" % c.code, "",
                "- **severity:** %s; **rule:** %s; **report section:** %s" % (c.severity, c.rule, c.section),
                "- **cause:** %s" % c.cause,
                "- **detection:** %s" % c.detection]
        out += ["- **message%s:** %s" % (" (variant `%s`)" % v if v else "", c.messages[v]) for v in sorted(c.messages)]
        if c.hint:
            out.append("- **hint:** %s" % c.hint)
        out += ["- **remediation:**"] + _steps(c.remediation)
        for name in sorted(set(c.variants) | set(c.hints)):
            if name in c.hints:
                out.append("- **hint, variant `%s`:** %s" % (name, c.hints[name]))
            out.append("- **remediation, variant `%s`:**" % name)
            out += _steps(c.variants.get(name, c.remediation))
        out.append("")
    out += ["## Causes of `bwrap_smoke_failed` (classified from bwrap's stderr)", "",
            "Matched by pattern, first match wins (texts differ by version and distro patch).", "",
            "| cause | pattern | meaning | hint | commands |", "|---|---|---|---|---|"]
    for cause in bwrap_errors.CAUSES:
        out.append("| `%s` | `%s` | %s | %s | %s |" % (
            cause.cause, cause.pattern.pattern.replace("|", "\\|"), cause.text, cause.hint,
            "<br>".join("`%s`" % s.replace("|", "\\|") for s in cause.remediation) or "-"))
    seccomp = bwrap_errors.classify("", -31)
    out.append("| `killed_by_seccomp` | exit 159 / SIGSYS, empty stderr "
               "| a seccomp allow-list (SystemCallFilter=) killed bwrap | %s | %s |" % (
                   seccomp["hint"], "<br>".join("`%s`" % s for s in seccomp["remediation"])))
    out.append("")
    return "\n".join(out)


def _steps(steps):
    """Each command in code quotes (every remediation item is one: tests/unit/test_remediation_commands.py)."""
    return ["  - `%s`" % s for s in steps] or ["  - (no command: the hint is the fix)"]


if __name__ == "__main__":
    sys.stdout.write(render())
