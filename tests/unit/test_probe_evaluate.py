"""The probe's judgement, offline: both witnesses agree -> pass; a refusal (EACCES/EPERM) or an
unreadable link is 'not proven', never proof; each outcome gets its own code. The real runs (bwrap
as root and nobody, look-alikes) are in tests/integration/test_probe_matrix.py."""
import copy
import json
import os
import socket

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import verdicts
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import holdings, procfs
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import (
    attributes,
    evidence,
    held,
    keyrings,
    payload,
    payload_script,
    proc_covers,
    runners,
    witness,
)
from helpers import forked

MOUNTINFO = """\
300 200 0:90 /newroot / rw,nosuid,nodev,relatime - tmpfs tmpfs rw
301 300 254:0 /usr /usr ro,nosuid,nodev,relatime - ext4 /dev/vda rw
302 300 254:0 /srv/data /data rw,nosuid,nodev,relatime - ext4 /dev/vda rw
303 300 0:91 / /tmp rw,nosuid,nodev,relatime - tmpfs tmpfs rw
304 300 0:21 / /proc rw,nosuid,nodev,relatime - proc proc rw
"""
HOST_MOUNTS = procfs.parse_mountinfo("""\
22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
24 22 0:30 / /dev/shm rw - tmpfs tmpfs rw
""")
BWRAP_ID = (254, 7)
HOST_NS = {"user": "user:[1]", "mnt": "mnt:[2]", "ipc": "ipc:[3]", "uts": "uts:[4]", "net": "net:[5]",
           "pid": "pid:[6]", "cgroup": "cgroup:[7]"}
SANDBOX_NS = dict(HOST_NS, user="user:[11]", mnt="mnt:[12]", net="net:[15]")
SPEC = {"token": "t0k", "unshare": ["user", "mnt", "net"], "ns": list(procfs.NS_KINDS), "ro": ["/usr"], "rw": ["/data"],
        "tmpfs": ["/tmp"], "dev": [], "proc": ["/proc"], "absent": ["/home"], "net_unshared": True,
        "die_with_parent": True, "rules": {"/usr": "R-BASE-1", "/data": "R-CAP-FS", "/tmp": "R-BASE-3"},
        "binds": {"/usr": "/usr", "/data": "/srv/data"}}
# what the kernel applies to a process beyond its namespaces (holdings.process_attributes), the probe's and the
# payload's alike in a good run
ATTRIBUTES = {"personality": 0, "oom_score_adj": 0, "priority": 20, "nice": 0, "rt_priority": 0, "policy": 0,
              "limits": {"Max open files": [1024, 4096], "Max processes": [-1, -1], "Max core file size": [0, -1]}}
PRIV = {"capinh": 0, "capprm": 0, "capeff": 0, "capbnd": 0, "capamb": 0, "nonewprivs": 1, "seccomp": 0,
        "seccomp_filters": 0}

# the payload's keyrings (payload_script.keyrings): its user namespace's own user-session keyring as its session
# keyring, the user keyring the kernel links in it; the probe's (keyrings.own) are other serials
KEYRINGS = {"session": 501, "user": 500, "user_session": 501,
            "keys": [["session", 500, "keyring", "0", "65534", "1f3f0000"],
                     ["user_session", 500, "keyring", "0", "65534", "1f3f0000"]],
            # what /proc/keys shows the payload beyond keyrings: a kernel certificate (public, not a finding)
            "visible": [[600, "asymmetric", 0, 0, "1f010000"]]}


def good():
    obs = {"metnos_probe": "t0k", "pid": 4242, "uid": 65534, "ns": dict(SANDBOX_NS), "proc_self": "4242",
           "proc": {"/proc": {"type": payload.PROC_SUPER_MAGIC, "dev": "0:21", "flags": "rw"}},
           "interfaces": ["lo"], "ro": {"/usr": {"type": 0xEF53, "dev": "254:0", "flags": "ro"}},
           "rw": {"/data": "writable"}, "absent": {"/home": "absent"},
           "tmpfs": {"/tmp": {"type": payload.TMPFS_MAGIC, "dev": "0:91", "flags": "rw", "entries": []}},
           "pdeathsig": 9, "keyrings": copy.deepcopy(KEYRINGS), "securebits": 0}
    outside = {"launcher": 4241, "child_pid": 4242, "child_ppid": 4241, "payload_pids": [4242], "payload_pid": 4242,
               "payload": {"ppid": 4241, "nspid": [4242], "uid": 65534, "ns": dict(SANDBOX_NS), "read_by": "probe",
                           "mounts": procfs.parse_mountinfo(MOUNTINFO), "interfaces": ["lo"], "privileges": dict(PRIV),
                           "fds": dict((str(n), {"link": "pipe:[%d]" % n, "type": "fifo"}) for n in range(3)),
                           "mapped": [["254:0", 11, "/usr/bin/python3.11"], ["254:0", 12, "/usr/lib/libc.so.6"]],
                           # the outside's reading of where each pipe leads (the probe's own pipes: it holds the
                           # other ends), the session and the root's own content
                           "fd_holders": {"own_pipes": ["pipe:[0]", "pipe:[1]", "pipe:[2]"], "held": {},
                                          "comm": {}, "unreadable": 0, "sandbox": [4242]},
                           "session": {"pgrp": 4100, "session": 4100, "tty_nr": 0, "tty": "0:0"},
                           "root_entries": [], "attributes": copy.deepcopy(ATTRIBUTES)},
               "collectors": [4000],
               "parent": {"pid": 4241, "ns": dict(HOST_NS), "exe": "/usr/bin/bwrap", "exe_id": list(BWRAP_ID),
                          "read_by": "probe", "mounts": HOST_MOUNTS}}
    host = {"ns": dict(HOST_NS), "mounts": HOST_MOUNTS, "privileges": dict(PRIV), "trusted_bwrap": [list(BWRAP_ID)],
            "attributes": copy.deepcopy(ATTRIBUTES), "keyrings": {"user": 400, "user_session": 401}, "securebits": 0,
            "covers": {"asked": dict((n, "not writable") for n in proc_covers.COVER_NAMES), "covers": [], "as": [65534,
                                                                                                                 65534],
                       "root": "/"}}
    return obs, outside, host


def failed(obs, outside, host, spec=SPEC):
    return dict((c["name"], c) for c in evidence.evaluate(spec, obs, outside, host) if not c["ok"])


# The run's tree as the runner reports it (proctree.Ledger.report): the launcher, the payload, nothing else.
TREE = {"seen": [[4241, [{"pid": 4241, "comm": "bwrap", "exe_id": [254, 7], "argv": ["bwrap"]}], ["during"]],
                 [4242, [{"pid": 4242, "comm": "mp-t0k", "exe_id": [254, 11], "argv": ["python3"],
                          "ns": dict(SANDBOX_NS)}], ["checked"]]],
        "before": None, "reaped": [], "reaper": {"pid": 4240, "subreaper": True}, "truncated": False,
        "unreadable": False}
TRUST = {"bwrap": {"path": "/usr/bin/bwrap", "realpath": "/usr/bin/bwrap", "ident": list(BWRAP_ID), "sha256": "0" * 64,
                   "package": {"manager": "dpkg", "name": "bubblewrap", "revision": "0.8.0-2"}, "state": "packaged",
                   "detail": "", "trusted": True}, "packaged": None, "ids": [list(BWRAP_ID)]}


def verdict(obs, outside, host, result=None):
    res = {"rc": 0, "stderr": "", "json_status": {"child-pid": 4242, "exit-code": 0}, "timed_out": False,
           "tree": copy.deepcopy(TREE), "pid": 4241,
           "duration": 0.1}
    res.update(result or {})
    started = runners.Started(shown=["bwrap", "<payload>"], spec=SPEC, host=host, user=None, timeout=5,
                              trust=copy.deepcopy(TRUST), payload=["python3", "-I", "-S", "-c", "PAYLOAD", "{}"])
    return runners.run_verdict(started, res, obs, outside)


@pytest.mark.rule("R-DIAG-3")
def test_both_witnesses_agree_passes():
    obs, outside, host = good()
    assert failed(obs, outside, host) == {}
    v = verdict(obs, outside, host)
    assert verdicts.probe_passed(v) is True and v["diagnostics"] == [] and v["passed"] is True


def test_unreadable_namespace_links_are_not_proven():
    obs, outside, host = good()
    outside["payload"]["ns"] = dict((k, "error:EACCES") for k in procfs.NS_KINDS)
    bad = failed(obs, outside, host)
    assert {"user_namespace_private", "mnt_namespace_private", "net_namespace_private", "no_pid_namespace"} <= set(bad)
    assert "not proven: error:EACCES" in bad["user_namespace_private"]["observed"]["problems"]


def test_refused_statvfs_or_lstat_is_not_proof():
    obs, outside, host = good()
    obs["ro"]["/usr"] = {"type": "error:EACCES", "dev": "error:EACCES", "flags": "error:EACCES"}
    obs["absent"]["/home"] = "error:EACCES"
    bad = failed(obs, outside, host)
    assert "inside: not proven (error:EACCES)" in bad["read_only:/usr"]["observed"]["problems"]
    assert "not proven: lstat gave error:EACCES" in bad["hidden:/home"]["observed"]["problems"]


