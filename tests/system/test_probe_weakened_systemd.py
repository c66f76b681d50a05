"""The probe's mutation matrix in a real systemd container: the key rows of
tests/helpers/probe_mutations.py run by run_systemd() as the service user (metnos) in a transient
unit, as the probe runs for a service. Here root has no CAP_SYS_PTRACE, so the outside witness
reads the payload's namespace links with the payload's own credentials: the rows prove that path.
(Rows that mount fixtures on the host need CAP_SYS_ADMIN and stay in the integration matrix.)

The container allows add_key (conftest.KEYRINGS: podman's default seccomp profile answers it with ENOSYS), as a
real host does: systemd gives each unit its invocation_id key, and keys are planted for real (issue 51). ROOT_ROWS
run as root in the unit, for what only root can plant (a securebit cleared by the unit's process, a forged
invocation_id key of root's) and what only a root payload sees (every root unit's invocation_id key), in a second
container that also has CAP_SYS_ADMIN and CAP_NET_ADMIN (root's bwrap without a user namespace needs them)."""
import json
import os

import pytest

from conftest import KEYRING_SECCOMP, KEYRINGS, ROOT, podman, start_host, stop_host

ROWS = ["strict", "drop_unshare_ipc", "network_shared", "pid_namespace", "usr_writable", "tmp_host", "tmp_empty_dir",
        "bind_root", "proc_tmpfs", "fake_exec", "fake_json", "fake_left_behind", "fake_wrap_decoy", "fake_no_mnt",
        "fake_move_after_fork", "bind_elsewhere", "ro_bind_other_source", "dev_shm_host", "cap_add", "userns_joined",
        "fd_leaked", "library_planted", "pipe_in_flight", "pipe_thread_table", "symlink_made_file",
        "keyring_filtered", "keyring_filtered_kill", "keyring_shared_mode", "socket_in_flight", "file_swapped",
        "file_declared", "file_same_size", "ambient_net_raw", "keyring_user_key", "keyring_invocation_forged",
        "keyring_joined_unit"]
ROOT_ROWS = ["securebits_cleared_unit", "strict", "keyring_invocation_forged_root"]
HELPERS = ("probe_mutations.py", "thread_reader.py", "user_keys.py", "invocation_forger.py", "keyring_holder.py")

