"""sandbox_probe in a real systemd container: the strict profile passes in the service's own
context (transient unit with the unit's restrictions); each blocked case gets its own code."""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.diagnostics import codes

SLEEP = "ExecStart=/bin/sleep infinity\n"


@pytest.fixture(scope="module")
def svc(host):
    host.install_unit("pclean", "[Service]\nUser=metnos\n" + SLEEP)
    host.install_unit("pns", "[Service]\nUser=metnos\nRestrictNamespaces=yes\n" + SLEEP)
    host.install_unit("pscf", "[Service]\nUser=metnos\nSystemCallFilter=@system-service\n" + SLEEP)
    host.install_unit("poff", "[Service]\nUser=metnos\nEnvironmentFile=/etc/metnos/poff.env\n" + SLEEP,
                      {"/etc/metnos/poff.env": "METNOS_SANDBOX=off\n"})
    host.install_unit("pnopath", "[Service]\nUser=metnos\nEnvironment=PATH=/opt/none\n" + SLEEP)
    host.write("/usr/local/lib/hang-python", "#!/bin/sh\nsleep 300 &\nsleep 300\n", mode="0755")
    # a bwrap look-alike and an unpackaged copy of the real bwrap, each first on a unit's PATH
    host.write("/opt/lookalike/bwrap", '#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n',
               mode="0755")
    host.sh("mkdir -p /opt/copy && cp /usr/bin/bwrap /opt/copy/bwrap")
    host.install_unit("plook", "[Service]\nUser=metnos\nEnvironment=PATH=/opt/lookalike:/usr/bin:/bin\n" + SLEEP)
    host.install_unit("pcopy", "[Service]\nUser=metnos\nEnvironment=PATH=/opt/copy:/usr/bin:/bin\n" + SLEEP)
    host.sh("systemctl daemon-reload")
    return host


def transient_left(host):
    return host.sh("systemctl list-units --all --no-legend 'metnos-probe-*' | wc -l").stdout.strip()


def test_strict_profile_passes_in_service_context(svc):
    res = svc.module("metnos.sandbox.sandbox_probe", {"unit": "metnos-pclean.service"})
    assert res["passed"] is True, [c for c in res["checks"] if not c["ok"]] or res["diagnostics"]
    assert res["context"].startswith("systemd transient unit") and "metnos" in res["context"]
    assert res["observed_uid"] == int(svc.sh("id -u metnos").stdout)
    names = [c["name"] for c in res["checks"]]
    for expected in ("bwrap_child_is_payload", "proc_is_own_procfs", "user_namespace_private",
                     "net_namespace_private", "fresh_tmpfs:/tmp", "minimal_dev:/dev", "read_only:/usr",
                     "hidden:/home", "hidden:/root", "parent_death_signal", "no_pid_namespace"):
        assert expected in names
    # the outside witness: root here lacks CAP_SYS_PTRACE, the links were read as the service user
    assert "same credentials" in res["evidence"]["read_by"]
    assert transient_left(svc) == "0"


def test_descriptor_binds_are_opened_inside_the_transient_unit(systemd_host):
    """Data folders the service user owns can be moved by it: their binds are by descriptor, and the launcher
    (descriptors.py) opens them inside the transient unit, as the service user, before it becomes bwrap - on
    Debian 12 (bubblewrap 0.8.0-2+deb12u1, --bind-fd backported) and 13 (0.12)."""
    svc = systemd_host
    svc.install_unit("pdesc", "[Service]\nUser=metnos\n" + SLEEP)
    svc.sh("systemctl daemon-reload")
    svc.sh("mkdir -p /var/lib/metnos/data/notes /var/lib/metnos/data/w && chown -R metnos /var/lib/metnos/data")
    manifest = {"name": "ex", "origin": "t", "capabilities": ["fs:read:/var/lib/metnos/data/notes",
                                                             "fs:write:/var/lib/metnos/data/w"]}
    res = svc.module("metnos.sandbox.sandbox_probe", {"unit": "metnos-pdesc.service", "manifest": manifest})
    assert "--ro-bind-fd" in res["profile"]["argv"] and "--bind-fd" in res["profile"]["argv"], res["profile"]
    assert res["passed"] is True, [c for c in res["checks"] if not c["ok"]] or res["diagnostics"]
    assert res["context"].startswith("systemd transient unit")
    names = dict((c["name"], c["ok"]) for c in res["checks"])
    assert names["writable:/var/lib/metnos/data/w"] and names["read_only:/var/lib/metnos/data/notes"], names
    assert names["no_leaked_descriptors"] and transient_left(svc) == "0"


