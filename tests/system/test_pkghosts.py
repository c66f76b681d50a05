"""The bwrap_host role on hosts whose bubblewrap comes from real dnf + rpm, and from real pacman.

The hosts are Debian 13 systemd containers (scripts/build-pkghost-images.sh, recipes in
tests/pkghosts/) with Debian's dnf 4.23 + python3-dnf, rpm 4.20, createrepo_c 1.2, or pacman 7.0
+ makepkg + repo-add, and a local repository of bubblewrap builds made when the image was built
(rpmbuild / makepkg around Debian's real bwrap binary, signed): RPMs 0.10.0-2.el10 and
1:0.11.0-1.fc44 (an explicit Epoch) behind gpgcheck=1; pacman packages bubblewrap 0.11.0-1 and
0.12.0-1, bubblewrap-suid (setuid, provides and conflicts bubblewrap), bubblewrap-git (a user's
build under another name) in a sync repository, and an archive in the Arch Linux Archive's layout
for pins (the role's bwrap_host_pacman_archive_url points at it with file://). Signatures are
checked as the distributions check theirs: dnf imports the repository's key and verifies each RPM;
pacman's SigLevel is Arch's default (Required DatabaseOptional), the repository key trusted with
pacman-key --add / --lsign-key as Arch documents for a third-party repository, and one archived
build is signed by a key nobody trusts. The hosts report Debian facts, so every run sets
bwrap_host_package_manager (dnf, pacman): the documented choice for derivative distributions.

Each host runs one sequence, in order, as a sysadmin would (both sequences at once, one thread
each); every test below reads its steps. Nothing here is faked: the role's real tasks drive the
real tools, and every claim is read back from the host (rpm -q, pacman -Q, pacman's log, the
bwrap file's mode, a fingerprint of the whole host around each check-mode run). What still differs
from the real distributions is said in README's "What is proven where".
"""
import threading

import pytest

from conftest import ansible_env, podman, start_host, stop_host
from helpers.pkghost import RoleHost

DNF_IMAGE = "localhost/metnos-pkghost:dnf"
PACMAN_IMAGE = "localhost/metnos-pkghost:pacman"
OLD_RPM, NEW_RPM = "bubblewrap-0.10.0-2.el10.x86_64.rpm", "bubblewrap-0.11.0-1.fc44.x86_64.rpm"
RPM_QF = "rpm -q --qf '%{EPOCHNUM}:%{VERSION}-%{RELEASE}\\n' bubblewrap"
PKG = "bubblewrap-%s-x86_64.pkg.tar.zst"
SUID = "bubblewrap-suid-0.11.0-1-x86_64.pkg.tar.zst"
GIT = "bubblewrap-git-0.12.0.r3.g1a2b3c4-1-x86_64.pkg.tar.zst"
ARCHIVE = "file:///srv/metnos/archive/packages"
UNTRUSTED = "file:///srv/metnos/archive-untrusted/packages"    # a mirror whose build no trusted key signed


def rpm_version(rh):
    return rh.sh(RPM_QF, check=False).stdout.strip()


def pacman_q(rh):
    return rh.sh("LC_ALL=C pacman -Q bubblewrap bubblewrap-suid bubblewrap-git 2>/dev/null", check=False).stdout


def log_mark(rh):
    return int(rh.sh("wc -l < /var/log/pacman.log 2>/dev/null || echo 0").stdout.strip() or 0)


def log_since(rh, mark):
    return rh.sh("tail -n +%d /var/log/pacman.log 2>/dev/null || true" % (mark + 1)).stdout.splitlines()


def transactions(lines):
    """pacman.log lines -> one list of ALPM actions per transaction ('removed bubblewrap-suid (..)')."""
    out, cur = [], None
    for line in lines:
        text = line.split("] [ALPM] ", 1)[-1] if "] [ALPM] " in line else None
        if text == "transaction started":
            cur = []
        elif text == "transaction completed" and cur is not None:
            out.append(cur)
            cur = None
        elif text is not None and cur is not None:
            cur.append(text)
    return out


