"""The probe's mutation matrix, for real: the strict profile weakened one way per row (each unshare
dropped, each read-only bind made writable, /tmp, /dev and /proc replaced, hidden paths bound,
bwrap look-alikes), run as root and as nobody. Each row must fail exactly the checks it names,
with the code it names; the unmutated profile must pass. Rows and fixtures:
tests/helpers/probe_mutations.py; the same table is printed by scripts/probe-matrix.py.

Also: the fixtures (fake bwraps, their decoys, setuid copy, host tmpfs, foreign procfs) leave nothing
behind - no file, no mount, no process (each names the bench's private directory in its command line)."""
import os

import pytest

from helpers import probe_mutations, procs

# A look-alike that never exits is stopped by the probe's timeout: the payload must have reported before it.
# Measured under a load average of 9-25 on two cores (busy loops, network-namespace churn, other suites),
# a whole look-alike row (payload reported, read, let go) took at most 0.97 s in 1,795 runs: 5 s is five times that.
HANG_TIMEOUT = 5
# The rows whose look-alike leaves a process in the tree after bwrap exits (killed, and reported).
LEAVE_PROCESSES = ("fake_left_behind", "detached_copy", "watcher_after_exit", "userns_joined", "fake_json",
                   "fake_wrap_decoy", "netns_pinned")


@pytest.fixture(scope="module")
def bench():
    b = probe_mutations.Bench()
    try:
        yield b
    finally:
        b.close()
    assert not os.path.exists(b.dir)
    with open("/proc/self/mountinfo") as handle:
        assert b.dir not in handle.read(), "a matrix mount was left on the host"
    left = procs.left_after(b.dir)
    assert left == [], "matrix processes left on the host: %s" % left


@pytest.fixture(scope="module")
def strict():
    return probe_mutations.strict_profile()


@pytest.mark.parametrize("user", probe_mutations.USERS)
@pytest.mark.parametrize("row", probe_mutations.ROWS, ids=[r.name for r in probe_mutations.ROWS])
def test_mutation_matrix(bench, strict, row, user):
    ok, reason = probe_mutations.applicable(row, bench)
    if not ok:
        pytest.skip(reason)
    verdict, failed = probe_mutations.run_row(row, user, bench, strict)
    assert probe_mutations.judge(row, user, verdict, failed) == "ok", (failed, [d["message"] for d
                                                                                in verdict["diagnostics"]])
    if user == "nobody" and verdict["checks"]:
        assert verdict["observed_uid"] == bench.nobody.pw_uid or row.name.startswith("fake_no_mnt")
    # Only look-alikes that leave a process in the tree are cut short (real bwrap leaves nothing), and each such
    # process is a finding of its own.
    if "evidence" in verdict and verdict["evidence"]["left_behind"]:
        assert row.name in LEAVE_PROCESSES, verdict["evidence"]
        assert set(probe_mutations.counted_codes(verdict)) & {"probe_process_unaccounted", "probe_payload_outside"}
    if row.name == "dead_bwrap" and user != "root":
        # a bwrap that dies at once is a setup failure with its stderr, within seconds, never a timeout
        assert verdict["timed_out"] is False and verdict["duration"] < 10, verdict["duration"]
        assert "uid map" in verdict["stderr"] or "capset" in verdict["stderr"], verdict["stderr"]


def test_look_alike_that_never_exits_is_still_not_isolated(bench, strict):
    """A look-alike runs the payload unsandboxed, then never exits: the timeout kills it, and the evidence
    read while the payload waited is still judged - a timeout never hides 'without isolation'."""
    row = probe_mutations.Row("fake_hang", "look-alike: command unsandboxed, never exits",
                              probe_mutations.binary("fakes.hang", accept=True),
                              probe_mutations.NOT_ISOLATED_DIRECT, code="probe_not_isolated")
    verdict, failed = probe_mutations.run_row(row, "nobody", bench, strict, timeout=HANG_TIMEOUT)
    codes = probe_mutations.counted_codes(verdict)
    assert verdict["timed_out"] is True and verdict["passed"] is False
    # the sleep it leaves in the tree is found too
    assert codes == ["probe_not_isolated", "probe_process_unaccounted", "probe_timeout"], \
        [d["message"] for d in verdict["diagnostics"]]
    assert failed == probe_mutations.expected_failures(row, "nobody", verdict) and failed
    timeout = [d for d in verdict["diagnostics"] if d["code"] == "probe_timeout"][0]
    assert "its checks are judged" in timeout["message"]


def test_look_alike_is_named_for_what_happened(bench, strict):
    """A look-alike that runs the payload unsandboxed is 'without isolation', never 'setup failed'."""
    row = [r for r in probe_mutations.ROWS if r.name == "fake_exec"][0]
    verdict, _failed = probe_mutations.run_row(row, "nobody", bench, strict)
    (diag,) = [d for d in verdict["diagnostics"] if d["severity"] != "info"]
    assert diag["code"] == "probe_not_isolated" and verdict["setup_failed"] is False
    assert "without isolation" in diag["message"] and "bwrap_child_is_payload" in diag["message"]
    assert bench.fakes["exec"] in diag["message"]


