# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running the probe: directly (bwrap under a child subreaper) or in a transient unit carrying the
service's context (systemd-run), each run judged (the verdict, timeouts, setup failures, the tree), and
the bwrap binary's own findings.

Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

import hashlib
import os
import subprocess
import time
import typing as t

from ..base import diagnostics, verdicts
from ..base.records import Json, Record
from ..host import bwrap, bwrap_errors, bwrap_run, bwrap_trust, facts, package_owner
from ..service import systemd_exit, unit_context
from . import attributes, evidence, held, keyrings, proc_covers, proctree, reaper, witness
from .payload import Reference, SystemdReport, User, argv_deviations, descriptor_launcher, payload_command


# --------------------------------------------------------------------------- running
class RunSpec(Record):
    """One probe run's inputs: the profile's bwrap ``argv`` (its command after ``--`` is replaced by the payload),
    the payload's expectations ``spec`` (payload.expectations), the ``python`` that runs the payload, the
    ``timeout`` in seconds, and the bwrap's ``trust`` (bwrap_trust.for_run() of argv[0]; verified by the run
    when None, the sha256s in ``accept_sha256`` accepted)."""
    argv: t.Sequence[str]
    spec: Json
    python: str
    timeout: float = 30.0
    trust: t.Optional[Json] = None
    accept_sha256: t.Sequence[str] = ()


class Started(Record):
    """What one run started, as its verdict names and judges it: ``shown`` (its argv as reported), the payload's
    ``spec``, the ``host`` view (witness.host_view) and the run's ``user`` and ``timeout``; the bwrap ``tool``
    named in the findings ("": shown[0]), the bwrap options run (``run_opts``: compared with the profile's when
    given), the bwrap's ``trust`` and the ``payload`` command (what the tree may hold besides bwrap)."""
    shown: t.List[str]
    spec: Json
    host: Json
    user: t.Optional[User]
    timeout: float
    tool: str = ""
    run_opts: t.Optional[t.List[str]] = None
    trust: t.Optional[Json] = None
    payload: t.Optional[t.Sequence[str]] = None


def with_release(spec: Json, timeout: float) -> t.Tuple[Json, str]:
    """The spec the payload gets for one run, and the one-time token that releases it: the payload holds only
    the token's sha256, and the probe writes the token to its stdin only once the outside has verified it
    (a payload never released - a copy started outside - stays in the tree for up to ``linger`` seconds)."""
    go = os.urandom(16).hex()
    return dict(spec, go=hashlib.sha256(go.encode()).hexdigest(), linger=max(1, min(int(timeout), 120))), go


def run(job: RunSpec, user: t.Optional[User] = None, env: t.Optional[t.Dict[str, str]] = None,
        cwd: str = "/") -> Json:
    """Run ``job`` (a bwrap profile) with the payload as its command, as ``user`` (None: this process's) with
    ``env`` (None: this process's) in ``cwd``, bwrap under the probe's child subreaper (reaper.py). Returns a
    verdict dict: whether it passed is read from its findings alone (base/verdicts.probe_passed, its ``passed``
    that view): every failed check, a timeout, a failed setup, a tree that held more is one."""
    argv, timeout = list(job.argv), job.timeout
    sep = argv.index("--")
    beacon = proctree.Beacon(job.spec["token"])
    spec, go = with_release(dict(job.spec, beacon=beacon.name, keyctl=keyrings.plan(keyrings.own())), timeout)
    payload = payload_command(job.python, spec)
    full = argv[:sep] + ["--json-status-fd", "{status_fd}", "--"] + payload
    trust = job.trust if job.trust is not None else bwrap_trust.for_run(
        argv[0], accepted=job.accept_sha256, path_text=(env or os.environ).get("PATH"))
    host = witness.host_view()
    host["trusted_bwrap"] = trust.get("ids")
    host["covers"] = proc_covers.expected(*((user["uid"], user["gid"]) if user else (os.getuid(), os.getgid())))
    ledger = proctree.Ledger()
    ledger.server = beacon
    watcher = witness.Watcher(spec["token"], payload, go=go, ledger=ledger)
    try:
        watching = reaper.Watching(watch=watcher.direct, ledger=ledger, bwrap_ids=bwrap_trust.started_ids(trust),
                                   attach=watcher.attach)
        result = reaper.run_reaped(descriptor_launcher(full, job.python, spec), user=user, env=env, timeout=timeout,
                                   cwd=cwd, watching=watching)
    finally:
        peers = beacon.close()
    result["tree"]["beacon"] = peers
    _launcher, _status, obs = witness.split_stream(witness.records(result["stdout"]), spec["token"])
    result["json_status"] = witness.split_stream(witness.records(result.get("status_raw", "")), spec["token"])[1]
    shown = [a if a != "{status_fd}" else "FD" for a in full[:len(full) - 2]] + ["<payload>", "<spec>"]
    started = Started(shown=shown, spec=spec, host=host, user=user, timeout=timeout, run_opts=argv[1:sep],
                      trust=trust, payload=payload)
    return run_verdict(started, result, obs, watcher.outside)


