# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet results -> JSON (versioned schema), Markdown, JUnit XML, self-contained HTML.

Input: {host: metnos_audit result | an unreachable/failed task result}. Pure Python, no
Ansible imports; run on the controller (action_plugins/metnos_audit_report.py) or by
scripts/merge-audit-reports.py to merge per-host JSON produced elsewhere (ansible-pull, AWX).
"""
from __future__ import absolute_import, annotations, division, print_function

import datetime
import html
import json
import os
import re
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

from . import diagnostics as D

SCHEMA = "metnos-sandbox-audit-report/1"
VERDICTS = ("pass", "warn", "fail", "unreachable")
CHECKS = ("sandbox_active", "bwrap_binary", "kernel_userns", "smoke_test", "service_environment", "profiles",
          "probe")

_CHECK_OF = [
    (("executor_os_sandbox_unavailable", "sandbox_disabled_via_env", "sandbox_env_value_ambiguous",
      "bwrap_missing"), "sandbox_active"),
    (("bwrap_setuid", "bwrap_not_root_owned", "bwrap_not_packaged", "bwrap_feature_missing",
      "bwrap_package_drift"), "bwrap_binary"),
    (("userns_", "selinux_", "running_in_container"), "kernel_userns"),
    (("bwrap_smoke_", "smoke_ran_as_root"), "smoke_test"),
    (("unit_", "service_", "environment_file_missing", "sandbox_env_rejected_by_systemd"), "service_environment"),
    (("profile_drift",), "profiles"),
    (("probe_",), "probe"),
    (("host_unreachable", "host_no_python"), "reachability"),
]


def check_of(code):
    for prefixes, check in _CHECK_OF:
        if any(code == p or (p.endswith("_") and code.startswith(p)) for p in prefixes):
            return check
    return "sandbox_active"


def _not_audited(name, res):
    """(diagnostic, verdict) for a host the audit could not run on: reached without Python has its own
    code (and verdict fail: the host answered), anything else is host_unreachable."""
    msg = (res or {}).get("msg") if isinstance(res, dict) else None
    if isinstance(res, dict) and res.get("code") == "host_no_python":
        return D.make("host_no_python", host=name, message="%s: %s" % (name, msg)), "fail"
    why = "unreachable" if isinstance(res, dict) and res.get("unreachable") else "audit failed"
    return D.make("host_unreachable", host=name, message="%s: %s%s" % (name, why, ": %s" % msg if msg else "")), \
        "unreachable"


def status_view(svc, facts):
    """Whose view the reported status() quartet is: it is the runtime's view, never the probe's proof."""
    if svc and svc.get("status"):
        return svc.get("status_view") or "runtime status() as seen by the service's configuration"
    if facts and facts.get("status"):
        return "runtime status() in the admin's environment (no service unit)"
    return None


def _host_entry(name, res):
    """Normalise one task result into the report's host record."""
    if not isinstance(res, dict) or res.get("unreachable") or res.get("failed") or "schema" not in res:
        diag, verdict = _not_audited(name, res)
        return {"host": name, "reachable": False, "verdict": verdict, "status": None, "bwrap": None,
                "userns": None, "service": None, "profiles": [], "probe": None, "diagnostics": [diag]}
    facts = res.get("bwrap_facts") or {}
    bw = facts.get("bwrap") or {}
    us = dict(facts.get("userns") or {})
    smoke = us.pop("smoke_test", None) or {}
    svc = res.get("service") or None
    probe = res.get("probe") or None
    return {
        "host": name, "reachable": True, "verdict": res.get("verdict", "fail"),
        "hostname": res.get("hostname"), "duration": res.get("duration"),
        "status": (svc or {}).get("status") or facts.get("status"),
        "status_view": status_view(svc, facts),
        "admin_status": facts.get("status"),
        "bwrap": {"path": bw.get("path"), "version": bw.get("version"),
                  "package": (bw.get("package") or {}).get("name"),
                  "revision": (bw.get("package") or {}).get("revision"), "mode": bw.get("mode"),
                  "setuid": bw.get("setuid"), "missing_features": bw.get("missing_features")} if bw else None,
        "userns": dict((k, us.get(k)) for k in ("max_user_namespaces", "unprivileged_userns_clone",
                                                "apparmor_restrict_unprivileged_userns", "selinux", "container")),
        "smoke_test": {"ran": smoke.get("ran"), "passed": smoke.get("passed"), "user": smoke.get("user"),
                       "cause": (smoke.get("classification") or {}).get("cause")},
        "service": {"unit": svc.get("unit"), "mode": svc.get("mode"), "verdict": svc.get("verdict"),
                    "user": (svc.get("user") or {}).get("name"), "environment": svc.get("environment"),
                    "provenance": svc.get("provenance")} if svc else None,
        "profiles": res.get("profiles") or [],
        "probe": {"passed": probe.get("passed"), "context": probe.get("context"),
                  "confidence": probe.get("confidence"), "view": "probe: proven by a real wrapped invocation",
                  "checks": probe.get("checks") or []} if probe else None,
        "diagnostics": res.get("diagnostics") or [],
    }


