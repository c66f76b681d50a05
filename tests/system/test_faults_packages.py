"""A kill during the package step (issue 52: site.yml killed at several points, then a rerun that heals everything),
on a real podman Debian 12 host WITHOUT bubblewrap (the debootstrap image scripts/build-images.sh built, before the
system tests' bwrap layer), apt reaching Debian's archive from inside the container.

- dpkg SIGKILLed inside the host, as a power loss ends it: tests/helpers/dpkg_killer.py, started in the container,
  watches dpkg's journal (inotify on /var/lib/dpkg/updates) and kills every dpkg the moment bubblewrap's entry
  says ``half-installed`` (its files being unpacked) or ``half-configured`` (its postinst running). The first
  playbooks/site.yml run fails at the apt task. Canary: apt itself then refuses with "dpkg was interrupted, you must
  manually run 'dpkg --configure -a'" (what every rerun met before the heal). Check mode after the kill says what it
  would heal and heals nothing (the journal is still there). The rerun heals (dpkg --configure -a), installs,
  verifies (bwrap_facts: the packaged bwrap, dpkg --verify clean), says "healed: ..."; the run after changes nothing.
- The controller's ansible-playbook tree SIGKILLed while the apt task runs on the host (helpers.fault_runs.kill_run,
  when the output shows the task started): the apt run inside the container is not the controller's child (podman
  exec), so it goes on or is left killed with the client; either way the rerun ends with bubblewrap installed and
  verified, and the run after changes nothing.

The rerun is site.yml limited to the bwrap_host role (``--tags bwrap_host``: install and the readiness check, plus
the play's always-tagged validation and summary): the metnos_sandbox role's part of site.yml needs a Metnos service
on the host and is covered by the other system tests; the package step is what is killed here.
"""
import json
import os
import subprocess
import time

import pytest

from conftest import IMAGE, ansible_env, podman, run_site, start_host, stop_host
from helpers import fault_runs
from helpers.ansible_run import ansible_tool
from helpers.paths import ROOT
from helpers.pkghost import RoleHost

KILLER = os.path.join(ROOT, "tests", "helpers", "dpkg_killer.py")
TAGS = ("--tags", "bwrap_host", "-e", "bwrap_host_smoke_user=nobody")
INTERRUPTED = "dpkg was interrupted, you must manually run 'dpkg --configure -a'"


@pytest.fixture
def bare_host():
    """A Debian 12 systemd container from the image without bubblewrap."""
    host = start_host("metnos-pkgkill", image=IMAGE)
    try:
        assert host.sh("command -v bwrap || true").stdout.strip() == ""      # canary: no bubblewrap yet
        yield host
    finally:
        stop_host(host)


def status(host):
    return host.sh("dpkg-query -W -f='${db:Status-Status}' bubblewrap 2>/dev/null || true").stdout.strip()


def journal(host):
    return host.sh("ls /var/lib/dpkg/updates | grep -E '^[0-9]+$' || true").stdout.split()


def assert_healed_and_verified(host, tmp_path, heal_words):
    """The rerun: heals (says so, with ``heal_words``), installs, verifies; the run after changes nothing."""
    rerun, recap = run_site(host, {"pkg": {}}, tmp_path, *TAGS)
    assert rerun.returncode == 0 and recap["pkg"]["failed"] == 0, rerun.stdout[-5000:]
    for words in heal_words:
        assert words in rerun.stdout, rerun.stdout[-5000:]
    assert status(host) == "installed" and journal(host) == []
    assert host.sh("dpkg --verify bubblewrap && bwrap --version").stdout.startswith("bubblewrap 0.8")
    facts = host.module("metnos.sandbox.bwrap_facts", {"smoke_user": "nobody"})        # verified, as the role does
    package = facts["bwrap"]["package"]
    assert (package["manager"], package["name"], package["verified"]) == ("dpkg", "bubblewrap", "ok"), package
    assert "Summary of the host's sandbox state" in rerun.stdout
    third, recap3 = run_site(host, {"pkg": {}}, tmp_path, *TAGS)
    assert third.returncode == 0 and recap3["pkg"]["changed"] == 0, third.stdout[-3000:]
    assert "healed" not in third.stdout
    return rerun


def start_killer(host, state, signal_name):
    """tests/helpers/dpkg_killer.py in the host, watching dpkg's journal for bubblewrap's ``state``."""
    podman("cp", KILLER, "%s:/root/dpkg_killer.py" % host.name)
    podman("exec", "-d", host.name, "sh", "-c", "python3 /root/dpkg_killer.py bubblewrap %s /root/killer.ready %s "
           "> /root/killer.out 2>&1" % (state, signal_name))
    end = time.monotonic() + 30
    while host.sh("test -e /root/killer.ready", check=False).returncode != 0 and time.monotonic() < end:
        time.sleep(0.2)