def test_restrict_namespaces_fails_with_directive_named(svc):
    admin = svc.module("metnos.sandbox.bwrap_facts", {"smoke_user": "metnos"})
    assert admin["userns"]["smoke_test"]["passed"] is True          # fine from the admin shell...
    res = svc.module("metnos.sandbox.sandbox_probe", {"unit": "metnos-pns.service"})
    assert res["passed"] is False                                    # ...but not in the service
    assert "probe_setup_failed" in codes(res["diagnostics"]) and "unit_blocks_namespaces" in codes(res["diagnostics"])
    assert res["classification"]["cause"] == "userns_eperm"
    assert res["blamed_directives"] == ["RestrictNamespaces"]


def test_syscall_filter_kill_is_attributed(svc):
    res = svc.module("metnos.sandbox.sandbox_probe", {"unit": "metnos-pscf.service"})
    assert res["passed"] is False
    assert "probe_setup_failed" in codes(res["diagnostics"])
    assert "unit_syscall_filter_blocks_bwrap" in codes(res["diagnostics"])
    assert res["classification"]["cause"] == "killed_by_seccomp"


@pytest.mark.parametrize("unit,code", [("metnos-poff.service", "sandbox_disabled_via_env"),
                                       ("metnos-pnopath.service", "service_path_missing_bwrap")])
def test_fail_closed_without_starting_bwrap(svc, unit, code):
    res = svc.module("metnos.sandbox.sandbox_probe", {"unit": unit})
    assert res["passed"] is False and res["context"].startswith("not started")
    assert code in codes(res["diagnostics"]) and "executor_os_sandbox_unavailable" in codes(res["diagnostics"])
    assert res["checks"] == [] and "argv" not in res


def test_hanging_payload_killed_and_cleaned_up(svc):
    res = svc.module("metnos.sandbox.sandbox_probe", {"unit": "metnos-pclean.service",
                                                      "python": "/usr/local/lib/hang-python", "timeout": 3})
    # the fake interpreter's background sleep is a process beside the payload: found, reported, killed
    assert res["passed"] is False and set(codes(res["diagnostics"])) == {"probe_timeout", "probe_process_unaccounted"}
    assert svc.sh("pgrep -c -f 'sleep 30[0]' || true").stdout.strip() in ("0", "")
    assert transient_left(svc) == "0"


def test_unpackaged_bwrap_of_the_service_fails_the_probe(svc):
    """Only the packaged bwrap is trusted (issue 20): a copy of the real one on the service's PATH isolates, but
    the probe fails - the binary is no package's, and the process that started is not a verified bwrap."""
    res = svc.module("metnos.sandbox.sandbox_probe", {"unit": "metnos-pcopy.service"})
    assert res["passed"] is False, res["diagnostics"]
    # and the unit's own session keyring, shared by its executors: an info finding (issue 51)
    assert sorted(codes(res["diagnostics"])) == ["probe_bwrap_unpackaged", "probe_check_failed",
                                                 "probe_keyring_unit"], res["diagnostics"]
    assert [c["name"] for c in res["checks"] if not c["ok"]] == ["bwrap_exe_verified"]


def test_look_alike_on_the_service_path_runs_without_isolation(svc):
    res = svc.module("metnos.sandbox.sandbox_probe", {"unit": "metnos-plook.service"})
    assert res["passed"] is False and res["setup_failed"] is False
    assert "probe_not_isolated" in codes(res["diagnostics"]) and "probe_bwrap_unpackaged" in codes(res["diagnostics"])
    assert "probe_setup_failed" not in codes(res["diagnostics"])
    diag = [d for d in res["diagnostics"] if d["code"] == "probe_not_isolated"][0]
    assert "/opt/lookalike/bwrap ran the payload (as metnos) without isolation" in diag["message"]
    assert transient_left(svc) == "0"


@pytest.fixture(scope="module")
def mnt_host():
    """systemd applies mount-namespace directives only with CAP_SYS_ADMIN (without it, it skips them
    silently in a container): this host has it."""
    from conftest import start_host, stop_host
    h = start_host(extra=("--cap-add", "SYS_ADMIN"))
    try:
        h.install_unit("pmnt", "[Service]\nUser=metnos\nProtectSystem=strict\nProtectHome=yes\nPrivateTmp=yes\n"
                       "PrivateDevices=yes\nInaccessiblePaths=/etc/shadow\n" + SLEEP)
        h.sh("systemctl daemon-reload")
        yield h
    finally:
        stop_host(h)


def test_a_units_own_mounts_are_the_reference_for_bind_sources(mnt_host):
    """PrivateDevices/InaccessiblePaths mount things in the unit's namespace (its own /dev nodes, a
    node over /etc/shadow) that the sandbox's /dev and /etc then show: they are judged against the
    unit's process as read before it ran bwrap, not against the admin's mount table."""
    res = mnt_host.module("metnos.sandbox.sandbox_probe", {"unit": "metnos-pmnt.service"})
    assert res["passed"] is True, [c for c in res["checks"] if not c["ok"]] or res["diagnostics"]
    names = [c["name"] for c in res["checks"]]
    assert "bind_source:/etc" in names and "no_undeclared_mounts" in names
    assert "before it ran bwrap" in res["evidence"]["parent_context"]