def run_verdict(started: Started, result: Json, obs: t.Optional[Json], outside: t.Optional[Json]) -> Json:
    """The run judged from its ``result`` (the reaper's or the unit's), the payload's report (``obs``) and the
    outside's evidence: the checks of both witnesses (_judge_run), then the bwrap that ran (bwrap_trust) and
    everything its tree held (proctree.judge), each a finding of its own."""
    verdict = _judge_run(started, result, obs, outside)
    verdict["diagnostics"].extend(diagnostics.make(code, fill={"said": said, "traced": ""}, check="keyring_own")
                                  for code, said in keyrings.unit_findings(verdict["checks"]))
    more = bwrap_trust.diagnostics(started.trust) + _tree_findings(started, result, obs, outside or {})
    if started.trust is not None:
        verdict["bwrap_trust"] = bwrap_trust.view(started.trust)
    verdict["diagnostics"].extend(more)
    verdict["passed"] = verdicts.probe_passed(verdict) is True    # a view of the findings, set nowhere else
    return verdict


def _tree_findings(started: Started, result: Json, obs: t.Optional[Json],
                   outside: Json) -> t.List[diagnostics.Diagnostic]:
    """What the run's tree held that is neither what the probe started nor bwrap and its payload (proctree)."""
    tree = result.get("tree")
    ids = bwrap_trust.started_ids(started.trust)
    exe = (outside.get("parent") or {}).get("exe_id")
    if isinstance(exe, list) and len(exe) == 2:
        ids.add((int(exe[0]), int(exe[1])))
    said = (result.get("json_status") or {}).get("child-pid")    # bwrap's child, when the outside never read it
    pids = set(p for p in (result.get("pid"), outside.get("launcher"), outside.get("child_pid"),
                           outside.get("payload_pid"), ((tree or {}).get("reaper") or {}).get("pid"),
                           said if not outside else None) if isinstance(p, int) and not isinstance(p, bool))
    ref = evidence.reference(outside, started.host) if outside else Reference(started.host.get("ns") or {}, "", [])
    exp = proctree.Expected(pids, ids, proctree.marker(started.spec["token"]), list(started.payload or []),
                            (outside.get("payload") or {}).get("ns") or {}, obs is not None, ref.ns)
    return proctree.diagnostics(tree if isinstance(tree, dict) else None, exp)


def _judge_run(started: Started, result: Json, obs: t.Optional[Json], outside: t.Optional[Json]) -> Json:
    shown, spec, host, run_opts = started.shown, started.spec, started.host, started.run_opts
    tool = started.tool or shown[0]
    status = result.get("json_status") or {}
    verdict: Json = {"argv": shown, "rc": result["rc"], "timed_out": result["timed_out"],
                     "setup_failed": obs is None and "exit-code" not in status and not result["timed_out"],
                     "stderr": result["stderr"].strip()[-2000:], "duration": result["duration"], "checks": [],
                     "diagnostics": []}
    deviations = None
    if run_opts is not None and spec.get("argv_options") is not None:
        deviations = argv_deviations(spec["argv_options"], run_opts)
        if deviations:
            verdict["argv_deviations"] = deviations
    traced = "" if not deviations else " (the argv run is not the profile's: %s)" % "; ".join(
        "%s %s" % (k, ", ".join(deviations[k])) for k in ("added", "removed") if deviations[k])
    if outside:
        verdict["evidence"] = _evidence(outside, host, result)
    who = (started.user or {}).get("name", "current user")
    if result["timed_out"] and not _timed_out(verdict, obs, outside, started.timeout):
        return verdict
    if obs is None and verdict["setup_failed"] and result.get("unit_failure"):
        verdict["unit_failure"] = result["unit_failure"]       # systemd's failure or the unit's signal, not bwrap's
        verdict["diagnostics"].append(systemd_exit.diagnostic(result["unit_failure"], who))
        return verdict
    if obs is None:
        silent = {"who": who, "exit": status.get("exit-code", result["rc"]),
                  "stderr": verdict["stderr"][-300:] or "no output"}
        verdict["diagnostics"].append(_setup_failed(verdict, result, status, who, tool) if verdict["setup_failed"]
                                      else diagnostics.make("probe_payload_failed", wording="silent", fill=silent,
                                                            exit_code=status.get("exit-code")))
        return verdict
    verdict["observed_uid"] = obs.get("uid")
    verdict["checks"] = checks = evidence.evaluate(spec, obs, outside, host)
    verdict["diagnostics"].extend(_judge(checks, tool, who, traced))
    return verdict