def build(results, generated=None, warnings_as_failures=False):
    """The report document (the JSON schema's instance) from {host: task result}."""
    return build_from_hosts([_host_entry(name, results[name]) for name in sorted(results)], generated,
                            warnings_as_failures)


def build_from_hosts(hosts, generated=None, warnings_as_failures=False):
    """The report document from normalised host records (also used to merge reports)."""
    generated = generated or datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    hosts = sorted(hosts, key=lambda h: h["host"])
    for h in hosts:   # drop a previous run's fleet-relative finding before recomputing it
        h["diagnostics"] = [d for d in h["diagnostics"] if d["code"] != "bwrap_package_drift"]
    revisions = {}
    for h in hosts:
        rev = (h.get("bwrap") or {}).get("revision")
        if rev:
            revisions[rev] = revisions.get(rev, 0) + 1
    majority = max(sorted(revisions), key=lambda r: revisions[r]) if revisions else None
    if majority and len(revisions) > 1:
        for h in hosts:
            rev = (h.get("bwrap") or {}).get("revision")
            if rev and rev != majority:
                h["diagnostics"] = D.sort(h["diagnostics"] + [D.make(
                    "bwrap_package_drift", majority=majority,
                    message="%s runs bubblewrap %s; most of the fleet (%d of %d hosts) runs %s." % (
                        h["host"], rev, revisions[majority], sum(revisions.values()), majority))])
                if h["verdict"] == "pass":
                    h["verdict"] = "warn"
    totals = dict((v, 0) for v in VERDICTS)
    codes = {}
    for h in hosts:
        totals[h["verdict"]] = totals.get(h["verdict"], 0) + 1
        for code in sorted(set(d["code"] for d in h["diagnostics"])):
            codes[code] = codes.get(code, 0) + 1
    failing = totals["fail"] + totals["unreachable"] + (totals["warn"] if warnings_as_failures else 0)
    return {
        "schema": SCHEMA,
        "generated": generated.isoformat(),
        "totals": dict(totals, hosts=len(hosts), codes=dict(sorted(codes.items()))),
        "fleet": {"bwrap_revisions": revisions, "bwrap_revision_majority": majority},
        "gate": {"warnings_as_failures": bool(warnings_as_failures), "failed": failing > 0, "failing_hosts": failing},
        "hosts": hosts,
    }


# --------------------------------------------------------------------------- renderers

def to_json(doc):
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(doc):
    t = doc["totals"]
    lines = ["# Metnos sandbox audit", "", "Generated %s. %d hosts: **%d pass**, %d warn, **%d fail**, %d unreachable."
             % (doc["generated"], t["hosts"], t["pass"], t["warn"], t["fail"], t["unreachable"]), "",
             "`status() view` is the runtime's own view of the service's environment (not a proof); "
             "`probe (proven)` is the verdict of a real wrapped invocation.", "",
             "| host | verdict | status() view: active | bwrap | service | probe (proven) | codes |",
             "|---|---|---|---|---|---|---|"]
    for h in doc["hosts"]:
        st = h.get("status") or {}
        bw = h.get("bwrap") or {}
        svc = h.get("service") or {}
        probe = h.get("probe") or {}
        codes = sorted(set(d["code"] for d in h["diagnostics"] if d["severity"] != "info"))
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            _md(h["host"]), h["verdict"].upper(), st.get("active", "-"),
            _md("%s (%s)" % (bw.get("version"), bw.get("revision"))) if bw else "-",
            _md("%s: %s" % (svc.get("unit"), svc.get("verdict"))) if svc else "-",
            ("passed" if probe.get("passed") else "FAILED") if probe else "-", _md(", ".join(codes)) or "-"))
    by_code = _hosts_by_code(doc)
    if by_code:
        lines += ["", "## Hosts by diagnostic", ""]
        for code, (diag, hosts) in sorted(by_code.items()):
            lines += ["### `%s` (%s, %s) — %d host(s)" % (code, diag["severity"], diag["rule"], len(hosts)), "",
                      "Hosts: %s" % ", ".join(hosts), "", diag["message"], ""]
            if diag.get("remediation"):
                lines += ["```sh"] + list(diag["remediation"]) + ["```", ""]
    return "\n".join(lines) + "\n"


