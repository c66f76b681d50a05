"""metnos_service_env on a real systemd host (Debian 12 container): every code from a real
unit, none from a clean one; the offline parser proven equal to systemd on a corpus; enforce
mode with check/diff, idempotence and backups."""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.diagnostics import codes
from corpus.systemd_units import CORPUS

CLEAN = "[Service]\nUser=metnos\nExecStart=/bin/sleep infinity\n"

CASES = {
    # name: (unit text, files {path: text}, expected code)
    "envfile-off": ("[Service]\nUser=metnos\nEnvironmentFile=/etc/metnos/off.env\nExecStart=/bin/sleep infinity\n",
                    {"/etc/metnos/off.env": "METNOS_SANDBOX=off\n"}, "sandbox_disabled_via_env"),
    "nopath": ("[Service]\nUser=metnos\nEnvironment=PATH=/usr/local/bin:/opt/none\nExecStart=/bin/sleep infinity\n",
               {}, "service_path_missing_bwrap"),
    "unsafe": ("[Service]\nUser=metnos\nEnvironment=PATH=/srv/evil:/usr/bin\nExecStart=/bin/sleep infinity\n",
               {"/srv/evil/bwrap": "#!/bin/sh\nexit 0\n"}, "service_path_unsafe"),
    "restrictns": ("[Service]\nUser=metnos\nRestrictNamespaces=yes\nExecStart=/bin/sleep infinity\n", {},
                   "unit_blocks_namespaces"),
    "scfilter": ("[Service]\nUser=metnos\nSystemCallFilter=@system-service\nExecStart=/bin/sleep infinity\n", {},
                 "unit_syscall_filter_blocks_bwrap"),
    "procsubset": ("[Service]\nUser=metnos\nProcSubset=pid\nExecStart=/bin/sleep infinity\n", {},
                   "unit_proc_subset_pid"),
    "suidsgid": ("[Service]\nUser=metnos\nRestrictSUIDSGID=yes\nExecStart=/bin/sleep infinity\n", {},
                 "unit_restrict_suidsgid"),
    "optfile": ("[Service]\nUser=metnos\nEnvironmentFile=-/etc/metnos/absent.env\nExecStart=/bin/sleep infinity\n",
                {}, "environment_file_missing"),
    "rejected": ("[Service]\nUser=metnos\nEnvironment=METNOS_SANDBOX= 0\nExecStart=/bin/sleep infinity\n", {},
                 "sandbox_env_rejected_by_systemd"),
}


def install(host, name, text, files=()):
    host.install_unit(name, text, files)


@pytest.fixture(scope="module")
def units(host):
    host.sh("mkdir -p /srv/evil && chmod 0777 /srv/evil")
    install(host, "clean", CLEAN)
    for name, (text, files, _code) in CASES.items():
        install(host, name, text, files)
    host.sh("systemctl daemon-reload")
    return host


def test_clean_unit_has_no_finding(units):
    res = units.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-clean.service"})
    assert res["mode"] == "systemd"
    assert res["verdict"] == "pass", res["diagnostics"]
    assert res["status"]["active"] is True and res["user"]["name"] == "metnos"


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_code_from_a_real_unit(units, name):
    expected = CASES[name][2]
    for mode in ("systemd", "disk"):
        res = units.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-%s.service" % name, "mode": mode})
        assert expected in codes(res["diagnostics"]), (mode, res["diagnostics"])


def test_unit_not_found(units):
    res = units.module("metnos.sandbox.metnos_service_env", {"unit": "ghost.service"})
    assert codes(res["diagnostics"]) == ["unit_not_found"] and not res["failed"]
    res = units.module("metnos.sandbox.metnos_service_env", {"unit": "ghost.service", "strict": True})
    assert res["failed"] and res["code"] == "unit_not_found"


def test_needs_daemon_reload(units):
    install(units, "reload", CLEAN)
    units.sh("systemctl daemon-reload && systemctl start metnos-reload.service")   # loaded, so it stays loaded
    install(units, "reload", CLEAN.replace("[Service]", "[Service]\nEnvironment=X=1"))
    res = units.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-reload.service"})
    assert "unit_needs_daemon_reload" in codes(res["diagnostics"])
    units.sh("systemctl daemon-reload && systemctl stop metnos-reload.service")


def test_live_environment_differs_until_restart(units):
    units.write("/etc/metnos/live.env", "METNOS_SANDBOX=1\n")
    install(units, "live", "[Service]\nEnvironmentFile=/etc/metnos/live.env\nExecStart=/bin/sleep infinity\n")
    units.sh("systemctl daemon-reload && systemctl start metnos-live.service")
    res = units.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-live.service"})
    assert "service_env_live_differs" not in codes(res["diagnostics"])
    units.write("/etc/metnos/live.env", "METNOS_SANDBOX=off\n")
    res = units.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-live.service"})
    assert "service_env_live_differs" in codes(res["diagnostics"])
    assert "sandbox_disabled_via_env" in codes(res["diagnostics"])
    units.sh("systemctl restart metnos-live.service")
    res = units.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-live.service"})
    assert "service_env_live_differs" not in codes(res["diagnostics"])
    units.sh("systemctl stop metnos-live.service")