def test_write_refused_by_permissions_is_not_writable():
    obs, outside, host = good()
    obs["rw"]["/data"] = "error:EACCES"
    assert set(failed(obs, outside, host)) == {"writable:/data"}


def test_read_only_needs_mount_flags_outside_too():
    obs, outside, host = good()
    outside["payload"]["mounts"] = procfs.parse_mountinfo(MOUNTINFO.replace("/usr ro,", "/usr rw,"))
    bad = failed(obs, outside, host)
    assert set(bad) == {"read_only:/usr"} and "outside: /usr is mounted rw" in bad["read_only:/usr"]["observed"][
        "problems"][0]


def test_tmp_on_a_known_device_or_not_empty_is_not_fresh():
    obs, outside, host = good()
    mounts = MOUNTINFO.replace("0:91 / /tmp", "0:30 / /tmp")        # the host's /dev/shm tmpfs
    outside["payload"]["mounts"] = procfs.parse_mountinfo(mounts)
    obs["tmpfs"]["/tmp"]["dev"] = "0:30"
    assert set(failed(obs, outside, host)) == {"fresh_tmpfs:/tmp"}
    obs, outside, host = good()
    obs["tmpfs"]["/tmp"]["entries"] = ["leftover"]
    assert set(failed(obs, outside, host)) == {"fresh_tmpfs:/tmp"}


def test_proc_not_proven_voids_the_inside_witness_only():
    obs, outside, host = good()
    obs["proc_self"] = "error:ENOENT"                 # a procfs of another PID namespace
    obs["ns"] = dict((k, "error:ENOENT") for k in procfs.NS_KINDS)
    bad = failed(obs, outside, host)
    assert set(bad) == {"proc_is_own_procfs"}         # the outside witness still proves the namespaces


def test_witnesses_that_disagree_fail():
    obs, outside, host = good()
    obs["ns"]["net"] = "net:[99]"
    bad = failed(obs, outside, host)
    assert set(bad) == {"net_namespace_private"}
    assert "witnesses disagree" in bad["net_namespace_private"]["observed"]["problems"][0]


def test_no_child_pid_alone_is_a_failed_check():
    """The evidence chain is broken (no child-pid) but everything else proves a sandbox: a failed check."""
    obs, outside, host = good()
    outside.update(child_pid=None, child_ppid=None)
    v = verdict(obs, outside, host, {"json_status": {}})
    assert [d["code"] for d in v["diagnostics"]] == ["probe_check_failed"]
    assert v["setup_failed"] is False and "bwrap wrote no child-pid record" in v["diagnostics"][0]["message"]


def test_no_child_pid_and_host_view_means_not_isolated():
    obs, outside, host = good()
    outside.update(child_pid=None, child_ppid=None)
    obs["tmpfs"]["/tmp"]["entries"] = ["host-file"]
    v = verdict(obs, outside, host, {"json_status": {}})
    assert [d["code"] for d in v["diagnostics"]] == ["probe_not_isolated"]
    assert "bwrap_child_is_payload" in v["diagnostics"][0]["message"]


def test_shared_namespaces_mean_not_isolated():
    obs, outside, host = good()
    outside["payload"]["ns"] = dict(HOST_NS)
    obs["ns"] = dict(HOST_NS)
    v = verdict(obs, outside, host)
    assert [d["code"] for d in v["diagnostics"]] == ["probe_not_isolated"]


def test_one_shared_namespace_is_a_check_failure():
    obs, outside, host = good()
    outside["payload"]["ns"]["net"] = obs["ns"]["net"] = HOST_NS["net"]
    v = verdict(obs, outside, host)
    assert [d["code"] for d in v["diagnostics"]] == ["probe_check_failed"]
    assert v["diagnostics"][0]["details"]["check"] == "net_namespace_private"


@pytest.mark.parametrize("result,code,text", [
    ({"rc": 1, "stderr": "bwrap: Can't find source path /nope: No such file or directory\n",
      "json_status": {"child-pid": 7}}, "probe_setup_failed", "bwrap said: bwrap: Can't find source path /nope"),
    ({"rc": 0, "json_status": {}}, "probe_setup_failed", "does not behave like bwrap"),
    ({"rc": 1, "stderr": "Traceback ...\nImportError: x\n", "json_status": {"child-pid": 7, "exit-code": 1}},
     "probe_payload_failed", "did not report: it exited 1"),
    ({"timed_out": True, "rc": None}, "probe_timeout", "did not finish"),
])
def test_each_outcome_has_its_own_code(result, code, text):
    _obs, _outside, host = good()
    v = verdict(None, None, host, result)
    assert [d["code"] for d in v["diagnostics"]] == [code]
    assert text in v["diagnostics"][0]["message"]
    assert v["setup_failed"] is (code == "probe_setup_failed")


def test_the_verdict_names_what_the_run_started():
    """Started's fields reach the findings: the run's user, the bwrap tool named and its timeout (issue 55)."""
    _obs, _outside, host = good()
    res = {"rc": 0, "stderr": "", "json_status": {}, "timed_out": False, "tree": copy.deepcopy(TREE), "pid": 4241,
           "duration": 0.1}
    started = runners.Started(shown=["bwrap", "<payload>"], spec=SPEC, host=host, user={"name": "metnos"},
                              timeout=5, tool="/opt/look-alike", trust=copy.deepcopy(TRUST))
    said = runners.run_verdict(started, res, None, None)["diagnostics"][0]["message"]
    assert "as metnos" in said and "/opt/look-alike exited with status 0" in said
    timed = runners.run_verdict(started._replace(timeout=7), dict(res, timed_out=True, rc=None), None, None)
    assert "7" in timed["diagnostics"][0]["message"]


def test_timeout_after_the_payload_was_read_still_judges_it():
    """A look-alike that never exits after running the payload unsandboxed: the evidence read while the
    payload waited is judged, and the timeout is reported too; a sandbox that holds but timed out fails."""
    obs, outside, host = good()
    outside["payload"]["ns"] = dict(HOST_NS)
    obs["ns"] = dict(HOST_NS)
    v = verdict(obs, outside, host, {"timed_out": True, "rc": None, "json_status": {"child-pid": 4242}})
    assert sorted(d["code"] for d in v["diagnostics"]) == ["probe_not_isolated", "probe_timeout"]
    assert verdicts.probe_passed(v) is False and v["setup_failed"] is False and v["checks"]
    obs, outside, host = good()
    v = verdict(obs, outside, host, {"timed_out": True, "rc": None, "json_status": {"child-pid": 4242}})
    assert [d["code"] for d in v["diagnostics"]] == ["probe_timeout"] and verdicts.probe_passed(v) is False
    assert "its checks are judged" in v["diagnostics"][0]["message"] and all(c["ok"] for c in v["checks"])


def test_timeout_without_the_outside_reading_judges_nothing():
    """The payload's line arrived but the outside never read its process: nothing is proven either way."""
    obs, _outside, host = good()
    v = verdict(obs, None, host, {"timed_out": True, "rc": None, "json_status": {"child-pid": 4242}})
    assert [d["code"] for d in v["diagnostics"]] == ["probe_timeout"] and v["checks"] == []
    assert "its checks are judged" not in v["diagnostics"][0]["message"]


@pytest.mark.parametrize("info,status,exceeded", [
    ({"result": "timeout", "main": "code=killed/status=TERM"}, {"child-pid": 7}, True),     # RuntimeMaxSec= hit
    ({"result": "timeout", "main": "code=exited/status=0"}, {"child-pid": 7, "exit-code": 0}, False),
    # a look-alike (no status records) exited on its own; only the stop timed out on what it left in the unit
    ({"result": "timeout", "main": "code=exited/status=0"}, {}, False),
    ({"result": "success", "main": "code=exited/status=0"}, {}, False),
])
def test_systemd_timeout_is_the_runtime_limit_only_when_it_killed_the_main_process(info, status, exceeded):
    assert runners.runtime_exceeded(info, status) is exceeded


def test_stream_records_and_launcher():
    stream = (b'{"launcher-pid": 41}\n{ "child-pid": 42, "net-namespace": 5 }\nnoise {"x": \n'
              b'{"metnos_probe": "t0k", "pid": 42}\n{ "exit-code": 0 }\n{"partial": ')
    launcher, status, obs = witness.split_stream(witness.records(stream), "t0k")
    assert launcher == 41 and status == {"child-pid": 42, "net-namespace": 5, "exit-code": 0}
    assert obs == {"metnos_probe": "t0k", "pid": 42}


def test_mountinfo_parsing():
    mounts = procfs.parse_mountinfo("36 35 98:0 /mnt1 /mnt\\0402 rw,noatime master:1 - ext3 /dev/root "
                                    "rw,errors=continue\n"
                                    "37 36 0:5 / /mnt\\0402 ro shared:2 - tmpfs none ro\n")
    assert mounts[0]["mountpoint"] == "/mnt 2" and mounts[0]["fstype"] == "ext3"
    top = procfs.mount_at(mounts, "/mnt 2")
    assert top["id"] == "37" and procfs.read_only(top)
    assert procfs.covering_mount(mounts, "/mnt 2/x/y")["id"] == "37"
    assert procfs.covering_mount(copy.deepcopy(mounts[:1]), "/other") is None


