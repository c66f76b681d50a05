# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One read-only audit of one host: everything the fleet report needs, in one round trip.

bwrap state and kernel knobs (facts.gather), the service environment (environment.inspect),
drift of the rendered profiles against what is on disk (renderer.render), the real probe
(run.probe_service), and whether the continuous proof watches the host (monitor_state.describe:
its timer, the age of its last proof). With ``collect_monitor`` the monitor's stored result is
taken instead of running the checks again (a stale one is not a pass). Nothing here writes to the
host.

``audit_host()`` is what the self-contained payload of the metnos_audit action plugin calls on
the host (see action_plugins/metnos_audit.py).
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import resource
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, cast

from ..base import envflags, verdicts
from ..base.diagnostics import Diagnostic, sort, union, unit_not_found, utf8_safe
from ..base.records import Shape
from ..host import bwrap, bwrap_trust
from ..host.facts import SmokeTest, UserError, default_smoke_user, gather, resolve_user
from ..host.trust_store import Store
from ..probe import run
from ..profile import host_context, host_layout, python_roots, renderer, store
from ..service import environment
from . import containment, cross_executor, launcher_trust, monitor_state, profile_states

SCHEMA = monitor_state.AUDIT_SCHEMA     # one spelling: monitor_state checks collected results against it


class HostResult(Shape, total=False):
    """One host's audit (audit_host(); the metnos_audit action's result, the record of document.py, the ``audit``
    of the monitor's stored result). Always there: schema, hostname, diagnostics, verdict; the others
    when the checks ran (the monitor's fallback after a failed run has no monitor, duration or cpu)."""
    schema: str                                  # SCHEMA
    hostname: str
    monitor: Dict[str, Any]                      # monitor_state.describe(): the continuous proof of the host
    bwrap_facts: Dict[str, Any]                  # facts.gather()
    service: Optional[environment.ServiceResult]           # None without a unit (or when it is not there)
    profiles: List[Dict[str, Any]]               # profile_drift(): each manifest's state
    probe: Optional[run.ProbeResult]              # None when the probe is off
    diagnostics: List[Diagnostic]              # every finding once, most severe first
    verdict: str                                 # pass, warn or fail: attached once by finish (verdicts.decide)
    duration: float                              # seconds
    cpu: float                                   # cpu_seconds()
    payload_cache: Dict[str, Any]                # the action's payload: its compiled core's cache (transport.py)
    containment: containment.Containment         # where executors run here and at what level (R-SCOPE-4)


