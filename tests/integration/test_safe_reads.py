"""Root reads a manifest someone else controls once, bounded, never through their links, never for them what they
could not read themselves, and never half-written (issue 49 items 3 and 5, issue 52 item 3).

Everything is planted for real: a user made with useradd owns the manifest folder; the links, hard links and FIFOs
are real; the root-only files hold secret tokens; the rewrite in place is a real process truncating and writing the
file during real renders (renderer.render_safe, then store.write, as the sandbox_profile module does: that one is in
tests/system/test_faults.py, with tests/helpers/rewritten_manifest.py). The one
stand-in: "a kernel without openat2" is this kernel with safe_read's openat2 lookup emptied (the fallback, O_NOFOLLOW
per component, cannot be reached otherwise on this 6.x kernel); both paths run every link case."""
import datetime
import grp
import json
import os
import pwd
import shutil
import subprocess
import tempfile
import time

import pytest
import yaml

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import safe_read
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    manifest,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import waivers
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import environment, systemd_unit
from conftest import ROOT, run_module
from helpers import real_user
from helpers.rewritten_manifest import render

USER_PREFIX = "mtn-reads-"
USER = "%s%d" % (USER_PREFIX, os.getpid() % 100000)        # the name real_user.made gives it
TOKEN = "SECRET-TOKEN-%d-do-not-leak" % os.getpid()
SHADOW_TOKEN = "$6$rounds=5000$SHADOWTOKEN%d$" % os.getpid()


@pytest.fixture(scope="module")
def user():
    """The real user (tests/helpers/real_user.py), named USER, as its passwd entry."""
    with real_user.made(USER_PREFIX) as made:
        assert made.name == USER
        yield pwd.getpwnam(made.name)


@pytest.fixture
def place(user):
    """/var/tmp/<root 0755>/{secret (root 0700) with root-only 0600 files, manifests (the user's 0755 folder)}."""
    root = tempfile.mkdtemp(prefix="metnos-reads-", dir="/var/tmp")
    os.chmod(root, 0o755)
    secret = os.path.join(root, "secret")
    os.mkdir(secret, 0o700)
    with open(os.path.join(secret, "manifest.yml"), "w") as handle:
        handle.write("name: leak\norigin: %s\ncapabilities: []\n" % TOKEN)
    with open(os.path.join(secret, "shadow"), "w") as handle:
        handle.write("root:%s:20000:0:99999:7:::\n" % SHADOW_TOKEN)
    for name in ("manifest.yml", "shadow"):
        os.chmod(os.path.join(secret, name), 0o600)
    folder = os.path.join(root, "manifests")
    os.mkdir(folder, 0o755)
    os.chown(folder, user.pw_uid, user.pw_gid)
    yield {"root": root, "secret": secret, "folder": folder, "user": user}
    shutil.rmtree(root)


@pytest.fixture(params=["openat2", "no_openat2"])
def kernel(request, monkeypatch):
    if request.param == "no_openat2":
        monkeypatch.setattr(safe_read, "_OPENAT2", [None])
    return request.param


def refusal_of(prof):
    assert prof["decision"] == "refused", prof
    return [d for d in prof["diagnostics"] if d["severity"] == "error"][0]


def no_token(prof):
    text = json.dumps(prof)
    assert TOKEN not in text and "SHADOWTOKEN" not in text, text


def test_canary_the_root_only_manifest_carries_its_token(place, kernel):
    """Read where root put it (a folder root alone controls), the secret manifest renders with its token: so a
    render through the user's link that showed no token proves the refusal, not an empty file."""
    prof = render(os.path.join(place["secret"], "manifest.yml"), place["root"])
    assert prof["decision"] != "refused", prof["diagnostics"]
    assert TOKEN in json.dumps(prof)


@pytest.mark.parametrize("target", ["manifest.yml", "shadow"])
def test_manifest_linked_to_a_root_only_file_is_refused(place, kernel, target):
    link = os.path.join(place["folder"], "m.yml")
    os.symlink(os.path.join(place["secret"], target), link)
    os.lchown(link, place["user"].pw_uid, place["user"].pw_gid)
    diag = refusal_of(render(link, place["root"]))
    assert diag["code"] == "manifest_link_refused", diag
    assert link in diag["message"] and USER in diag["message"] and "root (uid 0)" in diag["message"], diag
    assert diag["remediation"] == ["rm -- %s" % link]
    no_token(diag)