FINGERPRINT = (
    "find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /var/log/journal "
    "-o -path /root/.ansible -o -path /var/lib/rpm/rpmdb.sqlite-shm -o -path '/var/log/dnf*.log' "
    "-o -path /var/log/hawkey.log \\) -prune "
    "-o -type d -printf '%p/ %m %U %G\\n' -o -printf '%p %s %T@ %m %U %G\\n' | sort -S 64M | sha256sum; "
    "find /etc /usr/local /srv /home /var/lib/rpm /var/lib/pacman /var/cache -xdev -type f "
    "! -name rpmdb.sqlite-shm -exec sha256sum {} + 2>/dev/null | sort | sha256sum")


def checked(rh, name, **role_vars):
    """A check-mode run, with the whole host's fingerprint (every path with its mode and owner, and
    each file's size and mtime; content hashes of configuration, package databases and caches)
    taken before and after it. Left out: directories' mtimes (Ansible's podman connection makes and
    removes files in /tmp: measured with a bare `ping`; a file left behind still shows as a path),
    Ansible's own working directory (/root/.ansible), sqlite's shared-memory index of the rpm
    database (rpmdb.sqlite-shm), which every reader rewrites, rpm -q included, and dnf's own logs
    (dnf.log, dnf.librepo.log, dnf.rpm.log, hawkey.log), to which every dnf command appends, the
    read-only `dnf --cacheonly check-upgrade` of check mode included (measured)."""
    before = rh.sh(FINGERPRINT).stdout
    step = rh.role(name, check=True, **role_vars)
    step.after["unchanged"] = rh.sh(FINGERPRINT).stdout == before
    return step




def dnf_sequence(rh):
    rh.sh("metnos-test-repo publish %s" % OLD_RPM)            # the repository offers the EL build only
    checked(rh, "check-fresh")
    rh.role("manager-unknown", bwrap_host_package_manager="yum")
    step = rh.role("install")
    step.after["version"] = rpm_version(rh)
    rh.role("again")
    rh.sh("metnos-test-repo publish %s %s" % (OLD_RPM, NEW_RPM))   # a newer build is published
    checked(rh, "check-latest-stale", bwrap_host_state="latest")   # dnf's cache does not know it yet
    rh.sh("dnf -q makecache >/dev/null")                           # what a refresh (a timer, a run) does
    checked(rh, "check-latest", bwrap_host_state="latest")
    step = rh.role("latest", bwrap_host_state="latest")
    step.after["version"] = rpm_version(rh)
    rh.role("latest-again", bwrap_host_state="latest")
    checked(rh, "check-pin", bwrap_host_version="0.10.0-2.el10")
    step = rh.role("pin-down", bwrap_host_version="0.10.0-2.el10")
    step.after["version"] = rpm_version(rh)
    rh.role("pin-again", bwrap_host_version="0:0.10.0-2.el10")     # a zero epoch written out: the same build
    step = rh.role("pin-epoch", bwrap_host_version="1:0.11.0-1.fc44")
    step.after["version"] = rpm_version(rh)
    rh.role("pin-epoch-again", bwrap_host_version="1:0.11.0-1.fc44")
    step = rh.role("pin-absent", bwrap_host_version="0.9.0-1.el10")
    step.after["version"] = rpm_version(rh)
    rh.sh("useradd --system --create-home --shell /usr/sbin/nologin metnos")
    rh.role("facts", bwrap_host_check=True)
    rh.raw = {
        "rpm-owner": rh.sh("LC_ALL=C rpm -qf --qf '%{NAME}\\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\\n' "
                           "/usr/bin/bwrap /etc/hostname", check=False),
        "rpm-missing": rh.sh("LC_ALL=C rpm -q --qf '%{VERSION}\\n' bubblewrap-suid", check=False),
        "check-upgrade-none": rh.sh("LC_ALL=C dnf -q --cacheonly check-upgrade bubblewrap", check=False),
        "german": rh.sh("LC_ALL=de_DE.UTF-8 dnf list --showduplicates bubblewrap", check=False),
        "dpkg": rh.sh("dpkg-query -W bubblewrap", check=False),
    }
    return rh


def pacman_reinstall(rh, what):
    """Put a build in place as its owner would (pacman itself, outside the role), whichever of
    bubblewrap, bubblewrap-suid and bubblewrap-git is installed now."""
    rh.sh("old=$(pacman -Qq bubblewrap bubblewrap-suid bubblewrap-git 2>/dev/null | sort -u); "
          "[ -z \"$old\" ] || pacman -Rdd --noconfirm $old >/dev/null; LC_ALL=C pacman %s >/dev/null" % what)


