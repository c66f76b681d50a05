# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each host's audit result kept on the controller for the report: metnos_audit writes one file per host (the
host's own JSON text, or a failure record), metnos_audit_report reads them back one at a time, so that no
host's result is templated through Jinja. Pure Python, no Ansible imports; controller only.
"""
from __future__ import absolute_import, annotations, division, print_function

import json
import os
from typing import Any, Iterable, Iterator, List, Tuple
from urllib.parse import quote

from ..base import files

SPOOL = "metnos-audit-results"


def spool_dir(run_tmp: str) -> str:
    """Where this run keeps each host's result: a directory inside Ansible's own per-run temp dir on the
    controller (``run_tmp``: C.DEFAULT_LOCAL_TMP, private, created by the main process before it forks the
    workers, removed when it exits); both actions, metnos_audit and metnos_audit_report, ask here."""
    return os.path.join(run_tmp, SPOOL)


def spool_path(directory: str, host: str) -> str:
    return os.path.join(directory, quote(host, safe="") + ".json")


def write_spooled(directory: str, host: str, text: str) -> None:
    """Keep one host's result (JSON text: the audit result, or {unreachable|failed, msg}) in ``directory``."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    files.replace(spool_path(directory, host), text, 0o600)


def read_spooled(directory: str, hosts: Iterable[str]) -> Iterator[Tuple[str, Any]]:
    """(host, result) for each host, read one at a time; a host without a kept result (it never reached
    the audit in this run: an earlier task failed, or the play ended first) is host_not_audited, never
    unreachable (nothing is known about it)."""
    for host in hosts:
        try:
            with open(spool_path(directory, host), encoding="utf-8") as handle:
                yield host, json.load(handle)
        except (OSError, ValueError):
            yield host, {"failed": True, "code": "host_not_audited"}


def spooled(directory: str, hosts: Iterable[str]) -> List[str]:
    """The hosts of ``hosts`` that have a kept result in ``directory``."""
    return [host for host in hosts if os.path.isfile(spool_path(directory, host))]