def test_folder_on_the_way_linked_to_a_root_only_folder_is_refused(place, kernel):
    """The link is a folder of the path, not its last name: refused too (RESOLVE_NO_SYMLINKS / O_NOFOLLOW on each
    folder), and named."""
    link = os.path.join(place["folder"], "sub")
    os.symlink(place["secret"], link)
    prof = render(os.path.join(link, "manifest.yml"), place["root"])
    diag = refusal_of(prof)
    assert diag["code"] == "manifest_link_refused" and link in diag["message"], diag
    no_token(prof)


def test_hard_link_to_a_root_only_file_is_judged_as_the_folder_owner(place, kernel):
    """Root plants the hard link (protected_hardlinks stops the user making it; an old one, or another kernel
    setting, would not): the folder's owner could not read the file, so root does not read it for them."""
    planted = os.path.join(place["folder"], "m.yml")
    os.link(os.path.join(place["secret"], "manifest.yml"), planted)
    prof = render(planted, place["root"])
    diag = refusal_of(prof)
    assert diag["code"] == "manifest_unreadable_by_owner", diag
    assert USER in diag["message"] and planted in diag["message"], diag
    no_token(prof)
    # canary: the same folder, a file its owner can read, renders
    readable = os.path.join(place["folder"], "ok.yml")
    with open(readable, "w") as handle:
        handle.write("name: ok\norigin: tests\ncapabilities: []\n")
    os.chmod(readable, 0o600)
    os.chown(readable, place["user"].pw_uid, place["user"].pw_gid)
    assert render(readable, place["root"])["decision"] != "refused"


def test_fifo_is_refused_at_once(place, kernel):
    fifo = os.path.join(place["folder"], "m.yml")
    os.mkfifo(fifo)
    started = time.monotonic()
    diag = refusal_of(render(fifo, place["root"]))
    assert time.monotonic() - started < 2
    assert diag["code"] == "manifest_fifo" and fifo in diag["message"], diag


# ------------------------------------------------------------------ unit files, drop-ins and waivers

def unit_diagnostics(state):
    return environment.refused_file_diagnostics("metnos.service", state)


@pytest.fixture
def user_units(place):
    """The user's ~/.config/systemd/user with metnos.service (theirs), its drop-in folder, and a root-only 0600 unit
    holding the token."""
    home = os.path.join(place["root"], "home")
    units = os.path.join(home, ".config", "systemd", "user")
    os.makedirs(os.path.join(units, "metnos.service.d"))
    with open(os.path.join(place["secret"], "root.service"), "w") as handle:
        handle.write("[Service]\nExecStart=/usr/bin/%s\nEnvironment=TOKEN=%s\n" % (TOKEN, TOKEN))
    os.chmod(os.path.join(place["secret"], "root.service"), 0o600)
    with open(os.path.join(units, "metnos.service.d", "10-own.conf"), "w") as handle:
        handle.write("[Service]\nEnvironment=CANARY=1\n")
    for folder, _dirs, files in os.walk(home):
        for name in [folder] + [os.path.join(folder, f) for f in files]:
            os.chown(name, place["user"].pw_uid, place["user"].pw_gid)
    return dict(place, home=home, units=units)


@pytest.mark.parametrize("planted", ["fragment", "dropin"])
def test_unit_file_linked_to_a_root_only_unit_is_refused(user_units, kernel, planted):
    units = user_units["units"]
    link = os.path.join(units, "metnos.service") if planted == "fragment" else \
        os.path.join(units, "metnos.service.d", "20-link.conf")
    if planted == "dropin":
        with open(os.path.join(units, "metnos.service"), "w") as handle:
            handle.write("[Service]\nExecStart=/bin/true\n")
    os.symlink(os.path.join(user_units["secret"], "root.service"), link)
    state = systemd_unit.load_unit("metnos.service", "user", "/", user_units["home"])
    assert [f["reason"] for f in state["refused_files"]] == ["link"], state["refused_files"]
    assert {"name": "CANARY", "value": "1"}.items() <= state["environment"][0].items(), state   # canary: drop-ins read
    no_token(state)
    diag = unit_diagnostics(state)[0]
    assert diag["code"] == "unit_file_link_refused" and link in diag["message"] and USER in diag["message"], diag
    assert diag["remediation"] == ["rm -- %s" % link]