def test_setuid_bwrap_with_no_new_privileges(units):
    install(units, "nnp", "[Service]\nUser=metnos\nNoNewPrivileges=yes\nExecStart=/bin/sleep infinity\n")
    units.sh("systemctl daemon-reload && chmod 4755 /usr/bin/bwrap")
    try:
        res = units.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-nnp.service"})
    finally:
        units.sh("chmod 0755 /usr/bin/bwrap")
    assert "unit_no_new_privileges_setuid" in codes(res["diagnostics"])


SYSTEMD_ADDS = {"INVOCATION_ID", "JOURNAL_STREAM", "SYSTEMD_EXEC_PID", "LANG", "LANGUAGE", "LC_ALL", "container",
                "TERM", "HOME", "USER", "LOGNAME", "SHELL", "MANAGERPID", "NOTIFY_SOCKET", "MAINPID",
                "MEMORY_PRESSURE_WATCH", "MEMORY_PRESSURE_WRITE", "CREDENTIALS_DIRECTORY", "RUNTIME_DIRECTORY"}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_offline_parser_equals_systemd(units, name):
    """The real environment of a started unit (/proc/MainPID/environ) equals the disk parse, for
    every case of the corpus the unit tests parse offline (tests/corpus/systemd_units.py)."""
    case = CORPUS[name]
    install(units, name, case["unit"], case["files"])
    units.sh("systemctl daemon-reload && systemctl restart metnos-%s.service" % name)
    pid = units.sh("systemctl show -p MainPID --value metnos-%s.service" % name).stdout.strip()
    raw = units.sh("cat /proc/%s/environ" % pid).stdout
    real = dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)
    units.sh("systemctl stop metnos-%s.service" % name)
    ours = units.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-%s.service" % name, "mode": "disk",
                                               "return_environment": True})["full_environment"]
    real = dict((k, v) for k, v in real.items() if k not in SYSTEMD_ADDS)
    ours = dict((k, v) for k, v in ours.items() if k not in SYSTEMD_ADDS)
    assert ours == real
    assert dict((k, real[k]) for k in case["expected"]) == case["expected"]   # the corpus records systemd


def test_enforce_check_diff_then_fix_idempotent_with_backup(units):
    units.write("/etc/metnos/enf.env", "METNOS_SANDBOX=off\n")
    install(units, "enf", "[Service]\nUser=metnos\nEnvironment=PATH=/opt/none\n"
                          "EnvironmentFile=/etc/metnos/enf.env\nExecStart=/bin/sleep infinity\n")
    units.sh("systemctl daemon-reload")
    dropin = "/etc/systemd/system/metnos-enf.service.d/zz-metnos-sandbox.conf"
    args = {"unit": "metnos-enf.service", "state": "enforce"}
    res = units.module("metnos.sandbox.metnos_service_env", args, check=True, diff=True)
    assert res["changed"] is True
    assert units.sh("test -e %s" % dropin, check=False).returncode != 0       # check mode wrote nothing
    res = units.module("metnos.sandbox.metnos_service_env", args)
    assert res["changed"] is True and res["verdict"] == "pass", res["diagnostics"]
    assert res["environment"]["METNOS_SANDBOX"] is None
    show = units.sh("systemctl show -p NeedDaemonReload -p EnvironmentFiles metnos-enf.service").stdout
    assert "NeedDaemonReload=no" in show and "zz-metnos-sandbox.env (ignore_errors=no)" in show     # reloaded
    assert res["environment"]["PATH"] == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
    assert units.module("metnos.sandbox.metnos_service_env", args)["changed"] is False       # idempotent
    units.sh("echo '# local edit' >> %s" % dropin)
    res = units.module("metnos.sandbox.metnos_service_env", args)
    assert res["changed"] is True and res["dropin"]["backup"]
    assert "# local edit" in units.sh("cat %s" % res["dropin"]["backup"]).stdout   # nothing lost
    vendor = units.sh("cat /etc/systemd/system/metnos-enf.service").stdout
    assert "EnvironmentFile=/etc/metnos/enf.env" in vendor                      # unit untouched


def test_shadowing_bwrap_is_a_mismatch_too(units):
    """The 'unsafe' unit resolves the planted /srv/evil/bwrap: not the package-owned binary."""
    res = units.module("metnos.sandbox.metnos_service_env", {"unit": "metnos-unsafe.service"})
    assert res["bwrap_resolved"] == "/srv/evil/bwrap"
    assert {"service_path_unsafe", "service_bwrap_mismatch"} <= set(codes(res["diagnostics"]))