def pacman_sequence(rh):
    rh.sh("metnos-test-repo publish %s %s" % (PKG % "0.11.0-1", SUID))
    checked(rh, "check-fresh")
    mark = log_mark(rh)
    step = rh.role("install")
    step.after.update(q=pacman_q(rh), log=log_since(rh, mark))
    rh.raw = {"syy": rh.sh("LC_ALL=C pacman -Syy", check=False)}     # the download sandbox, measured
    rh.role("again")
    rh.sh("metnos-test-repo publish %s %s" % (PKG % "0.12.0-1", SUID))
    checked(rh, "check-latest-stale", bwrap_host_state="latest")   # the sync database on disk is older
    rh.sh("LC_ALL=C pacman -Sy >/dev/null 2>&1")                   # what a refresh does (no install)
    checked(rh, "check-latest", bwrap_host_state="latest")
    mark = log_mark(rh)
    step = rh.role("latest", bwrap_host_state="latest")
    step.after.update(q=pacman_q(rh), log=log_since(rh, mark))
    rh.role("latest-again", bwrap_host_state="latest")
    pin = dict(bwrap_host_version="0.11.0-1")
    checked(rh, "check-pin", **pin)
    rh.sh("rm -f /var/cache/pacman/pkg/*")
    mark = log_mark(rh)
    step = rh.role("pin-down", **pin)
    step.after.update(q=pacman_q(rh), log=log_since(rh, mark),
                      cache=rh.sh("ls /var/cache/pacman/pkg").stdout.split())
    rh.role("pin-again", **pin)
    step = rh.role("pin-untrusted", bwrap_host_version="0.10.0-1", bwrap_host_pacman_archive_url=UNTRUSTED)
    step.after["q"] = pacman_q(rh)
    pacman_reinstall(rh, "-S --noconfirm bubblewrap-suid")
    rh.raw.update(q_suid=rh.sh("LC_ALL=C pacman -Q bubblewrap bubblewrap-suid", check=False),
                  owner_suid=rh.sh("LC_ALL=C pacman -Qo /bin/bwrap", check=False))
    mark = log_mark(rh)
    step = rh.role("suid-refused", bwrap_host_replace_suid=False)
    step.after.update(q=pacman_q(rh), log=log_since(rh, mark))
    checked(rh, "check-suid")
    mark = log_mark(rh)
    step = rh.role("suid-replaced")
    step.after.update(q=pacman_q(rh), log=log_since(rh, mark),
                      mode=rh.sh("stat -c %a /usr/bin/bwrap").stdout.strip())
    pacman_reinstall(rh, "-S --noconfirm bubblewrap-suid")
    mark = log_mark(rh)
    step = rh.role("pin-suid", **pin)
    step.after.update(q=pacman_q(rh), log=log_since(rh, mark))
    pacman_reinstall(rh, "-U --noconfirm /srv/metnos/builds/%s" % GIT)
    mark = log_mark(rh)
    step = rh.role("git-refused")
    step.after.update(q=pacman_q(rh), log=log_since(rh, mark))
    pacman_reinstall(rh, "-S --noconfirm --ask=4 bubblewrap")
    rh.sh("useradd --system --create-home --shell /usr/sbin/nologin metnos")
    rh.role("facts", bwrap_host_check=True)
    rh.raw.update(
        owner=rh.sh("LC_ALL=C pacman -Qo /bin/bwrap /etc/hostname", check=False),
        qu_none=rh.sh("LC_ALL=C pacman -Qu bubblewrap", check=False),
        german=rh.sh("LC_ALL=de_DE.UTF-8 pacman -Q bubblewrap-suid", check=False),
        dpkg=rh.sh("dpkg-query -W bubblewrap", check=False))
    return rh


SERVICE = """[Unit]
Description=Metnos runtime (test stand-in)
[Service]
User=metnos
ExecStart=/bin/sleep infinity
"""


class Sequence(threading.Thread):
    def __init__(self, image, tmpdir, manager, run, **defaults):
        super().__init__(daemon=True)
        self.image, self.tmpdir, self.manager, self.run_steps, self.defaults = image, tmpdir, manager, run, defaults
        self.host = self.rh = self.error = self.probe = None

    def run(self):
        try:
            self.rh = RoleHost(self.host, self.tmpdir, ansible_env(), self.manager, **self.defaults)
            self.run_steps(self.rh)
            self.host.write("/etc/systemd/system/metnos.service", SERVICE)
            self.host.sh("systemctl daemon-reload && systemctl start metnos.service")
            self.probe = self.host.module("metnos.sandbox.sandbox_probe", {"unit": "metnos.service"})
        except BaseException as exc:   # reported by the tests, with the steps made so far
            self.error = exc