def test_unit_dropin_fifo_is_refused_at_once(user_units, kernel):
    with open(os.path.join(user_units["units"], "metnos.service"), "w") as handle:
        handle.write("[Service]\nExecStart=/bin/true\n")
    fifo = os.path.join(user_units["units"], "metnos.service.d", "30-fifo.conf")
    os.mkfifo(fifo)
    started = time.monotonic()
    state = systemd_unit.load_unit("metnos.service", "user", "/", user_units["home"])
    assert time.monotonic() - started < 2
    diag = unit_diagnostics(state)[0]
    assert diag["code"] == "unit_file_fifo" and fifo in diag["message"], diag


def test_waiver_file_linked_to_a_root_only_file_is_refused(place, kernel):
    link = os.path.join(place["folder"], "waivers.yml")
    os.symlink(os.path.join(place["secret"], "manifest.yml"), link)
    with pytest.raises(waivers.WaiverError) as caught:
        waivers.read(link, datetime.date.today())
    text = json.dumps(caught.value.diagnostics)
    assert "symbolic link" in text and link in text and TOKEN not in text, text


# ------------------------------------------------------------------ no root-only content leaves root

def config_mode():
    """The mode the role gives /etc/metnos-sandbox-monitor.json (roles/metnos_sandbox/tasks/monitor.yml)."""
    with open(os.path.join(ROOT, "roles", "metnos_sandbox", "tasks", "monitor.yml")) as handle:
        tasks = yaml.safe_load(handle)
    task = [t for t in tasks if t.get("name", "").startswith("Monitor | its configuration")][0]
    return int(task["ansible.builtin.copy"]["mode"], 8)


def user_finds(place, token):
    """The files under the place that the user can read and that hold ``token``: grep run AS the user."""
    user = place["user"]
    found = subprocess.run(["setpriv", "--reuid", str(user.pw_uid), "--regid", str(user.pw_gid), "--init-groups",
                            "--inh-caps=-all", "--bounding-set=-all", "grep", "-rlF", "--", token, place["root"]],
                           capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, timeout=60)
    return sorted(found.stdout.split())


def test_no_root_only_content_reaches_what_the_user_can_read(user_units):
    """Secret tokens in root-only 0600 files, linked from every place the user writes that the toolkit reads (the
    manifest folder, the unit's drop-in folder, the waiver file, the profile folder's manifest); then the toolkit's
    steps: the sandbox_profile module renders into a profile folder, the monitor's configuration is made from the
    manifest as the role makes it (metnos_manifest_source's from_source, with the role's mode), the unit is read,
    the waivers are read. Then everything the user can read is grepped, as the user."""
    place = user_units
    folder, secret = place["folder"], place["secret"]
    manifest_link = os.path.join(folder, "ex.yml")
    os.symlink(os.path.join(secret, "manifest.yml"), manifest_link)
    os.symlink(os.path.join(secret, "shadow"), os.path.join(folder, "shadow.yml"))
    os.symlink(os.path.join(secret, "manifest.yml"), os.path.join(folder, "waivers.yml"))
    os.symlink(os.path.join(secret, "root.service"), os.path.join(place["units"], "metnos.service.d", "50-x.conf"))
    with open(os.path.join(place["units"], "metnos.service"), "w") as handle:
        handle.write("[Service]\nExecStart=/bin/true\n")
    profiles = os.path.join(place["root"], "profiles")
    os.mkdir(profiles, 0o755)
    # canary: the grep, run as the user, sees a token in a file the user can read
    canary = os.path.join(folder, "canary")
    with open(canary, "w") as handle:
        handle.write(TOKEN)
    assert user_finds(place, TOKEN) == [canary]
    os.unlink(canary)

    results = [run_module("metnos.sandbox.sandbox_profile", {"manifest_file": os.path.join(folder, name),
                                                             "host": {"python_executable": "/usr/bin/python3"},
                                                             "dest": profiles, "fail_on_refusal": False})
               for name in ("ex.yml", "shadow.yml")]
    config = os.path.join(place["root"], "metnos-sandbox-monitor.json")
    with open(config, "w") as handle:
        json.dump({"manifests": [manifest.from_source(os.path.join(folder, n)) for n in ("ex.yml", "shadow.yml")]},
                  handle)
    os.chmod(config, config_mode())
    state = systemd_unit.load_unit("metnos.service", "user", "/", place["home"])
    with open(os.path.join(profiles, "unit-state.json"), "w") as handle:   # as a report would carry it
        json.dump(environment.refused_file_diagnostics("metnos.service", state) + [state], handle)
    with pytest.raises(waivers.WaiverError):
        waivers.read(os.path.join(folder, "waivers.yml"), datetime.date.today())

    assert user_finds(place, TOKEN) == [] and user_finds(place, "SHADOWTOKEN") == []     # first: what leaked
    assert config_mode() == 0o600
    assert [res.get("refusal") for res in results] == ["manifest_link_refused"] * 2, results
    with open(config) as handle:           # root reads it: the refusal is there, the content is not
        assert "manifest_link_refused" in handle.read()


