"""Issue 20's rows of the probe's mutation matrix in real systemd hosts (Debian 12: systemd 252, bubblewrap
0.8; Debian 13: systemd 257, bubblewrap 0.12), run by run_systemd() in a transient unit as the probe runs for a
service, as root and as the unprivileged service user: the tree is the unit's cgroup (a detached copy of the
payload, a watcher left behind), only the packaged bwrap is trusted (a look-alike and a copy on the PATH, a
modified /usr/bin/bwrap as the probe sees it, the unit's own mount namespace showing another bwrap at the same
path), /proc has the covers bwrap adds for the caller, and a bwrap that dies at once is a setup failure. The
hosts have CAP_SYS_ADMIN (the unit's BindReadOnlyPaths= and the probe's private mount namespace need it).
Each row must be judged exactly as it says (tests/helpers/probe_mutations.py), and nothing is left behind."""
import json

import pytest
from test_probe_weakened_systemd import run_matrix

USERS = ("root", "metnos")
ROWS = ["strict", "detached_copy", "watcher_after_exit", "copy_killed_at_once", "dead_bwrap", "lookalike_on_path",
        "copy_unpackaged", "bwrap_modified", "unit_sees_other_bwrap", "proc_host_bind", "proc_covers_rw"]

SCRIPT = r'''
import json, sys
sys.path.insert(0, "/opt/metnos-tests/tests")
from helpers import probe_mutations as PM
rows = dict((r.name, r) for r in PM.ROWS)
with PM.Bench(mounts=False) as bench:
    prof = PM.strict_profile()
    for name in sys.argv[1].split(","):
        row = rows[name]
        for user in sys.argv[2].split(","):
            ok, why = PM.applicable(row, bench, systemd=True)
            if not ok:
                print(json.dumps({"row": name, "user": user, "skipped": why}))
                continue
            verdict, failed = PM.run_row(row, user, bench, prof, systemd=True)
            print(json.dumps({"row": name, "user": user, "judged": PM.judge(row, user, verdict, failed),
                              "failed": failed, "codes": PM.counted_codes(verdict), "duration": verdict["duration"],
                              "timed_out": verdict["timed_out"], "stderr": verdict["stderr"][-300:],
                              "messages": [d["message"][:300] for d in verdict["diagnostics"]]}))
print(json.dumps({"left": bench.dir}))
'''


@pytest.fixture(scope="module")
def results(systemd_host):
    lines = run_matrix(systemd_host, SCRIPT, ",".join(ROWS), ",".join(USERS))
    return dict(((r["row"], r["user"]), r) for r in lines if "row" in r), lines[-1]["left"], systemd_host


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("row", ROWS)
def test_issue20_row_in_a_transient_unit(results, row, user):
    by_row, _left, host = results
    res = by_row[(row, user)]
    if "skipped" in res:
        pytest.skip("%s (Debian %s)" % (res["skipped"], host.debian))
    assert res["judged"] == "ok", json.dumps(res, indent=1)
    if row == "dead_bwrap" and user != "root":
        assert res["timed_out"] is False and res["duration"] < 15, res


def test_nothing_left_behind(results):
    _by_row, left, host = results
    assert host.sh("test -e %s && echo yes || echo no" % left).stdout.strip() == "no"
    assert host.sh("systemctl list-units --all --no-legend 'metnos-probe-*' | wc -l").stdout.strip() == "0"
    assert host.sh("pgrep -c -f 'metnos-(copy|late)' || true").stdout.strip() in ("0", "")
    assert host.sh("grep -c metnos-matrix /proc/self/mountinfo || true").stdout.strip() in ("0", "")
