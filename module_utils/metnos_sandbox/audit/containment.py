# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a host runs executors and at what containment level (R-SCOPE-4, the spec's paired-device table).

The one decision every face reads: the audit on the host (host_audit.audit_host), the action for a host whose facts
say it is not Linux (it ships no payload there), the reports in every format and the metrics. A level is
``bubblewrap`` (Linux: proven only by the probe that ran on this host), ``appcontainer`` or ``job_object``
(Windows: declared from the facts and AppContainer's prerequisite, not proven: no Windows check runs here),
``none`` (macOS: no native module; any platform this toolkit does not know; Linux without a usable bwrap). A
host is counted as isolated only at a proven ``bubblewrap`` (isolated()); anything else is a finding of its own
(finding()) that the one verdict function sees.

A manifest may name the minimum level its executor needs (``min_containment``, profile/manifest.py): at a
weaker level the device's client must refuse it (no silent downgrade); an executor without a minimum runs
downgraded there (executors()). Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, cast

from ..base import diagnostics
from ..base.records import Shape
from ..profile import manifest, model

PLACEMENTS = ("server", "device")
PLATFORMS = ("linux", "windows", "macos", "unknown")
BUBBLEWRAP, APPCONTAINER, JOB_OBJECT, NONE = model.CONTAINMENT_LEVELS
# How much each level isolates: bubblewrap and an AppContainer both isolate files and network (each on its own
# platform); a Job Object alone limits memory, processes and the tree's lifetime; none isolates nothing.
RANK = {BUBBLEWRAP: 2, APPCONTAINER: 2, JOB_OBJECT: 1, NONE: 0}
APPCONTAINER_SINCE = (6, 2)      # Windows 8 / Server 2012: AppContainer's prerequisite
PROBE, DECLARED, ABSENT = "probe", "declared", "none"      # what a level rests on (evidence)
_VERSION = re.compile(r"(\d{1,5})\.(\d{1,5})")
MAX_FACT = 64


class Executor(Shape):
    """One executor that would not run isolated on this host: refused (its minimum is above the host's level)
    or downgraded (no minimum: it runs at the host's weaker level)."""
    executor: str
    minimum: Optional[str]
    outcome: str


class Containment(Shape):
    """A host's containment (the ``containment`` of its audit record)."""
    placement: str               # server | device (metnos_sandbox_placement)
    platform: str                # linux | windows | macos | unknown
    level: str                   # bubblewrap | appcontainer | job_object | none
    proven: bool                 # True only when the probe proved bubblewrap's isolation on this host
    evidence: str                # probe (proven) | declared (facts, not proven) | none
    reason: Optional[str]        # why the level is weaker or unproven; None at a proven bubblewrap
    executors: List[Executor]    # the executors refused or downgraded at this level


def platform_of(system: Any, os_family: Any) -> str:
    """The platform from Ansible's facts (ansible_system: Linux, Darwin, Win32NT; ansible_os_family: Debian,
    RedHat, Darwin, Windows, ...). Facts that name two platforms, or none this toolkit knows, are unknown."""
    systems = {"Linux": "linux", "Darwin": "macos", "Win32NT": "windows"}
    by_system = systems.get(system if isinstance(system, str) else "")
    by_family = {"Darwin": "macos", "Windows": "windows"}.get(os_family if isinstance(os_family, str) else "")
    if by_system and by_family and by_system != by_family:
        return "unknown"
    return by_system or by_family or "unknown"


def _fact(value: Any) -> str:
    """A fact as bounded text for a reason (facts are the host's own words: never interpreted)."""
    text = value if isinstance(value, str) else repr(value)
    return diagnostics.excerpt(text[:MAX_FACT])


def decide(placement: str, platform: str, bwrap_usable: bool = False, probe_passed: Optional[bool] = None,
           windows_version: Any = None, facts_text: str = "") -> Containment:
    """The level of a host. Linux: ``bwrap_usable`` (the runtime's status(): active, bwrap there and not disabled) and
    ``probe_passed`` (None: no probe ran). Windows: ``windows_version`` (ansible_distribution_version). Others:
    ``facts_text`` names what the facts said, for the reason."""
    if placement not in PLACEMENTS:
        raise ValueError("placement %r is not one of %s" % (placement, ", ".join(PLACEMENTS)))
    where = "this %s" % placement
    if platform == "linux":
        if not bwrap_usable:
            return _make(placement, platform, NONE, ABSENT, (
                "bubblewrap is not in use on %s (the runtime's status() is not active: see the bwrap findings): the "
                "server refuses ordinary execution, a paired client must declare the downgrade" % where))
        if probe_passed is True:
            return _make(placement, platform, BUBBLEWRAP, PROBE, None, proven=True)
        return _make(placement, platform, BUBBLEWRAP, DECLARED, (
            "the probe did not run on %s (metnos_audit_probe=false): bubblewrap is configured, its isolation is not "
            "proven" % where if probe_passed is None else
            "the probe ran on %s and did not prove the isolation (see the probe's findings)" % where))
    if platform == "windows":
        found = _VERSION.match(windows_version) if isinstance(windows_version, str) else None
        if found is None:
            return _make(placement, platform, JOB_OBJECT, DECLARED, (
                "the facts give no Windows version (%s): AppContainer's prerequisite (Windows NT 6.2 or later) "
                "cannot be checked, so a Job Object alone is assumed; declared, not proven" % _fact(windows_version)))
        if (int(found.group(1)), int(found.group(2))) < APPCONTAINER_SINCE:
            return _make(placement, platform, JOB_OBJECT, DECLARED, (
                "AppContainer needs Windows NT 6.2 (Windows 8 / Server 2012) or later; the facts say %s: a Job "
                "Object alone (memory, processes, deadline; no file or network isolation); declared, not proven"
                % _fact(windows_version)))
        return _make(placement, platform, APPCONTAINER, DECLARED, (
            "AppContainer inside a Job Object, declared from the facts (Windows %s) and not proven: no Windows "
            "check runs here; the client falls back to the Job Object alone (with a reason) for system "
            "subprocesses, unanchorable paths, too-broad scopes or an unavailable container"
            % _fact(windows_version)))
    if platform == "macos":
        return _make(placement, platform, NONE, ABSENT, (
            "macOS has no native containment module: executors run not isolated; only the deadline on the "
            "process group holds"))
    return _make(placement, "unknown", NONE, ABSENT, (
        "the facts name no platform this toolkit knows (%s): counted as not isolated" % (facts_text or "no facts")))


def _make(placement: str, platform: str, level: str, evidence: str, reason: Optional[str],
          proven: bool = False) -> Containment:
    return {"placement": placement, "platform": platform, "level": level, "proven": proven, "evidence": evidence,
            "reason": reason, "executors": []}


def executors(containment: Containment, manifests: Iterable[Any]) -> Containment:
    """``containment`` with the executors of ``manifests`` (as the audit gets them: mappings, transported
    records) that would be refused or downgraded at its level. A refused manifest is the profile findings' own
    (never listed here)."""
    rank = RANK[containment["level"]]
    listed: List[Executor] = []
    for source in manifests:
        try:
            parsed = manifest.coerce(source)
        except model.ManifestError:
            continue
        minimum = parsed.min_containment
        if minimum is not None and RANK[minimum] > rank:
            listed.append({"executor": parsed.name, "minimum": minimum, "outcome": "refused"})
        elif rank < RANK[BUBBLEWRAP]:
            listed.append({"executor": parsed.name, "minimum": minimum, "outcome": "downgraded"})
    ordered = sorted(listed, key=lambda e: (e["outcome"] != "refused", e["executor"]))
    return cast(Containment, dict(containment, executors=ordered))


def isolated(containment: Optional[Mapping[str, Any]]) -> bool:
    """Whether a host counts as isolated: a bubblewrap level the probe proved on it, nothing less."""
    return containment is not None and containment.get("level") == BUBBLEWRAP and containment.get("proven") is True


def _executors_text(listed: Iterable[Mapping[str, Any]]) -> str:
    refused = ["%s (needs %s)" % (e["executor"], e["minimum"]) for e in listed if e["outcome"] == "refused"]
    downgraded = [str(e["executor"]) for e in listed if e["outcome"] == "downgraded"]
    parts = (["refused there: " + ", ".join(refused)] if refused else []) + (
        ["run downgraded there: " + ", ".join(downgraded)] if downgraded else [])
    return "; ".join(parts) or "no executor listed"


def finding(host: str, containment: Containment, probe_ran: bool) -> Optional[diagnostics.Diagnostic]:
    """The finding of a host that is not counted as isolated: containment_none (level none),
    containment_declared (Windows: declared, not proven), containment_not_proven (Linux without a probe).
    None at a proven bubblewrap, and after a probe that ran and failed (the probe's findings say it)."""
    level = containment["level"]
    fill: Dict[str, Any] = {
        "host": host, "level": level, "platform": containment["platform"], "placement": containment["placement"],
        "reason": containment["reason"] or "", "executors": _executors_text(containment["executors"])}
    if level == NONE:
        return diagnostics.make("containment_none", **fill)
    if level in (APPCONTAINER, JOB_OBJECT):
        return diagnostics.make("containment_declared", **fill)
    if not containment["proven"] and not probe_ran:
        return diagnostics.make("containment_not_proven", **fill)
    return None


def record(host: str, placement: str, system: Any, os_family: Any, windows_version: Any, manifests: Iterable[Any],
           schema: str) -> Dict[str, Any]:
    """The whole audit record of a host that is not Linux (its facts say so: ``system`` ansible_system or the
    kernel's name, ``os_family`` ansible_os_family): the Linux checks do not apply there and are not run; the
    record says its level and its finding; its verdict is attached where it becomes output (host_audit.finish)."""
    said = "ansible_system=%s, ansible_os_family=%s" % (_fact(system), _fact(os_family))
    found = executors(decide(placement, platform_of(system, os_family), windows_version=windows_version,
                             facts_text=said), manifests)
    diags = [d for d in [finding(host, found, probe_ran=False)] if d is not None]
    return {"schema": schema, "hostname": host, "containment": found, "diagnostics": diagnostics.sort(diags)}


def text(containment: Optional[Mapping[str, Any]]) -> str:
    """One line for a report: ``bubblewrap (proven)``, ``appcontainer (declared, not proven)``, ``none``."""
    if not containment:
        return "not reported"
    level = str(containment.get("level"))
    if containment.get("proven") is True:
        return "%s (proven)" % level
    return level if level == NONE else "%s (%s, not proven)" % (level, containment.get("evidence"))