def test_namespaces_are_judged_against_the_parent_context_not_bwraps_own():
    """A wrapper that leaves its parent's namespaces after starting the sandbox makes everything
    differ from "bwrap's own": the reference is the context bwrap was started in."""
    obs, outside, host = good()
    spec = dict(SPEC, unshare=["user", "mnt", "ipc", "net"])
    outside["parent"]["ns"] = dict(HOST_NS, user="user:[31]", ipc="ipc:[33]")    # the launcher moved
    bad = failed(obs, outside, host, spec)
    assert set(bad) == {"bwrap_child_is_payload", "ipc_namespace_private"}
    assert "no longer in its parent context's namespaces (user, ipc)" in bad["bwrap_child_is_payload"][
        "observed"]["problems"][0]
    assert bad["ipc_namespace_private"]["observed"]["problems"] == ["shared with the probe that started bwrap"]


def test_a_units_context_read_before_bwrap_ran_is_the_reference():
    obs, outside, host = good()
    unit_ns = dict(HOST_NS, net="net:[55]")                       # PrivateNetwork=yes
    outside["parent"]["ns"] = dict(unit_ns)
    outside["context"] = {"covers": host["covers"],
                          "ns": dict(unit_ns), "mounts": HOST_MOUNTS, "from": "the unit's process (pid 4241)",
                          "attributes": copy.deepcopy(ATTRIBUTES)}
    assert failed(obs, outside, host) == {}
    outside["payload"]["ns"]["net"] = obs["ns"]["net"] = "net:[55]"   # the unit's network, not a new one
    bad = failed(obs, outside, host)
    assert set(bad) == {"net_namespace_private"}
    assert "shared with the unit's process (pid 4241)" in bad["net_namespace_private"]["observed"]["problems"]
    outside["context"] = {"error": "ProcessLookupError"}            # unreadable: bwrap's own links, said so
    bad = failed(obs, outside, host)
    assert "the parent context was unreadable" in bad["net_namespace_private"]["observed"]["parent_from"]


def test_visible_mounts_skip_covered_and_shadowed_ones():
    mounts = procfs.parse_mountinfo("""\
1 0 0:1 /newroot / rw - tmpfs tmpfs rw
2 1 8:1 /root /etc ro - ext4 /dev/sda rw
3 2 8:1 /etc /etc ro - ext4 /dev/sda rw
4 1 8:1 /home /x/y ro - ext4 /dev/sda rw
5 1 0:9 / /x rw - tmpfs tmpfs rw
6 3 0:7 / /etc/sub ro - tmpfs tmpfs rw
""")
    # 2 is covered by 3 at /etc; 4 was mounted before 5 covered /x: neither is reachable
    assert sorted(m["id"] for m in procfs.visible_mounts(mounts)) == ["1", "3", "5", "6"]
    assert procfs.source_of(mounts, "/etc/passwd") == ("8:1", "/etc/passwd")
    assert procfs.bind_tree(mounts, "/etc")["sub"] == set([("0:7", "/")])


def _with_mounts(outside, extra):
    outside["payload"]["mounts"] = procfs.parse_mountinfo(MOUNTINFO + extra)


def test_a_mount_outside_the_declared_destinations_fails():
    obs, outside, host = good()
    _with_mounts(outside, "305 300 254:0 /var/lib /x rw - ext4 /dev/vda rw\n")     # --bind /var/lib /x
    bad = failed(obs, outside, host)
    assert set(bad) == {"no_undeclared_mounts"}
    assert "mounted but not declared: /x (ext4 254:0 /var/lib)" in bad["no_undeclared_mounts"]["observed"][
        "problems"][0]


def test_a_bind_of_another_host_path_fails_at_the_destination_and_below():
    obs, outside, host = good()
    outside["payload"]["mounts"] = procfs.parse_mountinfo(MOUNTINFO.replace("254:0 /usr /usr", "254:0 /root /usr"))
    assert set(failed(obs, outside, host)) == {"bind_source:/usr"}
    obs, outside, host = good()
    _with_mounts(outside, "305 301 254:0 /root /usr/local ro - ext4 /dev/vda rw\n")
    bad = failed(obs, outside, host)
    assert set(bad) == {"bind_source:/usr"}
    assert "/usr/local (ext4 254:0 /root)" in bad["bind_source:/usr"]["observed"]["problems"][0]
    obs, outside, host = good()              # a bind of the same host path below (same files): fine
    _with_mounts(outside, "305 301 254:0 /usr/local /usr/local ro - ext4 /dev/vda rw\n")
    assert failed(obs, outside, host) == {}
    obs, outside, host = good()              # the host's own mount below /usr, as a recursive bind shows it
    host["mounts"] = HOST_MOUNTS + procfs.parse_mountinfo("25 22 0:40 / /usr/share rw - tmpfs tmpfs rw\n")
    _with_mounts(outside, "305 301 0:40 / /usr/share ro - tmpfs tmpfs rw\n")
    assert failed(obs, outside, host) == {}


def test_dev_mounts_must_be_bwraps_binds_of_the_parents_nodes():
    obs, outside, host = good()
    spec = dict(SPEC, dev=["/dev"])
    host["mounts"] = HOST_MOUNTS + procfs.parse_mountinfo("25 22 0:6 / /dev rw - devtmpfs udev rw\n")
    dev = ("306 300 0:95 / /dev rw - tmpfs tmpfs rw\n"
           "307 306 0:6 /null /dev/null rw - devtmpfs udev rw\n"
           "308 306 0:96 / /dev/pts rw - devpts devpts rw\n")
    obs["tmpfs"]["/dev"] = {"type": payload.TMPFS_MAGIC, "dev": "0:95", "flags": "rw", "entries": ["null", "pts",
                                                                                                   "shm"]}
    _with_mounts(outside, dev)
    assert failed(obs, outside, host, spec) == {}
    _with_mounts(outside, dev + "309 306 0:6 /kmsg /dev/full rw - devtmpfs udev rw\n"
                 "310 306 0:30 / /dev/shm rw - tmpfs tmpfs rw\n")
    bad = failed(obs, outside, host, spec)
    assert set(bad) == {"minimal_dev:/dev"}
    assert "/dev/full (devtmpfs 0:6 /kmsg), /dev/shm (tmpfs 0:30 /)" in bad["minimal_dev:/dev"]["observed"][
        "problems"][0]


def _privileges(**kw):
    return dict(PRIV, **kw)


def test_capabilities_and_no_new_privs_are_read_from_outside():
    obs, outside, host = good()
    host["privileges"] = _privileges(capeff=(1 << 41) - 1, capprm=(1 << 41) - 1, capbnd=(1 << 41) - 1)  # root's
    outside["payload"]["privileges"] = _privileges()
    assert failed(obs, outside, host) == {}
    outside["payload"]["privileges"] = _privileges(capeff=1 << 21, capprm=1 << 21, capbnd=1 << 21)   # --cap-add
    bad = failed(obs, outside, host)
    assert set(bad) == {"no_capabilities"}
    assert "CapEff=200000" in bad["no_capabilities"]["observed"]["problems"][0]
    outside["payload"]["uid"] = 0              # root keeps its bounding set by design, never ambient caps
    outside["payload"]["privileges"] = _privileges(capeff=0x1ff, capprm=0x1ff, capbnd=0x1ff)
    assert failed(obs, outside, host) == {}
    outside["payload"]["privileges"] = _privileges(capeff=0x1ff, capprm=0x1ff, capbnd=0x1ff, capamb=0x1ff,
                                                   capinh=0x1ff)
    assert set(failed(obs, outside, host)) == {"no_capabilities", "process_attributes"}     # wider than the probe's
    outside["payload"]["privileges"] = _privileges(nonewprivs=0)
    assert "no_new_privs is 0" in failed(obs, outside, host)["no_capabilities"]["observed"]["problems"][0]


def test_seccomp_filters_are_the_parent_contexts():
    obs, outside, host = good()
    host["privileges"] = _privileges(seccomp=2, seccomp_filters=3)            # e.g. a SystemCallFilter=
    outside["payload"]["privileges"] = _privileges(seccomp=2, seccomp_filters=3)
    assert failed(obs, outside, host) == {}
    outside["payload"]["privileges"] = _privileges(seccomp=2, seccomp_filters=4)
    bad = failed(obs, outside, host)
    assert set(bad) == {"no_custom_seccomp"}
    assert bad["no_custom_seccomp"]["observed"]["problems"] == ["4 seccomp filter(s), the parent context has 3"]
    del outside["payload"]["privileges"]["seccomp_filters"]                  # kernels < 5.9: the mode only
    del host["privileges"]["seccomp_filters"]
    assert failed(obs, outside, host) == {}


def test_a_namespace_another_process_holds_is_not_private():
    obs, outside, host = good()
    outside["payload"]["sharers"] = {"user": [777], "net": []}
    bad = failed(obs, outside, host)
    assert set(bad) == {"user_namespace_private"}
    assert bad["user_namespace_private"]["observed"]["problems"] == ["also held by pid 777 outside the sandbox"]


def test_a_namespace_bound_on_the_host_is_not_private():
    obs, outside, host = good()
    outside["payload"]["sharers"] = {"net": ["a bind of it at /run/netns/x"]}
    bad = failed(obs, outside, host)
    assert set(bad) == {"net_namespace_private"}
    assert bad["net_namespace_private"]["observed"]["problems"] == [
        "also held by a bind of it at /run/netns/x outside the sandbox"]


