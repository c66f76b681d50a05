"""Enforce heals what it reports: each fault class planted on a real unit (a running service as
User=metnos), the verdict seen before, then `playbooks/site.yml` with
metnos_sandbox_service_env_state=enforce (restart on change, relax_restrictions opt-in where named),
then the toolkit's probe again: it passes wherever the fault is one enforce can heal, and the play
says clearly what it could not heal (and fails there, through the role's gate).

Debian 12 runs every class; Debian 13 (bubblewrap 0.12) the restriction relaxations, which include
RestrictSUIDSGID= there.
"""
import json

import pytest

from conftest import core_probe, install_trial_tools, run_site

SLEEP = "/bin/sleep infinity"
FAKE_BWRAP = "#!/bin/sh\n# an unpackaged look-alike: runs the command without any sandbox\n" \
             "while [ $# -gt 0 ] && [ \"$1\" != -- ]; do shift; done; shift; exec \"$@\"\n"
RESTRICT = ["RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "RestrictNamespaces=yes",
            "SystemCallFilter=@system-service", "ProcSubset=pid"]

# unit name: (extra [Service] lines, ExecStart, extra files, host vars, expected codes before, healable)
FAULTS = {
    "envfile": (["EnvironmentFile=/etc/metnos/h-envfile.env"], SLEEP,
                {"/etc/metnos/h-envfile.env": "METNOS_SANDBOX=0\n"}, {}, {"sandbox_disabled_via_env"}, True),
    "rundropin": ([], SLEEP, {"/run/systemd/system/metnos-h-rundropin.service.d/50-off.conf":
                              "[Service]\nEnvironment=METNOS_SANDBOX=off\n"}, {}, {"sandbox_disabled_via_env"}, True),
    "execenv": ([], "/usr/bin/env METNOS_SANDBOX=0 " + SLEEP, {}, {},
                {"service_execstart_sets_env", "sandbox_disabled_via_env"}, True),
    "execsh": ([], "/bin/sh -c 'METNOS_SANDBOX=0 exec %s'" % SLEEP, {}, {},
               {"service_execstart_sets_env", "sandbox_disabled_via_env"}, False),
    "execshlive": ([], "/bin/sh -c 'if true; then export METNOS_SANDBOX=0; fi; exec %s'" % SLEEP, {}, {},
                   {"service_execstart_env_unknown", "service_env_live_disables"}, False),
    "lookalike": (["Environment=PATH=/opt/lookalike/bin:/usr/sbin:/usr/bin"], SLEEP,
                  {"/opt/lookalike/bin/bwrap": FAKE_BWRAP},
                  {"metnos_sandbox_service_path": "/opt/lookalike/bin:/usr/sbin:/usr/bin"},
                  {"service_bwrap_mismatch", "probe_bwrap_unpackaged"}, True),
    "relax": (RESTRICT, SLEEP, {}, {"metnos_sandbox_relax_restrictions": True},
              {"unit_address_families_block_netlink", "unit_blocks_namespaces", "unit_syscall_filter_blocks_bwrap",
               "unit_proc_subset_pid", "probe_setup_failed"}, True),
    "norelax": (RESTRICT, SLEEP, {}, {}, {"unit_address_families_block_netlink", "probe_setup_failed"}, False),
}
ON_13 = ("relax", "norelax")
# bubblewrap is in the image already; the apt task of the same container under eight inventory names at
# once would only fight over the dpkg lock (tests/integration/test_site.py covers the install).
SKIP = ["--skip-tags", "bwrap_host_install"]


def unit(name):
    return "metnos-h-%s.service" % name


@pytest.fixture(scope="module")
def planted(systemd_host, tmp_path_factory):
    h = systemd_host
    install_trial_tools(h)
    names = sorted(FAULTS) if h.debian == "12" else list(ON_13)
    files = {}
    for name in names:
        lines, start, extra, _vars, _codes, _heal = FAULTS[name]
        lines = list(lines) + (["RestrictSUIDSGID=yes"] if name in ON_13 and h.debian == "13" else [])
        files["/etc/systemd/system/%s" % unit(name)] = "[Service]\nUser=metnos\nExecStart=%s\n%s\n" % (
            start, "\n".join(lines))
        files.update(extra)
    h.write_many(files)
    h.sh("chmod 0755 /opt/lookalike/bin/bwrap 2>/dev/null; systemctl daemon-reload && systemctl start %s" % " ".join(
        unit(n) for n in names))
    before = core_probe(h, [unit(n) for n in names])
    inventory = dict(("h-" + n, dict(FAULTS[n][3], metnos_sandbox_unit=unit(n))) for n in names)
    tmp = tmp_path_factory.mktemp("site")
    common = ["-e", "metnos_sandbox_service_env_state=enforce", "-e", "metnos_sandbox_service_restart=true"] + SKIP
    proc, recap = run_site(h, inventory, tmp, *common)
    after = core_probe(h, [unit(n) for n in names])
    with open(str(tmp / "site-first.log"), "w") as handle:     # kept for a failing run
        handle.write(proc.stdout + proc.stderr + json.dumps({"before": before, "after": after}, indent=1))
    again, recap2 = run_site(h, dict((k, v) for k, v in inventory.items() if FAULTS[k[2:]][5]), tmp, *common)
    yield {"host": h, "names": names, "before": before, "after": after, "play": proc, "recap": recap,
           "again": again, "recap2": recap2}
    h.sh("systemctl stop %s; rm -rf /run/systemd/system/metnos-h-* /etc/systemd/system/metnos-h-*; "
         "systemctl daemon-reload" % " ".join(unit(n) for n in names), check=False)