def _evidence(outside: Json, host: Json, result: Json) -> Json:
    return {"bwrap_pid": outside.get("launcher"), "child_pid": outside.get("child_pid"),
            "payload_pid": outside.get("payload_pid"),
            "bwrap_exe": (outside.get("parent") or {}).get("exe"),
            "read_by": (outside.get("payload") or {}).get("read_by"),
            "left_behind": bool(result.get("left_behind")),
            "parent_context": (outside.get("context") or {}).get("from") or host.get("from")}


def _timed_out(verdict: Json, obs: t.Optional[Json], outside: t.Optional[Json], timeout: float) -> bool:
    """Report the timeout; whether the run is still judged: the payload reported and the outside read its
    evidence before the timer ran out (e.g. a look-alike that never exits after running it unsandboxed) -
    a timeout must not hide that evidence."""
    judged = obs is not None and bool(outside)
    verdict["diagnostics"].append(diagnostics.make("probe_timeout", wording="judged" if judged else "killed",
                                                   timeout=timeout))
    return judged


def _setup_failed(verdict: Json, result: Json, status: Json, who: str, tool: str) -> diagnostics.Diagnostic:
    cls = bwrap_errors.classify(result["stderr"], result["rc"])
    verdict["classification"] = cls
    text = cls["cause_text"] + (" (bwrap said: %s)" % cls["stderr_line"] if cls.get("stderr_line") else "")
    if not status and not cls.get("stderr_line") and result["rc"] == 0:
        text = ("%s exited with status 0 without running the payload and without writing any "
                "--json-status-fd record: it does not behave like bwrap" % tool)
    return diagnostics.make("probe_setup_failed", user=who, cause=cls["cause"], cause_text=text,
                            cause_remediation=cls["remediation"], variant="classified", points_at=cls.get("points_at"),
                            fill={"cause_hint": cls.get("hint") or ""})


def _judge(checks: t.List[Json], tool: str, who: str, traced: str) -> t.List[diagnostics.Diagnostic]:
    """The diagnostics of the failed checks. Not isolated: every namespace the profile unshares is shared,
    or the process that reported cannot be tied to bwrap's child *and* something else is wrong. A false
    child-pid alone is a failed check."""
    failed = [c for c in checks if not c["ok"]]
    ns_checks = [c for c in checks if c["name"].endswith("_namespace_private")]
    identity = [c for c in checks if c["name"] == "bwrap_child_is_payload"]
    # what the launcher executes is not a property of the sandbox: it never makes a false child-pid "not isolated"
    others = [c for c in failed if c["name"] not in ("bwrap_child_is_payload", "bwrap_exe_verified")]
    unisolated = bool(ns_checks and not any(c["ok"] for c in ns_checks)) or bool(
        identity and not identity[0]["ok"] and others)
    if unisolated:
        return [diagnostics.make("probe_not_isolated", user=who, wording="unisolated", fill={
            "tool": tool, "failed": "; ".join(_say(c) for c in failed), "traced": traced},
            checks=[c["name"] for c in failed])]
    out: t.List[diagnostics.Diagnostic] = []
    for check in failed:
        own = _own_codes(check)
        if own:
            out.extend(diagnostics.make(code, fill={"said": said, "traced": traced}, check=check["name"],
                                        check_rule=check["rule"]) for code, said in own)
        else:
            out.append(diagnostics.make("probe_check_failed", wording="failed", fill={"said": _say(check),
                                                                                      "traced": traced},
                                        check=check["name"], check_rule=check["rule"]))
    return out