def test_sharers_finds_the_probes_own_namespaces_held_by_others():
    import os
    mine = payload.host_namespaces()
    held, _unreadable = procfs.sharers({"net": mine["net"]}, [os.getpid()])
    assert held["net"] and os.getpid() not in held["net"]          # pid 1 at least shares the host's


def test_a_directory_descriptor_from_outside_is_a_leak():
    obs, outside, host = good()
    outside["payload"]["fds"]["7"] = {"link": "/", "type": "dir"}
    bad = failed(obs, outside, host)
    assert set(bad) == {"no_leaked_descriptors"}
    assert bad["no_leaked_descriptors"]["observed"]["problems"] == ["descriptors from outside: 7 -> / (dir)"]
    outside["payload"]["fds"] = "error:EACCES"
    assert "not proven" in failed(obs, outside, host)["no_leaked_descriptors"]["observed"]["problems"][0]


def test_code_mapped_from_outside_the_binds_is_foreign():
    obs, outside, host = good()
    outside["payload"]["mapped"].append(["0:90", 5, "/preload.so"])          # on the sandbox's root tmpfs
    bad = failed(obs, outside, host)
    assert set(bad) == {"payload_code_from_binds"}
    assert bad["payload_code_from_binds"]["observed"]["problems"] == [
        "mapped from elsewhere: /preload.so (device 0:90)"]


def test_argv_deviations_are_whole_options():
    prof = ["--unshare-net", "--ro-bind", "/etc", "/etc", "--tmpfs", "/tmp"]
    assert payload.argv_deviations(prof, list(prof)) is None
    run = ["--ro-bind", "/root", "/etc", "--tmpfs", "/tmp", "--cap-add", "ALL", "--weird"]
    assert payload.argv_deviations(prof, run) == {"added": ["--ro-bind /root /etc", "--cap-add ALL", "--weird"],
                                                  "removed": ["--unshare-net", "--ro-bind /etc /etc"]}


def test_pid_namespace_of_a_unit_with_private_pids_is_the_reference():
    """PrivatePIDs=yes: the unit's process (bwrap's parent context) has a PID namespace of its own; the
    payload sees itself with that namespace's number, not the host's."""
    obs, outside, host = good()
    unit_ns = dict(SANDBOX_NS, pid="pid:[16]")
    outside["context"] = {"covers": host["covers"],
                          "ns": dict(HOST_NS, pid="pid:[16]"), "mounts": HOST_MOUNTS, "nspid": [4241, 1],
                          "privileges": dict(PRIV), "from": "the unit's process (pid 4241) before it ran bwrap",
                          "attributes": copy.deepcopy(ATTRIBUTES)}
    outside["parent"]["ns"] = dict(HOST_NS, pid="pid:[16]")
    outside["payload"]["ns"] = unit_ns
    outside["payload"]["nspid"] = [4242, 2]
    obs.update(pid=2, proc_self="2", ns=dict(unit_ns))
    assert failed(obs, outside, host) == {}
    outside["payload"]["nspid"] = [4242, 3, 2]                     # bwrap made one more (--unshare-pid)
    outside["payload"]["ns"] = obs["ns"] = dict(unit_ns, pid="pid:[17]")
    bad = failed(obs, outside, host)
    assert set(bad) == {"no_pid_namespace"}
    assert bad["no_pid_namespace"]["observed"]["problems"] == [
        "differs from the unit's process (pid 4241) before it ran bwrap",
        "the payload is pid 3 outside but sees itself as pid 2"]


def test_unit_pid_translates_a_units_own_pid_numbers(tmp_path):
    def proc(pid, nspid, cgroup):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "status").write_text("Name:\tx\nNSpid:\t%s\n" % "\t".join(map(str, nspid)))
        (tmp_path / str(pid) / "cgroup").write_text("0::%s\n" % cgroup)
    proc(1, [1], "/init.scope")
    proc(150, [150, 1], "/system.slice/metnos-probe-x.service")       # the unit's first process (the launcher)
    proc(160, [160, 1], "/system.slice/other.service")
    proc(170, [170], "/system.slice/metnos-probe-y.service")         # a unit sharing the host's namespace
    assert procfs.unit_pid(1, "metnos-probe-x.service", proc=str(tmp_path)) == 150
    proc(152, [152, 2, 1], "/system.slice/metnos-probe-x.service")    # later: in one more namespace
    assert procfs.unit_pid(1, "metnos-probe-x.service", proc=str(tmp_path)) is None        # two candidates: none
    assert procfs.unit_pid(2, "metnos-probe-x.service", level=1, proc=str(tmp_path)) == 152
    assert procfs.unit_pid(1, "metnos-probe-x.service", level=2, proc=str(tmp_path)) == 152
    assert procfs.unit_pid(170, "metnos-probe-y.service", proc=str(tmp_path)) == 170
    assert procfs.unit_pid(3, "metnos-probe-x.service", proc=str(tmp_path)) is None


# ---- what the sandbox holds (issue 41): fixtures of the outside's readings; the real plants are the matrix's rows
# (tests/helpers/probe_mutations.py: pipe_to_outside, pty_master, tun_attached, ctty_inherited, ...)

def test_a_pipe_another_process_outside_holds_leads_outside():
    obs, outside, host = good()
    outside["payload"]["fds"]["7"] = {"link": "pipe:[77]", "type": "fifo"}
    outside["payload"]["fd_holders"]["held"]["pipe:[77]"] = [4242, 5151]
    outside["payload"]["fd_holders"]["comm"] = {"5151": "sh"}
    bad = failed(obs, outside, host)
    assert set(bad) == {"no_leaked_descriptors"}
    assert bad["no_leaked_descriptors"]["observed"]["kinds"] == [
        ["outside", "7 -> pipe:[77], also held by pid 5151 (sh) outside the sandbox"]]
    outside["payload"]["fd_holders"]["held"]["pipe:[77]"] = [4242, 4243]       # a pipe of the sandbox's own:
    outside["payload"]["fd_holders"]["sandbox"] = [4242, 4243]                 # its other end held by a child
    outside["payload"]["fd_holders"]["ends"] = {"pipe:[77]": {"read": [4243], "write": [4242]}}
    assert failed(obs, outside, host) == {}


# (which processes hold the pipe, which end each holds; the end the payload holds; what the check says)
_PIPE_ENDS = [
    ([4242], {"read": [], "write": [4242]}, "unseen: no one holds the read end (in flight in a socket's queue)"),
    ([4241, 4242], {"read": [], "write": [4241, 4242]}, "unseen: bwrap holds the same end, not the other"),
    ([4242], {"read": [4242], "write": [4242]}, None),
    ([4242], {"write": []}, "unseen: which end the payload holds was not read"),
    ([4242], None, "unseen: the ends were not read"),
    ([4241, 4242], {"read": [4241], "write": [4242]}, None),
]


@pytest.mark.parametrize("holders, ends, says", _PIPE_ENDS)
def test_a_pipe_whose_other_end_is_not_found_inside_fails(holders, ends, says):
    """Deny by default (issue 51): a pipe beyond the stdio slots passes only when a process of the sandbox (or
    bwrap, or the probe) holds the end of the other direction; an end nobody is seen holding is unknown, a
    finding of its own kind (probe_descriptor_unseen). The real plants: the matrix's pipe_in_flight and
    pipe_thread_table rows."""
    obs, outside, host = good()
    outside["payload"]["fds"]["7"] = {"link": "pipe:[77]", "type": "fifo"}
    outside["payload"]["fd_holders"]["held"]["pipe:[77]"] = holders
    if ends is not None:
        outside["payload"]["fd_holders"]["ends"] = {"pipe:[77]": ends}
    bad = failed(obs, outside, host)
    if says is None:
        assert bad == {}
        return
    assert set(bad) == {"no_leaked_descriptors"}, says
    kinds = bad["no_leaked_descriptors"]["observed"]["kinds"]
    assert [k for k, _what in kinds] == ["unseen"], (says, kinds)


def test_a_pipe_end_held_in_a_threads_own_table_is_found(tmp_path):
    """Real: a thread that called unshare(CLONE_FILES) holds the read end of a pipe in a table of its own, absent
    from /proc/PID/fd; fd_holders finds it in /proc/PID/task/TID/fd, with the end's direction."""
    import ctypes
    import threading
    r, w = os.pipe()
    link = "pipe:[%d]" % os.fstat(r).st_ino
    ready, done = threading.Event(), threading.Event()

    def hold():
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.unshare(0x400) == 0          # CLONE_FILES: this thread's own copy of the table
        os.close(w)                              # in the copy only
        ready.set()
        done.wait(10)
        os.close(r)

    worker = threading.Thread(target=hold)
    worker.start()
    try:
        ready.wait(10)
        os.close(r)                              # the main table keeps the write end only
        with open("/proc/self/fd/%d" % w):
            pass
        main_table = [os.readlink("/proc/self/fd/" + n) for n in os.listdir("/proc/self/fd")
                      if os.path.exists("/proc/self/fd/" + n)]
        assert main_table.count(link) == 1       # canary: the read end is not in the process's table
        found = holdings.fd_holders([link])
        assert found.held == {link: [os.getpid()]}
        assert found.ends[link]["read"] == [os.getpid()] and found.ends[link]["write"] == [os.getpid()]
    finally:
        done.set()
        worker.join()
        os.close(w)


