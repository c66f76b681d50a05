# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real wrapped probe: run a rendered profile for real and prove that what the profile
promises holds (R-DIAG-3). It must be able to fail, and it never takes a refusal for a proof.

Two independent witnesses for every check:

* **outside** (the kernel's view from the probe's side, procfs.py): bwrap's ``--json-status-fd``
  names the sandboxed child; the probe finds the payload process, checks that it *is* that
  child (exact command line, parent is the bwrap that was started), and reads its namespace
  inodes, its mount table and its interfaces from the host's ``/proc`` while the payload
  waits (a handshake on the payload's stdin: it reports, then blocks until the outside has
  read). Namespaces are compared with bwrap's parent context, read before bwrap could act (run
  directly: the probe's own; in a transient unit: the unit's process, read while it waits to exec
  bwrap); a bwrap that has left that context since is itself a finding. The pids a unit reports (the
  launcher's, bwrap's child-pid) are of the unit's PID namespace - its own with PrivatePIDs=yes - and
  are translated to the probe's by the unit's cgroup (procfs.unit_pid) before anything is read; the
  payload's own pid is compared at the parent context's level of its NSpid.
* **inside** (the payload, payload_script.py, sent as ``payload.payload_text()``): ``statfs``/``statvfs``/
  ``stat`` of each mount point,
  ``lstat`` of each hidden path, a real write for each writable grant, ``if_nameindex``,
  ``prctl(PR_GET_PDEATHSIG)``; its ``/proc/self/ns`` links count only once ``/proc`` is proven
  to be a procfs whose ``/proc/self`` is the payload.

A permission error proves nothing: EACCES/EPERM is reported as "not proven" and fails the check.

``payload.expectations(profile, ...)`` derives the checks from the *intended* profile; ``runners.run`` (direct)
and ``runners.run_systemd`` (transient unit) execute an argv - normally that profile's, possibly a
weakened one in tests - with the payload as the command; ``evidence.evaluate`` turns both witnesses into
checks and ``runners.run_verdict`` into diagnostics with one code per outcome: ``probe_not_isolated`` (the
payload ran but not sandboxed), ``probe_check_failed``, ``probe_setup_failed`` (bwrap failed
before the payload ran), ``probe_payload_failed`` (the payload could not report), ``probe_timeout``.