@pytest.fixture(scope="module")
def sequences(request, tmp_path_factory):
    """Both sequences at once, or the one the selected tests need (-k pacman runs only its host)."""
    wanted = {k for item in request.session.items for k in ("dnf", "pacman") if k in item.fixturenames}
    make = {"dnf": lambda: Sequence(DNF_IMAGE, tmp_path_factory.mktemp("dnf"), "dnf", dnf_sequence),
            "pacman": lambda: Sequence(PACMAN_IMAGE, tmp_path_factory.mktemp("pacman"), "pacman", pacman_sequence,
                                       bwrap_host_pacman_archive_url=ARCHIVE)}
    seqs = {kind: make[kind]() for kind in sorted(wanted)}
    for seq in seqs.values():
        if podman("image", "exists", seq.image, check=False).returncode != 0:
            pytest.fail("image %s is missing: run scripts/build-pkghost-images.sh (make system does)" % seq.image)
    try:
        for name, seq in seqs.items():
            seq.host = start_host("metnos-pkg%s" % name, image=seq.image)
        for seq in seqs.values():
            seq.start()
        for seq in seqs.values():
            seq.join(1500)
        yield seqs
    finally:
        for seq in seqs.values():
            if seq.host:
                stop_host(seq.host)


def steps_of(sequences, kind):
    seq = sequences[kind]
    assert seq.error is None, "%s sequence stopped: %r\n%s" % (kind, seq.error, seq.rh and list(seq.rh.steps.values()))
    return seq.rh.steps


@pytest.fixture(scope="module")
def dnf(sequences):
    return steps_of(sequences, "dnf")


@pytest.fixture(scope="module")
def pacman(sequences):
    return steps_of(sequences, "pacman")


def assert_ok(step, changed):
    assert step.rc == 0 and not step.record["failure"], step
    assert (step.changed > 0) == changed, step


# ----------------------------------------------------------------------------- dnf + rpm

@pytest.mark.rule("R-DIAG-2")
def test_dnf_install_when_missing_and_second_run(dnf):
    """A missing bubblewrap is installed from the repository (the RPM's signature checked with the
    repository's key); the role's own rpm query reads it back; a second run changes nothing."""
    assert dnf["install"].record["action"] == "install" and dnf["install"].record["pkg_mgr"] == "dnf"
    assert dnf["install"].record["vars_file"] == "RedHat.yml"
    assert_ok(dnf["install"], True)
    assert dnf["install"].after["version"] == "0:0.10.0-2.el10"
    assert_ok(dnf["again"], False)
    assert (dnf["again"].record["action"], dnf["again"].record["installed"]) == ("none", "0.10.0-2.el10")


@pytest.mark.rule("R-DIAG-2")
def test_dnf_latest_upgrades_to_the_epoch_build(dnf):
    """state=latest with a newer build published: dnf upgrades to 1:0.11.0-1.fc44; the role reads
    the epoch back as rpm prints it; latest again changes nothing."""
    assert_ok(dnf["latest"], True)
    assert dnf["latest"].after["version"] == "1:0.11.0-1.fc44"
    assert_ok(dnf["latest-again"], False)
    assert (dnf["latest-again"].record["action"], dnf["latest-again"].record["installed"]) == \
        ("latest", "1:0.11.0-1.fc44")


@pytest.mark.rule("R-DIAG-2")
def test_dnf_pin_downgrades_and_pins_an_epoch(dnf):
    """A pin older than the installed build is a real downgrade (allow_downgrade: without it the
    module leaves the newer build and reports ok); a pin written with a zero epoch is the same
    build; a pin with epoch 1 goes back up, and pinning it again changes nothing."""
    assert dnf["pin-down"].record["spec"] == "bubblewrap-0.10.0-2.el10"
    assert_ok(dnf["pin-down"], True)
    assert dnf["pin-down"].after["version"] == "0:0.10.0-2.el10"
    assert_ok(dnf["pin-again"], False)
    assert dnf["pin-again"].record["action"] == "none"
    assert dnf["pin-epoch"].record["spec"] == "bubblewrap-1:0.11.0-1.fc44"
    assert_ok(dnf["pin-epoch"], True)
    assert dnf["pin-epoch"].after["version"] == "1:0.11.0-1.fc44"
    assert_ok(dnf["pin-epoch-again"], False)
    assert (dnf["pin-epoch-again"].record["action"], dnf["pin-epoch-again"].record["installed"]) == \
        ("none", "1:0.11.0-1.fc44")