@pytest.mark.parametrize("state", ["half-installed", "half-configured"])
def test_dpkg_killed_inside_the_host_is_healed_by_the_rerun(bare_host, tmp_path, state):
    """Mutations (run, [half-configured]): the heal task removed from roles/bwrap_host/tasks/install.yml -> the
    check-mode run says nothing and this test fails there; the heal task run in check mode only -> the rerun fails
    with apt's "dpkg was interrupted, you must manually run 'dpkg --configure -a'"."""
    host = bare_host
    start_killer(host, state, "KILL")
    first, recap = run_site(host, {"pkg": {}}, tmp_path, *TAGS)
    assert first.returncode != 0 and recap["pkg"]["failed"] == 1, first.stdout[-3000:]
    assert "KILL dpkg" in host.sh("cat /root/killer.out").stdout                 # canary: dpkg was killed there
    assert status(host) == state and journal(host), (status(host), journal(host))
    refused = host.sh("LC_ALL=C apt-get install -y bubblewrap", check=False)    # canary: what a rerun met
    assert refused.returncode != 0 and INTERRUPTED in refused.stderr, refused.stderr

    checked, _recap = run_site(host, {"pkg": {}}, tmp_path, "--check", *TAGS)
    assert "check mode: would heal dpkg's journal of an interrupted run" in checked.stdout, checked.stdout[-4000:]
    assert "would run dpkg --configure -a" in checked.stdout
    assert status(host) == state and journal(host)                                # check mode healed nothing

    assert_healed_and_verified(host, tmp_path, ["healed: dpkg's journal of an interrupted run",
                                                "ran dpkg --configure -a"])


def test_the_controller_killed_while_apt_runs_is_healed_by_the_rerun(bare_host, tmp_path):
    host = bare_host
    inventory, out = tmp_path / "inventory.json", tmp_path / "killed.out"
    inventory.write_text(json.dumps({"all": {"hosts": {"pkg": {"ansible_host": host.name}}, "vars": {
        "ansible_connection": "containers.podman.podman", "ansible_python_interpreter": "/usr/bin/python3"}}}))
    argv = [ansible_tool("ansible-playbook"), "-i", str(inventory), "playbooks/site.yml"] + list(TAGS)
    with open(str(out), "w") as handle:
        start_killer(host, "half-installed", "STOP")      # dpkg held mid-unpack: apt is running there
        proc = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT, env=ansible_env(),
                                start_new_session=True)
        end = time.monotonic() + 600
        while "STOP dpkg" not in host.sh("cat /root/killer.out").stdout and time.monotonic() < end:
            time.sleep(0.2)
        stopped = host.sh("cat /root/killer.out").stdout
        assert "STOP dpkg" in stopped and proc.poll() is None, stopped + out.read_text()[-3000:]   # canary
        fault_runs.kill_run(proc, str(inventory))
    assert "PLAY RECAP" not in out.read_text()                                    # canary: killed mid-play
    assert "install_apt.yml for pkg" in out.read_text()          # (the task's header may still be in a buffer)
    pids = stopped[stopped.index("[") + 1:stopped.index("]")].replace(",", " ")
    print(host.sh("ps -eo pid,ppid,stat,args").stdout)
    host.sh("kill -CONT %s 2>/dev/null; true" % pids)                  # dpkg goes on, its controller gone
    assert_healed_and_verified(host, tmp_path, [])


PACMAN_IMAGE = "localhost/metnos-pkghost:pacman"
DNF_IMAGE = "localhost/metnos-pkghost:dnf"
CREATE_KILLER = os.path.join(ROOT, "tests", "helpers", "create_killer.py")


def package_host(tmp_path, image, manager):
    """A real pacman 7.0 or dnf 4 + rpm 4.20 test host (tests/system/test_pkghosts.py's images: Debian 13 with the
    package manager and a local signed repository) without bubblewrap, driven by the bwrap_host role through
    tests/system/pkghost_role.yml."""
    if podman("image", "exists", image, check=False).returncode != 0:
        pytest.skip("%s is not built (scripts/build-pkghost-images.sh)" % image)
    host = start_host("metnos-%skill" % manager, image=image)
    try:
        yield RoleHost(host, tmp_path, ansible_env(), manager)
    finally:
        stop_host(host)


@pytest.fixture
def pacman_host(tmp_path):
    yield from package_host(tmp_path, PACMAN_IMAGE, "pacman")


@pytest.fixture
def dnf_host(tmp_path):
    yield from package_host(tmp_path, DNF_IMAGE, "dnf")


