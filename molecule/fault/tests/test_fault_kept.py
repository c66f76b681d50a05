"""The audit is read-only: every planted fault is still there after it ran."""


def test_fault_still_planted(host):
    name = host.backend.get_hostname()
    dropins = "/etc/systemd/system/metnos.service.d"
    if name == "fault-envoff":
        assert "METNOS_SANDBOX=off" in host.file("/etc/metnos/env").content_string
    elif name == "fault-path":
        assert host.file(dropins + "/10-path.conf").exists
    elif name == "fault-shadow":
        assert host.file("/srv/tools").mode == 0o777 and host.file("/srv/tools/bwrap").exists
    elif name == "fault-restrictns":
        assert "RestrictNamespaces=yes" in host.file(dropins + "/10-harden.conf").content_string
    elif name == "fault-removed":
        assert not host.package("bubblewrap").is_installed
    elif name == "fault-userns":
        assert host.run("bwrap --unshare-user --ro-bind / / true").rc != 0
    assert host.service("metnos.service").is_running