def test_unknown_package_manager_refused_listing_the_choices(dnf):
    """The role's main entry point validates bwrap_host_package_manager (meta/argument_specs.yml)
    before any task runs."""
    step = dnf["manager-unknown"]
    assert step.rc != 0 and "bwrap_host_package_manager must be one of: auto, apt, dnf, dnf5, pacman, got: yum" \
        in step.msg(), step
    assert step.record["action"] == ""


def test_dnf_pin_of_a_build_the_repository_lacks_fails_and_changes_nothing(dnf):
    step = dnf["pin-absent"]
    assert step.rc != 0 and "No package bubblewrap-0.9.0-1.el10 available" in step.out, step
    assert step.after["version"] == "1:0.11.0-1.fc44"


def test_dnf_check_mode_reads_only_and_says_what_it_would_do(dnf):
    """Check mode changes nothing on the host (its whole fingerprint) and reports the plan; for
    latest it answers from dnf's metadata cache, so a build published after the last refresh is
    not seen until the cache is refreshed (that is what check mode promises: nothing downloaded)."""
    for name in ("check-fresh", "check-latest-stale", "check-latest", "check-pin"):
        assert dnf[name].rc == 0 and dnf[name].after["unchanged"], dnf[name]
    assert dnf["check-fresh"].record["report"]["msg"].startswith("check mode: would install bubblewrap (dnf;")
    assert dnf["check-fresh"].changed > 0
    assert "no newer build of bubblewrap in the cached package metadata" in \
        dnf["check-latest-stale"].record["report"]["msg"] and dnf["check-latest-stale"].changed == 0
    assert "would upgrade bubblewrap: bubblewrap.x86_64" in dnf["check-latest"].record["report"]["msg"]
    assert "1:0.11.0-1.fc44" in dnf["check-latest"].record["report"]["msg"] and dnf["check-latest"].changed > 0
    assert "would install bubblewrap-0.10.0-2.el10 (allowing a downgrade)" in dnf["check-pin"].record["report"]["msg"]


@pytest.mark.rule("R-DIAG-3")
def test_dnf_host_bwrap_facts_and_probe_pass(sequences, dnf):
    """The bwrap the RPM installed is real: bwrap_facts' smoke test passes, its package facts name
    rpm's package and revision; the probe passes in a real service's context."""
    facts = dnf["facts"].record["facts"]
    assert_ok(dnf["facts"], False)
    assert facts["verdict"] == "pass", facts["diagnostics"]
    assert facts["bwrap"]["package"] == {"manager": "rpm", "name": "bubblewrap", "revision": "1:0.11.0-1.fc44",
                                         "verified": "ok", "verify_detail": ""}    # rpm -V: the file is the package's
    probe = sequences["dnf"].probe
    assert probe["passed"] is True, [c for c in probe["checks"] if not c["ok"]] or probe
    assert sequences["dnf"].rh.raw["dpkg"].returncode != 0      # never Debian's package


def test_rpm_and_dnf_outputs_the_fakes_encode(sequences, dnf):
    """What tests/unit's fakes and parsers assume about rpm and dnf, against the real tools."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import package_owner
    raw = sequences["dnf"].rh.raw
    owner = raw["rpm-owner"]
    assert owner.returncode == 1 and owner.stdout.startswith("bubblewrap\t1:0.11.0-1.fc44\n")
    assert package_owner.parse_rpm_owner(owner.stdout) == ("bubblewrap", "1:0.11.0-1.fc44")
    assert owner.stdout.endswith("\nfile /etc/hostname is not owned by any package\n")   # on stdout, rc 1
    missing = raw["rpm-missing"]
    assert (missing.returncode, missing.stdout) == (1, "package bubblewrap-suid is not installed\n")
    assert raw["check-upgrade-none"].returncode == 0 and raw["check-upgrade-none"].stdout.strip() == ""
    assert "Verfügbare Pakete" in raw["german"].stdout              # dnf translates: the C locale matters


# ----------------------------------------------------------------------------- pacman

SYU = "Running 'pacman -Syu --noconfirm'"


def runs(log):
    """The pacman commands a step ran, from pacman's own log."""
    return [line.split("[PACMAN] Running ", 1)[1] for line in log if "[PACMAN] Running " in line]


