"""The probe's mutation matrix in a real systemd container: the key rows of
tests/helpers/probe_mutations.py run by run_systemd() as the service user (metnos) in a transient
unit, as the probe runs for a service. Here root has no CAP_SYS_PTRACE, so the outside witness
reads the payload's namespace links with the payload's own credentials: the rows prove that path.
(Rows that mount fixtures on the host need CAP_SYS_ADMIN and stay in the integration matrix.)"""
import json
import os

import pytest

from conftest import ROOT, podman

ROWS = ["strict", "drop_unshare_ipc", "network_shared", "pid_namespace", "usr_writable", "tmp_host", "tmp_empty_dir",
        "bind_root", "proc_tmpfs", "fake_exec", "fake_json", "fake_left_behind", "fake_wrap_decoy", "fake_no_mnt",
        "fake_move_after_fork", "bind_elsewhere", "ro_bind_other_source", "dev_shm_host", "cap_add", "userns_joined",
        "fd_leaked", "library_planted", "pipe_in_flight", "pipe_thread_table", "symlink_made_file",
        "keyring_filtered", "keyring_filtered_kill", "keyring_shared_mode", "socket_in_flight", "file_swapped",
        "file_declared", "file_same_size", "ambient_net_raw"]

SCRIPT = r'''
import json, sys
sys.path.insert(0, "/opt/metnos-tests/tests")
from helpers import probe_mutations as PM
rows = dict((r.name, r) for r in PM.ROWS)
with PM.Bench(mounts=False) as bench:
    prof = PM.strict_profile()
    for name in sys.argv[1].split(","):
        row = rows[name]
        verdict, failed = PM.run_row(row, "metnos", bench, prof, systemd=True)
        print(json.dumps({"row": name, "judged": PM.judge(row, "metnos", verdict, failed, systemd=True),
                          "failed": failed,
                          "passed": verdict["passed"], "codes": [d["code"] for d in verdict["diagnostics"]],
                          "evidence": verdict.get("evidence"), "uid": verdict.get("observed_uid"),
                          "checks": verdict.get("checks")}))
print(json.dumps({"left": bench.dir}))
'''


def run_matrix(host, script, *args):
    """Run ``script`` (python, with the core and tests/helpers/probe_mutations.py beside it) in the host:
    its JSON lines."""
    host.sh("mkdir -p /opt/metnos-tests/tests/helpers")
    podman("cp", os.path.join(ROOT, "module_utils"), "%s:/opt/metnos-tests/module_utils" % host.name)
    for name in ("probe_mutations.py", "thread_reader.py"):
        podman("cp", os.path.join(ROOT, "tests", "helpers", name),
               "%s:/opt/metnos-tests/tests/helpers/%s" % (host.name, name))
    host.write("/opt/metnos-tests/matrix.py", script)
    out = host.sh("cd /opt/metnos-tests && python3 matrix.py %s" % " ".join(args), timeout=600).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def results(host):
    lines = run_matrix(host, SCRIPT, ",".join(ROWS))
    uid = int(host.sh("id -u metnos").stdout)
    return dict((r["row"], r) for r in lines if "row" in r), lines[-1]["left"], uid, host


@pytest.mark.parametrize("row", ROWS)
def test_matrix_row_in_a_transient_unit(results, row):
    by_row, _left, uid, _host = results
    res = by_row[row]
    assert res["judged"] == "ok", res
    if row in ("strict", "keyring_filtered", "keyring_filtered_kill"):
        # the proof that the drop-in works (issue 51): keyctl refused inside, under a bwrap that ran, and the
        # unit's shared keyring (info) reported only where keyctl reaches it. The canary: the strict row reaches it.
        keyring = [c for c in res["checks"] if c["name"] == "keyring_own"][0]["observed"]["payload"]
        said = {"strict": None, "keyring_filtered": "error:EPERM", "keyring_filtered_kill": "refused:killed"}[row]
        if said:
            assert keyring["session"] == keyring["user"] == keyring["user_session"] == said, keyring
            assert "probe_keyring_unit" not in res["codes"], res["codes"]
        else:
            assert isinstance(keyring["session"], int) and keyring["session"] != keyring["user_session"], keyring
            assert "probe_keyring_unit" in res["codes"], res["codes"]
            # systemd's invocation_id key, where the container's systemd made one, is the unit's only on evidence
            # read from outside (its type, owner uid 0 and content the unit's InvocationID): a "unit" kind
            named = [k for k in keyring.get("keys") or [] if k[6:7] == ["invocation_id"]]
            kinds = [c for c in res["checks"] if c["name"] == "keyring_own"][0]["observed"]["kinds"]
            assert len([w for k, w in kinds if k == "unit" and "systemd's invocation_id key" in w]) == len(named), kinds
            print("invocation_id keys in the strict row's session keyring: %d" % len(named))
    if not row.startswith("fake_"):
        assert res["uid"] == uid                                  # ran as the service user
        # root in the container may not read another user's ns links: the same-credential reader did
        assert "same credentials" in res["evidence"]["read_by"], res["evidence"]
        # namespaces are judged against the unit's process as read before it executed bwrap
        assert "before it ran bwrap" in res["evidence"]["parent_context"], res["evidence"]


def test_nothing_left_behind(results):
    _by_row, left, _uid, host = results
    assert host.sh("test -e %s && echo yes || echo no" % left).stdout.strip() == "no"
    assert host.sh("systemctl list-units --all --no-legend 'metnos-probe-*' | wc -l").stdout.strip() == "0"
    assert host.sh("pgrep -c -x sleep || true").stdout.strip() in ("0", "")
