"""The live process is the authority (metnos_service_env and the probe's view of the sandbox), on a
Debian 12 host without CAP_SYS_ADMIN and CAP_SYS_PTRACE, where root cannot read another user's
/proc/PID/environ:
- the environment is then read as the process's own uid, and says so;
- a process that changed its environment in a way the unit does not show (a shell script in
  ExecStart=) is an error with its origin, and the runtime's status() is the live one;
- a process whose environment cannot be read at all (not dumpable) is reported with the reason,
  never silently replaced by the configuration's view.
"""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.diagnostics import codes

LIVE_SH = "[Service]\nUser=metnos\nExecStart=/bin/sh -c 'if true; then export METNOS_SANDBOX=0; fi; " \
          "exec /bin/sleep infinity'\n"
PLAIN = "[Service]\nUser=metnos\nExecStart=/bin/sleep infinity\n"
HIDDEN = ("[Service]\nUser=metnos\nEnvironment=METNOS_SANDBOX=1\nExecStart=/usr/bin/python3 -c \"import ctypes, time; "
          "ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); time.sleep(100000)\"\n")      # PR_SET_DUMPABLE 0


MISROUTED = "[Service]\nUser=metnos\nEnvironmentFile=/etc/metnos/lmis.env\nExecStart=/bin/sleep infinity\n"
LOOKALIKE = "#!/bin/sh\nwhile [ $# -gt 0 ] && [ \"$1\" != -- ]; do shift; done; shift; exec \"$@\"\n"


@pytest.fixture(scope="module")
def live(host):
    host.write("/opt/lmis/bin/bwrap", LOOKALIKE, mode="0755")
    host.write("/etc/metnos/lmis.env", "PATH=/opt/lmis/bin:/usr/bin\n")
    for name, text in (("lsh", LIVE_SH), ("lplain", PLAIN), ("lhidden", HIDDEN), ("lmis", MISROUTED)):
        host.install_unit(name, text)
    host.sh("systemctl daemon-reload && systemctl start metnos-lsh metnos-lplain metnos-lhidden metnos-lmis")
    # the configuration is fixed, the running process still has the look-alike first (no restart yet)
    host.write("/etc/metnos/lmis.env", "PATH=/usr/sbin:/usr/bin\n")
    pid = host.sh("systemctl show -p MainPID --value metnos-lplain").stdout.strip()
    # the premise of this file: root is refused here
    assert host.sh("cat /proc/%s/environ" % pid, check=False).returncode != 0
    yield host
    host.sh("systemctl stop metnos-lsh metnos-lplain metnos-lhidden metnos-lmis", check=False)


def test_read_as_the_process_own_uid_when_root_is_refused(live):
    res = live.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-lplain.service"})
    uid = live.sh("id -u metnos").stdout.strip()
    assert res["live_read"]["read_as"].startswith("uid %s (the process's own; root was refused" % uid), res
    assert res["live_environment"]["PATH"] and res["verdict"] == "pass"
    assert res["status_view"].startswith("runtime status() as seen by the live process of metnos-lplain.service")


def test_live_disabling_value_is_an_error_with_its_origin(live):
    res = live.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-lsh.service"})
    assert {"service_env_live_disables", "service_execstart_env_unknown"} <= set(codes(res["diagnostics"])), \
        res["diagnostics"]
    diag = [d for d in res["diagnostics"] if d["code"] == "service_env_live_disables"][0]
    assert diag["severity"] == "error" and "METNOS_SANDBOX='0'" in diag["message"]
    assert "start command line" in diag["message"]                  # the origin
    assert res["status"]["active"] is False and res["status"]["disabled_via_env"] is True
    probe = live.module("metnos.sandbox.sandbox_probe", {"unit": "metnos-lsh.service"})
    assert probe["passed"] is False and probe["context"].startswith("not started")
    assert probe["status"]["active"] is False and "live process" in probe["status_view"]
    assert probe["failed"] is False and "msg" not in probe                # a verdict, not a module failure


def test_unreadable_live_environment_is_reported_with_the_reason(live):
    res = live.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-lhidden.service"})
    assert "service_env_live_unreadable" in codes(res["diagnostics"]), res["diagnostics"]
    diag = [d for d in res["diagnostics"] if d["code"] == "service_env_live_unreadable"][0]
    assert "Permission denied" in diag["message"] and "as the process's own uid" in diag["message"]
    assert res["live_environment"] is None and res["live_read"]["error"]
    assert "could not be read" in res["status_view"]


def test_live_path_that_misroutes_bwrap_is_an_error(live):
    res = live.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-lmis.service"})
    diag = [d for d in res["diagnostics"] if d["code"] == "service_env_live_misroutes"]
    assert diag and diag[0]["severity"] == "error", res["diagnostics"]
    assert "/opt/lmis/bin/bwrap (owned by no package)" in diag[0]["message"] and "/usr/bin/bwrap" in diag[0]["message"]
    assert res["status"]["bwrap_path"] == "/opt/lmis/bin/bwrap"         # the live view, not the configuration's
    probe = live.module("metnos.sandbox.sandbox_probe", {"unit": "metnos-lmis.service"})
    assert probe["passed"] is False                                       # the look-alike does not sandbox