def profile_drift(manifests: Optional[Iterable[Any]], host_over: Optional[Dict[str, Any]], profile_dir: str,
                  status: envflags.Status, runner: bwrap.Runner = bwrap.default_runner,
                  rendered: Optional[List[Tuple[str, List[Any]]]] = None) -> List[Dict[str, Any]]:
    """Render each manifest now (as sandbox_profile does) and compare with <profile_dir>/<executor>.args;
    ``rendered``, when given, gets (executor, mounts) of each wrapped profile (cross_executor.findings)."""
    out: List[Dict[str, Any]] = []
    if not manifests:
        return out
    not_run: List[Diagnostic] = []     # the interpreter neither root's nor one user's: not asked
    try:
        host = host_context.HostContext(python_roots.with_python_roots(host_over, runner, not_run))
    except host_layout.ContextError as exc:
        return [{"executor": None, "state": "error", "message": str(exc)}]
    unsafe = store.folder_problem(profile_dir)        # root's launcher runs what this folder holds
    if unsafe is not None:
        out.append(dict(unsafe.get("details") or {}, executor=None, state="folder_unsafe",
                        message=unsafe["message"]))
    if not_run:
        return out + [{"executor": None, "state": "error", "message": not_run[0]["message"]}]
    first: Dict[str, str] = {}           # executor name: the manifest that rendered it first
    for index, source in enumerate(manifests or [], 1):
        prof = renderer.render_safe(source, host, {}, status)
        name = prof.get("executor")
        entry: Dict[str, Any] = {"executor": name, "decision": prof["decision"]}
        if prof["decision"] == "refused":       # known by its readable name, else its file, else its place
            entry.update(profile_states.refused_label(source, name), index=index, state="refused",
                         refusal=prof["refusal"], message=profile_states.refusal_reason(prof))
            out.append(entry)
            continue
        if rendered is not None:
            rendered.append((cast(str, name), list(prof.get("mounts") or [])))
        path = store.paths(profile_dir, name)[0]
        if name in first:                       # one profile file for two manifests: neither wins silently
            entry.update(state="duplicate", path=path, first=first[name],
                         second=profile_states.place(source, index))
            out.append(entry)
            continue
        first[cast(str, name)] = profile_states.place(source, index)
        on_disk = store.read_args(profile_dir, cast(str, name))     # the one reader of the profile format
        if on_disk is None:
            entry.update(state="missing", path=path)
            out.append(entry)
            continue
        want = prof["argv"]
        # the .args as rendered today, and the .json not of the same render (a write killed between the two)
        half = store.pair_problem(profile_dir, cast(str, name)) if on_disk == want else None
        if half is not None:
            entry.update(state="half_written", path=path, problem=half)
        elif on_disk == want:
            entry.update(state="in_sync", path=path)
        else:       # told as mounts added, removed or changed (with their modes), not as argv words
            entry.update(profile_states.describe_drift(want, on_disk), state="drift", path=path)
        out.append(entry)
    return out


def drift_diagnostics(drift: Iterable[Mapping[str, Any]]) -> List[Diagnostic]:
    """One finding per manifest, whatever its state (profile_states.findings: refused and error included)."""
    return profile_states.findings(drift)


def audit_host(params: Mapping[str, Any], runner: bwrap.Runner = bwrap.default_runner,
               trust_store: Optional[str] = None) -> HostResult:
    """The whole per-host audit. ``params``: the options of metnos_audit (options.AUDIT: unit, scope, user,
    manifests (list of mappings), host (overrides), profile_dir, probe (bool), timeout, smoke_user), complete:
    the caller applied the spec's defaults once (Ansible's validator in the action and the module,
    options.with_defaults in the monitor and elsewhere), none is applied here. ``trust_store``: the file keeping
    bwrap verifications from one audit to the next (host/trust_store.py; the payload's bootstrap names it beside
    the compiled core), None for none. The result as output (``finish``): its verdict from its findings."""
    return finish(checks(params, runner, trust_store))


def finish(result: HostResult) -> HostResult:
    """A host's result as output (the module's, the monitor's stored one, the non-Linux record the action makes):
    its verdict attached once from its findings (base/verdicts.decide), every string valid UTF-8 (the
    controller reads the record). ``result``: findings only, no verdict yet."""
    safe: HostResult = utf8_safe(verdicts.decide(result))
    return safe