def test_stdio_must_be_the_probes_own_pipes():
    obs, outside, host = good()
    outside["payload"]["fd_holders"]["own_pipes"].remove("pipe:[2]")       # not one of the probe's pipes
    outside["payload"]["fd_holders"]["held"]["pipe:[2]"] = [4241, 4242]      # bwrap's and the payload's only
    bad = failed(obs, outside, host)
    assert bad["no_leaked_descriptors"]["observed"]["problems"] == [
        "2 -> pipe:[2]: the payload's stderr is not the probe's own pipe (held by pid 4241 (?), pid 4242 (?))"]
    del outside["payload"]["fd_holders"]                                    # not read: not proven
    assert "not proven" in failed(obs, outside, host)["no_leaked_descriptors"]["observed"]["problems"][0]


def test_devices_are_judged_by_their_numbers():
    obs, outside, host = good()
    fds = outside["payload"]["fds"]
    fds["5"] = {"link": "/dev/null", "type": "chr", "rdev": "1:3"}
    assert failed(obs, outside, host) == {}
    fds["6"] = {"link": "/dev/null", "type": "chr", "rdev": "1:11"}          # kmsg under another name
    fds["7"] = {"link": "/dev/pts/3", "type": "chr", "rdev": "136:3"}
    fds["8"] = {"link": "net:[4026532000]", "type": "reg"}
    fds["9"] = {"link": "anon_inode:[pidfd]", "type": "anon"}
    fds["10"] = {"link": "/dev/sda", "type": "blk", "rdev": "8:0"}
    kinds = failed(obs, outside, host)["no_leaked_descriptors"]["observed"]["kinds"]
    assert [k for k, _w in kinds] == ["device", "terminal", "namespace", "pidfd", "block"]


def test_a_controlling_terminal_is_a_failure_naming_tiocsti():
    obs, outside, host = good()
    outside["payload"]["session"] = {"pgrp": 4100, "session": 4100, "tty_nr": 34817, "tty": "136:1"}
    bad = failed(obs, outside, host)
    assert set(bad) == {"no_controlling_terminal"}
    text = bad["no_controlling_terminal"]["observed"]["problems"][0]
    assert "TIOCSTI" in text and "legacy_tiocsti is absent on this kernel" in text
    host["legacy_tiocsti"] = "0"
    assert "legacy_tiocsti = 0" in failed(obs, outside, host)["no_controlling_terminal"]["observed"]["problems"][0]


def test_content_on_the_root_not_created_by_the_profile_is_undeclared():
    obs, outside, host = good()
    spec = dict(SPEC, created=["/bin", "/usr", "/srv/metnos/x"])
    outside["payload"]["root_entries"] = [["bin", "l"], ["srv", "d"], ["srv/metnos", "d"]]
    assert failed(obs, outside, host, spec) == {}
    outside["payload"]["root_entries"].append(["host-secret", "f"])
    bad = failed(obs, outside, host, spec)
    assert bad["root_content_declared"]["observed"]["undeclared"] == ["/host-secret (file)"]


# (what lies at /sbin on the root, whether the check fails) with the profile making /sbin a symlink to usr/sbin
_SBIN = [
    (["sbin", "l", "usr/sbin"], False),
    (["sbin", "f", 1024], True),            # a file copied under the symlink's name (--file FD /sbin)
    (["sbin", "l", "/etc"], True),          # a symlink to another target
    (["sbin", "d", None], True),            # a directory
    (None, True),                           # absent, or covered by a mount
]


@pytest.mark.parametrize("entry, fails", _SBIN)
def test_a_declared_symlink_is_judged_by_type_and_target(entry, fails):
    """Issue 51: a declared symlink must be a symlink with the declared target. The real plant: the matrix's
    symlink_made_file row (--symlink usr/sbin /sbin replaced by --file FD /sbin)."""
    obs, outside, host = good()
    spec = dict(SPEC, created=["/sbin", "/usr"], symlinks={"/sbin": "usr/sbin"})
    outside["payload"]["root_entries"] = [entry] if entry else []
    bad = failed(obs, outside, host, spec)
    assert ("root_content_declared" in bad) == fails, bad
    assert set(bad) <= {"root_content_declared"}


# (the payload's attribute changed, its value, the code the weakening is reported with; None: not a weakening)
_ATTRIBUTE_ROWS = [
    ("personality", 0x0040000, "probe_attribute_personality"),       # setarch -R
    ("nice", -15, "probe_attribute_priority"),
    ("nice", 5, None),                                                # a lower priority
    ("policy", 1, "probe_attribute_priority"),                        # SCHED_FIFO
    ("oom_score_adj", -500, "probe_attribute_oom"),
    ("oom_score_adj", 500, None),
    ("limits", {"Max open files": [1024, -1], "Max processes": [-1, -1], "Max core file size": [0, -1]},
     "probe_attribute_rlimit"),
    ("limits", {"Max open files": [64, 64], "Max processes": [10, 10], "Max core file size": [0, 0]}, None),
    ("limits", {"Max processes": [-1, -1], "Max core file size": [0, -1]}, "probe_attribute_rlimit"),
    ("personality", "error:EACCES", "probe_attribute_personality"),  # not read: not proven
]


@pytest.mark.parametrize("key, value, code", _ATTRIBUTE_ROWS)
def test_process_attributes_are_not_weaker_than_the_starters(key, value, code):
    """Issue 51: each weakening of the payload's attributes against the probe's is reported with its own code.
    The real plants: the matrix's aslr_off and nice_raised rows."""
    obs, outside, host = good()
    outside["payload"]["attributes"][key] = value
    bad = failed(obs, outside, host)
    if code is None:
        assert bad == {}
        return
    assert set(bad) == {"process_attributes"}, bad
    codes = [attributes.ATTRIBUTE_CODES[kind] for kind, _what in bad["process_attributes"]["observed"]["kinds"]]
    assert codes == [code], bad["process_attributes"]["observed"]


def test_no_new_privs_and_seccomp_not_lower_than_the_units():
    obs, outside, host = good()
    outside["context"] = {"ns": dict(HOST_NS), "mounts": HOST_MOUNTS, "privileges": dict(PRIV, nonewprivs=1,
                                                                                         seccomp=2),
                          "attributes": copy.deepcopy(ATTRIBUTES), "from": "the unit's process"}
    bad = failed(obs, outside, host)
    assert "process_attributes" in bad, bad
    assert [kind for kind, _w in bad["process_attributes"]["observed"]["kinds"]] == ["privileges"]


def test_the_kernel_names_a_unix_sockets_peer():
    """Real sockets: the peer of one end of a socket pair is the other end, as sock_diag says (holdings.unix_peer);
    the pair's holders are found in the host's /proc/*/fd (this process)."""
    one, two = socket.socketpair()
    try:
        links = ["socket:[%d]" % os.fstat(s.fileno()).st_ino for s in (one, two)]
        assert holdings.unix_peer(links[0]) == links[1] and holdings.unix_peer(links[1]) == links[0]
        held = holdings.fd_holders(links).held
        assert held == {links[0]: [os.getpid()], links[1]: [os.getpid()]}
        assert holdings.unix_peer("socket:[1]") is None
    finally:
        one.close()
        two.close()


# systemd's invocation_id key as the probe reads it from outside (keyrings.invocation_evidence)
SYSTEMDS_KEY = {"type": "user", "uid": 0, "description": "invocation_id", "content": "matches"}
# (what the outside read of the key named invocation_id differs in, why it is not systemd's)
_NOT_SYSTEMDS = [
    ({"type": "logon"}, "type logon, not user"),
    ({"uid": 65534}, "owner uid 65534, not 0"),                   # planted by the service user
    ({"content": "differs (14 bytes)"}, "not the unit's InvocationID"),
    ({"description": "invocation_id2"}, "another description"),
    ({"error": "error:EACCES"}, "not proven from outside (error:EACCES)"),
    (None, "not proven from outside (not read)"),
]


@pytest.mark.parametrize("change, why", _NOT_SYSTEMDS)
def test_a_key_named_invocation_id_is_systemds_only_on_evidence_from_outside(change, why):
    """Review note (issue 51): a key named invocation_id in the unit's session keyring is systemd's (the info
    finding probe_keyring_unit) only when the probe, from outside, reads it as a user key of uid 0 whose content is
    the unit's InvocationID (systemctl show); anything else is probe_keyring_keys. The real positive: the systemd
    matrix's strict row (tests/system/test_probe_weakened_systemd.py)."""
    obs, outside, host = good()
    obs["keyrings"]["session"] = 777
    obs["keyrings"]["keys"].append(["session", 778, "user", "0", "0", "3f010000", "invocation_id"])
    outside["context"] = {"from": "the unit's process (pid 4240)", "ns": dict(HOST_NS), "mounts": HOST_MOUNTS,
                          "attributes": copy.deepcopy(ATTRIBUTES), "privileges": dict(PRIV)}
    outside["invocation"] = {"unit": "u.service", "keys": {"778": dict(SYSTEMDS_KEY, **change)} if change else {}}
    keyring = [c for c in evidence.evaluate(SPEC, obs, outside, host) if c["name"] == "keyring_own"][0]
    assert not keyring["ok"] and keyring["observed"]["kinds"][-1][0] == "keys", keyring
    assert why in keyring["observed"]["kinds"][-1][1], keyring
    outside["invocation"] = {"error": "keyctl not asked outside"}
    keyring = [c for c in evidence.evaluate(SPEC, obs, outside, host) if c["name"] == "keyring_own"][0]
    assert not keyring["ok"] and "not proven from outside" in keyring["observed"]["kinds"][-1][1], keyring