Nothing waits without a bound (bwrap_run.pump): the run ends when bwrap has exited - processes it leaves
holding its pipes (a look-alike's decoy, a background child) are killed a moment later, never waited
for - or at the timeout. Whether the payload ran is decided by its record plus the outside reading,
not by how the run ended: a timeout after both (a look-alike that never exits) still judges them,
and reports the timeout too.

Argv words: the verdict never trusts them. ``sandbox_probe`` always runs the rendered argv; ``run``
and ``run_systemd`` accept any argv (tests feed weakened ones) and judge only the evidence. When the
argv run is not the profile's (``spec["argv_options"]``), the verdict names what it added and removed,
option by option (``argv_deviations``), and every failure message ends with them, so a failed check
can be traced to its words; a pass with deviations says the evidence found those words harmless (a
new session, a host name, one more namespace), not that they were absent.

Beside the checks (issue 20): the bwrap the service runs is verified against the package database or an
accepted sha256 (bwrap_trust; probe_bwrap_* codes) and the launcher must execute a verified file (check
bwrap_exe_verified); everything its tree held is judged (reaper.py runs it, proctree.py judges it:
probe_tree_not_empty, probe_process_unaccounted, probe_payload_outside); /proc must carry bwrap's read-only
covers for the caller (proc_covers.py, check proc_covers). The payload marks itself (comm) and exits only once
the probe releases it with a one-time token (``with_release``), so a copy started elsewhere stays to be seen.
"""
from __future__ import absolute_import, annotations, division, print_function

import os
import pwd
import typing as t

from ..base import envflags, owners, verdicts
from ..base.diagnostics import ERROR, Diagnostic, amend, make, sort, unit_not_found
from ..base.records import Json, Record, Shape
from ..host import bwrap
from ..host.bwrap_trust import Verifications, for_run, normalise_accepted
from ..profile import host_context, python_roots, renderer, result
from ..service import environment
from . import blame, device, payload, root_proof, runners
from .payload import User


class _ProbeKeys(Shape):
    passed: bool                               # read from the findings once (probe_service), never set beside them
    checks: t.List[Json]                       # evidence.evaluate(): one per check, both witnesses
    diagnostics: t.List[Diagnostic]
    context: t.Optional[str]                   # where and as whom the run happened (None: not started)


class ProbeResult(_ProbeKeys, total=False):
    """probe_service()'s answer (what sandbox_probe returns; the audit's ``probe``, with no ``service``: never built
    when the caller handed its inspection):
    the keys above, how it ran and, once bwrap was started, the run's verdict (runners.py) but its
    diagnostics, which are the probe's own list."""
    status: envflags.Status                    # the runtime's status() in the probe's context
    status_view: t.Optional[str]
    service: environment.ServiceResult                   # the service's environment the probe ran with
    profile: Json                              # executor, decision, argv of the profile it ran
    confidence: str                            # "reduced" when the run did not carry all of the service's context
    unit_context: Json                         # what the transient unit carried (unit_context.py)
    blame: Json                                # blame.diagnose(): the experiment on the unit's directives
    root_proof: Json                           # root_proof.prove(): what uid 0 could do in the sandbox
    device: Json                               # device.prove(): a paired Linux device's profile (R-SCOPE-4)
    blamed_directives: t.List[t.Any]
    verdict_view: str
    # the run's verdict (runners.run / run_systemd)
    argv: t.List[str]
    rc: t.Optional[int]
    timed_out: bool
    setup_failed: bool
    stderr: str
    duration: float
    argv_deviations: Json
    evidence: Json
    unit_failure: Json
    observed_uid: t.Optional[int]
    bwrap_trust: Json
    classification: Json
    systemd_result: Json


class _Service(Record):
    """Who and where the probe runs, as the service would: its environment, user and runtime status, and
    the service_env result (None without a unit, or when the unit is not there)."""
    svc: t.Optional[environment.ServiceResult]
    svc_env: t.Optional[t.Dict[str, str]]
    """The environment service_env found for the unit (None: no unit, or a masked one)."""
    env: t.Dict[str, str]
    user: User
    status: envflags.Status


def _user_entry(name: str) -> User:
    entry = pwd.getpwnam(name)
    return {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid, "groups": [entry.pw_gid]}


class Handed(Record):
    """The service inspection a caller already made (the audit: None when the unit is missing), so that the
    probe does not read the unit again; and the caller's verifications of bwrap files (bwrap_trust.Verifications), so
    that a file the caller verified is not asked of the package manager again."""
    inspection: t.Optional[environment.Inspection]
    verifications: t.Optional[Verifications] = None


def _service(params: Json, runner: t.Any, out: ProbeResult, handed: t.Optional[Handed] = None) -> _Service:
    """The service's environment, user and runtime status (the admin's, as nobody, without a unit)."""
    found = None
    unit = params.get("unit")
    if unit:
        found = handed.inspection if handed is not None else environment.inspect(
            {"unit": unit, "scope": params.get("scope") or "system", "user": params.get("user"), "mode": "auto"},
            runner)
        if found is None:
            out["diagnostics"].append(unit_not_found(
                unit, then="the probe ran in the admin context instead"))
    svc = found.result if found is not None else None
    svc_env = found.env if found is not None else None
    if svc is not None and svc_env is not None:
        env = dict(svc_env)
        user, status = svc["user"], svc["status"]
        if handed is None:      # alone (sandbox_probe): the service it ran with; the audit holds its own
            out["service"] = svc.copy()
        out["status_view"] = svc.get("status_view")
        if params.get("probe_user"):
            user = _user_entry(params["probe_user"])
    else:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if envflags.ENV_VAR in os.environ:
            env[envflags.ENV_VAR] = os.environ[envflags.ENV_VAR]
        user = _user_entry(params.get("probe_user") or "nobody")
        status = envflags.status(bwrap.which("bwrap", env["PATH"]), env)
        out["status_view"] = "runtime status() in the admin's environment (no service unit)"
    out["status"] = status
    return _Service(svc, svc_env, env, user, status)