@pytest.mark.rule("R-DIAG-2")
def test_pacman_install_when_missing_and_second_run(pacman):
    """A missing bubblewrap: a full upgrade, then one install from the sync repository (signature
    required); the role's pacman -Q reads it back; a second run changes nothing."""
    step = pacman["install"]
    assert (step.record["action"], step.record["pkg_mgr"], step.record["vars_file"]) == \
        ("install", "pacman", "Archlinux.yml")
    assert_ok(step, True)
    assert runs(step.after["log"]) == ["'pacman -Syu --noconfirm'", "'pacman -S --needed --noconfirm bubblewrap'"]
    assert transactions(step.after["log"]) == [["installed bubblewrap (0.11.0-1)"]]
    assert step.after["q"] == "bubblewrap 0.11.0-1\n"
    assert_ok(pacman["again"], False)
    assert (pacman["again"].record["action"], pacman["again"].record["installed"]) == ("none", "0.11.0-1")


@pytest.mark.rule("R-DIAG-2")
def test_pacman_latest_is_the_full_upgrade(pacman):
    step = pacman["latest"]
    assert_ok(step, True)
    assert transactions(step.after["log"]) == [["upgraded bubblewrap (0.11.0-1 -> 0.12.0-1)"]]
    assert step.after["q"] == "bubblewrap 0.12.0-1\n"
    assert_ok(pacman["latest-again"], False)


@pytest.mark.rule("R-DIAG-2")
def test_pacman_pin_is_one_signed_download_from_the_archive(pacman):
    """A pin is pacman -U of the archived build (file:// here, the variable a user points at a
    mirror): a real downgrade, with the .sig fetched next to the package and checked; pinning
    again changes nothing; a build from another mirror, signed by a key pacman's keyring does not
    hold, is refused and nothing changes."""
    step = pacman["pin-down"]
    assert step.record["spec"] == ARCHIVE + "/b/bubblewrap/" + PKG % "0.11.0-1"
    assert_ok(step, True)
    assert runs(step.after["log"]) == ["'pacman -U --needed --noconfirm %s'" % step.record["spec"]]
    assert transactions(step.after["log"]) == [["downgraded bubblewrap (0.12.0-1 -> 0.11.0-1)"]]
    assert sorted(step.after["cache"]) == [PKG % "0.11.0-1", PKG % "0.11.0-1" + ".sig"]
    assert_ok(pacman["pin-again"], False)
    assert pacman["pin-again"].record["action"] == "none"
    bad = pacman["pin-untrusted"]     # pacman --noconfirm tries to import the key (a keyserver): none here
    assert bad.rc != 0 and "error: required key missing from keyring" in bad.out, bad
    assert bad.after["q"] == "bubblewrap 0.11.0-1\n"


@pytest.mark.rule("R-DIAG-2")
def test_pacman_suid_build_replaced_in_one_transaction_or_refused(pacman):
    """bubblewrap-suid installed: without bwrap_host_replace_suid the role refuses before pacman
    runs at all; with it, --ask=4 answers pacman's conflict question and ONE transaction removes
    the setuid build and installs bubblewrap; a pin with the setuid build installed is one
    transaction too."""
    refused = pacman["suid-refused"]
    assert refused.rc != 0 and "bwrap_host_replace_suid=true" in refused.msg(), refused
    assert runs(refused.after["log"]) == [] and refused.after["q"] == "bubblewrap-suid 0.11.0-1\n" * 2
    step = pacman["suid-replaced"]
    assert step.record["conflicts"] == ["bubblewrap-suid"]
    assert_ok(step, True)
    assert runs(step.after["log"]) == ["'pacman -Syu --noconfirm'",
                                       "'pacman -S --needed --noconfirm --ask=4 bubblewrap'"]
    assert transactions(step.after["log"]) == [["removed bubblewrap-suid (0.11.0-1)",
                                                "installed bubblewrap (0.12.0-1)"]]
    assert step.after["q"] == "bubblewrap 0.12.0-1\n" and step.after["mode"] == "755"
    pin = pacman["pin-suid"]
    assert_ok(pin, True)
    assert transactions(pin.after["log"]) == [["removed bubblewrap-suid (0.11.0-1)",
                                               "installed bubblewrap (0.11.0-1)"]]
    assert pin.after["q"] == "bubblewrap 0.11.0-1\n"