# The checks whose failures are reported with a code of their own (base/codes_probe.py), not probe_check_failed.
_CODE_OF_CHECK = {"no_controlling_terminal": "probe_controlling_terminal",
                  "root_content_declared": "probe_root_undeclared"}


def _own_codes(check: Json) -> t.List[t.Tuple[str, str]]:
    """[(code, what it says)] of a failed check that has codes of its own: each kind of descriptor its own
    (evidence.DESCRIPTOR_CODES), the session and the root's content theirs; [] for the others."""
    observed = check["observed"] if isinstance(check["observed"], dict) else {}
    if check["name"] == "no_leaked_descriptors" and observed.get("kinds"):
        said: t.Dict[str, t.List[str]] = {}
        for kind, what in observed["kinds"]:
            said.setdefault(held.DESCRIPTOR_CODES.get(kind, "probe_descriptor_file"), []).append(what)
        return [(code, "; ".join("fd " + w for w in whats[:6])) for code, whats in sorted(said.items())]
    if check["name"] == "process_attributes" and observed.get("kinds"):
        by_code: t.Dict[str, t.List[str]] = {}
        for kind, what in observed["kinds"]:
            by_code.setdefault(attributes.ATTRIBUTE_CODES.get(kind, "probe_attribute_privileges"), []).append(what)
        return [(code, "; ".join(whats[:6])) for code, whats in sorted(by_code.items())]
    if check["name"] == "keyring_own" and observed.get("kinds"):
        found: t.Dict[str, t.List[str]] = {}
        for kind, what in observed["kinds"]:
            found.setdefault(keyrings.KEYRING_CODES.get(kind, "probe_keyring_shared"), []).append(what)
        return [(code, "; ".join(whats[:6])) for code, whats in sorted(found.items())]
    out: t.List[t.Tuple[str, str]] = []
    if check["name"] in _CODE_OF_CHECK and observed.get("problems"):
        out.append((_CODE_OF_CHECK[check["name"]], "; ".join(observed["problems"])))
    if check["name"] == "root_content_declared" and observed.get("swapped"):
        out.append(("probe_root_swapped", "on the sandbox's root, a declared file's content is not the profile's: "
                    "%s" % "; ".join(observed["swapped"])))
    return out


def _say(check: Json) -> str:
    observed = check["observed"]
    if isinstance(observed, dict) and observed.get("problems"):
        observed = "; ".join(observed["problems"])
    return "%s (%s): expected %s, observed %s" % (check["name"], check["rule"], check["expected"], observed)


# --------------------------------------------------------------------------- in the service's context

PROBE_MANIFEST = {"name": "sandbox_probe", "origin": "metnos-sandbox-ops", "revision": 1, "capabilities": []}


def systemd_run_argv(unit_name: str, user: User, settings: t.Optional[Json], env: t.Mapping[str, str],
                     timeout: float, own: t.Sequence[str] = ("/bin/sh",)) -> t.List[str]:
    """systemd-run around a command: a transient unit carrying the service's execution context.

    ``settings`` is a unit_context result (every directive of the unit minus its documented
    deny list, as ``assignments``) or {} for none. ``user`` applies only when the context names
    no User=/DynamicUser=; ``env`` adds --setenv values (none when the unit's own Environment=
    directives are carried). ``own``: the programs the unit runs in the service's place (the launcher),
    executable even where the unit restricts execution (unit_context.own_exec_paths).
    """
    argv = ["systemd-run", "--wait", "--pipe", "--collect", "--service-type=exec", "--unit=" + unit_name,
            "-p", "KillMode=mixed", "-p", "RuntimeMaxSec=%d" % max(1, int(timeout))]
    assignments = (settings or {}).get("assignments") or []
    keys = set(a[0] for a in assignments)
    if not keys & {"User", "DynamicUser"}:
        if user.get("dynamic"):
            argv += ["-p", "DynamicUser=yes"]
        elif user.get("name") not in (None, "root"):
            argv += ["-p", "User=%s" % user["name"]]
    argv += unit_context.property_args(assignments) + unit_context.own_exec_paths(assignments, own)
    for key in sorted(env):
        argv += ["--setenv=%s=%s" % (key, env[key])]
    return argv


_SYSTEMD_RUN_LINES = ("Running as unit", "Finished with result:", "Main processes terminated with:",
                      "Service runtime:", "CPU time consumed:", "Memory peak:", "Press ^]")