GROUP = "mtn-rgrp-%d" % os.getpid()
WRITABLE_FOLDERS = [     # (the folder's mode, whether its group is GROUP (else root's), who it names)
    pytest.param(0o2775, True, "the members of group %s" % GROUP, id="group-writable-2775"),
    pytest.param(0o0777, False, "any user", id="world-writable-not-sticky-0777"),
]


@pytest.fixture(scope="module")
def group_member(user):
    """A real group (groupadd) with the module's user (useradd) in it."""
    subprocess.run(["groupadd", "--system", GROUP], check=True)
    try:
        subprocess.run(["usermod", "--append", "--groups", GROUP, USER], check=True)
        yield {"user": user, "gid": grp.getgrnam(GROUP).gr_gid}
    finally:
        subprocess.run(["gpasswd", "--delete", USER, GROUP], check=False, capture_output=True)
        subprocess.run(["groupdel", GROUP], check=False)


@pytest.mark.parametrize("mode, group_owned, named", WRITABLE_FOLDERS)
def test_root_only_file_moved_in_a_root_folder_others_may_write(place, kernel, group_member, mode, group_owned,
                                                                  named):
    """Attack report finding 3: a folder root owns but its group (or everyone, without the sticky bit) may write.
    Root leaves a 0600 file with a token in it; the user (a member of the group) renames it to manifest.yml for
    real (setpriv, mv). The file is judged as the group / others would see it: refused, no token."""
    user = group_member["user"]
    folder = os.path.join(place["root"], "shared")
    os.mkdir(folder)
    os.chown(folder, 0, group_member["gid"] if group_owned else 0)
    os.chmod(folder, mode)
    secret = os.path.join(folder, "root-only.yml")
    with open(secret, "w") as handle:
        handle.write("name: leak\norigin: %s\ncapabilities: []\n" % TOKEN)
    os.chmod(secret, 0o600)
    planted = os.path.join(folder, "manifest.yml")
    subprocess.run(["setpriv", "--reuid", str(user.pw_uid), "--regid", str(user.pw_gid), "--init-groups",
                    "mv", "--", secret, planted], check=True, env={"PATH": "/usr/bin:/bin"})
    assert os.stat(planted).st_uid == 0 and not os.path.exists(secret), "the user's move did not happen"
    with pytest.raises(safe_read.Refused) as refused:
        safe_read.read_once(planted, 4096)
    assert refused.value.reason == safe_read.OWNER_CANNOT_READ and named in refused.value.owner, vars(refused.value)
    prof = render(planted, place["root"])
    diag = refusal_of(prof)
    assert diag["code"] == "manifest_unreadable_by_owner" and named in diag["message"], diag
    no_token(prof)
    # canary: the same file made readable by the group and others renders with its token in that same folder
    os.chmod(planted, 0o644)
    assert TOKEN in json.dumps(render(planted, place["root"]))