def _fail_closed(out: ProbeResult, service: _Service) -> ProbeResult:
    """Fail closed exactly like the runtime: no bwrap is started (R-FAIL-1)."""
    svc, env = service.svc, service.env
    out["context"] = "not started: the runtime would fail closed"
    out["diagnostics"].extend(svc["diagnostics"] if svc is not None and service.svc_env is not None else
                              envflags.diagnose(service.status, env, env.get("PATH"), where="probe environment"))
    if not any(d["code"] == "executor_os_sandbox_unavailable" for d in out["diagnostics"]):
        out["diagnostics"].append(make("executor_os_sandbox_unavailable"))
    out["diagnostics"] = sort(out["diagnostics"])
    return out


def _render(params: Json, status: envflags.Status) -> t.Tuple[str, result.Profile]:
    """The interpreter the payload runs on, and the profile the probe runs (rendered as the runtime would,
    with the interpreter's package roots and installation discovered like every other face)."""
    host_over = dict(params.get("host") or {})
    python = params.get("python") or host_over.get("python_executable") or "/usr/bin/python3"
    if not os.path.exists(python):
        python = "/usr/bin/python3"
    host_over.setdefault("python_executable", python)
    # asked of the interpreter outside any sandbox: bounded like every run of the probe (a hanging one is killed)
    ask = bwrap.bounded_runner(min(10.0, float(params.get("timeout") or 60)))
    host = host_context.HostContext(python_roots.with_python_roots(host_over,
                                                                   ask))       # HL.ContextError names the bad key
    source = runners.PROBE_MANIFEST if params.get("manifest") is None else params["manifest"]
    return python, renderer.render_safe(source, host, params.get("invocation") or {}, status)


def _unit_context(params: Json, runner: t.Any, user: User) -> Json:
    """The unit's whole execution context, minus the documented deny list (unit_context.py); unreadable,
    only its user is applied and the reduced confidence says why."""
    try:
        return environment.execution_context({"unit": params["unit"], "scope": params.get("scope") or "system",
                                              "user": params.get("user")}, runner,
                                             probe_user=user if params.get("probe_user") else None)
    except environment.SystemctlError as exc:     # run anyway, as the user, and say how much less it proves
        return {"assignments": [], "carried": [], "excluded": [], "not_carried": [], "carried_as": [],
                "differences": [], "verified": False, "confidence": "reduced",
                "reasons": ["the unit's execution context could not be read (%s): only its user is applied" % exc]}


def _run_in_context(params: Json, runner: t.Any, service: _Service, job: runners.RunSpec, out: ProbeResult) -> Json:
    """Run the profile (``job``) in a transient unit carrying the service's context, or directly as its user."""
    svc, user, unit = service.svc, service.user, params.get("unit")
    context = params.get("context") or "auto"
    if not (context == "systemd" or (context == "auto" and svc is not None and svc.get("mode") == "systemd")):
        run_user = None if user.get("uid") in (None, os.geteuid()) else user
        verdict = runners.run(job, user=run_user, env=service.env)
        if service.svc_env is not None:
            out["context"] = ("direct as %s with the service's environment (weaker: the unit's systemd "
                              "restrictions are not applied)" % user.get("name"))
            out["confidence"] = "reduced"
        else:
            out["context"] = "direct as %s in the admin's environment (no service unit%s)" % (
                user.get("name"), " %s" % unit if unit else "")
        return verdict
    unit_name = "metnos-probe-%s" % os.urandom(5).hex()
    settings: Json = {}
    run_env = service.env
    if service.svc_env is not None:
        # Its own Environment= directives travel with the context, so no --setenv.
        settings, run_env = _unit_context(params, runner, user), {}
        out["unit_context"] = dict((k, settings[k]) for k in ("carried", "excluded", "not_carried", "carried_as",
                                                              "differences", "verified", "confidence", "reasons"))
        out["confidence"] = settings["confidence"]
    out["context"] = ("systemd transient unit %s as %s with the execution context of %s" %
                      (unit_name, user.get("name"), unit) if settings else
                      "systemd transient unit %s as %s (no service unit)" % (unit_name, user.get("name")))
    verdict = runners.run_systemd(job, user, settings, run_env, unit_name)
    if settings and not verdicts.probe_passed(verdict) and not verdict["timed_out"] and params.get("blame", True):
        out["blame"] = blame.diagnose(job, user, settings, verdict, blame.bounds(params))
    return verdict