def _strip_systemd_run(stderr: str) -> SystemdReport:
    """Separate systemd-run's own report lines from the command's stderr."""
    keep: t.List[str] = []
    info: t.Dict[str, str] = {}
    for line in stderr.splitlines():
        if line.startswith(_SYSTEMD_RUN_LINES):
            if line.startswith("Finished with result:"):
                info["result"] = line.split(":", 1)[1].strip()
            if line.startswith("Main processes terminated with:"):
                info["main"] = line.split(":", 1)[1].strip()
            continue
        keep.append(line)
    return SystemdReport("\n".join(keep), info)


# The transient unit's command: say who will be bwrap (the shell's pid is bwrap's after exec), wait for
# one line on stdin (the probe reads the unit's namespaces and mounts - bwrap's parent context - from
# outside meanwhile: nothing bwrap does afterwards can move that reference), then exec bwrap with its
# status fd on the unit's stdout (systemd-run --pipe hands us that stdout). sh's read takes one byte at
# a time from a pipe, so the rest of stdin stays for the payload's handshake.
# systemd expands "$$" in a command line to "$", hence "$$$$" for the shell's "$$".
STOP_TIMEOUT = 3
LAUNCHER = 'printf \'{"launcher-pid": %s}\\n\' "$$$$"; read -r metnos_go; exec "$@" 3>&1'


def run_systemd(job: RunSpec, user: User, settings: t.Optional[Json], env: t.Mapping[str, str],
                runner_unit: str) -> Json:
    """Like run(), inside the transient systemd unit ``runner_unit`` carrying ``settings`` (the service's
    execution context: unit_context) and ``env``. The status fd is redirected to stdout, the handshake goes
    through the unit's stdin (systemd-run --pipe passes our pipes to the unit); the tree is the unit's cgroup
    (reaper.UnitRun)."""
    argv, python, timeout = list(job.argv), job.python, job.timeout
    sep = argv.index("--")
    beacon = proctree.Beacon(job.spec["token"])
    assignments = (settings or {}).get("assignments") or []
    keyctl = keyrings.plan(keyrings.own(), assignments)
    # the securebits the unit's process starts with (its SecureBits=): /proc does not show them
    spec, go = with_release(dict(job.spec, beacon=beacon.name, keyctl=keyctl,
                                 unit_securebits=attributes.unit_securebits(assignments)), timeout)
    trust = job.trust if job.trust is not None else bwrap_trust.for_run(
        argv[0], accepted=job.accept_sha256, path_text=env.get("PATH") or "/usr/bin:/bin")
    payload = payload_command(python, spec)
    inner = argv[:sep] + ["--json-status-fd", "3", "--"] + payload
    # A bounded stop: under cgroup v1 (containers) systemd can miss that a unit whose processes used a
    # PID namespace is empty and sit in "deactivating" for the default 90 s after bwrap has exited.
    full = systemd_run_argv(runner_unit, user, settings, env, timeout) + ["-p", "TimeoutStopSec=%d" % STOP_TIMEOUT] + \
        ["/bin/sh", "-c", LAUNCHER, "sh"] + descriptor_launcher(inner, python, spec)
    host = witness.host_view()
    host["trusted_bwrap"] = trust.get("ids")
    ledger = proctree.Ledger()
    ledger.server = beacon
    start = time.time()
    try:
        # run_command cannot feed the payload's stdin handshake while it reads the output.
        proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
            full, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=dict(os.environ, SYSTEMD_COLORS="0", LC_ALL="C"), start_new_session=True)
    except OSError as exc:
        beacon.close()
        result = {"rc": 127, "stderr": "systemd-run: %s" % exc.strerror, "json_status": {}, "timed_out": False,
                  "duration": 0.0, "tree": ledger.report()}
        return run_verdict(Started(shown=full[:len(full) - 1] + ["<spec>"], spec=spec, host=host, user=user,
                                   timeout=timeout, trust=trust, payload=payload), result, None, None)
    watcher = witness.Watcher(spec["token"], payload, stdin=proc.stdin, unit=runner_unit + ".service", go=go,
                              ledger=ledger)
    watcher.collectors = [os.getpid(), proc.pid, 1]      # systemd-run --pipe hands the probe's pipes to systemd
    started = reaper.UnitRun(proc, ledger, bwrap_trust.started_ids(trust), runner_unit + ".service",
                             lambda: watcher.launcher)
    report: Json = {}
    if proc.stdout is None or proc.stderr is None:
        raise AssertionError("systemd-run was started without its output pipes")
    try:
        data, timed_out = bwrap_run.pump(proc, {"stdout": proc.stdout.fileno(), "stderr": proc.stderr.fileno()},
                                         timeout + 15, watcher.systemd, report, started=started)
    finally:
        proc.stdout.close()
        proc.stderr.close()
        ledger.beacon = beacon.close()
    rc = proc.returncode
    if timed_out or report.get("left_behind"):
        subprocess.run(["systemctl", "kill", "--signal=SIGKILL", runner_unit],  # pylint: disable=ansible-bad-function
                       capture_output=True, check=False)
        subprocess.run(["systemctl", "stop", runner_unit], capture_output=True,  # pylint: disable=ansible-bad-function
                       check=False)
    if timed_out:
        rc = None
    subprocess.run(["systemctl", "reset-failed", runner_unit], capture_output=True,  # pylint: disable=ansible-bad-function
                   check=False)
    stderr, info = _strip_systemd_run(data["stderr"].decode("utf-8", "replace"))
    launcher, status, obs = witness.split_stream(witness.records(data["stdout"]), spec["token"])
    main = info.get("main", "")
    timed_out = timed_out or runtime_exceeded(info, status)
    if systemd_exit.signal_number(main) == systemd_exit.SIGSYS:
        rc = 128 + systemd_exit.SIGSYS
    result = {"rc": rc, "stderr": stderr, "json_status": status, "timed_out": timed_out,
              "left_behind": bool(report.get("left_behind")), "duration": round(time.time() - start, 3),
              "systemd_result": info, "tree": _unit_tree(ledger, watcher.launcher, info, status),
              "pid": watcher.launcher, "unit_failure": systemd_exit.unit_failure(main, launcher is not None,
                                                                                 runner_unit)}
    judged = Started(shown=full[:len(full) - 1] + ["<spec>"], spec=spec, host=host, user=user, timeout=timeout,
                     tool=argv[0], run_opts=argv[1:sep], trust=trust, payload=payload)
    verdict = run_verdict(judged, result, obs, watcher.outside)
    verdict["systemd_result"] = info
    return verdict


