"""Which unit directives break bwrap: each directive of tests/system/trial_rows.py alone on a real
unit, on Debian 12 (systemd 252, bubblewrap 0.8) and 13 (systemd 257, bubblewrap 0.12).

One container per release (CAP_SYS_ADMIN, so mount-namespace directives really apply), one oneshot
unit per directive, all started at once. Inside each unit (tests/system/directive_trial.py):
- the directive's effect is read from inside (mount table, namespace inodes, /proc/self/status, a
  syscall's errno, rlimits); a baseline unit without directives proves every check can fail; a
  directive whose effect cannot be seen is "not measurable here", never "works";
- the strict probe profile runs for real as the unit's user and is checked from inside.
Then the toolkit's probe (a transient unit with the copied context) runs for every unit from
outside and must reach the same verdict, and every directive that breaks bwrap must be named by its
registered code (service_env.DIRECTIVE_CODES).

The measurement is kept in docs/unit-directives.json (docs/unit-directives.md is generated from it
by scripts/gen-unit-directives-doc.py). This test fails when the measurement changes; rerun with
METNOS_UPDATE_DIRECTIVES=1 to record it, then regenerate the table.
"""
import json
import os

import pytest
from trial_rows import ROWS, SETUP, slug, unit_text

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import restrictions
from conftest import ROOT, install_trial_tools

DATA = os.path.join(ROOT, "docs", "unit-directives.json")


def directive(row_id):
    return row_id.split("(")[0]


@pytest.fixture(scope="module")
def trial(systemd_host):
    import time
    h = systemd_host
    t0 = time.time()
    tools = install_trial_tools(h)
    h.sh(SETUP)
    units = dict((row[0], "metnos-trial-%s.service" % slug(row[0])) for row in ROWS)
    files = dict(("/etc/systemd/system/" + units[row[0]], unit_text(row)) for row in ROWS)
    files["/etc/systemd/system/metnos-trial-baseline.service"] = unit_text(("baseline", [], "x", {})).replace(
        " unit x", " baseline")
    h.write_many(files)
    h.sh("systemctl daemon-reload")
    t1 = time.time()
    started = h.sh("systemctl start metnos-trial-baseline.service %s" % " ".join(sorted(units.values())),
                   check=False, timeout=600)
    t2 = time.time()
    inside = json.loads(h.sh("cd /var/lib/metnos-trial && python3 -c 'import glob,json; print(json.dumps("
                             "dict((p[:-5], open(p).read()) for p in glob.glob(\"*.json\"))))'").stdout)
    probes = json.loads(h.sh("cd %s && TRIAL_WORKERS=8 python3 directive_trial.py probe %s" % (
        tools, " ".join(sorted(units.values()))), timeout=900).stdout)
    print("trial on debian%s: setup %.1fs, units %.1fs, probes %.1fs (slowest %s)" % (
        h.debian, t1 - t0, t2 - t1, time.time() - t2,
        sorted(((p["seconds"], u) for u, p in probes.items()), reverse=True)[:3]))
    yield {"host": h, "units": units, "inside": inside, "probes": probes, "start": started}
    h.sh("systemctl stop 'metnos-trial-*' ; rm -f /etc/systemd/system/metnos-trial-*.service; "
         "systemctl daemon-reload; systemctl reset-failed", check=False)