def test_the_outside_reads_a_key_named_invocation_id_without_keeping_its_content():
    """keyrings.invocation_evidence for real: a user key named invocation_id (made here, in a session keyring of
    this test's own: the probe's reading of a planted one) is read from outside by its serial; its content is
    compared, never kept, and without a unit behind it there is no InvocationID to match."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if os.uname()[4] != "x86_64":
        pytest.skip("x86_64 system call numbers")

    def plant_and_read():       # in a child of its own: a new session keyring, never this process's
        libc.syscall(250, 1, None)                                       # KEYCTL_JOIN_SESSION_KEYRING (anonymous)
        key = libc.syscall(248, b"user", b"invocation_id", b"planted-secret", 14, ctypes.c_int(-3))
        if key <= 0:
            return {"key": key}
        got = keyrings.invocation_evidence({"keys": [["session", key, "user", "0", "0", "3f010000",
                                                      "invocation_id"]]}, "metnos-none.service")
        return {"key": key, "got": got, "why": keyrings.why_not_systemds(key, got)}
    answer = forked.answer_of_child(plant_and_read)
    assert answer["key"] > 0, answer
    entry = answer["got"]["keys"][str(answer["key"])]
    assert entry["description"] == "invocation_id" and entry["type"] == "user", answer
    assert entry["content"] == "differs (14 bytes)" and "planted-secret" not in repr(answer["got"]), answer
    assert answer["why"], answer


# (name, the payload's keyrings changed to, the codes the verdict carries); the probe's are user 400, user-session 401
KEYRING_CASES = [
    ("joined_before", {"session": 777}, ["probe_keyring_shared"]),
    ("probe_user_session", {"session": 401, "user_session": 401}, ["probe_keyring_shared"]),
    ("probe_user", {"user": 400, "keys": [["user_session", 400, "keyring", "0", "65534", "1f3f0000"]]},
     ["probe_keyring_shared"]),
    ("key_of_another", {"keys": KEYRINGS["keys"] + [["session", 9001, "user", "0", "0", "3f010000"]]},
     ["probe_keyring_keys"]),
    # the service user's own user keyring (the host's, its kuid's) holds a key /proc/keys shows inside: reachable
    # by serial (the matrix's keyring_user_key row)
    ("service_user_key", {"visible": [[9002, "user", 65534, 65534, "3f010000"]]}, ["probe_keyring_keys"]),
    ("visible_linked_own", {"keys": KEYRINGS["keys"] + [["session", 9003, "user", "0", "0", "3f010000"]],
                            "visible": [[9003, "user", 0, 0, "3f010000"]]}, ["probe_keyring_keys"]),
    ("visible_unread", {"visible": "error:EACCES"}, ["probe_keyring_keys"]),
    ("visible_not_reported", {"visible": None}, ["probe_keyring_keys"]),
    ("visible_malformed", {"visible": [["error:malformed", "0102136e"]]}, ["probe_keyring_keys"]),
    ("visible_truncated", {"visible": [["error:truncated", 65]]}, ["probe_keyring_keys"]),
    ("no_proc_in_the_sandbox", {"visible": "error:ENOENT"}, []),
    ("unread", {"session": "error:EINVAL"}, ["probe_keyring_shared"]),
    ("not_reported", None, ["probe_keyring_shared"]),
    ("keyctl_refused", {"session": "error:EPERM", "user": "error:EPERM", "user_session": "error:EPERM", "keys": []},
     []),
]


@pytest.mark.parametrize("name,change,codes", KEYRING_CASES, ids=[c[0] for c in KEYRING_CASES])
def test_keyrings_not_its_own_fail_with_their_codes(name, change, codes):
    obs, outside, host = good()
    if change is None:
        del obs["keyrings"]
    else:
        obs["keyrings"].update(change)
    assert set(failed(obs, outside, host)) == ({"keyring_own"} if codes else set()), name
    v = verdict(obs, outside, host)
    assert sorted(set(d["code"] for d in v["diagnostics"]) - {"probe_check_failed"}) == codes, v["diagnostics"]


# Other units' invocation_id keys that /proc/keys shows a root payload (issue 51): the outside's reading of them
# (keyrings.visible_evidence), the probe being in unit metnos-probe-x.service. systemd's key of cron.service:
OTHER_UNITS_KEY = {"type": "user", "uid": 0, "description": "invocation_id", "content": "matches",
                   "unit": "cron.service"}
# (name, the outside's reading of key 9100 changed to (None: not read), the codes the verdict carries, words said)
VISIBLE_CASES = [
    ("another_units", {}, ["probe_keyring_invocation_ids"], "9100 (cron.service)"),
    ("forged_content", {"content": "differs (16 bytes)"}, ["probe_keyring_keys"], "not a unit's InvocationID"),
    ("not_roots", {"uid": 65534}, ["probe_keyring_keys"], "owner uid 65534, not 0"),
    ("other_description", {"description": "invocation_id2"}, ["probe_keyring_keys"], "another description"),
    ("logon_type", {"type": "logon"}, ["probe_keyring_keys"], "type logon, not user"),
    ("the_probes_own_unit", {"unit": "metnos-probe-x.service"}, ["probe_keyring_keys"],
     "the probe's own unit metnos-probe-x.service, not linked"),
    ("unread", {"error": "error:EACCES"}, ["probe_keyring_keys"], "not proven from outside (error:EACCES)"),
    ("not_read", None, ["probe_keyring_keys"], "not proven from outside (not read)"),
]


@pytest.mark.parametrize("name,change,codes,said", VISIBLE_CASES, ids=[c[0] for c in VISIBLE_CASES])
def test_other_units_invocation_keys_are_info_only_on_evidence_from_outside(name, change, codes, said):
    """A root payload views every root service's invocation_id key (systemd makes them uid 0, perm 0x0b0b0000):
    /proc/keys shows it key 9100. It is another unit's (info, probe_keyring_invocation_ids) only when the probe read
    it from outside as a user key of uid 0 named invocation_id whose content is a published InvocationID of a unit
    not the probe's own; anything else stays probe_keyring_keys. The real keys: the next test and
    tests/system/test_probe_weakened_systemd.py (ROOT_ROWS strict)."""
    obs, outside, host = good()
    obs["uid"] = 0
    obs["keyrings"]["visible"].append([9100, "user", 0, 0, "0b0b0000"])
    keys = {} if change is None else {"9100": dict(OTHER_UNITS_KEY, **change)}
    outside["visible"] = {"own_unit": "metnos-probe-x.service", "published": 3, "keys": keys}
    keyring = [c for c in evidence.evaluate(SPEC, obs, outside, host) if c["name"] == "keyring_own"][0]
    assert keyring["ok"] is (codes == ["probe_keyring_invocation_ids"]), keyring
    assert said in keyring["observed"]["kinds"][-1][1], keyring
    v = verdict(obs, outside, host)
    assert sorted(set(d["code"] for d in v["diagnostics"]) - {"probe_check_failed"}) == codes, v["diagnostics"]
    # the canary: without the key /proc/keys shows, nothing is said
    obs["keyrings"]["visible"].pop()
    assert [d["code"] for d in verdict(obs, outside, host)["diagnostics"]] == []
    if change is None:      # no evidence at all (the outside read nothing): the key is a failure
        obs["keyrings"]["visible"].append([9100, "user", 0, 0, "0b0b0000"])
        del outside["visible"]
        assert "keyring_own" in failed(obs, outside, host)


def _plant_keys_and_read(folder, planted):
    """In a child with a session keyring of its own: user keys named invocation_id with the 16 bytes of each hex in
    ``planted``, then keyrings.visible_evidence over them as /proc/keys would show them, with UNITS_FOLDER set to
    ``folder`` (a tuple of components below /). The child's answer as JSON on a pipe."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long

    def plant_and_read():
        libc.syscall(250, 1, None)                                   # KEYCTL_JOIN_SESSION_KEYRING (anonymous)
        rows = []
        for index, content in enumerate(planted):    # each in a keyring of its own, as systemd's are
            data = bytes.fromhex(content)
            holder = libc.syscall(248, b"keyring", b"unit-%d" % index, None, 0, ctypes.c_int(-3))
            key = libc.syscall(248, b"user", b"invocation_id", data, len(data), ctypes.c_int(holder))
            rows.append([key, "user", 0, 0, "3f010000"])
        keyrings.UNITS_FOLDER = folder
        got = keyrings.visible_evidence({"session": 1, "user": 2, "user_session": 3, "keys": [],
                                         "visible": rows}, "metnos-probe-x.service")
        return {"rows": rows, "got": got}
    return forked.answer_of_child(plant_and_read)