def checks(params: Mapping[str, Any], runner: bwrap.Runner, trust_store: Optional[str] = None) -> HostResult:
    """The findings of one host, no verdict yet (``finish`` attaches it): the non-Linux record, the monitor's
    collected proof, or the checks run now."""
    system = os.uname().sysname
    if system != "Linux":     # the Linux checks do not apply on another kernel: the record says its level only
        return cast(HostResult, containment.record(os.uname()[1], params["placement"], system, None, None,
                                                   params["manifests"], SCHEMA))
    start = time.time()
    monitor, record, monitor_diags = monitor_state.describe(params, runner, start)
    if params["collect_monitor"] and record is not None:
        return cast(HostResult, monitor_state.collect(params, monitor, record,
                                                      start))   # the monitor's proof (its shape checked)
    result: HostResult = {"schema": SCHEMA, "hostname": os.uname()[1], "monitor": monitor}
    path_text = os.environ.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    smoke_user = None
    try:
        given = params.get("smoke_user")
        smoke_user = resolve_user(given) if given else default_smoke_user()
    except UserError:
        smoke_user = default_smoke_user()
    verifications = bwrap_trust.Verifications(Store(trust_store) if trust_store else None)   # each file asked once
    facts = gather(path_text, dict(os.environ), SmokeTest(user=smoke_user), runner=runner,
                   verifications=verifications)
    result["bwrap_facts"] = facts
    diags = list(facts["diagnostics"])

    unit = params.get("unit") or ""
    result["service"], inspection = _service(unit, params, runner, diags, verifications)
    status = result["service"]["status"] if result["service"] is not None else facts["status"]

    rendered: List[Tuple[str, List[Any]]] = []
    drift = profile_drift(params["manifests"], params["host"], params["profile_dir"], status, runner, rendered)
    result["profiles"] = drift
    diags.extend(drift_diagnostics(drift))
    diags.extend(cross_executor.findings(rendered))     # a folder one executor writes and another reaches
    diags.extend(launcher_trust.findings(params["exec_link"]))     # what root starts a stored profile with

    probe_diags: List[Diagnostic] = []
    result["probe"] = _probe(unit if result["service"] is not None else None, params, runner,
                             run.Handed(inspection, verifications), probe_diags) if params["probe"] else None
    level = containment.executors(containment.decide(params["placement"], "linux", status.get("active") is True,
                                                     verdicts.probe_passed(result["probe"])), params["manifests"])
    result["containment"] = level
    found = containment.finding(result["hostname"], level, probe_ran=result["probe"] is not None)
    result["diagnostics"] = sort(union(diags, probe_diags, monitor_diags, [found]
                                       if found else []))
    result["duration"] = round(time.time() - start, 3)
    result["cpu"] = cpu_seconds()
    return result


def _service(unit: str, params: Mapping[str, Any], runner: bwrap.Runner, diags: List[Diagnostic],
             verifications: Optional[bwrap_trust.Verifications] = None
             ) -> Tuple[Optional[environment.ServiceResult], Optional[environment.Inspection]]:
    """The service-environment result of ``unit`` (None when there is none) and the inspection it comes from
    (the one reading of the unit in an audit: the probe is handed it), its diagnostics added to ``diags``."""
    found = None
    if unit:
        try:
            grants = store.stored_grants(params["profile_dir"]) if params.get("profile_dir") else []
            found = environment.inspect({"unit": unit, "scope": params.get("scope") or "system",
                                         "user": params.get("user"), "mode": "auto", "grants": grants},
                                        runner, verifications)
        except environment.SystemctlError as exc:
            diags.append(unit_not_found(unit, error=str(exc)))
    if found is None:
        if unit:
            diags.append(unit_not_found(unit))
        return None, None
    svc = found.result       # its section's verdict: finish (verdicts.decide) attaches it with the host's
    diags.extend(svc["diagnostics"])
    return svc, found


def _probe(unit: Optional[str], params: Mapping[str, Any], runner: bwrap.Runner, handed: run.Handed,
           diags: List[Diagnostic]) -> run.ProbeResult:
    """The real probe in the service's context (``unit``: None without a service), handed the audit's own
    inspection of the unit (never read twice) and its verifications of bwrap files; its diagnostics are added
    to ``diags`` (audit_host lists each finding once: diagnostics.union)."""
    probe = run.probe_service({"unit": unit, "scope": params.get("scope"),
                               "user": params.get("user"), "host": params.get("host") or {},
                               "timeout": params["timeout"],
                               "accept_bwrap_sha256": params.get("accept_bwrap_sha256") or []},
                              runner, inspection=handed)
    diags.extend(probe["diagnostics"])
    return probe


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of the commands it waited for (bwrap, package
    queries, systemctl): what the audit cost the host. A probe in a systemd transient unit runs under
    systemd, not as our child, and is not included."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return round(own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime, 3)
