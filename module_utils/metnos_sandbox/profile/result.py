# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a render answers: the profile (Rendered or Refused, told apart by ``decision``), its mounts with
their provenance, the refusal builder (at most MAX_DIAGNOSTICS diagnostics) and the shell form of an argv.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import functools
import shlex
from typing import Any, Dict, List, Literal, Optional, Sequence, Union

from ..base.diagnostics import ERROR, Diagnostic, capped, sort
from ..base.records import Shape
from . import model


class Provenance(Shape, total=False):
    """Why a mount is there: the rule and what caused it (``covers``: a bind merged into this one)."""
    rule: str
    source: str
    covers: str


class _MountBase(Shape):
    kind: str
    src: Optional[str]
    dest: str
    provenance: List[Provenance]


class MountEntry(_MountBase, total=False):
    """One mount of a profile (public: the ``mounts`` of a result and of the .json on disk); ``fd``: the
    descriptor number a bind whose source can move is bound by (see ``descriptors`` of the result)."""
    fd: int


class _ProfileBase(Shape):
    executor: Optional[str]
    command_line: Optional[str]
    mounts: List[MountEntry]
    namespaces: List[Dict[str, str]]      # {"flag", "rule", "source"}
    network: Optional[Dict[str, Any]]     # {"host", "rule", "because"}
    diagnostics: List[Diagnostic]


class _ProfileExtra(_ProfileBase, total=False):
    descriptors: List[Dict[str, Any]]     # descriptors.Descriptor, when wrapped
    manifest: Dict[str, Any]              # name, origin, revision, digest, when wrapped
    exception: Dict[str, Any]             # rule, source, digest, when run direct (the pinned undo broker)
    preview: bool                         # rendered off the target host (a filter on the controller)
    placement: Dict[str, Any]             # a device's profile (R-SCOPE-4): placement, rule, flags, downgrades
    channels: List[Dict[str, str]]        # the command channels the admin allows that it exposes: path, kind,
    #                                       reason, grant (host.allow_channels), when any


class Rendered(_ProfileExtra):
    """A profile that runs: wrapped by bwrap, or direct (the pinned undo broker, R-FAIL-2)."""
    decision: Literal["wrapped", "direct"]
    refusal: None
    argv: List[str]


class Refused(_ProfileExtra):
    """A profile withheld: ``refusal`` is the first error's code, the diagnostics say why."""
    decision: Literal["refused"]
    refusal: Optional[str]
    argv: None


Profile = Union[Rendered, Refused]
"""A profile as every face returns it (renderer.render and render_safe; refused() and the undo decision)."""


_quote = functools.lru_cache(maxsize=8192)(shlex.quote)


def shell_join(argv: Sequence[str]) -> str:
    return " ".join(map(_quote, argv))


def bounded(diags: List[Diagnostic]) -> List[Diagnostic]:
    """At most MAX_DIAGNOSTICS diagnostics per profile, errors first; the rest are counted in the
    last one's message."""
    return capped(sort(diags), model.MAX_DIAGNOSTICS, "more_diagnostics")


def refused(name: Optional[str], diags: List[Diagnostic]) -> Refused:
    errors = [d for d in diags if d["severity"] == ERROR]
    return {"executor": name, "decision": "refused", "refusal": errors[0]["code"] if errors else None,
            "argv": None, "command_line": None, "mounts": [], "namespaces": [],
            "network": None, "diagnostics": bounded(diags)}