def test_published_invocation_ids_are_read_from_a_folder_only_root_can_change(tmp_path):
    """keyrings.visible_evidence for real (as root, x86_64): systemd's links invocation:<unit> -> <32 hex> planted
    in a root-owned folder under /run; a real key holding a published ID of another unit is that unit's, a real key
    holding 16 other bytes (a forgery) and one holding the probe's own unit's ID are not. The folder made group
    writable, or a link in place of a folder, and nothing is read (the keys stay failures)."""
    if os.uname()[4] != "x86_64" or os.geteuid() != 0:
        pytest.skip("x86_64 system call numbers, root to plant under /run")
    import shutil
    import tempfile
    top = tempfile.mkdtemp(prefix="metnos-units-", dir="/run")
    try:
        units = os.path.join(top, "units")
        os.mkdir(units, 0o755)
        cron, mine, forged = "a" * 31 + "1", "b" * 31 + "2", "c" * 31 + "3"
        os.symlink(cron, os.path.join(units, "invocation:cron.service"))
        os.symlink(mine, os.path.join(units, "invocation:metnos-probe-x.service"))
        os.symlink("not-an-id", os.path.join(units, "invocation:odd.service"))
        folder = ("run", os.path.basename(top), "units")
        answer = _plant_keys_and_read(folder, [cron, forged, mine])
        serials = [row[0] for row in answer["rows"]]
        assert all(s > 0 for s in serials), answer
        keys = answer["got"]["keys"]
        assert answer["got"]["published"] == 2 and answer["got"]["own_unit"] == "metnos-probe-x.service", answer
        assert keyrings.why_not_systemds(serials[0], answer["got"]) is None, answer
        assert keys[str(serials[0])]["unit"] == "cron.service"
        assert "not a unit's InvocationID" in keyrings.why_not_systemds(serials[1], answer["got"])
        assert "probe's own unit" in keyrings.why_not_systemds(serials[2], answer["got"])
        assert forged not in json.dumps(answer["got"]) and cron not in json.dumps(keys)   # content never kept
        os.chmod(units, 0o775)                                          # group writable: not root's only
        answer = _plant_keys_and_read(folder, [cron])
        assert "can be changed by others than root (group_writable)" in answer["got"]["error"], answer
        os.chmod(units, 0o755)
        os.rename(units, units + ".real")
        os.symlink(units + ".real", units)                              # a link in place of the folder
        answer = _plant_keys_and_read(folder, [cron])
        assert "error:ELOOP" in answer["got"]["error"] or "error:ENOTDIR" in answer["got"]["error"], answer
    finally:
        shutil.rmtree(top)


def test_the_payloads_list_of_visible_keys_says_when_it_is_cut():
    """payload_script.visible_keys for real: 70 user keys this test adds (in a child with a session keyring of its
    own) are more than the 64 it lists; its last row says the list was cut (a key beyond it is unseen: "not
    proven", probe_keyring_keys, the case visible_truncated). The canary: 10 keys are all listed, uncut."""
    import ctypes
    if os.uname()[4] != "x86_64":
        pytest.skip("x86_64 system call numbers")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    for count, cut in ((10, False), (70, True)):
        def add_and_list(count=count):      # in a child with a session keyring of its own
            libc.syscall(250, 1, None)                                   # KEYCTL_JOIN_SESSION_KEYRING (anonymous)
            keys = [libc.syscall(248, b"user", b"k%d" % n, b"v", 1, ctypes.c_int(-3)) for n in range(count)]
            return {"keys": keys, "rows": payload_script.visible_keys()}
        answer = forked.answer_of_child(add_and_list)
        keys, rows = answer["keys"], answer["rows"]
        listed = [row[0] for row in rows if isinstance(row[0], int)]
        assert all(k > 0 for k in keys), (count, cut, keys)
        if cut:
            assert rows[-1][0] == "error:truncated" and rows[-1][1] >= 70 and len(listed) == 64, (count, rows[-3:])
        else:
            assert set(keys) <= set(listed), (count, keys, listed)


def test_keyrings_of_the_host_user_namespace_are_shared():
    """User keyrings are per user namespace: a payload in the host's has the host's user keyrings."""
    obs, outside, host = good()
    obs["ns"]["user"] = host["ns"]["user"]
    check = evidence.evaluate(SPEC, obs, outside, host)
    keyring = [c for c in check if c["name"] == "keyring_own"][0]
    assert not keyring["ok"] and "the host's user namespace's" in keyring["observed"]["problems"][0], keyring


def test_in_a_unit_its_own_session_keyring_is_its_own_finding():
    """In a transient unit the payload holds the unit's session keyring (KeyringMode=private) with systemd's
    invocation_id key: the check passes with the info finding probe_keyring_unit; another key in it is an error; the
    host's user namespace is still a failure."""
    obs, outside, host = good()
    obs["keyrings"]["session"] = 777
    obs["keyrings"]["keys"].append(["session", 778, "user", "0", "0", "3f010000", "invocation_id"])
    outside["context"] = {"from": "the unit's process (pid 4240)", "ns": dict(HOST_NS), "mounts": HOST_MOUNTS,
                          "attributes": copy.deepcopy(ATTRIBUTES), "privileges": dict(PRIV)}
    outside["invocation"] = {"unit": "metnos-probe-x.service", "keys": {"778": dict(SYSTEMDS_KEY)}}
    checks = evidence.evaluate(SPEC, obs, outside, host)
    keyring = [c for c in checks if c["name"] == "keyring_own"][0]
    assert keyring["ok"] and [k[0] for k in keyring["observed"]["kinds"]] == ["unit", "unit"], keyring
    assert [code for code, _said in keyrings.unit_findings(checks)] == ["probe_keyring_unit"]
    v = verdict(obs, outside, host)
    codes = [d["code"] for d in v["diagnostics"]]
    assert "probe_keyring_unit" in codes and not set(codes) & {"probe_keyring_shared", "probe_keyring_keys"}, codes
    obs["keyrings"]["keys"].append(["session", 779, "user", "0", "0", "3f010000"])     # the service's own key
    keyring = [c for c in evidence.evaluate(SPEC, obs, outside, host) if c["name"] == "keyring_own"][0]
    assert not keyring["ok"] and keyring["observed"]["kinds"][-1][0] == "keys", keyring
    obs["keyrings"]["keys"].pop()
    obs["ns"]["user"] = HOST_NS["user"]       # but the host's user namespace is still a failure
    keyring = [c for c in evidence.evaluate(SPEC, obs, outside, host) if c["name"] == "keyring_own"][0]
    assert not keyring["ok"], keyring


# (SystemCallFilter=/SystemCallErrorNumber= lines of a unit, what they do to keyctl), systemd's merge
UNIT_ACTIONS = [
    ([], "allow"),
    ([["SystemCallFilter", "@system-service"]], "allow"),
    ([["SystemCallFilter", "@system-service"], ["SystemCallFilter", "~@keyring"]], "kill"),
    ([["SystemCallFilter", "@basic-io @mount"]], "kill"),
    ([["SystemCallFilter", "@basic-io"], ["SystemCallErrorNumber", "EPERM"]], "errno"),
    ([["SystemCallFilter", "~@keyring"]], "kill"),
    ([["SystemCallFilter", "~@keyring:EPERM"]], "errno"),
    ([["SystemCallFilter", "~@keyring"], ["SystemCallErrorNumber", "EPERM"]], "errno"),
    ([["SystemCallFilter", "~@keyring:kill"], ["SystemCallErrorNumber", "EPERM"]], "kill"),
    ([["SystemCallFilter", "~@mount @reboot"]], "allow"),
    ([["SystemCallFilter", "~@keyring"], ["SystemCallFilter", ""]], "allow"),
    ([["SystemCallFilter", "~@keyring"], ["SystemCallFilter", "@keyring"]], "allow"),
    ([["SystemCallFilter", "@system-service"], ["SystemCallFilter", "~keyctl:EACCES"]], "kill"),
]


@pytest.mark.parametrize("lines,action", UNIT_ACTIONS, ids=[str(i) for i in range(len(UNIT_ACTIONS))])
def test_what_a_units_filter_does_to_keyctl(lines, action):
    assert keyrings.unit_action([line + ["unit"] for line in lines]) == action


def test_the_plan_names_the_probes_filters_only_when_keyctl_did_not_kill_it():
    assert keyrings.plan({"user": 4, "user_session": 5, "filters": 2}) == {"filters": 2}
    assert keyrings.plan({"killed": 31, "filters": 2}) == {"filters": None}
    assert keyrings.plan({"user": 4, "user_session": 5, "filters": 1},
                         [["SystemCallFilter", "~@keyring:EPERM", "u"]]) == {"filters": 1, "unit": "errno"}


# (the payload's seccomp [mode, filters], the plan, asked or what it reports instead)
ASKED = [
    (["0", 0], {"filters": None}, "asked"),
    (["2", 1], {"filters": 1}, "asked"),
    (["2", 2], {"filters": 1}, "error:not asked"),
    (["2", 2], {"filters": None, "unit": "errno"}, "asked"),
    (["2", 2], {"filters": 1, "unit": "kill"}, "refused:killed"),
    (["2", "unknown"], {"filters": 1}, "error:not asked"),
    (["unknown", "unknown"], None, "error:not asked"),
]


