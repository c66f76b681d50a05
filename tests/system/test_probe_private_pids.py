"""A unit with PrivatePIDs=yes (systemd >= 257: Debian 13) has a PID namespace of its own: the pids its
processes report (the launcher's "$$" is 1, bwrap's child-pid) are of that namespace, and bwrap's parent
context is that namespace, not the host's. The probe translates the pids (by the unit's cgroup) and judges
no_pid_namespace against the unit's namespace: the strict profile passes there, and a bwrap that really
makes a PID namespace (--unshare-pid) still fails it, in the unit as the module runs it and in a transient
unit carrying PrivatePIDs=yes (the matrix's pid_namespace row)."""
import pytest
from test_probe_weakened_systemd import run_matrix

from conftest import SYSTEMD_IMAGES, bwrap_image, start_host, stop_host

SCRIPT = r'''
import json, sys
sys.path.insert(0, "/opt/metnos-tests/tests")
from helpers import probe_mutations as PM
rows = dict((r.name, r) for r in PM.ROWS)
with PM.Bench(mounts=False) as bench:
    for name in ("strict", "pid_namespace"):
        verdict, failed = PM.run_row(rows[name], "metnos", bench, PM.strict_profile(), systemd=True,
                                     properties=[("PrivatePIDs", "yes")])
        checks = dict((c["name"], c) for c in verdict["checks"])
        print(json.dumps({"row": name, "judged": PM.judge(rows[name], "metnos", verdict, failed), "failed": failed,
                          "evidence": verdict.get("evidence"), "pid": checks.get("no_pid_namespace")}))
'''


@pytest.fixture(scope="module")
def pids_host():
    h = start_host("metnos-pids", extra=("--cap-add", "SYS_ADMIN"), image=bwrap_image(SYSTEMD_IMAGES["13"]))
    try:
        if int(h.sh("systemctl --version | head -1 | awk '{print $2}'").stdout.strip()) < 257:
            pytest.skip("PrivatePIDs= needs systemd >= 257")
        sleep = "ExecStart=/bin/sleep infinity\n"
        h.install_unit("ppids", "[Service]\nUser=metnos\nPrivatePIDs=yes\n" + sleep)
        h.install_unit("ppidsw", "[Service]\nUser=metnos\nPrivatePIDs=yes\nEnvironment=PATH=/opt/pidns:/usr/bin:/bin\n"
                       + sleep, {"/opt/pidns/bwrap": '#!/bin/sh\nexec /usr/bin/bwrap --unshare-pid "$@"\n'})
        h.sh("systemctl daemon-reload")
        yield h
    finally:
        stop_host(h)


def _pid_check(res):
    return [c for c in res["checks"] if c["name"] == "no_pid_namespace"][0]


def test_private_pids_unit_passes_against_its_own_pid_namespace(pids_host):
    res = pids_host.module("metnos.sandbox.sandbox_probe", {"unit": "metnos-ppids.service"})
    assert res["passed"] is True, [c for c in res["checks"] if not c["ok"]] or res["diagnostics"]
    host_pidns = pids_host.sh("readlink /proc/1/ns/pid").stdout.strip()
    observed = _pid_check(res)["observed"]
    assert observed["parent"] == observed["outside"] != host_pidns       # the unit's own namespace
    assert res["evidence"]["bwrap_pid"] > 1 and "before it ran bwrap" in res["evidence"]["parent_context"]


def test_private_pids_unit_with_a_pid_namespace_made_by_bwrap_fails(pids_host):
    """The mutation: the unit's bwrap (a wrapper adding --unshare-pid) makes a PID namespace."""
    res = pids_host.module("metnos.sandbox.sandbox_probe", {"unit": "metnos-ppidsw.service"})
    assert res["passed"] is False
    bad = [c["name"] for c in res["checks"] if not c["ok"]]
    assert bad == ["no_pid_namespace"], res["diagnostics"]
    problems = _pid_check(res)["observed"]["problems"]
    assert problems[0].startswith("differs from the unit's process (pid "), problems


def test_matrix_pid_rows_in_a_private_pids_transient_unit(pids_host):
    rows = dict((r["row"], r) for r in run_matrix(pids_host, SCRIPT))
    assert rows["strict"]["judged"] == "ok" and rows["strict"]["failed"] == [], rows["strict"]
    assert rows["pid_namespace"]["judged"] == "ok" and rows["pid_namespace"]["failed"] == ["no_pid_namespace"], \
        rows["pid_namespace"]
    assert pids_host.sh("systemctl list-units --all --no-legend 'metnos-probe-*' | wc -l").stdout.strip() == "0"
