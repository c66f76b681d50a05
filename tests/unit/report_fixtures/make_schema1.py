"""How schema1-baseline.json and schema1-report.json were made: with main's own code at 463a547 (schema /1),
run from a checkout of it: ``git worktree add /tmp/base-463a547-v 463a547; cd /tmp/base-463a547-v;
python /path/to/this/make_schema1.py /path/to/report_fixtures``. Kept as files: the migration test
(tests/unit/test_report_schema.py) loads them with today's code. Two runs of three hosts:
- probe-flag: the probe failed with no finding of its own (what /1 allowed: its verdict rested on the flag);
- waived: a root service's finding waived (run 2), a refused manifest that is new in run 2;
- gone: reachable in run 1, unreachable in run 2.
"""
import datetime
import json
import os
import sys

sys.path.insert(0, os.getcwd())
from module_utils.metnos_sandbox.base import diagnostics  # noqa: E402
from module_utils.metnos_sandbox.report import document, render_json  # noqa: E402


def host(probe_passed, diags):
    return {"schema": "metnos-sandbox-audit/1", "verdict": "pass", "hostname": "h",
            "bwrap_facts": {"bwrap": {"version": "0.8.0", "package": {"name": "bubblewrap", "revision": "1"}},
                            "userns": {}, "diagnostics": []},
            "service": None, "profiles": [], "probe": {"passed": probe_passed, "checks": []}, "diagnostics": diags}


def refused(path):
    return diagnostics.make("profile_refused", executor=path, subject=path, refusal="manifest_parse_error",
                            message_text="not YAML")


def main(out):
    drift = diagnostics.make("bwrap_package_drift", majority="1", host="waived", revision="2", majority_hosts=2,
                             hosts=3)
    run1 = {"probe-flag": host(False, []), "waived": host(True, [drift]), "gone": host(True, [])}
    run2 = {"probe-flag": host(False, []), "waived": host(True, [drift, refused("/m/new.yml")]),
            "gone": {"unreachable": True, "msg": "ssh: connect to host gone port 22: No route to host"}}
    waivers = ("waivers.yml", [{"index": 0, "code": "bwrap_package_drift", "host": "waived", "executor": None,
                                "justification": "pinned on purpose", "approved_by": "ops", "expires": "2027-01-01",
                                "days_left": 25}])
    when = datetime.datetime(2026, 12, 6, 6, 0, tzinfo=datetime.timezone.utc)
    first = document.build_from_results(sorted(run1.items()), when)
    with open(os.path.join(out, "schema1-baseline.json"), "w") as handle:
        handle.write(render_json.to_json(first))
    base = json.loads(render_json.to_json(first))
    from module_utils.metnos_sandbox.report import baseline
    path = os.path.join(out, "schema1-baseline.json")
    second = document.build_from_results(sorted(run2.items()), when + datetime.timedelta(days=1), waivers=waivers,
                                         baseline=baseline.read(path), fail_on="new")
    assert base["schema"] == "metnos-sandbox-audit-report/1"
    with open(os.path.join(out, "schema1-report.json"), "w") as handle:
        handle.write(render_json.to_json(second))


if __name__ == "__main__":
    main(sys.argv[1])