def start_create_killer(rh, folder, prefix, match):
    """tests/helpers/create_killer.py in the host: MATCH killed when a file named PREFIX... appears in FOLDER."""
    podman("cp", CREATE_KILLER, "%s:/root/create_killer.py" % rh.host.name)
    podman("exec", "-d", rh.host.name, "sh", "-c", "python3 /root/create_killer.py %s %s %s /root/killer.ready "
           "> /root/killer.out 2>&1" % (folder, prefix, match))
    end = time.monotonic() + 30
    while rh.sh("test -e /root/killer.ready", check=False).returncode != 0 and time.monotonic() < end:
        time.sleep(0.2)


def test_pacman_killed_leaves_its_lock_and_the_rerun_removes_it(pacman_host):
    """pacman SIGKILLed the moment its transaction takes the lock (tests/helpers/create_killer.py, in the host):
    /var/lib/pacman/db.lck stays, and every pacman run refuses ("unable to lock database": the canary). Check mode
    says it would remove the stale lock and leaves it; the rerun removes it, says so, installs bubblewrap; the
    run after changes nothing. Mutation (run): lock_holders() counting every process as a holder -> the check-mode
    run fails ("db.lck is held by pid 1, ...") and this test with it."""
    rh = pacman_host
    rh.sh("metnos-test-repo publish bubblewrap-0.12.0-1-x86_64.pkg.tar.zst")
    start_create_killer(rh, "/var/lib/pacman", "db.lck", "comm:pacman")
    killed = rh.role("killed")
    assert killed.failed and "KILL comm:pacman [" in rh.sh("cat /root/killer.out").stdout, killed
    assert rh.sh("test -f /var/lib/pacman/db.lck", check=False).returncode == 0               # the stale lock
    refused = rh.sh("LC_ALL=C pacman -S --noconfirm bubblewrap", check=False)                # canary
    assert refused.returncode != 0 and "unable to lock database" in refused.stdout + refused.stderr, refused

    checked = rh.role("check", check=True)
    assert "check mode: would heal a stale pacman lock /var/lib/pacman/db.lck" in checked.out, checked
    assert rh.sh("test -f /var/lib/pacman/db.lck", check=False).returncode == 0               # check mode: kept

    rerun = rh.role("rerun")
    assert not rerun.failed, rerun
    assert "healed: a stale pacman lock /var/lib/pacman/db.lck" in rerun.out, rerun
    assert "removed the stale lock /var/lib/pacman/db.lck" in rerun.out
    assert rh.sh("LC_ALL=C pacman -Q bubblewrap").stdout.strip() == "bubblewrap 0.12.0-1"
    assert rh.sh("test -e /var/lib/pacman/db.lck", check=False).returncode != 0
    again = rh.role("again")
    assert not again.failed and again.changed == 0 and "healed" not in again.out, again


def test_dnf_killed_mid_transaction_is_completed_by_the_rerun(dnf_host):
    """The Ansible dnf module's process (rpm runs in it) SIGKILLed the moment rpm writes bwrap's temporary file
    in /usr/bin (tests/helpers/create_killer.py): a transaction killed mid-way. There is nothing for the heal to do
    (rpm's lock is an fcntl lock the kernel dropped with the process; dnf checks its own pid locks), and the rerun
    completes the install: rpm -V clean, nothing said as healed, the run after changes nothing. Canary: the kill
    happened, and bubblewrap is not installed after it. Not healed: a temporary file rpm was writing when killed
    ("/usr/bin/bwrap;<hex>") stays; rpm never removes it."""
    rh = dnf_host
    rh.sh("metnos-test-repo publish bubblewrap-0.10.0-2.el10.x86_64.rpm")
    start_create_killer(rh, "/usr/bin", "bwrap", "cmdline:AnsiballZ_dnf")
    killed = rh.role("killed")
    assert killed.failed and "KILL cmdline:AnsiballZ_dnf [" in rh.sh("cat /root/killer.out").stdout, killed
    assert rh.sh("rpm -q bubblewrap", check=False).returncode != 0                             # canary: not installed
    # What the kill left varies with where rpm was: its temporary file of bwrap ("bwrap;<hex>", 0 bytes, mode 0200),
    # or bwrap written whole with no database entry (both seen here).
    debris = rh.sh("ls /usr/bin | grep '^bwrap;' || true").stdout.split()
    rerun = rh.role("rerun")
    assert not rerun.failed and "healed" not in rerun.out, rerun
    assert rh.sh("rpm -q --qf '%{VERSION}-%{RELEASE}' bubblewrap").stdout == "0.10.0-2.el10"
    assert rh.sh("rpm -V bubblewrap && dnf -q check", check=False).returncode == 0
    again = rh.role("again")
    assert not again.failed and again.changed == 0, again
    # Not healed: rpm's temporary file of a killed write, when there is one, stays in /usr/bin.
    assert rh.sh("ls /usr/bin | grep '^bwrap;' || true").stdout.split() == debris