SCRIPT = r'''
import json, sys
sys.path.insert(0, "/opt/metnos-tests/tests")
from helpers import probe_mutations as PM
rows = dict((r.name, r) for r in PM.ROWS)
user = sys.argv[2]
with PM.Bench(mounts=False) as bench:
    prof = PM.strict_profile()
    for name in sys.argv[1].split(","):
        row = rows[name]
        verdict, failed = PM.run_row(row, user, bench, prof, systemd=True)
        print(json.dumps({"row": name, "judged": PM.judge(row, user, verdict, failed, systemd=True),
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
    for name in HELPERS:
        podman("cp", os.path.join(ROOT, "tests", "helpers", name),
               "%s:/opt/metnos-tests/tests/helpers/%s" % (host.name, name))
    host.write("/opt/metnos-tests/matrix.py", script)
    out = host.sh("cd /opt/metnos-tests && python3 matrix.py %s" % " ".join(args), timeout=600).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def host():
    """A systemd container that allows keyrings (conftest.KEYRINGS)."""
    h = start_host("metnos-keyrings", extra=KEYRINGS)
    try:
        yield h
    finally:
        stop_host(h)


@pytest.fixture(scope="module")
def results(host):
    lines = run_matrix(host, SCRIPT, ",".join(ROWS), "metnos")
    uid = int(host.sh("id -u metnos").stdout)
    return dict((r["row"], r) for r in lines if "row" in r), lines[-1]["left"], uid, host


@pytest.fixture(scope="module")
def admin_host():
    """Keyrings, and the capabilities root's bwrap needs without a user namespace."""
    h = start_host("metnos-keyrings-admin", extra=KEYRINGS + ("--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN"))
    try:
        yield h
    finally:
        stop_host(h)


@pytest.fixture(scope="module")
def root_results(admin_host):
    lines = run_matrix(admin_host, SCRIPT, ",".join(ROOT_ROWS), "root")
    return dict((r["row"], r) for r in lines if "row" in r)



@pytest.mark.parametrize("row", ["securebits_cleared_unit"])
def test_root_row_in_a_transient_unit(root_results, admin_host, row):
    res = root_results[row]
    assert res["judged"] == "ok", res
    assert res["uid"] == 0
    if row == "securebits_cleared_unit":
        # the bit cleared between the unit's process and the payload, found for that reason
        attributes = [c for c in res["checks"] if c["name"] == "process_attributes"][0]["observed"]
        assert "no_setuid_fixup cleared between them" in json.dumps(attributes), attributes
        # the canary, from outside: systemd really starts a unit's process with that bit (the probe's reference is
        # the unit's SecureBits=, /proc does not show securebits)
        bits = admin_host.sh("systemd-run --wait --pipe --quiet --collect -p SecureBits=no-setuid-fixup python3 -c "
                             "'import ctypes; print(ctypes.CDLL(None).prctl(27, 0, 0, 0, 0))'").stdout.split()
        assert bits == ["4"], bits


@pytest.mark.parametrize("row", ["strict", "keyring_invocation_forged_root"])
def test_root_payload_sees_other_units_invocation_ids(root_results, row):
    """A root payload views every root unit's invocation_id key (issue 51): other units' keys, proven from outside
    (content an InvocationID systemd publishes), are info, and the strict row passes. The canary: the container's
    root units really have such keys, and the payload's /proc/keys shows them. A forgery with systemd's type, owner,
    description and permissions is told apart by its content only.

    Keyrings are the kernel's: this rootful container's root is kuid 0, so the payload also views the invocation_id
    keys of the root units of any other rootful systemd container running on this machine (other system tests'),
    whose IDs this container's systemd does not publish: probe_keyring_keys (unknown is a failure). Such a key is
    accepted here only when this machine's own /proc/keys (read by the test, as root) shows it as a user key named
    invocation_id of uid 0 - another systemd's - or it is gone (its container stopped); with none
    of them, the strict row must pass."""
    res = root_results[row]
    assert res["uid"] == 0
    keyring = [c for c in res["checks"] if c["name"] == "keyring_own"][0]["observed"]
    kinds = keyring["kinds"]
    others = [w for k, w in kinds if k == "invocation"]
    assert "probe_keyring_invocation_ids" in res["codes"] and len(others) == 1, kinds
    assert len([r for r in keyring["payload"]["visible"] if r[1] == "user" and r[2] == 0]) >= 2, keyring
    unproven = [w for k, w in kinds if k == "keys"]
    foreign = [w for w in unproven if w.startswith("key ") and w.split()[1].isdigit()
               and _another_systemds(int(w.split()[1])) is not False]
    if row == "keyring_invocation_forged_root":
        # caught as probe_keyring_keys for its content (another systemd's keys, if any, only add to it)
        assert res["judged"] == "ok", res
        assert unproven and all("content differs (16 bytes), not a unit's InvocationID" in w for w in unproven), kinds
    elif foreign:
        assert unproven == foreign and res["codes"].count("probe_keyring_keys") == 1, kinds
        assert set(res["failed"]) == {"keyring_own"}, res["failed"]
    else:
        assert res["judged"] == "ok" and not unproven, (res["judged"], kinds)


def _another_systemds(serial):
    """The machine's /proc/keys (this test runs as root, on the same kernel) shows ``serial`` as a user key of uid
    0 named invocation_id: a systemd's invocation_id key (another container's: the kernel's keys are one set);
    None when gone."""
    with open("/proc/keys") as handle:
        for line in handle:
            words = line.split(None, 8)
            if int(words[0], 16) == serial:     # any systemd's permissions: versions differ
                return words[5:8] == ["0", "0", "user"] and words[8].startswith("invocation_id:")
    return None


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
            # read from outside (its type, owner uid 0 and content the unit's InvocationID): a "unit" kind. The
            # canary: the container allows add_key, so systemd made exactly one such key for the unit
            named = [k for k in keyring.get("keys") or [] if k[6:7] == ["invocation_id"]]
            kinds = [c for c in res["checks"] if c["name"] == "keyring_own"][0]["observed"]["kinds"]
            assert len(named) == 1, keyring
            assert len([w for k, w in kinds if k == "unit" and "systemd's invocation_id key" in w]) == 1, kinds
    if row == "keyring_invocation_forged":
        # the forgery has systemd's type, description and content: only its owner, the service user, tells it apart
        kinds = [c for c in res["checks"] if c["name"] == "keyring_own"][0]["observed"]["kinds"]
        said = [w for k, w in kinds if k == "keys" and "named invocation_id" in w]
        assert len(said) == 1 and said[0].endswith("not systemd's: owner uid %d, not 0" % uid), kinds
    if row == "keyring_user_key":
        kinds = [c for c in res["checks"] if c["name"] == "keyring_own"][0]["observed"]["kinds"]
        assert [w for k, w in kinds if k == "keys" and "uid %d: the payload's own uid" % uid in w], kinds
    if not row.startswith("fake_"):
        assert res["uid"] == uid                                  # ran as the service user
        # root in the container may not read another user's ns links: the same-credential reader did
        assert "same credentials" in res["evidence"]["read_by"], res["evidence"]
        # namespaces are judged against the unit's process as read before it executed bwrap
        assert "before it ran bwrap" in res["evidence"]["parent_context"], res["evidence"]


PROOF = r'''
import json, os, subprocess, sys
sys.path.insert(0, "/opt/metnos-tests/tests")
from helpers import probe_mutations as PM
mode, how = sys.argv[1], sys.argv[2]
argv = PM.strict_profile()["argv"]
inner = ["/usr/bin/bwrap"] + argv[1:argv.index("--")] + ["--ro-bind", PM.USER_KEYS, "/tmp/user_keys.py", "--",
                                                         PM.PYTHON, "/tmp/user_keys.py", how]