def test_each_fault_is_seen_before(planted):
    for name in planted["names"]:
        res = planted["before"][unit(name)]
        assert res["passed"] is False, (name, res)
        assert FAULTS[name][4] <= set(res["codes"]) | set(res["service_codes"]), (name, res["codes"])


def test_enforce_heals_and_the_probe_passes_after(planted):
    out = planted["play"].stdout
    for name in planted["names"]:
        res = planted["after"][unit(name)]
        if FAULTS[name][5]:
            assert res["passed"] is True, (name, res, out[-3000:])
            assert planted["recap"]["h-" + name]["failed"] == 0, (name, out[-3000:])
        else:
            assert res["passed"] is False, (name, res)
            assert planted["recap"]["h-" + name]["failed"] == 1, (name, out[-3000:])   # the role's gate


def test_play_lists_what_it_healed_relaxed_or_could_not(planted):
    out = planted["play"].stdout
    assert "The real wrapped probe failed on h-norelax" in out
    assert "NOT relaxed RestrictAddressFamilies (unit_address_families_block_netlink)" in out
    assert "relaxed RestrictAddressFamilies for bwrap (unit_address_families_block_netlink): wrote " \
           "RestrictAddressFamilies=AF_NETLINK" in out
    if "execsh" in planted["names"]:
        assert "NOT healed ExecStart=/bin/sh -c" in out and "a drop-in cannot neutralise it" in out
        assert "healed ExecStart=/usr/bin/env METNOS_SANDBOX=0 /bin/sleep infinity" in out
        assert "healed METNOS_SANDBOX='off' (from Environment= (/run/systemd/system/metnos-h-rundropin" in out
        assert "moved /usr/bin before /opt/lookalike/bin" in out


def test_second_run_changes_nothing(planted):
    assert planted["again"].returncode == 0, planted["again"].stdout[-3000:]
    assert planted["recap2"] and all(r["changed"] == 0 for r in planted["recap2"].values()), planted["recap2"]


def test_manager_environment_is_healed_for_the_unit(systemd_host, tmp_path):
    """`systemctl set-environment METNOS_SANDBOX=0` reaches every unit; enforce unsets it for ours."""
    h = systemd_host
    if h.debian != "12":
        pytest.skip("one release is enough for the manager's environment")
    install_trial_tools(h)
    h.install_unit("h-manager", "[Service]\nUser=metnos\nExecStart=%s\n" % SLEEP)
    h.sh("systemctl daemon-reload && systemctl set-environment METNOS_SANDBOX=0 && "
         "systemctl start metnos-h-manager.service")
    try:
        before = core_probe(h, ["metnos-h-manager.service"])["metnos-h-manager.service"]
        assert before["passed"] is False and "sandbox_disabled_via_env" in before["codes"]
        proc, recap = run_site(h, {"h-manager": {"metnos_sandbox_unit": "metnos-h-manager.service"}}, tmp_path,
                               "-e", "metnos_sandbox_service_env_state=enforce",
                               "-e", "metnos_sandbox_service_restart=true", *SKIP)
        assert recap["h-manager"]["failed"] == 0, proc.stdout[-3000:]
        assert "healed METNOS_SANDBOX='0' (from manager environment)" in proc.stdout
        assert core_probe(h, ["metnos-h-manager.service"])["metnos-h-manager.service"]["passed"] is True
    finally:
        h.sh("systemctl unset-environment METNOS_SANDBOX; systemctl stop metnos-h-manager.service", check=False)


def test_report_only_never_fails_the_play_on_a_probe_verdict(planted, tmp_path):
    """The gate is in the role: with metnos_sandbox_probe_report_only the failing probe is reported, the
    play succeeds, and no task ends in "Unknown error"."""
    h = planted["host"]
    if h.debian != "13":
        pytest.skip("one release is enough for the gate")
    proc, recap = run_site(h, {"h-norelax": {"metnos_sandbox_unit": unit("norelax")}}, tmp_path,
                           "-e", "metnos_sandbox_probe_report_only=true", *SKIP)
    assert proc.returncode == 0 and recap["h-norelax"]["failed"] == 0, proc.stdout[-3000:]
    assert "proven verdict: FAILED" in proc.stdout and "Unknown error" not in proc.stdout
    assert "Unknown error" not in planted["play"].stdout