def bwrap_line(stderr):
    """bwrap's own message (its last 'bwrap: ' line), bounded."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    own = [ln for ln in lines if ln.startswith("bwrap:")]
    return (own or lines or [""])[-1][:200]


def measure(trial):
    h = trial["host"]
    baseline = json.loads(trial["inside"]["baseline"])
    rows = []
    for row_id, lines, check, opts in ROWS:
        raw = trial["inside"].get(slug(row_id), "")
        inside = json.loads(raw) if raw.strip() else {"in_effect": None, "check_error": "the unit produced no result",
                                                      "bwrap": {}}
        probe = trial["probes"][trial["units"][row_id]]
        entry = {"row": row_id, "directive": directive(row_id), "lines": lines, "check": check,
                 "in_effect": inside.get("in_effect"), "evidence_error": inside.get("check_error"),
                 "bwrap_passed": inside["bwrap"].get("passed"), "cause": inside["bwrap"].get("cause"),
                 "stderr": bwrap_line(inside["bwrap"].get("stderr") or inside["bwrap"].get("error") or ""),
                 "probe_passed": probe["passed"], "probe_errors": probe["errors"],
                 "code": restrictions.DIRECTIVE_CODES.get(directive(row_id))}
        if opts.get("since", 0) > h.systemd:
            entry["verdict"] = "unknown to systemd %d" % h.systemd
        elif inside.get("in_effect") is not True:
            entry["verdict"] = "not measurable here"
        elif inside["bwrap"].get("passed"):
            entry["verdict"] = "works"
        else:
            entry["verdict"] = "breaks"
        if entry["verdict"] != "breaks":
            entry["code"] = None
        rows.append(entry)
    return baseline, rows


def test_baseline_unit_proves_every_check_can_fail(trial):
    baseline, _rows = measure(trial)
    assert baseline["bwrap"]["passed"] is True, baseline["bwrap"]
    used = set(r[2] for r in ROWS)
    assert dict((c, v) for c, v in baseline["checks"].items() if c in used and v is not False) == {}


def test_probe_in_copied_context_agrees_with_the_real_unit(trial):
    _baseline, rows = measure(trial)
    for entry in rows:
        if entry["verdict"] not in ("works", "breaks"):
            continue
        probe = trial["probes"][trial["units"][entry["row"]]]
        assert probe["passed"] == entry["bwrap_passed"], (entry, probe)


def test_every_directive_that_breaks_bwrap_is_named_by_its_code(trial):
    _baseline, rows = measure(trial)
    broken = [e for e in rows if e["verdict"] == "breaks"]
    assert broken, "nothing measured as breaking: the trial itself is suspect"
    for entry in broken:
        code = restrictions.DIRECTIVE_CODES.get(entry["directive"])
        assert code, "%s breaks bwrap (%s) but has no code in service_env.DIRECTIVE_CODES" % (
            entry["directive"], entry["stderr"] or entry["cause"])
        assert code in entry["probe_errors"], (entry["row"], entry["probe_errors"])
    for entry in rows:
        if entry["verdict"] == "works":
            wrong = [c for c in entry["probe_errors"] if c.startswith("unit_")]
            assert wrong == [], (entry["row"], wrong)


def test_a_directive_this_systemd_does_not_know_is_named(trial):
    """PrivatePIDs= (systemd 257) in a 252 unit: systemd-run refuses it, the probe says so."""
    _baseline, rows = measure(trial)
    for entry in rows:
        if entry["verdict"].startswith("unknown to systemd"):
            probe = trial["probes"][trial["units"][entry["row"]]]
            assert entry["directive"] in probe["not_carried"] and probe["confidence"] == "reduced", probe
            assert "probe_context_incomplete" in probe["codes"]


def test_measurement_is_the_one_documented(trial):
    h = trial["host"]
    _baseline, rows = measure(trial)
    key = "debian%s" % h.debian
    current = {"systemd": h.systemd, "bubblewrap": h.bwrap, "rows": rows}
    data = {}
    if os.path.exists(DATA):
        with open(DATA) as handle:
            data = json.load(handle)
    if os.environ.get("METNOS_UPDATE_DIRECTIVES") == "1":
        data[key] = current
        with open(DATA, "w") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
            handle.write("\n")
        return
    recorded = data.get(key) or {}
    keep = ("row", "lines", "verdict", "code")
    assert (recorded.get("systemd"), recorded.get("bubblewrap")) == (h.systemd, h.bwrap)
    assert [dict((k, r[k]) for k in keep) for r in recorded.get("rows", [])] == \
        [dict((k, r[k]) for k in keep) for r in rows], (
            "the measured table changed: rerun with METNOS_UPDATE_DIRECTIVES=1 and "
            "python scripts/gen-unit-directives-doc.py > docs/unit-directives.md")