unit = ["systemd-run", "--wait", "--pipe", "--collect", "--quiet", "-p", "User=metnos", "-p", "KeyringMode=" + mode]
canary = "metnos-canary-unit-" + os.urandom(6).hex()
undo = PM.user_key(canary)("metnos")
try:
    planted = subprocess.run(unit + inner, capture_output=True, text=True, timeout=60)
finally:
    undo()
after = subprocess.run(unit + inner, capture_output=True, text=True, timeout=60)
print(json.dumps({"canary": canary, "rc": planted.returncode, "read": planted.stdout.split(), "err": planted.stderr,
                  "after_rc": after.returncode, "after": after.stdout.split()}))
'''


@pytest.mark.parametrize("mode,how,leaks", [
    ("private", "reach", True),      # keyring_user_key: @u linked by its serial, then read
    ("private", "read", False),      # the control: without linking, private mode reaches nothing of @u
    ("shared", "read", True),        # keyring_shared_mode: systemd linked @u, read without linking anything
])
def test_the_service_users_key_leaks_into_a_sandbox_in_a_unit(results, mode, how, leaks):
    """The leak of the rows keyring_user_key and keyring_shared_mode proven from outside, in a transient unit as the
    service user with the packaged bwrap and the strict profile: a canary planted in the user's own user keyring
    (@u) comes back out of the sandbox; once the key is invalidated, nothing does."""
    seen = run_matrix(results[3], PROOF, mode, how)[0]
    assert seen["rc"] == 0 and seen["after_rc"] == 0, seen
    assert (seen["canary"] in seen["read"]) is leaks, seen
    assert not [word for word in seen["after"] if word.startswith("metnos-canary-unit-")], seen


HOLD = r'''
import json, subprocess, sys
sys.path.insert(0, "/opt/metnos-tests/tests")
from helpers import probe_mutations as PM
argv = PM.strict_profile()["argv"]
holder = "/opt/metnos-tests/tests/helpers/keyring_holder.py"
unit = ["systemd-run", "--wait", "--pipe", "--collect", "--quiet", "-p", "User=metnos", "-p", "KeyringMode=private"]
done = subprocess.run(unit + [PM.PYTHON, holder, "host", "unit"] + argv[1:argv.index("--")], capture_output=True,
                      text=True, timeout=90)
print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else json.dumps({"rc": done.returncode,
                                                                                     "stderr": done.stderr}))
'''


def test_the_units_session_keyring_carries_keys_both_ways(results):
    """What probe_keyring_unit (info) says, proven from outside: the service (a transient unit's process, as the
    service user, KeyringMode=private) adds a key to the unit's session keyring and starts the packaged bwrap with
    the strict profile; the sandbox reads the service's key by its serial, and the service reads back the key the
    sandbox added. The channel between a service and its executors (and between executors) that only
    SystemCallFilter=~@keyring closes (the keyring_filtered rows)."""
    seen = run_matrix(results[3], HOLD)[0]
    assert seen.get("rc") == 0, seen
    assert seen["host_payload"].startswith("host-canary-") and seen["inside_read"] == seen["host_payload"], seen
    assert seen["host_read"] == "sandbox-canary", seen


def test_the_keyring_seccomp_profile_is_podmans_default_plus_add_key():
    """tests/podman/seccomp-keyrings.json differs from the installed podman's default only by one rule that allows
    add_key and request_key (keyctl is in the default)."""
    default = "/usr/share/containers/seccomp.json"
    if not os.path.exists(default):
        pytest.skip("no %s to compare with" % default)
    with open(default) as handle:
        theirs = json.load(handle)
    with open(KEYRING_SECCOMP) as handle:
        ours = json.load(handle)
    added = [rule for rule in ours["syscalls"] if rule not in theirs["syscalls"]]
    assert [(rule["names"], rule["action"], rule["args"]) for rule in added] == [
        (["add_key", "request_key"], "SCMP_ACT_ALLOW", [])]
    assert dict(ours, syscalls=[r for r in ours["syscalls"] if r not in added]) == theirs


def test_nothing_left_behind(results):
    _by_row, left, _uid, host = results
    assert host.sh("test -e %s && echo yes || echo no" % left).stdout.strip() == "no"
    assert host.sh("systemctl list-units --all --no-legend 'metnos-probe-*' | wc -l").stdout.strip() == "0"
    assert host.sh("pgrep -c -x sleep || true").stdout.strip() in ("0", "")
