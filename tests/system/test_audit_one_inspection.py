"""One inspection per host (issue 22): the audit reads the unit once and hands that inspection to the
probe. Counted for real: on a systemd host, `systemctl` is a wrapper on the audit's PATH that logs each
call and runs the real one; playbooks/audit.yml audits a healthy unit and one whose directive breaks
bwrap (the probe fails there and searches the directives by experiment). Per audit: one
`systemctl show` of the unit's properties, one `systemctl show --all` for the probe's execution
context, no `systemctl cat`; the verdicts and codes are those of the fleet test. Likewise `dpkg` is a
counting wrapper: the host's facts, the service's bwrap and the probe's run all verify /usr/bin/bwrap, and
the package manager is asked once per audit (`dpkg --verify bubblewrap`, bwrap_trust.Verifications)."""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, ansible_env, start_host, stop_host

LOG = "/run/metnos-systemctl.log"
COUNTING = "#!/bin/sh\nprintf '%%s\\n' \"$*\" >> %s\nexec /usr/bin/systemctl \"$@\"\n" % LOG
DPKG_LOG = "/run/metnos-dpkg.log"
COUNTING_DPKG = "#!/bin/sh\nprintf '%%s %%s\\n' \"${0##*/}\" \"$*\" >> %s\nexec /usr/bin/${0##*/} \"$@\"\n" % DPKG_LOG
UNITS = {
    "healthy": ("[Service]\nUser=metnos\nExecStart=/bin/sleep infinity\n", "pass", None),
    "restricted": ("[Service]\nUser=metnos\nRestrictNamespaces=yes\nExecStart=/bin/sleep infinity\n", "fail",
                   "unit_blocks_namespaces"),
}


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    h = start_host("metnos-i22b-reads")
    try:
        for name, (text, _v, _c) in UNITS.items():
            h.install_unit(name, text)
        h.sh("systemctl daemon-reload && systemctl start metnos-healthy.service metnos-restricted.service")
        h.write("/usr/local/bin/systemctl", COUNTING, mode="0755")
        for tool in ("dpkg", "dpkg-query"):
            h.write("/usr/local/bin/" + tool, COUNTING_DPKG, mode="0755")
        assert h.sh("command -v systemctl").stdout.strip() == "/usr/local/bin/systemctl"
        inv = tmp_path_factory.mktemp("inv") / "hosts.yml"
        inv.write_text("all:\n  vars:\n    ansible_connection: containers.podman.podman\n"
                       "    ansible_python_interpreter: /usr/bin/python3\n  hosts:\n"
                       "    counted: {ansible_host: %s}\n" % h.name)
        yield h, str(inv)
    finally:
        stop_host(h)


def unit_reads(lines, unit):
    """The calls that read ``unit``: show (its properties, or --all) and cat."""
    reads = {"show": 0, "show --all": 0, "cat": 0}
    for line in lines:
        words = line.split()
        if unit not in words:
            continue
        if "cat" in words:
            reads["cat"] += 1
        elif "show" in words:
            reads["show --all" if "--all" in words else "show"] += 1
    return reads


def _audit(inv, name, dest):
    """One run of playbooks/audit.yml against the counted host for metnos-NAME.service: its host record."""
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inv, "playbooks/audit.yml",
           "-e", "metnos_audit_dest=%s" % dest, "-e", '{"metnos_audit_manifests": []}',
           "-e", "metnos_sandbox_unit=metnos-%s.service" % name]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ansible_env(), timeout=900)
    found = glob.glob(str(dest / "*.json"))
    assert found, proc.stdout[-2000:]
    return json.load(open(found[0]))["hosts"][0], proc


@pytest.mark.parametrize("name", sorted(UNITS))
def test_the_unit_is_read_once_per_audit(host, name, tmp_path):
    """No verification kept from an earlier audit (the trust store removed first): dpkg is asked once."""
    h, inv = host
    h.sh("rm -f %s %s /run/metnos-audit/*.trust" % (LOG, DPKG_LOG))
    record, proc = _audit(inv, name, tmp_path)
    lines = h.sh("cat %s" % LOG).stdout.splitlines()
    _text, verdict, code = UNITS[name]
    assert record["verdict"] == verdict, (record["diagnostics"], proc.stdout[-2000:])
    codes = [d["code"] for d in record["diagnostics"]]
    assert code is None or codes.count(code) == 1, codes
    reads = unit_reads(lines, "metnos-%s.service" % name)
    print("systemctl calls:", lines)
    assert reads == {"show": 1, "show --all": 1, "cat": 0}, (reads, lines)
    dpkg = h.sh("cat %s" % DPKG_LOG).stdout.splitlines()
    print("dpkg calls:", dpkg)
    assert dpkg.count("dpkg --verify bubblewrap") == 1, dpkg


def test_the_next_audit_asks_the_package_manager_nothing(host, tmp_path):
    """An audit after an audit, nothing changed on the host: the bwrap verification kept by the first
    (host/trust_store.py, beside the compiled core in /run/metnos-audit) is reused: no dpkg command at all,
    the same trust and verdict. The package database then written (dpkg's status file touched): asked again."""
    h, inv = host
    first, _proc = _audit(inv, "healthy", tmp_path / "one")
    h.sh("rm -f %s" % DPKG_LOG)
    second, proc = _audit(inv, "healthy", tmp_path / "two")
    assert h.sh("cat %s 2>/dev/null || true" % DPKG_LOG).stdout.split() == [], proc.stdout[-2000:]
    assert second["bwrap"] == first["bwrap"] and second["bwrap"]["package"] == "bubblewrap"
    assert _exe_check(second) == _exe_check(first) and _exe_check(second)["ok"] is True
    assert second["verdict"] == first["verdict"] == "pass"
    h.sh("touch /var/lib/dpkg/status")
    third, _proc = _audit(inv, "healthy", tmp_path / "three")
    assert h.sh("cat %s" % DPKG_LOG).stdout.splitlines().count("dpkg --verify bubblewrap") == 1
    assert third["bwrap"] == first["bwrap"] and _exe_check(third) == _exe_check(first)


def _exe_check(record):
    """The probe's check that the bwrap which started is a verified (packaged) file."""
    [check] = [c for c in record["probe"]["checks"] if c["name"] == "bwrap_exe_verified"]
    return check