def _unit_tree(ledger: proctree.Ledger, launcher: t.Optional[int], info: t.Mapping[str, str], status: Json) -> Json:
    """The unit's tree as evidence: the ledger, not proven when the unit's cgroup was never found; systemd's own
    report is kept but not judged (a stop that timed out after bwrap's exit-code can be leftovers, or, under
    cgroup v1 after a PID namespace, systemd missing that the unit is empty: the cgroup itself was read)."""
    tree = ledger.report()
    if ledger.cgroup is None and launcher is not None:
        tree["unreadable"] = True
    tree["systemd_stop_timed_out"] = info.get("result") == "timeout" and "exit-code" in status
    return tree


def runtime_exceeded(info: t.Mapping[str, str], status: Json) -> bool:
    """Whether systemd-run's report means RuntimeMaxSec= was hit: result "timeout" with the main process
    killed (by systemd) before bwrap's exit-code. The same result after the exit-code, or after a main
    process that exited on its own, is only the stop timing out on processes left in the unit (a look-alike's
    leftovers; under cgroup v1 systemd may also miss that the emptied unit is empty until the stop timeout)."""
    return (info.get("result") == "timeout" and "exit-code" not in status
            and not info.get("main", "").startswith("code=exited"))


def bwrap_binary_findings(bwrap_path: t.Optional[str], runner: t.Any = bwrap.default_runner,
                          trust: t.Optional[Json] = None) -> t.List[diagnostics.Diagnostic]:
    """The bwrap the probe runs, judged as a binary: not root-owned or writable by others, setuid. Always
    reported, with or without a unit (the service-environment checks only exist when there is one). Whether
    it is the packaged one is the probe's own finding (bwrap_trust: probe_bwrap_*), not bwrap_facts' warning."""
    if not bwrap_path or not os.path.isabs(bwrap_path):
        return []
    try:
        package = ((trust or {}).get("bwrap")
                   or {}).get("package") if trust else package_owner.package_facts(bwrap_path,
                                                                                   runner=runner)
        info = dict(bwrap.file_facts(bwrap_path), package=package or {})
    except OSError:
        return []
    # Same messages as bwrap_facts, so that the audit (which reports both) shows each finding once.
    return [d for d in facts.binary_diagnostics(info) if d["code"] not in ("bwrap_not_packaged",
                                                                           "bwrap_package_modified")]