@pytest.mark.parametrize("seccomp,plan,said", ASKED, ids=[str(i) for i in range(len(ASKED))])
def test_the_payload_asks_for_keyrings_only_where_keyctl_cannot_kill_it(monkeypatch, seccomp, plan, said):
    """The payload never forks: it calls keyctl itself or not at all (the fork was reverted, issue 51)."""
    monkeypatch.setattr(payload_script, "seccomp_status", lambda: list(seccomp))
    monkeypatch.setattr(payload_script, "keyrings", lambda: {"session": "asked"})
    assert payload_script.keyrings_asked(plan)["session"] == said


_ALL = (1 << 41) - 1
# (the payload's capability sets, the probe's, whether the payload shares the probe's user namespace, the codes the
# weakening is reported with; [] not a weakening)
_CAPABILITY_ROWS = [
    (dict(capamb=1 << 13, capinh=1 << 13), dict(capbnd=_ALL), True,
     ["probe_attribute_ambient", "probe_attribute_capabilities"]),             # setpriv --ambient-caps +net_raw
    (dict(capbnd=1 << 21), dict(capbnd=1 << 13), True, ["probe_attribute_bounding"]),
    (dict(capbnd=_ALL), dict(capbnd=_ALL & ~(1 << 24)), False, []),           # a new user namespace starts full
    (dict(capbnd=1 << 13), dict(capbnd=_ALL), True, []),                       # a bounding set dropped: stronger
    (dict(capamb=_ALL, capinh=_ALL), dict(capbnd=_ALL), False,
     ["probe_attribute_ambient", "probe_attribute_capabilities"]),             # --cap-add ALL, in its own namespace
    (dict(capprm=_ALL, capeff=_ALL), dict(capprm=0, capeff=0, capbnd=_ALL), False, []),   # its own user namespace
    (dict(capprm=1 << 12, capeff=1 << 12), dict(capprm=0, capeff=0, capbnd=_ALL), True,
     ["probe_attribute_capabilities"]),                                        # the starter's: more than it has
    (dict(capamb="error:EACCES"), dict(capbnd=_ALL), False, ["probe_attribute_ambient"]),   # not read: not proven
]


@pytest.mark.parametrize("payload_sets, probe_sets, same_userns, codes", _CAPABILITY_ROWS)
def test_capability_sets_are_not_wider_than_the_starters(payload_sets, probe_sets, same_userns, codes):
    """Issue 51: ambient, bounding and inheritable sets (permitted and effective in the starter's user namespace)
    no wider than the probe's, each with its own code. The real plant: the matrix's ambient_net_raw row."""
    obs, outside, host = good()
    outside["payload"]["privileges"] = _privileges(**payload_sets)
    host["privileges"] = _privileges(**probe_sets)
    if same_userns:
        outside["payload"]["ns"]["user"] = host["ns"]["user"]
    bad = failed(obs, outside, host)
    kinds = bad.get("process_attributes", {"observed": {"kinds": []}})["observed"]["kinds"]
    assert sorted(set(attributes.ATTRIBUTE_CODES[kind] for kind, _what in kinds)) == codes, bad


# (is the socket the sandbox's own, its peer, who holds the peer, the descriptor code; None: allowed)
_SOCKET_ROWS = [
    (True, "socket:[71]", [4242], None),                       # a pair made inside, both ends the payload's
    (True, None, [], None),                                    # no peer (a listening or unconnected socket)
    (False, "socket:[71]", [], "probe_descriptor_unseen"),     # made outside, its peer in flight (socket_in_flight)
    (True, "socket:[71]", [], "probe_descriptor_unseen"),      # its peer held by no process
    (True, "socket:[71]", [999], "probe_descriptor_outside"),  # its peer held by a host process
    (False, "socket:[71]", [999], "probe_descriptor_outside"),  # made outside, read by a host shell (socket_to_outside)
]


@pytest.mark.parametrize("own, peer, peer_holders, code", _SOCKET_ROWS)
def test_a_socket_needs_a_peer_inside(own, peer, peer_holders, code):
    """Issue 51: every unix socket the payload holds has its peer held inside the sandbox; a peer in flight or held
    outside fails. The real plants: the matrix's socket_in_flight and socket_to_outside rows."""
    obs, outside, host = good()
    payload_side = outside["payload"]
    payload_side["fds"]["7"] = {"link": "socket:[70]", "type": "sock"}
    holding = {"socket:[70]": [4242]}
    if peer:
        holding[peer] = peer_holders
    payload_side["fd_holders"].update({"held": holding, "comm": {"999": "sh"}, "peers": {"socket:[70]": peer} if peer
                                       else {}, "own_sockets": ["socket:[70]"] if own else []})
    bad = failed(obs, outside, host)
    if code is None:
        assert bad == {}, bad
        return
    assert set(bad) == {"no_leaked_descriptors"}, bad
    kinds = [kind for kind, _what in bad["no_leaked_descriptors"]["observed"]["kinds"]]
    assert [held.DESCRIPTOR_CODES[kind] for kind in kinds] == [code], bad


# (what lies at /metnos-declared on the root, the size the profile declares for the file it copies there, whether
# the check fails, the code it carries)
_DIGEST = "ab" * 32
_DECLARED_FILE = [
    (["metnos-declared", "f", 24, _DIGEST], 24, None),
    (["metnos-declared", "f", 676, "cd" * 32], 24, "probe_root_undeclared"),  # its size too (file_swapped)
    (["metnos-declared", "l", "/etc/shadow"], 24, "probe_root_undeclared"),   # a symlink instead
    (["metnos-declared", "d", None], 24, "probe_root_undeclared"),            # a directory
    (None, 24, "probe_root_undeclared"),                                      # absent, or covered by a mount
    (["metnos-declared", "f", 24, _DIGEST], None, "probe_root_undeclared"),   # no size declared: not proven
    (["metnos-declared", "f", 24, "cd" * 32], 24, "probe_root_swapped"),      # same size, other content
    (["metnos-declared", "f", 24, "error:ELOOP"], 24, "probe_root_swapped"),  # not hashed: not proven
    (["metnos-declared", "f", 24], 24, "probe_root_swapped"),                 # no digest read: not proven
]


@pytest.mark.parametrize("entry, size, code", _DECLARED_FILE)
def test_a_declared_file_is_judged_by_type_size_and_digest(entry, size, code):
    """Issue 51: a file the profile copies onto the root (--file FD DEST) is a regular file of the size and the
    sha256 the profile declares. The real plants: the matrix's file_swapped, file_same_size and file_declared
    rows."""
    obs, outside, host = good()
    spec = dict(SPEC, created=["/metnos-declared", "/usr"], files={"/metnos-declared": size},
                file_digests={"/metnos-declared": _DIGEST})
    outside["payload"]["root_entries"] = [entry] if entry else []
    bad = failed(obs, outside, host, spec)
    assert ("root_content_declared" in bad) == bool(code), bad
    if code:
        # what the verdict reports it with: probe_root_undeclared for its problems, probe_root_swapped for a swap
        observed = bad["root_content_declared"]["observed"]
        assert (bool(observed["problems"]), bool(observed["swapped"])) == (
            code == "probe_root_undeclared", code == "probe_root_swapped"), observed
    assert set(bad) <= {"root_content_declared"}


# (the payload's securebits, the starter's, whether the payload is in the starter's user namespace, a finding)
_SECUREBITS = [
    (0x40, 0x40, True, False),
    (0, 0x40, True, True),            # no_cap_ambient_raise cleared between them (the securebits_cleared row)
    (0x2, 0x3, True, True),           # noroot cleared, its lock kept
    (0, 0x10, True, False),           # keep_caps: execve clears it
    (0, 0x40, False, False),          # a new user namespace starts with none
    ("error:EINVAL", 0, True, True),  # not proven
    (None, 0, True, True),
    (0, "error:OSError", True, True),
]


@pytest.mark.parametrize("mine, ref, same_userns, finding", _SECUREBITS)
def test_securebits_not_fewer_than_the_starters(mine, ref, same_userns, finding):
    """Issue 51 item 4: the payload's securebits (its own prctl) hold every bit its starter's hold but keep_caps, in
    the starter's user namespace. The real plant: the matrix's securebits_cleared row."""
    obs, outside, host = good()
    obs["securebits"], host["securebits"] = mine, ref
    if same_userns:
        outside["payload"]["ns"]["user"] = host["ns"]["user"]
    check = [c for c in evidence.evaluate(SPEC, obs, outside, host) if c["name"] == "process_attributes"][0]
    kinds = [k for k, _what in check["observed"]["kinds"] if k == "securebits"]
    assert bool(kinds) == finding, check


def test_a_units_securebits_are_its_securebits_lines():
    assert attributes.unit_securebits([("SecureBits", "noroot noroot-locked", "u")]) == 0x3
    assert attributes.unit_securebits([("SecureBits", "keep-caps", "u"), ("SecureBits", "", "d"),
                                       ("SecureBits", "no-setuid-fixup", "d")]) == 0x4
    assert attributes.unit_securebits([("User", "x", "u")]) == 0
    assert str(attributes.unit_securebits([("SecureBits", "bogus", "u")])).startswith("error:")
