"""The probe's judgement, offline: both witnesses agree -> pass; a refusal (EACCES/EPERM) or an
unreadable link is 'not proven', never proof; each outcome gets its own code. The real runs (bwrap
as root and nobody, look-alikes) are in tests/integration/test_probe_matrix.py."""
import copy

import pytest

from ansible.module_utils.metnos_sandbox import probe as PR
from ansible.module_utils.metnos_sandbox import procfs as PF

MOUNTINFO = """\
300 200 0:90 /newroot / rw,nosuid,nodev,relatime - tmpfs tmpfs rw
301 300 254:0 /usr /usr ro,nosuid,nodev,relatime - ext4 /dev/vda rw
302 300 254:0 /srv/data /data rw,nosuid,nodev,relatime - ext4 /dev/vda rw
303 300 0:91 / /tmp rw,nosuid,nodev,relatime - tmpfs tmpfs rw
304 300 0:21 / /proc rw,nosuid,nodev,relatime - proc proc rw
"""
HOST_MOUNTS = PF.parse_mountinfo("""\
22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
24 22 0:30 / /dev/shm rw - tmpfs tmpfs rw
""")
HOST_NS = {"user": "user:[1]", "mnt": "mnt:[2]", "ipc": "ipc:[3]", "uts": "uts:[4]", "net": "net:[5]",
           "pid": "pid:[6]", "cgroup": "cgroup:[7]"}
SANDBOX_NS = dict(HOST_NS, user="user:[11]", mnt="mnt:[12]", net="net:[15]")
SPEC = {"token": "t0k", "unshare": ["user", "mnt", "net"], "ns": list(PF.NS_KINDS), "ro": ["/usr"], "rw": ["/data"],
        "tmpfs": ["/tmp"], "dev": [], "proc": ["/proc"], "absent": ["/home"], "net_unshared": True,
        "die_with_parent": True, "rules": {"/usr": "R-BASE-1", "/data": "R-CAP-FS", "/tmp": "R-BASE-3"}}


def good():
    obs = {"metnos_probe": "t0k", "pid": 4242, "uid": 65534, "ns": dict(SANDBOX_NS), "proc_self": "4242",
           "proc": {"/proc": {"type": PR.PROC_SUPER_MAGIC, "dev": "0:21", "flags": "rw"}},
           "interfaces": ["lo"], "ro": {"/usr": {"type": 0xEF53, "dev": "254:0", "flags": "ro"}},
           "rw": {"/data": "writable"}, "absent": {"/home": "absent"},
           "tmpfs": {"/tmp": {"type": PR.TMPFS_MAGIC, "dev": "0:91", "flags": "rw", "entries": []}}, "pdeathsig": 9}
    outside = {"launcher": 4241, "child_pid": 4242, "child_ppid": 4241, "payload_pids": [4242], "payload_pid": 4242,
               "payload": {"ppid": 4241, "nspid": [4242], "uid": 65534, "ns": dict(SANDBOX_NS), "read_by": "probe",
                           "mounts": PF.parse_mountinfo(MOUNTINFO), "interfaces": ["lo"]},
               "parent": {"pid": 4241, "ns": dict(HOST_NS), "exe": "/usr/bin/bwrap", "read_by": "probe",
                          "mounts": HOST_MOUNTS}}
    host = {"ns": dict(HOST_NS), "mounts": HOST_MOUNTS}
    return obs, outside, host


def failed(obs, outside, host, spec=SPEC):
    return dict((c["name"], c) for c in PR.evaluate(spec, obs, outside, host) if not c["ok"])


def verdict(obs, outside, host, result=None):
    res = {"rc": 0, "stderr": "", "json_status": {"child-pid": 4242, "exit-code": 0}, "timed_out": False,
           "duration": 0.1}
    res.update(result or {})
    return PR._verdict(["bwrap", "<payload>"], res, obs, outside, SPEC, host, None, 5)


@pytest.mark.rule("R-DIAG-3")
def test_both_witnesses_agree_passes():
    obs, outside, host = good()
    assert failed(obs, outside, host) == {}
    v = verdict(obs, outside, host)
    assert v["passed"] is True and v["diagnostics"] == []


def test_unreadable_namespace_links_are_not_proven():
    obs, outside, host = good()
    outside["payload"]["ns"] = dict((k, "error:EACCES") for k in PF.NS_KINDS)
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
    outside["payload"]["mounts"] = PF.parse_mountinfo(MOUNTINFO.replace("/usr ro,", "/usr rw,"))
    bad = failed(obs, outside, host)
    assert set(bad) == {"read_only:/usr"} and "outside: /usr is mounted rw" in bad["read_only:/usr"]["observed"][
        "problems"][0]


def test_tmp_on_a_known_device_or_not_empty_is_not_fresh():
    obs, outside, host = good()
    mounts = MOUNTINFO.replace("0:91 / /tmp", "0:30 / /tmp")        # the host's /dev/shm tmpfs
    outside["payload"]["mounts"] = PF.parse_mountinfo(mounts)
    obs["tmpfs"]["/tmp"]["dev"] = "0:30"
    assert set(failed(obs, outside, host)) == {"fresh_tmpfs:/tmp"}
    obs, outside, host = good()
    obs["tmpfs"]["/tmp"]["entries"] = ["leftover"]
    assert set(failed(obs, outside, host)) == {"fresh_tmpfs:/tmp"}


def test_proc_not_proven_voids_the_inside_witness_only():
    obs, outside, host = good()
    obs["proc_self"] = "error:ENOENT"                 # a procfs of another PID namespace
    obs["ns"] = dict((k, "error:ENOENT") for k in PF.NS_KINDS)
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


def test_stream_records_and_launcher():
    stream = (b'{"launcher-pid": 41}\n{ "child-pid": 42, "net-namespace": 5 }\nnoise {"x": \n'
              b'{"metnos_probe": "t0k", "pid": 42}\n{ "exit-code": 0 }\n{"partial": ')
    launcher, status, obs = PR.split_stream(PR.records(stream), "t0k")
    assert launcher == 41 and status == {"child-pid": 42, "net-namespace": 5, "exit-code": 0}
    assert obs == {"metnos_probe": "t0k", "pid": 42}


def test_mountinfo_parsing():
    mounts = PF.parse_mountinfo("36 35 98:0 /mnt1 /mnt\\0402 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
                                "37 36 0:5 / /mnt\\0402 ro shared:2 - tmpfs none ro\n")
    assert mounts[0]["mountpoint"] == "/mnt 2" and mounts[0]["fstype"] == "ext3"
    top = PF.mount_at(mounts, "/mnt 2")
    assert top["id"] == "37" and PF.read_only(top)
    assert PF.covering_mount(mounts, "/mnt 2/x/y")["id"] == "37"
    assert PF.covering_mount(copy.deepcopy(mounts[:1]), "/other") is None