def _hosts_by_code(doc, include_info=False):
    out = {}
    for h in doc["hosts"]:
        for d in h["diagnostics"]:
            if d["severity"] == "info" and not include_info:
                continue
            entry = out.setdefault(d["code"], (d, []))
            if h["host"] not in entry[1]:
                entry[1].append(h["host"])
    return out


def to_junit(doc):
    cases = []
    failures = 0
    for h in doc["hosts"]:
        by_check = dict((c, []) for c in CHECKS)
        for d in h["diagnostics"]:
            by_check.setdefault(check_of(d["code"]), []).append(d)
        checks = list(CHECKS) if h["reachable"] else ["reachability"]
        for check in checks:
            bad = [d for d in by_check.get(check, []) if d["severity"] == "error" or
                   (d["severity"] == "warning" and doc["gate"]["warnings_as_failures"])]
            body = ""
            if check == "probe" and h.get("probe"):
                failed = [c for c in h["probe"]["checks"] if not c["ok"]]
                if failed and not bad:
                    bad = [{"code": "probe_check_failed", "message": ", ".join(c["name"] for c in failed),
                            "remediation": []}]
            if bad:
                failures += 1
                text = "\n".join("%s: %s\n  fix: %s" % (d["code"], d["message"],
                                                          "\n  fix: ".join(d.get("remediation") or []))
                                 for d in bad)
                body = '<failure message=%s type=%s>%s</failure>' % (
                    quoteattr(", ".join(d["code"] for d in bad)), quoteattr(bad[0]["code"]), xml_escape(text))
            cls = "metnos.%s" % re.sub(r"[^A-Za-z0-9_.-]", "_", h["host"])
            cases.append('    <testcase classname=%s name=%s>%s</testcase>' % (quoteattr(cls), quoteattr(check), body))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n  <testsuite name="metnos-sandbox-audit" '
            'tests="%d" failures="%d" errors="0" timestamp=%s>\n%s\n  </testsuite>\n</testsuites>\n'
            % (len(cases), failures, quoteattr(doc["generated"]), "\n".join(cases)))


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:16px 24px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;color:#b8c0cc}main{padding:16px 24px}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin-bottom:16px}
.card{background:#fff;border-radius:8px;padding:12px 16px;min-width:110px;box-shadow:0 1px 2px #0002}
.card b{display:block;font-size:26px}.pass b{color:#19804a}.warn b{color:#a86b00}.fail b{color:#c62828}
.unreachable b{color:#6d4aa8}
input#q{padding:8px 10px;width:320px;border:1px solid #c7ccd4;border-radius:6px}
select{padding:7px;border:1px solid #c7ccd4;border-radius:6px}
table{border-collapse:collapse;width:100%;background:#fff;margin-top:10px;box-shadow:0 1px 2px #0002}
th,td{text-align:left;padding:7px 10px;border-bottom:1px solid #e6e8ec;vertical-align:top}
th{cursor:pointer;background:#eef0f3;user-select:none}th:after{content:" \\2195";color:#99a}
.v{font-weight:600;border-radius:10px;padding:1px 8px;font-size:12px}
.v.pass{background:#e3f4ea;color:#19804a}.v.warn{background:#fff2d6;color:#8a5800}
.v.fail{background:#fde4e4;color:#b71c1c}.v.unreachable{background:#eee6f8;color:#5b3a96}
code{background:#eef0f3;padding:1px 4px;border-radius:4px}
details{background:#fff;margin:8px 0;padding:8px 12px;border-radius:8px;box-shadow:0 1px 2px #0002}
summary{cursor:pointer;font-weight:600}pre{background:#1d2330;color:#e8ecf1;padding:10px;border-radius:6px;
overflow:auto;position:relative}button.cp{position:absolute;right:6px;top:6px;font-size:11px}
.sev-error{color:#b71c1c}.sev-warning{color:#8a5800}.sev-info{color:#557}
"""

_JS = """
const q = document.getElementById('q'), f = document.getElementById('f');
const rows = [...document.querySelectorAll('#hosts tbody tr')];
function apply() {
  const t = q.value.toLowerCase(), v = f.value; let n = 0;
  rows.forEach(r => {
    const ok = (!t || r.textContent.toLowerCase().includes(t)) && (!v || r.dataset.verdict === v);
    r.style.display = ok ? '' : 'none'; if (ok) n++;
  });
  document.getElementById('shown').textContent = n;
}
q.addEventListener('input', apply); f.addEventListener('change', apply);
document.querySelectorAll('#hosts th').forEach((th, i) => th.addEventListener('click', () => {
  const tb = th.closest('table').tBodies[0];
  const dir = th.dataset.dir = th.dataset.dir === 'asc' ? 'desc' : 'asc';
  [...tb.rows].sort((a, b) => {
    const x = a.cells[i].dataset.k || a.cells[i].textContent, y = b.cells[i].dataset.k || b.cells[i].textContent;
    return (dir === 'asc' ? 1 : -1) * x.localeCompare(y, undefined, {numeric: true});
  }).forEach(r => tb.appendChild(r));
}));
document.querySelectorAll('button.cp').forEach(b => b.addEventListener('click', () => {
  if (navigator.clipboard) navigator.clipboard.writeText(b.parentElement.querySelector('code').textContent);
  b.textContent = 'copied';
}));
apply();
"""

_RANK = {"fail": "0", "unreachable": "1", "warn": "2", "pass": "3"}


def _e(text):
    return html.escape("" if text is None else str(text))


def _remediation_html(steps):
    if not steps:
        return ""
    return '<pre><button class="cp" type="button">copy</button><code>%s</code></pre>' % _e("\n".join(steps))


def to_html(doc):
    t = doc["totals"]
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Metnos sandbox audit</title>'
           '<meta name="viewport" content="width=device-width, initial-scale=1"><style>%s</style></head><body>' % _CSS,
           '<header><h1>Metnos sandbox audit</h1><p>Generated %s &middot; schema %s</p></header><main>'
           % (_e(doc["generated"]), _e(doc["schema"])), '<div class="cards">']
    out.append('<div class="card"><b>%d</b>hosts</div>' % t["hosts"])
    for v in VERDICTS:
        out.append('<div class="card %s"><b>%d</b>%s</div>' % (v, t[v], v))
    out.append('</div><div><input id="q" placeholder="Filter hosts, codes, versions..." aria-label="filter"> '
               '<select id="f" aria-label="verdict"><option value="">all verdicts</option>%s</select> '
               '<span><span id="shown">%d</span> shown</span></div>'
               % ("".join('<option value="%s">%s</option>' % (v, v) for v in VERDICTS), t["hosts"]))
    out.append('<table id="hosts"><thead><tr><th>host</th><th>verdict</th><th title="the runtime\'s status() view, '
               'not a proof">status() view: active</th><th>bwrap</th><th>service</th><th title="a real wrapped '
               'invocation">probe (proven)</th><th>diagnostics</th></tr></thead><tbody>')
    for h in doc["hosts"]:
        st = h.get("status") or {}
        bw = h.get("bwrap") or {}
        svc = h.get("service") or {}
        probe = h.get("probe")
        codes = sorted(set(d["code"] for d in h["diagnostics"] if d["severity"] != "info"))
        out.append('<tr data-verdict="%s"><td><a href="#h-%s">%s</a></td><td data-k="%s"><span class="v %s">%s</span>'
                   '</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>' % (
                       _e(h["verdict"]), _e(h["host"]), _e(h["host"]), _RANK.get(h["verdict"], "9"), _e(h["verdict"]),
                       _e(h["verdict"]), _e(st.get("active", "-")),
                       _e("%s %s" % (bw.get("version") or "", bw.get("revision") or "")) if bw else "-",
                       _e("%s (%s)" % (svc.get("unit"), svc.get("verdict"))) if svc else "-",
                       ("passed" if probe.get("passed") else "FAILED") if probe else "-",
                       " ".join("<code>%s</code>" % _e(c) for c in codes) or "-"))
    out.append("</tbody></table>")
    by_code = _hosts_by_code(doc)
    if by_code:
        out.append("<h2>Hosts by diagnostic</h2>")
        for code, (diag, hosts) in sorted(by_code.items()):
            out.append('<details><summary class="sev-%s"><code>%s</code> &middot; %s &middot; %s &middot; %d host(s)'
                       '</summary><p>%s</p><p>Hosts: %s</p>%s</details>' % (
                           _e(diag["severity"]), _e(code), _e(diag["severity"]), _e(diag.get("title")), len(hosts),
                           _e(diag["message"]), ", ".join('<a href="#h-%s">%s</a>' % (_e(x), _e(x)) for x in hosts),
                           _remediation_html(diag.get("remediation"))))
    out.append("<h2>Host details</h2>")
    for h in doc["hosts"]:
        out.append('<details id="h-%s"><summary>%s &mdash; <span class="v %s">%s</span></summary>' % (
            _e(h["host"]), _e(h["host"]), _e(h["verdict"]), _e(h["verdict"])))
        if h.get("status"):
            out.append("<p>%s (a view, not a proof): %s</p>" % (_e(h.get("status_view") or "runtime status()"),
                                                                 _e(json.dumps(h["status"], sort_keys=True))))
        if h.get("service") and h["service"].get("environment"):
            out.append("<p>service %s (%s): %s</p>" % (_e(h["service"]["unit"]), _e(h["service"]["mode"]),
                                                       _e(json.dumps(h["service"]["environment"], sort_keys=True))))
        if h.get("probe"):
            failed = [c["name"] for c in h["probe"]["checks"] if not c["ok"]]
            out.append("<p>probe (proven verdict: %s): %s; %d checks%s</p>" % (
                "passed" if h["probe"]["passed"] else "FAILED", _e(h["probe"]["context"]), len(h["probe"]["checks"]),
                (", failed: " + _e(", ".join(failed))) if failed else ""))
        for d in h["diagnostics"]:
            out.append('<p class="sev-%s"><code>%s</code> (%s, %s): %s</p>%s' % (
                _e(d["severity"]), _e(d["code"]), _e(d["severity"]), _e(d["rule"]), _e(d["message"]),
                _remediation_html(d.get("remediation"))))
        out.append("</details>")
    out.append("</main><script>%s</script></body></html>" % _JS)
    return "\n".join(out) + "\n"


def terminal_summary(doc):
    t = doc["totals"]
    lines = ["%d hosts: %d pass, %d warn, %d fail, %d unreachable" % (t["hosts"], t["pass"], t["warn"], t["fail"],
                                                                       t["unreachable"])]
    for code, count in sorted(t["codes"].items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append("  %-40s %d host(s)" % (code, count))
    for h in doc["hosts"]:
        if h["verdict"] in ("fail", "unreachable"):
            lines.append("  %s %s: %s" % (h["verdict"].upper(), h["host"], ", ".join(
                sorted(set(d["code"] for d in h["diagnostics"] if d["severity"] == "error")))))
    return lines


def write_all(doc, directory, stamp=None):
    """Write the four reports; returns their paths. One run = one timestamped set."""
    stamp = stamp or doc["generated"].replace(":", "").replace("-", "").replace("+0000", "Z")
    os.makedirs(directory, exist_ok=True)
    paths = {}
    for ext, render in (("json", to_json), ("md", to_markdown), ("junit.xml", to_junit), ("html", to_html)):
        path = os.path.join(directory, "metnos-audit-%s.%s" % (stamp, ext))
        tmp = path + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(render(doc))
        os.replace(tmp, path)
        paths[ext] = path
    return paths
