# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Human-readable summary lines from the results of the toolkit's modules."""
from __future__ import absolute_import, annotations, division, print_function

from typing import Any, Dict, Iterable, List, Mapping, Optional

from ..audit import profile_states
from ..base import diagnostics, verdicts
from ..base.diagnostics import Diagnostic
from .command_kind import kind

Section = Dict[str, Any]   # {"name", "verdict", "detail", "diagnostics"}

_MARK = {"pass": "OK  ", "warn": "WARN", "fail": "FAIL", "skip": "SKIP"}


def _diag_lines(diags: Iterable[Diagnostic], indent: str = "    ") -> List[str]:
    lines = []
    for diag in diagnostics.sort(diags):
        lines.append("%s[%s] %s (%s): %s" % (indent, diag["severity"], diag["code"], diag["rule"],
                                             diag["message"]))
        if diag.get("hint"):
            lines.append("%s    hint: %s" % (indent, diag["hint"]))
        for step in diag.get("remediation") or []:
            lines.append("%s    %s: %s" % (indent, kind(step), step))
    return lines


def status_line(facts: Optional[Mapping[str, Any]], sections: List[Mapping[str, Any]]) -> Optional[str]:
    """The one runtime status() view of the summary, labelled with whose it is: the service's (a section that
    evaluated the service's unit carries it), else the admin's shell's (bwrap_facts: no service unit)."""
    for section in sections:
        if section.get("status"):
            status, source = section["status"], str(section.get("status_view") or "the service's configuration")
            break
    else:
        status = (facts or {}).get("status")
        source = "runtime status() as the admin's shell sees it, no service unit"
    if not status:
        return None
    return "%s (a view, not a proof): active=%s bwrap_available=%s bwrap_path=%s disabled_via_env=%s" % (
        source, status.get("active"), status.get("bwrap_available"), status.get("bwrap_path"),
        status.get("disabled_via_env"))


def host_summary(facts: Optional[Mapping[str, Any]] = None,
                 sections: Optional[Iterable[Mapping[str, Any]]] = None) -> List[str]:
    """Lines for one host.

    ``facts`` is a bwrap_facts result; ``sections`` is a list of
    ``{"name", "verdict", "detail", "diagnostics"}`` from later stages
    (service environment, profiles, probe).
    """
    lines = []
    sections = list(sections or [])
    status = status_line(facts, sections)
    if status:
        lines.append(status)
    if facts:
        bw = facts.get("bwrap") or {}
        pkg = bw.get("package") or {}
        if bw:
            lines.append("bwrap: %s (package %s %s, mode %s%s)" % (
                bw.get("version") or "?", pkg.get("name", "none"), pkg.get("revision") or "",
                bw.get("mode"), ", setuid" if bw.get("setuid") else ""))
        us = facts.get("userns") or {}
        smoke = us.get("smoke_test") or {}
        lines.append("kernel: max_user_namespaces=%s unprivileged_userns_clone=%s apparmor_restrict=%s "
                     "selinux=%s container=%s" % (
                         us.get("max_user_namespaces"), _na(us.get("unprivileged_userns_clone")),
                         _na(us.get("apparmor_restrict_unprivileged_userns")), us.get("selinux"),
                         us.get("container") or "no"))
        if smoke.get("ran"):
            lines.append("smoke test as %s: %s" % (
                smoke.get("user"), "passed" if smoke.get("passed") else "FAILED (%s)" % (
                    (smoke.get("classification") or {}).get("cause", "?"))))
        else:
            lines.append("smoke test: not run (%s)" % smoke.get("reason", "?"))
        lines.append("%s bwrap_facts" % _MARK.get(str(facts.get("verdict")), "?"))
        lines.extend(_diag_lines(facts.get("diagnostics") or []))
    for section in sections:
        if not section:
            continue
        head = "%s %s" % (_MARK.get(str(section.get("verdict")), "?   "), section.get("name"))
        if section.get("detail"):
            head += ": %s" % section["detail"]
        lines.append(head)
        lines.extend(_diag_lines(section.get("diagnostics") or []))
    if facts or sections:
        lines.append("verdict: %s" % host_verdict(facts, sections).upper())
    return lines


def host_verdict(facts: Optional[Mapping[str, Any]] = None,
                 sections: Optional[Iterable[Mapping[str, Any]]] = None) -> str:
    """The host's verdict over every finding the summary shows, by the one function (base/verdicts.py): a probe
    that ran and failed has an error finding saying so."""
    findings: List[Mapping[str, Any]] = list((facts or {}).get("diagnostics") or [])
    for section in sections or []:
        findings.extend(section.get("diagnostics") or [])
    return verdicts.of(findings)


def _na(value: Any) -> Any:
    return "n/a" if value is None else value