def _diagnostics(params: Json, service: _Service, verdict: Json, findings: t.List[Diagnostic],
                 out: ProbeResult) -> t.List[Diagnostic]:
    """The verdict's diagnostics, the bwrap binary's findings, root's (proven not contained: an error; else a
    warning), the unit directives blamed
    for a failed setup and what the transient unit could not carry."""
    svc, user, unit = service.svc, service.user, params.get("unit")
    diags = list(verdict["diagnostics"]) + findings
    if ran_as_root(verdict):
        not_contained = root_proof.diagnostics(out.get("root_proof") or {}, user.get("name") or "root")
        diags.extend(not_contained or [make("probe_payload_root", user=user.get("name") or "root")])
    found = _blamed_by_experiment(out, unit, svc)
    if found is not None and found.unit_killed:       # the runtime's interpreter dies first: not bwrap's failure
        diags = [d for d in diags if d["code"] != "probe_setup_failed"]
    diags.extend(found.diagnostics if found is not None else [])
    if found is not None and found.directives:
        out["blamed_directives"] = found.directives
    elif verdict.get("setup_failed") and svc is not None:
        blamed = [d for d in svc.get("diagnostics", []) if d["code"].startswith("unit_")]
        for d in blamed:
            diags.append(amend(d, "blamed_by_probe"))
        if blamed:
            out["blamed_directives"] = [d.get("details", {}).get("directive") for d in blamed]
    ctx = out.get("unit_context") or {}
    if ctx.get("reasons"):
        diags.append(make("probe_context_incomplete", unit=unit, reasons=ctx["reasons"],
                          wording="reasons", fill={"why": "; ".join(ctx["reasons"])}))
    return sort(diags)


def not_wrapped(prof: result.Profile) -> t.List[Diagnostic]:
    """A profile the probe cannot run (refused, or a pinned direct exception): a failed check of its own when no
    error finding of the profile already says why (nothing was proven, and unknown is a failure)."""
    if any(d["severity"] == ERROR for d in prof["diagnostics"]):
        return []
    return [make("probe_check_failed", wording="failed", fill={
        "said": "profile_wrapped (R-DIAG-3): expected a wrapped profile, observed %s" % prof["decision"],
        "traced": ""}, check="profile_wrapped", check_rule="R-DIAG-3")]


def ran_as_root(verdict: Json) -> bool:
    """Whether the outside saw the payload run as uid 0 (the no_capabilities check's observation)."""
    caps = [c for c in verdict.get("checks") or [] if c["name"] == "no_capabilities"]
    return bool(caps and isinstance(caps[0]["observed"], dict) and caps[0]["observed"].get("uid") == 0)


def _blamed_by_experiment(out: ProbeResult, unit: t.Optional[str], svc: t.Optional[environment.ServiceResult]) -> t.Any:
    """blame.findings() of the experiment's record (None when none ran)."""
    if not out.get("blame"):
        return None
    return blame.findings(out["blame"], unit or "", (svc.get("diagnostics") if svc is not None else None) or [])