def test_module_without_unit_trusts_only_the_packaged_bwrap(bench):
    """No unit: the probe resolves bwrap through the admin's PATH. An unpackaged copy of the real bwrap still
    isolates, but the probe fails (probe_bwrap_unpackaged): only the packaged bwrap is trusted - unless the
    copy's sha256 is accepted (listed, info); a look-alike earlier on PATH is 'not isolated' as well."""
    from conftest import run_module
    copy = bench.bwrap_copy
    path = os.environ.get("PATH", "/usr/bin:/bin")
    res = run_module("metnos.sandbox.sandbox_probe", {"unit": ""}, env={"PATH": os.path.dirname(copy) + ":" + path})
    codes = sorted(d["code"] for d in res["diagnostics"])
    assert res["passed"] is False and res["status"]["bwrap_path"] == copy, res
    assert codes == ["probe_bwrap_unpackaged", "probe_check_failed"], codes        # + bwrap_exe_verified
    assert [c["name"] for c in res["checks"] if not c["ok"]] == ["bwrap_exe_verified"]
    assert res["bwrap_trust"]["bwrap"]["state"] == "unpackaged"
    res = run_module("metnos.sandbox.sandbox_probe", {"unit": "",
                                                      "accept_bwrap_sha256": [probe_mutations.sha256(copy).upper()]},
                     env={"PATH": os.path.dirname(copy) + ":" + path})
    assert res["passed"] is True and [d["code"] for d in res["diagnostics"]] == ["probe_bwrap_accepted"], res
    res = run_module("metnos.sandbox.sandbox_probe", {"unit": "", "accept_bwrap_sha256": ["not-a-digest"]}, check=False)
    assert res.get("failed") and res.get("code") == "invalid_option", res
    res = run_module("metnos.sandbox.sandbox_probe", {"unit": ""},
                     env={"PATH": os.path.dirname(bench.fakes["exec"]) + ":" + path})
    codes = sorted(d["code"] for d in res["diagnostics"])
    assert res["passed"] is False and codes == ["probe_bwrap_unpackaged", "probe_not_isolated"], codes
    assert res["evidence"]["child_pid"] is None and res["observed_uid"] == bench.nobody.pw_uid


def test_module_as_root_fails_as_root_is_not_contained():
    """Run as uid 0, bwrap keeps root's capabilities in the sandbox's user namespace (measured: the
    payload remounts /usr read-write and writes the host's /usr). The profile's checks still pass - the mounts
    are as the profile says when the payload starts - but a second run of the same argv proves from the host's
    /proc that root remounts a read-only bind writable and opens /proc/sys for writing (nothing written): the
    probe fails with probe_root_not_contained (issue 40; before, it passed with the warning
    probe_payload_root). The host's own mount table is untouched."""
    from conftest import run_module
    with open("/proc/self/mountinfo") as handle:
        before = handle.read()
    res = run_module("metnos.sandbox.sandbox_probe", {"unit": "", "probe_user": "root"})
    assert res["passed"] is False and all(c["ok"] for c in res["checks"]), res["diagnostics"]
    assert [d["code"] for d in res["diagnostics"]] == ["probe_root_not_contained"]
    proof = res["root_proof"]
    assert proof["remounted"] and proof["sys_writable"] and proof["outside"]["mount_options"][0] == "rw", proof
    caps = [c for c in res["checks"] if c["name"] == "no_capabilities"][0]
    assert caps["ok"] and caps["observed"]["uid"] == 0 and caps["observed"]["capamb"] == 0
    with open("/proc/self/mountinfo") as handle:
        assert handle.read() == before


def test_root_proof_is_seen_from_outside_and_nobody_is_contained(strict):
    """The proof itself, on the strict profile's argv: as root the host's /proc shows the witness's read-only
    bind remounted rw in its own mount namespace and a /proc/sys descriptor open for writing; the same argv
    started as nobody (setpriv before bwrap) shows neither - the kernel refused. Mutations run, each failing this
    test and the module's: the witness remounting with MS_RDONLY kept; the outside counting only read-only
    /proc/sys descriptors; root_proof.diagnostics answering nothing."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import root_proof
    argv = strict["argv"]
    root = root_proof.prove(argv, probe_mutations.PYTHON, strict.get("descriptors"))
    assert root["proven"] and root["remounted"] and root["sys_writable"], root
    assert root["inside"]["remount"]["before"][0] == "ro"
    assert [d["code"] for d in root_proof.diagnostics(root, "root")] == ["probe_root_not_contained"]
    nobody = root_proof.prove(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + list(argv),
                              probe_mutations.PYTHON, strict.get("descriptors"))
    assert nobody["proven"] and not nobody["remounted"] and not nobody["sys_writable"], nobody
    assert nobody["inside"]["remount"]["error"] == "Operation not permitted"
    assert nobody["outside"]["mount_options"][0] == "ro" and root_proof.diagnostics(nobody, "nobody") == []


def test_argv_words_the_profile_does_not_have_are_named(bench, strict):
    """The probe judges the kernel's evidence, never argv words; it names the words a run added or
    removed, in the verdict and in each failure's message, so a failure can be traced to its cause."""
    row = [r for r in probe_mutations.ROWS if r.name == "harmless_words"][0]
    verdict, _failed = probe_mutations.run_row(row, "nobody", bench, strict)
    assert verdict["passed"] is True
    assert verdict["argv_deviations"] == {"added": ["--new-session", "--hostname metnos-x", "--remount-ro /tmp",
                                                    "--unshare-cgroup"], "removed": []}
    row = [r for r in probe_mutations.ROWS if r.name == "ro_bind_other_source"][0]
    verdict, _failed = probe_mutations.run_row(row, "nobody", bench, strict)
    (diag,) = verdict["diagnostics"]
    assert diag["message"].endswith("(the argv run is not the profile's: added --ro-bind /root /etc; "
                                    "removed --ro-bind /etc /etc)")
    verdict, _failed = probe_mutations.run_row(probe_mutations.ROWS[0], "nobody", bench, strict)
    assert "argv_deviations" not in verdict
