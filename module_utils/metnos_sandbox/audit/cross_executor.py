# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Channels between executors (issue 50 item 5): a folder one executor may write and another may read or write is
a channel from the first to the second - a file it leaves, a socket it listens on there (made after rendering,
so no render-time search saw it) - whatever each profile's own checks say. The audit renders every manifest
(host_audit.profile_drift); each pair of wrapped profiles whose granted binds meet (the writer's read-write source at,
below or above the other's source) is a warning naming both executors and both folders.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import Iterable, List, Mapping, Sequence, Tuple

from ..base import diagnostics, paths

MAX_REPORTED = 64


def _grants(mounts: Iterable[Mapping[str, object]]) -> List[Tuple[str, str]]:
    """(mode, source) of each granted bind of a profile: read-only or read-write binds whose provenance is a
    capability (the base binds are every executor's, read-only)."""
    out: List[Tuple[str, str]] = []
    for entry in mounts:
        src, kind = entry.get("src"), entry.get("kind")
        provenance = entry.get("provenance") or []
        if kind not in ("ro", "rw") or not isinstance(src, str) or not isinstance(provenance, list):
            continue
        if all(str(p.get("source", "")).startswith("base:") for p in provenance if isinstance(p, dict)):
            continue
        out.append((str(kind), src))
    return out


def findings(rendered: Sequence[Tuple[str, Iterable[Mapping[str, object]]]]) -> List[diagnostics.Diagnostic]:
    """cross_executor_channel for each (writer, other) pair of ``rendered`` ((executor, mounts) of each wrapped
    profile) whose binds meet: the writer's read-write source at, below or above the other's source."""
    grants = [(name, _grants(mounts)) for name, mounts in rendered]
    diags: List[diagnostics.Diagnostic] = []
    seen = set()
    for writer, writes in grants:
        for folder in sorted(src for mode, src in writes if mode == "rw"):
            for other, binds in grants:
                if other == writer:
                    continue
                for mode, src in sorted(binds):
                    key = (writer, other, folder, src)
                    if key in seen or not paths.related(folder, src):
                        continue
                    seen.add(key)
                    diags.append(diagnostics.make(
                        "cross_executor_channel", wording="write" if mode == "rw" else "read",
                        writer=diagnostics.excerpt(writer, 200), other=diagnostics.excerpt(other, 200),
                        folder=diagnostics.excerpt(folder, 600), reach=diagnostics.excerpt(src, 600)))
    if len(diags) > MAX_REPORTED:
        left = len(diags) - MAX_REPORTED
        diags = diags[:MAX_REPORTED]
        diags[-1] = diagnostics.amend(diags[-1], "more_diagnostics", count=left)
    return diags