def profiles_section(loop_results: Optional[Iterable[Mapping[str, Any]]],
                     plan: Optional[Mapping[str, Any]] = None) -> Section:
    """A summary section from the registered results of a sandbox_profile loop: each manifest's state is a finding
    (profile_states: profile_in_sync, profile_refused, as the audit says them), its verdict the one function's.
    ``plan``: the role's metnos_manifest_names (profile_states.shared_names): each name it wrote for no manifest
    (two manifests of it) is profile_name_duplicate saying nothing was written."""
    results = [res for res in loop_results or [] if not res.get("skipped")]
    entries = profile_states.role_entries(results) + profile_states.withheld_entries(plan)
    refused = [profile_states.entry_label(e) for e in entries if e["state"] == "refused"]
    direct = sum(1 for res in results if res.get("decision") == "direct")
    wrapped = sum(1 for res in results if res.get("decision") == "wrapped")
    diags: List[Diagnostic] = []
    skipped = 0
    for res in results:
        if res.get("decision") == "refused":
            continue       # its refusal is the profile_refused finding below (the first error, its own code)
        for diag in res.get("diagnostics") or []:
            if diag.get("severity") == diagnostics.INFO:
                skipped += 1
            else:
                diags.append(diag)
    diags = diagnostics.sort(diags + profile_states.findings(e for e in entries if e["state"] != "in_sync"))
    detail = "%d wrapped, %d direct (pinned undo), %d refused" % (wrapped, direct, len(refused))
    if refused:
        detail += " [%s]" % ", ".join(refused)
    if skipped:
        detail += "; %d grants not mounted (paths absent on this host)" % skipped
    return verdicts.decide({"name": "profiles", "detail": detail, "diagnostics": diags})


def service_section(res: Optional[Mapping[str, Any]]) -> Section:
    """A summary section from a metnos_service_env result."""
    if not res or res.get("skipped"):
        return {"name": "service environment", "verdict": "skip", "detail": "not checked", "diagnostics": []}
    env = res.get("environment") or {}
    prov = res.get("provenance") or {}
    if env:
        detail = "%s (%s mode): METNOS_SANDBOX=%r [%s], PATH=%s [%s], user %s" % (
            res.get("unit"), res.get("mode"), env.get("METNOS_SANDBOX"), prov.get("METNOS_SANDBOX"),
            env.get("PATH"), prov.get("PATH"), (res.get("user") or {}).get("name"))
    else:
        detail = "%s: %s" % (res.get("unit"), ", ".join(d["code"] for d in res.get("diagnostics") or []))
    if res.get("changed"):
        detail += "; drop-in %s written" % ((res.get("dropin") or {}).get("path"))
    for key, label in (("healed", "healed"), ("relaxed", "relaxed"), ("not_healed", "NOT healed"),
                       ("not_relaxed", "NOT relaxed")):
        if res.get(key):
            detail += "; %s: %d" % (label, len(res[key]))
    out: Section = {"name": "service environment", "verdict": res.get("verdict", "warn"), "detail": detail,
                    "diagnostics": res.get("diagnostics") or []}
    if res.get("status") and res.get("status_view"):     # the service's own view (its unit was evaluated)
        out.update(status=res["status"], status_view=res["status_view"])
    return out


def enforce_lines(res: Optional[Mapping[str, Any]]) -> List[str]:
    """One line per thing enforce healed, relaxed, or could not (the play output lists each)."""
    lines = []
    for item in (res or {}).get("healed") or []:
        lines.append("healed %s (from %s): %s" % (item.get("what"), item.get("source"), item.get("action")))
    for item in (res or {}).get("relaxed") or []:
        lines.append("relaxed %s for bwrap (%s): wrote %s" % (item.get("directive"), item.get("code"),
                                                              item.get("line")))
    for item in (res or {}).get("not_healed") or []:
        lines.append("NOT healed %s (%s): %s" % (item.get("what"), item.get("source") or "-", item.get("reason")))
    for item in (res or {}).get("not_relaxed") or []:
        lines.append("NOT relaxed %s (%s): %s%s" % (item.get("directive"), item.get("code"), item.get("reason"),
                                                    "; the minimum would be %s" % item["line"]
                                                    if item.get("line") else ""))
    return lines or ["nothing to heal"]


def probe_section(res: Optional[Mapping[str, Any]]) -> Section:
    """A summary section from a sandbox_probe result."""
    if not res or res.get("skipped"):
        return {"name": "probe", "verdict": "skip", "detail": "not run", "diagnostics": []}
    checks = res.get("checks") or []
    failed = [c["name"] for c in checks if not c.get("ok")]
    detail = "proven verdict: %s; %s; %d/%d checks held" % (
        "PASSED" if verdicts.probe_passed(res) else "FAILED", res.get("context"), len(checks) - len(failed),
        len(checks))
    if failed:
        detail += "; failed: %s" % ", ".join(failed)
    if res.get("confidence") == "reduced":
        detail += "; confidence reduced: %s" % "; ".join((res.get("unit_context") or {}).get("reasons") or
                                                         ["the service's restrictions were not applied"])
    diags = [d for d in res.get("diagnostics") or [] if d.get("severity") != diagnostics.INFO]
    return verdicts.decide({"name": "probe (real wrapped invocation)", "detail": detail, "diagnostics": diags})


def monitor_section(state: Optional[Mapping[str, Any]]) -> Section:
    """The monitor's state in the summary: {enabled, systemd_running, timer} from the role (tasks/monitor.yml);
    none when it is off. Enabled on a host whose init is not systemd: monitor_systemd_not_running (the timer can
    never run)."""
    if not state or not state.get("enabled"):
        return {}       # off: no line (host_summary leaves an empty section out)
    timer = str(state.get("timer") or "metnos-sandbox-monitor.timer")
    if state.get("systemd_running"):
        return {"name": "monitor", "verdict": "pass", "detail": "%s enabled (the continuous proof)" % timer,
                "diagnostics": []}
    diags = [diagnostics.make("monitor_systemd_not_running", timer=timer)]
    return verdicts.decide({"name": "monitor", "detail": "%s written, NOT running: systemd is not the init of this "
                            "host" % timer, "diagnostics": diags})