@pytest.mark.parametrize("linked", ["metnos.service.d", "service.d"])
def test_dropin_folder_linked_to_a_root_only_folder_is_never_listed(user_units, kernel, linked):
    """Attack report finding 7: the user's drop-in folder is a link to a root-only (0700) folder whose file names
    are secret; root lists no name in it, and the link is refused with its own code. Canary: the user's own drop-in
    (moved to the other drop-in folder) is still read."""
    units = user_units["units"]
    with open(os.path.join(units, "metnos.service"), "w") as handle:
        handle.write("[Service]\nExecStart=/bin/true\n")
    if linked == "metnos.service.d":
        os.rename(os.path.join(units, "metnos.service.d"), os.path.join(units, "service.d"))
    confs = os.path.join(user_units["secret"], "confs")
    os.mkdir(confs, 0o700)
    secret_name = "db-password-%s.conf" % TOKEN
    with open(os.path.join(confs, secret_name), "w") as handle:
        handle.write("[Service]\nEnvironment=LEAK=%s\n" % TOKEN)
    os.chmod(os.path.join(confs, secret_name), 0o600)
    link = os.path.join(units, linked)
    os.symlink(confs, link)
    os.lchown(link, user_units["user"].pw_uid, user_units["user"].pw_gid)
    assert os.listdir(link) == [secret_name]      # canary: through the link, root would see the secret name
    state = systemd_unit.load_unit("metnos.service", "user", "/", user_units["home"])
    no_token(state)
    assert [(f["path"], f["reason"]) for f in state["refused_files"]] == [(link, "link")], state["refused_files"]
    assert {"name": "CANARY", "value": "1"}.items() <= state["environment"][0].items(), state
    diag = unit_diagnostics(state)[0]
    assert diag["code"] == "unit_file_link_refused" and link in diag["message"] and USER in diag["message"], diag


def test_dropin_folder_linked_by_root_in_roots_own_folders_is_listed(kernel):
    """The other side of finding 7: in folders root alone controls (/run/<root 0755>), a drop-in folder that is
    root's own link (as /etc/systemd/system/x.service.d -> elsewhere) is followed and its drop-ins read."""
    top = tempfile.mkdtemp(prefix="metnos-dropins-", dir="/run")
    try:
        os.chmod(top, 0o755)
        real = os.path.join(top, "real.d")
        os.mkdir(real, 0o755)
        with open(os.path.join(real, "10-root.conf"), "w") as handle:
            handle.write("[Service]\nEnvironment=ROOTS=1\n")
        os.symlink(real, os.path.join(top, "metnos.service.d"))
        assert systemd_unit.find_dropins("metnos.service", [top]) == [os.path.join(top, "metnos.service.d",
                                                                                   "10-root.conf")]
    finally:
        shutil.rmtree(top)


@pytest.mark.skipif(not shutil.which("setfacl"), reason="needs setfacl (the acl package: scripts/host-packages.sh)")
@pytest.mark.parametrize("acl", [None, "u:{user}:rwx", "d:u:{user}:rwx"])
def test_a_root_folder_whose_acl_lets_the_user_write_is_not_trusted(place, kernel, acl):
    """A folder root owns, mode 0755, but whose ACL (set for real with setfacl) lets the user write it: the user
    could replace root's link there, so a link in it is not followed (safe_read.trusted reads the ACL through the
    open folder: owners.change_reasons). Canary: without the ACL, root's link there is root's choice and is read.
    Mutation run by hand: safe_read.trusted not given the folder's descriptor (no ACL judged): the default-ACL
    cases (both kernels) read the root-only file and fail; the access ACL raises the mode's group bits, which
    trusted refused before too."""
    shared = tempfile.mkdtemp(prefix="metnos-acl-", dir="/run")      # root's 0755 from / (not /var/tmp: sticky)
    try:
        os.chmod(shared, 0o755)
        link = os.path.join(shared, "manifest.yml")
        os.symlink(os.path.join(place["secret"], "manifest.yml"), link)
        if acl is None:
            assert TOKEN.encode() in safe_read.read_once(link, 1 << 16)
            return
        subprocess.run(["setfacl", "-m", acl.format(user=place["user"].pw_name), shared], check=True)
        with pytest.raises(safe_read.Refused) as caught:
            safe_read.read_once(link, 1 << 16)
        assert caught.value.reason == safe_read.LINK, caught.value
    finally:
        shutil.rmtree(shared)