def probe_service(params: Json, runner: t.Any, inspection: t.Optional[Handed] = None) -> ProbeResult:
    """The whole probe (_probe): service environment -> fail-closed check -> render -> run in context -> findings;
    ``passed`` is read from those findings alone (base/verdicts.probe_passed: none is an error), never set beside
    them. Parameters: _probe's."""
    out = _probe(params, runner, inspection)
    out["passed"] = verdicts.probe_passed(out) is True
    return out


def _probe(params: Json, runner: t.Any, inspection: t.Optional[Handed] = None) -> ProbeResult:
    """The whole probe's findings: service environment -> fail-closed check -> render -> run in context.

    ``params``: unit (or None), scope, user, manifest (mapping/text or None), invocation, host,
    python, timeout, context (auto/systemd/direct), extra_absent, accept_bwrap_sha256 (the sha256 of
    self-built bwraps to trust besides the packaged one; options.py refuses anything but 64 hex digits).
    ``inspection``: the unit's service inspection the caller already made (the audit), not made again.
    """
    out: ProbeResult = {"passed": False, "checks": [], "diagnostics": [], "context": None}    # probe_service reads it
    service = _service(params, runner, out, inspection)
    if not service.status["active"]:
        return _fail_closed(out, service)
    python, prof = _render(params, service.status)
    out["profile"] = {"executor": prof["executor"], "decision": prof["decision"], "argv": prof["argv"]}
    if os.geteuid() == 0 and service.user.get("uid") in (None, 0):     # run as root: root runs only what root owns
        not_roots = owners.findings("probe_python_not_roots", python, owners.python_problems(python))
        if prof["argv"]:
            not_roots += owners.findings("bwrap_not_run_not_roots", prof["argv"][0], owners.problems(prof["argv"][0]))
        if not_roots:
            out["context"] = "not started: %s is not root's" % not_roots[0]["details"]["program"]
            out["diagnostics"] = sort(not_roots)
            return out
    if prof["decision"] != "wrapped":
        out["context"] = "not started: profile %s" % prof["decision"]
        out["diagnostics"] = sort(prof["diagnostics"] + not_wrapped(prof))
        return out
    extra = list(params.get("extra_absent") or [])
    if service.user.get("home") and service.user.get("home") not in ("/", "/nonexistent"):
        extra.append(service.user["home"])
    spec = payload.expectations(prof, extra_absent=extra)
    accepted, _refused = normalise_accepted(params.get("accept_bwrap_sha256") or [])
    trust = for_run(prof["argv"][0], runner, accepted, verifications=inspection.verifications if inspection
                    else None)
    findings = runners.bwrap_binary_findings(prof["argv"][0], runner, trust)
    job = runners.RunSpec(argv=prof["argv"], spec=spec, python=python, timeout=float(params.get("timeout") or 60),
                          trust=trust)
    verdict = _run_in_context(params, runner, service, job, out)
    out.update(t.cast(ProbeResult, dict((k, v) for k, v in verdict.items() if k != "diagnostics")))  # run's keys
    if ran_as_root(verdict):        # what root could do there, proven by a second run of the same argv
        out["root_proof"] = root_proof.prove(prof["argv"], python, spec.get("descriptors"),
                                             min(20.0, float(params.get("timeout") or 60)))
    out["diagnostics"] = _diagnostics(params, service, verdict, findings, out)
    if "placement" in prof:         # a paired Linux device: its row of the spec proven as its client runs it
        run_user = None if service.user.get("uid") in (None, os.geteuid()) else service.user
        profile = device.DeviceProfile(argv=prof["argv"], host_network=bool((prof.get("network") or {}).get("host")),
                                       fds=prof.get("descriptors"),
                                       downgrades=prof["placement"].get("downgrades") or [])
        out["device"] = device.prove(profile, python, min(30.0, float(params.get("timeout") or 60)), run_user,
                                     service.env)
        out["diagnostics"] = sort(out["diagnostics"] + out["device"]["diagnostics"])
    out["verdict_view"] = "probe: proven by a real wrapped invocation (%s)" % out["context"]
    return out