def test_pacman_a_users_own_build_is_refused_before_any_transaction(pacman):
    """bubblewrap-git (provides and conflicts bubblewrap, another name): pacman -Q bubblewrap answers
    with it; the role names it and changes nothing (pacman -S would otherwise fail on the conflict
    after a full upgrade)."""
    step = pacman["git-refused"]
    assert step.rc != 0 and "bubblewrap-git is installed and provides bubblewrap" in step.msg(), step
    assert runs(step.after["log"]) == []
    assert step.after["q"] == "bubblewrap-git 0.12.0.r3.g1a2b3c4-1\n" * 2


def test_pacman_check_mode_reads_only_and_says_what_it_would_do(pacman):
    for name in ("check-fresh", "check-latest-stale", "check-latest", "check-pin", "check-suid"):
        assert pacman[name].rc == 0 and pacman[name].after["unchanged"], pacman[name]
    msg = {name: pacman[name].record["report"].get("msg", "") for name in pacman if name.startswith("check-")}
    assert msg["check-fresh"].startswith("check mode: would install bubblewrap (pacman;")
    assert "no newer build of bubblewrap in the cached package metadata" in msg["check-latest-stale"]
    assert pacman["check-latest-stale"].changed == 0
    assert "would upgrade bubblewrap: bubblewrap 0.11.0-1 -> 0.12.0-1" in msg["check-latest"]
    assert "would install %s/b/bubblewrap/%s (allowing a downgrade)" % (ARCHIVE, PKG % "0.11.0-1") in msg["check-pin"]
    assert "would replace bubblewrap-suid with bubblewrap in one transaction" in msg["check-suid"]


@pytest.mark.rule("R-DIAG-3")
def test_pacman_host_bwrap_facts_and_probe_pass(sequences, pacman):
    facts = pacman["facts"].record["facts"]
    assert_ok(pacman["facts"], False)
    assert facts["verdict"] == "pass", facts["diagnostics"]
    assert facts["bwrap"]["package"] == {"manager": "pacman", "name": "bubblewrap", "revision": "0.12.0-1",
                                         "verified": "ok", "verify_detail": ""}    # pacman -Qkk: the package's file
    probe = sequences["pacman"].probe
    assert probe["passed"] is True, [c for c in probe["checks"] if not c["ok"]] or probe
    assert sequences["pacman"].rh.raw["dpkg"].returncode != 0


def test_pacman_outputs_the_fakes_encode(sequences, pacman):
    """What tests/unit's fakes and parsers assume about pacman, against pacman 7.0 -- and the
    download sandbox inside a container without CAP_SYS_ADMIN (Landlock cannot restrict the
    download: pacman says so on stderr and downloads anyway, rc 0)."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import package_owner
    raw = sequences["pacman"].rh.raw
    q = raw["q_suid"]
    assert (q.returncode, q.stdout) == (0, "bubblewrap-suid 0.11.0-1\nbubblewrap-suid 0.11.0-1\n")
    assert package_owner.parse_pacman_owner(raw["owner_suid"].stdout) == ("bubblewrap-suid", "0.11.0-1")
    assert raw["owner_suid"].stdout == "/usr/bin/bwrap is owned by bubblewrap-suid 0.11.0-1\n"   # /bin resolved
    owner = raw["owner"]
    assert owner.returncode == 1 and package_owner.parse_pacman_owner(owner.stdout) == ("bubblewrap", "0.12.0-1")
    assert "error: No package owns /etc/hostname" in owner.stderr
    assert (raw["qu_none"].returncode, raw["qu_none"].stdout) == (1, "")
    assert "Fehler: Paket »bubblewrap-suid« wurde nicht gefunden" in raw["german"].stderr
    syy = raw["syy"]
    assert syy.returncode == 0, syy
    assert "restricting filesystem access failed because the landlock ruleset could not be applied" in syy.stderr
