"""Verify a converged host for real: package, binary, profiles, the probe's verdict, and a wrapped
command run as the service user that cannot see /home and has only lo."""
import json
import os
import shlex

import pytest

PROFILES = "/etc/metnos/sandbox/profiles"
# The dnf and pacman test hosts are Debian underneath (scripts/molecule.sh sets the package
# manager the role was told to use): testinfra's package() would ask dpkg there.
MANAGER = os.environ.get("MOLECULE_PKG_MANAGER", "auto")
QUERY = {"dnf": "rpm -q bubblewrap", "pacman": "pacman -Q bubblewrap"}


def test_bubblewrap_from_the_distro_package(host):
    if MANAGER in QUERY:
        assert host.run(QUERY[MANAGER]).rc == 0
        assert host.run("dpkg-query -W bubblewrap").rc != 0, "Debian's package must not be there"
    else:
        assert host.package("bubblewrap").is_installed
    bwrap = host.file("/usr/bin/bwrap")
    assert bwrap.user == "root" and bwrap.group == "root"
    assert bwrap.mode & 0o022 == 0, "bwrap must not be group/world-writable"
    assert bwrap.mode & 0o4000 == 0, "bwrap must not be setuid"


@pytest.mark.parametrize("name", ["read_notes", "export_report", "calendar_sync", "sandbox_probe"])
def test_profiles_rendered_for_the_example_manifests(host, name):
    args = host.file("%s/%s.args" % (PROFILES, name))
    assert args.exists and args.user == "root" and args.mode == 0o644
    argv = args.content_string.splitlines()
    assert argv[0].endswith("/bwrap") and "--unshare-user" in argv and "--die-with-parent" in argv
    doc = json.loads(host.file("%s/%s.json" % (PROFILES, name)).content_string)
    assert doc["argv"] == argv and all(m["provenance"] for m in doc["mounts"])


def test_service_dropin_present_in_enforce_mode(host):
    dropin = host.file("/etc/systemd/system/metnos.service.d/zz-metnos-sandbox.conf")
    env_file = "/etc/systemd/system/metnos.service.d/zz-metnos-sandbox.env"
    assert dropin.exists and "EnvironmentFile=%s" % env_file in dropin.content_string
    assert "UnsetEnvironment=METNOS_SANDBOX" in dropin.content_string
    assert host.file(env_file).content_string.splitlines()[-1].startswith('PATH="/')
    show = host.run("systemctl show -p NeedDaemonReload -p EnvironmentFiles metnos.service").stdout
    assert "NeedDaemonReload=no" in show and env_file in show


def test_probe_verdict_passes(host):
    res = host.ansible("metnos.sandbox.sandbox_probe", "unit=metnos.service", check=False)
    assert res["passed"] is True, [c for c in res["checks"] if not c["ok"]] or res["diagnostics"]
    assert res["context"].startswith("systemd transient unit")


def _wrapped(host, script):
    """Run `script` inside the rendered strict profile, as the service user (systemd-run)."""
    argv = host.file("%s/sandbox_probe.args" % PROFILES).content_string.splitlines()
    inner = argv[:argv.index("--") + 1] + ["/bin/sh", "-c", script]
    return host.run("systemd-run --wait --pipe --quiet --collect -p User=metnos -- %s"
                    % " ".join(shlex.quote(a) for a in inner))


def test_wrapped_command_as_service_user_cannot_see_home(host):
    out = _wrapped(host, "id -un; ls -d /home /root 2>&1 || true")
    assert out.rc == 0, out.stderr
    assert out.stdout.splitlines()[0] == "metnos"
    assert "/home': No such file or directory" in out.stdout and "/root': No such file or directory" in out.stdout


def test_wrapped_command_as_service_user_has_only_loopback(host):
    out = _wrapped(host, "tail -n +3 /proc/net/dev")
    assert out.rc == 0, out.stderr
    devs = sorted(line.split(":")[0].strip() for line in out.stdout.splitlines() if line.strip())
    assert devs == ["lo"], out.stdout
