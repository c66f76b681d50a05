"""Service-environment checks on real directories of this host (PATH safety, lookup as the
service user, restriction diagnostics, the enforce drop-in)."""
import grp
import os
import pwd
import shutil
import signal
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap, procfs
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import (
    enforce,
    environment,
    restrictions,
    run_user,
    systemd_unit,
)

NOBODY = pwd.getpwnam("nobody")
USER = {"name": "nobody", "uid": NOBODY.pw_uid, "gid": NOBODY.pw_gid, "groups": [NOBODY.pw_gid]}


@pytest.fixture
def tree():
    root = tempfile.mkdtemp(prefix="metnos-svc-", dir="/var/tmp")
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root)


def fake_bwrap(directory, mode=0o755):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "bwrap")
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n")
    os.chmod(path, mode)
    return path


def test_world_writable_dir_before_bwrap_is_unsafe(tree):
    evil = os.path.join(tree, "evil")
    fake_bwrap(evil)
    os.chmod(evil, 0o777)
    path = "%s:/usr/bin" % evil
    resolved = run_user.which_as("bwrap", path, USER)
    assert resolved == os.path.join(evil, "bwrap")
    diags = run_user.path_diagnostics(path, resolved, "metnos.service")
    assert [d["code"] for d in diags] == ["service_path_unsafe"]
    assert "writable by group or others" in diags[0]["message"]


def test_a_path_entry_is_judged_where_execvp_resolves_it(tree):
    """Planted, one PATH entry each (the diagnostics named the wrong directory or none; mutations: judging the
    lexical normpath of the entry, or only the directories as written, each misses one of them):
    - <tree>/link/../bin, link -> <tree>/real/sub: execvp runs <tree>/real/bin/bwrap (the kernel resolves '..'
      after the link), a directory anyone may write; the lexical <tree>/bin is a clean root-owned one;
    - <tree>/opt/tool -> <tree>/home/bin: the link and <tree>/opt are root's, but <tree>/home, on the way to
      where the link leads, belongs to nobody, who can swap bin for one holding their own bwrap.
    The service's lookup names the same file, and heal_path moves the packaged bwrap before each entry, for
    the same reason, once the planted bwrap is gone."""
    real_bin = os.path.join(tree, "real", "bin")
    fake_bwrap(real_bin)
    os.chmod(real_bin, 0o777)
    fake_bwrap(os.path.join(tree, "bin"))
    os.makedirs(os.path.join(tree, "real", "sub"))
    os.symlink(os.path.join(tree, "real", "sub"), os.path.join(tree, "link"))
    home_bin = os.path.join(tree, "home", "bin")
    fake_bwrap(home_bin)
    os.chown(os.path.join(tree, "home"), NOBODY.pw_uid, NOBODY.pw_gid)
    os.makedirs(os.path.join(tree, "opt"))
    os.symlink(home_bin, os.path.join(tree, "opt", "tool"))
    packaged = lambda path: {"name": "bubblewrap"} if path == "/usr/bin/bwrap" else {}  # noqa: E731
    for entry, culprit, reason in (
            ("%s/link/../bin" % tree, real_bin, "writable by group or others (mode 0777)"),
            ("%s/opt/tool" % tree, os.path.join(tree, "home"), "owned by uid %d (on the way to %s/opt/tool)" % (
                NOBODY.pw_uid, tree))):
        path = "%s:/usr/bin" % entry
        resolved = run_user.which_as("bwrap", path, USER)
        assert os.path.realpath(resolved) == os.path.join(os.path.realpath(culprit) if culprit == real_bin
                                                          else home_bin, "bwrap")
        diags = run_user.path_diagnostics(path, resolved, "metnos.service")
        assert [d["code"] for d in diags] == ["service_path_unsafe"], (entry, diags)
        assert "%s is %s" % (culprit, reason) in diags[0]["message"], diags[0]["message"]
        os.unlink(resolved)                     # nothing planted yet, but anyone could: heal_path still moves
        healed, changes, problem = enforce.heal_path(path, USER, packaged)
        assert healed == "/usr/bin:%s" % entry and problem is None and reason in changes[0], changes


class _Hung(Exception):
    pass


def _bounded(seconds, func, *args):
    """func(*args), or _Hung after ``seconds`` (a check that never returns fails the test instead of hanging it)."""
    def ring(_signum, _frame):
        raise _Hung("%s did not return within %d s" % (func.__name__, seconds))
    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        return func(*args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _packaged(path):
    return {"name": "bubblewrap"} if path == "/usr/bin/bwrap" else {}


def test_an_entry_with_a_leading_double_slash_is_judged_and_the_checks_end():
    """Planted: PATH=//usr/bin (Linux reads '//' as '/'). Every check returns, and judges /usr/bin (before, each
    walk up by dirname() looped on the '//' that normpath keeps, forever; mutation: that walk put back in
    _dir_problem hangs, and the alarm fails the test)."""
    packaged = _packaged
    assert _bounded(10, run_user.which_as, "bwrap", "//usr/bin", USER) == "/usr/bin/bwrap"
    assert _bounded(10, run_user.path_diagnostics, "//usr/bin", "/usr/bin/bwrap", "m") == []
    assert _bounded(10, enforce.heal_path, "//usr/bin", USER, packaged)[2] is None
    assert _bounded(10, run_user.dir_problem, "//tmp") is not None


def test_an_entry_that_does_not_exist_is_judged_where_it_would_be_created(tree):
    """Planted: <tree>/home (nobody's) and <tree>/sticky (root's, 1777) hold no bin yet; PATH entries
    <tree>/home/bin and <tree>/sticky/bin. Nobody can mkdir either and plant a bwrap that execvp then runs, so
    both are unsafe, and heal_path puts the packaged bwrap first; <tree>/root/bin under a root-owned 0755
    directory is not (mutation: giving up at the first missing directory, as before, calls all three safe)."""
    home, sticky, closed = (os.path.join(tree, n) for n in ("home", "sticky", "root"))
    for folder in (home, sticky, closed):
        os.makedirs(folder)
    os.chown(home, NOBODY.pw_uid, NOBODY.pw_gid)
    os.chmod(sticky, 0o1777)
    for entry, reason in (("%s/bin" % home, "%s is owned by uid %d" % (home, NOBODY.pw_uid)),
                          ("%s/bin" % sticky, "%s is writable by group or others (mode 1777)" % sticky)):
        diags = run_user.path_diagnostics("%s:/usr/bin" % entry, "/usr/bin/bwrap", "metnos.service")
        assert [d["code"] for d in diags] == ["service_path_unsafe"], entry
        assert "%s does not exist, and %s" % (entry, reason) in diags[0]["message"], diags[0]["message"]
        assert enforce.heal_path("%s:/usr/bin" % entry, USER, _packaged)[0] == "/usr/bin:%s" % entry
    assert run_user.path_diagnostics("%s/bin:/usr/bin" % closed, "/usr/bin/bwrap", "m") == []


def test_a_link_whose_directory_someone_else_owns_is_unsafe_on_the_way(tree):
    """Planted: the chain passes a link kept in nobody's <tree>/home, between root-owned ends - for a PATH
    directory (<tree>/sys/tool -> <tree>/home/l2 -> /usr/bin) and for the bwrap file itself
    (<tree>/sysbin/bwrap -> <tree>/home/bwrap-link -> /usr/bin/bwrap). Nobody can repoint the middle link to a
    bwrap of their own: unsafe, named "on the way"; file_facts says so for the file, and heal_path does not
    trust that bwrap (mutation: judging the entry as written and the link's final target only, as before,
    finds nothing)."""
    home = os.path.join(tree, "home")
    os.makedirs(home)
    os.chown(home, NOBODY.pw_uid, NOBODY.pw_gid)
    os.symlink("/usr/bin", os.path.join(home, "l2"))
    os.symlink("/usr/bin/bwrap", os.path.join(home, "bwrap-link"))
    for folder in ("sys", "sysbin"):
        os.makedirs(os.path.join(tree, folder))
    os.symlink(os.path.join(home, "l2"), os.path.join(tree, "sys", "tool"))
    os.symlink(os.path.join(home, "bwrap-link"), os.path.join(tree, "sysbin", "bwrap"))
    entry = os.path.join(tree, "sys", "tool")
    diags = run_user.path_diagnostics("%s:/usr/bin" % entry, "%s/bwrap" % entry, "metnos.service")
    assert "%s is owned by uid %d (on the way to %s)" % (home, NOBODY.pw_uid, entry) in diags[0]["message"]
    binary = os.path.join(tree, "sysbin", "bwrap")
    facts = bwrap.file_facts(binary)
    assert facts["realpath"] == "/usr/bin/bwrap"
    assert "%s is owned by uid %d, not root (on the way to %s)" % (home, NOBODY.pw_uid, binary) in \
        facts["ownership_problems"]
    diags = run_user.path_diagnostics("%s:/usr/bin" % os.path.dirname(binary), binary, "metnos.service")
    assert [d["code"] for d in diags] == ["service_path_unsafe"]
    healed, changes, _problem = enforce.heal_path("%s:/usr/bin" % entry, USER, lambda p: {"name": "bubblewrap"})
    assert healed == "/usr/bin:%s" % entry, changes
    assert bwrap.file_facts("/usr/bin/bwrap")["ownership_problems"] == []


def test_a_directory_reached_through_an_unsearchable_one_is_not_the_users(tree):
    """The kernel needs search permission on the way to where a symlink leads too: <tree>/opt/tool ->
    <tree>/locked/bin, <tree>/locked 0700 (root's): nobody cannot run the bwrap there, so the lookup as nobody
    does not stop at it (mutation: checking only the directories as written finds it)."""
    locked_bin = os.path.join(tree, "locked", "bin")
    fake_bwrap(locked_bin)
    os.chmod(os.path.join(tree, "locked"), 0o700)
    os.makedirs(os.path.join(tree, "opt"))
    os.symlink(locked_bin, os.path.join(tree, "opt", "tool"))
    path = "%s/opt/tool:/usr/bin" % tree
    assert run_user.which_as("bwrap", path, USER) == "/usr/bin/bwrap"
    assert run_user.which_as("bwrap", path, {"uid": 0, "groups": [0]}) == "%s/opt/tool/bwrap" % tree


def test_relative_and_empty_entries_are_unsafe():
    diags = run_user.path_diagnostics(":/usr/bin:bin", "/usr/bin/bwrap", "metnos.service")
    assert [d["code"] for d in diags] == ["service_path_unsafe"]
    assert "entry 0 ''" in diags[0]["message"] and "entry 2 'bin'" in diags[0]["message"]


def test_clean_system_path_is_safe():
    assert run_user.path_diagnostics("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin", "/usr/bin/bwrap",
                                     "m") == []


def test_lookup_uses_the_service_users_permissions(tree):
    private = os.path.join(tree, "private")
    fake_bwrap(private)
    os.chmod(private, 0o700)                    # root can search it, nobody cannot
    assert run_user.which_as("bwrap", private, {"uid": 0, "groups": [0]}) == os.path.join(private, "bwrap")
    assert run_user.which_as("bwrap", private, USER) is None
    noexec = os.path.join(tree, "noexec")
    fake_bwrap(noexec, mode=0o744)              # not executable by others
    assert run_user.which_as("bwrap", noexec, USER) is None


def test_restriction_diagnostics_name_the_directive():
    def codes(s, info=None):
        return [d["code"] for d in restrictions.restriction_diagnostics(s, "metnos.service", info)]
    assert codes({"RestrictNamespaces": ["yes"]}) == ["unit_blocks_namespaces"]
    assert codes({"SystemCallFilter": ["@system-service"]}) == ["unit_syscall_filter_blocks_bwrap"]
    assert codes({"ProcSubset": "pid"}) == ["unit_proc_subset_pid"]
    warn = restrictions.restriction_diagnostics({"DynamicUser": "yes"}, "m", {"version": "0.8.0"})
    assert [(d["code"], d["severity"]) for d in warn] == [("unit_restrict_suidsgid", "warning")]
    err = restrictions.restriction_diagnostics({"RestrictSUIDSGID": "yes"}, "m", {"version": "0.12.0"})
    assert [(d["code"], d["severity"]) for d in err] == [("unit_restrict_suidsgid", "error")]
    assert codes({"NoNewPrivileges": "yes"}, {"setuid": True, "path": "/usr/bin/bwrap"}) == \
        ["unit_no_new_privileges_setuid"]
    assert codes({"RestrictNamespaces": ["user mnt ipc uts net"], "SystemCallFilter": ["@system-service @mount"]}) == []
    fix = restrictions.restriction_diagnostics({"RestrictNamespaces": ["yes"]}, "metnos.service")[0]["remediation"]
    assert any("RestrictNamespaces=user mnt ipc uts net" in step for step in fix)


def _plan(env, prov=None, settings=None, exec_start=(), relax=False, sandbox_path="/usr/sbin:/usr/bin"):
    state = {"settings": settings or {}, "exec_start": [{"value": v, "where": "u:%d" % i}
                                                         for i, v in enumerate(exec_start)]}
    return enforce.enforce_plan(enforce.PlanInputs(
        unit="metnos.service", state=state, env=env, prov=prov or {}, user={"uid": 0, "groups": [0]},
        sandbox_path=sandbox_path, env_file_path="/etc/systemd/system/metnos.service.d/zz-metnos-sandbox.env",
        relax=relax, package_of=lambda path: {"name": "bubblewrap"} if path == "/usr/bin/bwrap" else {}))


def test_enforce_dropin_content():
    plan = _plan({"METNOS_SANDBOX": "Off", "PATH": "/x"}, {"METNOS_SANDBOX": "manager environment"})
    assert "UnsetEnvironment=METNOS_SANDBOX" in plan["dropin"]
    assert "EnvironmentFile=/etc/systemd/system/metnos.service.d/zz-metnos-sandbox.env" in plan["dropin"]
    assert plan["env_file"].endswith('PATH="/usr/sbin:/usr/bin"\n')
    assert {"what": "METNOS_SANDBOX='Off'", "source": "manager environment", "disabling": True,
            "action": "UnsetEnvironment=METNOS_SANDBOX (applies after every source)"} in plan["healed"]
    # unset whatever its value: a value set later from any source cannot disable the sandbox either
    assert "UnsetEnvironment=METNOS_SANDBOX" in _plan({"METNOS_SANDBOX": "1"})["dropin"]
    assert "ExecStart" not in plan["dropin"] and "Relaxed" not in plan["dropin"]


def test_relax_lines_are_the_minimum_and_listed():
    settings = {"RestrictAddressFamilies": ["AF_UNIX AF_INET"], "RestrictNamespaces": ["~user"],
                "SystemCallFilter": ["@system-service"], "ProcSubset": "pid"}
    plan = _plan({"PATH": "/usr/bin"}, settings=settings, relax=True)
    assert [(r["directive"], r["line"]) for r in plan["relaxed"]] == [
        ("RestrictNamespaces", "RestrictNamespaces=user"),
        ("SystemCallFilter", "SystemCallFilter=mount pivot_root umount2"),
        ("RestrictAddressFamilies", "RestrictAddressFamilies=AF_NETLINK"), ("ProcSubset", "ProcSubset=all")]
    for relax in plan["relaxed"]:
        assert relax["line"] in plan["dropin"]
    off = _plan({"PATH": "/usr/bin"}, settings=settings)
    assert off["relaxed"] == [] and "RestrictAddressFamilies=AF_NETLINK" not in off["dropin"]
    assert [r["reason"] for r in off["not_relaxed"]][0].startswith("metnos_sandbox_relax_restrictions is false")
    dynamic = _plan({"PATH": "/usr/bin"}, settings={"DynamicUser": "yes"}, relax=True)
    assert dynamic["relaxed"] == []          # bubblewrap 0.8 works (warning): nothing to relax


def test_execstart_env_prefix_is_rewritten_or_named():
    plan = _plan({"PATH": "/usr/bin"}, exec_start=["/usr/bin/env METNOS_SANDBOX=0 /usr/bin/metnos --serve"])
    assert "ExecStart=\nExecStart=/usr/bin/env /usr/bin/metnos --serve\n" in plan["dropin"]
    shell = _plan({"PATH": "/usr/bin"}, exec_start=["/bin/sh -c 'METNOS_SANDBOX=0 exec /usr/bin/metnos'"])
    assert "ExecStart" not in shell["dropin"].split("[Service]")[1].replace("# ExecStart", "")
    assert shell["not_healed"][0]["reason"].startswith("a drop-in cannot neutralise it")


def test_heal_path_puts_the_packaged_bwrap_first(tree):
    local = os.path.join(tree, "local")
    fake_bwrap(local)                                  # root-owned, 0755, but no package owns it
    packaged = lambda path: {"name": "bubblewrap"} if path == "/usr/bin/bwrap" else {}  # noqa: E731
    path, changes, problem = enforce.heal_path("/usr/local/sbin:%s:/usr/sbin:/usr/bin" % local, USER, packaged)
    assert path == "/usr/local/sbin:/usr/bin:%s:/usr/sbin" % local and problem is None
    assert "moved /usr/bin before %s" % local in changes[0]
    assert enforce.heal_path(path, USER, packaged)[:2] == (path, [])            # idempotent
    open_dir = os.path.join(tree, "open")
    os.makedirs(open_dir)
    os.chmod(open_dir, 0o777)                          # nothing planted yet, but anyone could
    path, changes, _p = enforce.heal_path("%s:/usr/bin" % open_dir, USER, packaged)
    assert path == "/usr/bin:%s" % open_dir and "writable by group or others" in changes[0]
    assert enforce.heal_path("/opt/none", USER, lambda p: {})[2].startswith("no package-owned bwrap")


def test_live_environment_read_as_the_process_uid():
    import subprocess
    proc = subprocess.Popen(["/bin/sleep", "30"], env={"METNOS_SANDBOX": "0"}, cwd="/",
                            preexec_fn=lambda: (os.setgid(NOBODY.pw_gid), os.setuid(NOBODY.pw_uid)))
    try:
        path = "/proc/%d/environ" % proc.pid
        data, error = procfs.read_file_as(path, NOBODY.pw_uid, NOBODY.pw_gid, environment.MAX_ENVIRON)
        assert error is None and environment.parse_environ(data) == {"METNOS_SANDBOX": "0"}
        data, error = procfs.read_file_as("/proc/1/environ", NOBODY.pw_uid, NOBODY.pw_gid, environment.MAX_ENVIRON)
        assert data is None and error == "Permission denied"
        live = environment.read_live_environ(proc.pid)
        assert live["env"] == {"METNOS_SANDBOX": "0"} and live["read_as"]
    finally:
        proc.kill()
        proc.wait()
    gone = environment.read_live_environ(proc.pid)
    assert gone["env"] is None and "No such file" in gone["error"]


def _unit(tree, name, text):
    directory = os.path.join(tree, "etc/systemd/system")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    if text is None:
        os.symlink("/dev/null", path)
    else:
        with open(path, "w") as handle:
            handle.write(text)


def test_inspect_from_disk_returns_the_result_and_the_whole_environment_apart(tree):
    """inspect(): the public result carries no private keys; the composed environment travels beside it
    (None for a masked unit, whose environment is not evaluated); a missing unit is None."""
    _unit(tree, "metnos.service", "[Service]\nEnvironment=METNOS_SANDBOX=off OTHER=1\nExecStart=/usr/bin/true\n")
    _unit(tree, "masked.service", None)
    params = {"unit": "metnos.service", "mode": "disk", "root": tree, "admin_path": "/usr/bin:/bin"}
    found = environment.inspect(params, environment.bwrap.default_runner)
    assert not [k for k in found.result if k.startswith("_")]
    assert found.env["OTHER"] == "1" and found.env["METNOS_SANDBOX"] == "off"
    assert found.result["environment"]["METNOS_SANDBOX"] == "off"
    assert "sandbox_disabled_via_env" in [d["code"] for d in found.result["diagnostics"]]
    gathered = environment.gather(params, environment.bwrap.default_runner)
    assert gathered.mode == "disk" and gathered.live is None and not gathered.need_reload
    masked = environment.inspect(dict(params, unit="masked.service"), environment.bwrap.default_runner)
    assert masked.env is None and [d["code"] for d in masked.result["diagnostics"]] == ["unit_masked"]
    assert environment.inspect(dict(params, unit="gone.service"), environment.bwrap.default_runner) is None


def test_dynamic_user_is_shown_as_systemd_applies_it():
    """DynamicUser=yes with User= naming an existing static account: systemd uses that account (systemd.exec(5));
    without User=, or with a name that does not exist statically (or in the range systemd allocates from), a
    dynamic user is allocated. Proven against a real unit's MainPID in tests/system/test_blame_fleet.py."""
    static = run_user.resolve_service_user({"DynamicUser": "yes", "User": "nobody"})
    assert static["name"] == "nobody" and static["uid"] == NOBODY.pw_uid and static["dynamic"] is False
    assert static["dynamic_user"] == "static"
    for settings in ({"DynamicUser": "yes"}, {"DynamicUser": "yes", "User": "metnos-no-such-user"}):
        dynamic = run_user.resolve_service_user(settings)
        assert dynamic["name"] == "(dynamic)" and dynamic["dynamic"] is True and dynamic["dynamic_user"] == "allocated"
    assert run_user.resolve_service_user({"User": "metnos-no-such-user"})["missing"] is True


def test_the_working_directory_as_systemctl_show_prints_it(tree):
    """Planted: WorkingDirectory=-<tree>/app (nobody's folder, holding nobody's bwrap) with Environment=PATH=:/usr/bin,
    read from systemctl show, which prints the '-' as '!'. execvp resolves the empty entry in <tree>/app and runs
    nobody's bwrap: the toolkit names that file and says the PATH is unsafe (mutation: stripping only '-', as
    before, left the relative '!<tree>/app' and resolved /usr/bin/bwrap)."""
    app = os.path.join(tree, "app")
    fake_bwrap(app)
    os.chown(app, NOBODY.pw_uid, NOBODY.pw_gid)
    show = "\n".join(["Id=metnos.service", "LoadState=loaded", "User=nobody", "MainPID=0",
                      "WorkingDirectory=!%s" % app, "Environment=PATH=:/usr/bin"])
    state = systemd_unit.state_from_show(systemd_unit.parse_show(show))
    state["exec_start"] = []
    gathered = environment.Gathered(state, {"PATH": ":/usr/bin"}, {"PATH": "Environment="}, [], "systemd", False, None)
    res = environment.evaluate(environment.Evaluation("metnos.service", gathered, None, None))
    assert res["bwrap_resolved"] == os.path.join(app, "bwrap")
    assert "service_path_unsafe" in [d["code"] for d in res["diagnostics"]]


def test_each_spelling_of_the_working_directory():
    home = {"home": "/var/lib/svc"}
    assert environment.service_cwd(None, home) == "/" and environment.service_cwd("", home) == "/"
    assert environment.service_cwd("/srv", home) == "/srv" and environment.service_cwd("-/srv", home) == "/srv"
    assert environment.service_cwd("!/srv", home) == "/srv" and environment.service_cwd("~", home) == "/var/lib/svc"
    assert environment.service_cwd("!~", home) == "/" and environment.service_cwd("-/no/such/dir",
                                                                                  home) == "/"   # optional, missing
    assert environment.service_cwd("/no/such/dir", home) == "/no/such/dir"       # required: systemd refuses to start


def _deny_acl(path, uid):
    """A real POSIX ACL on ``path`` (set through the kernel's system.posix_acl_access attribute, what setfacl
    -m u:UID:--- writes): ``uid`` may do nothing there, whatever the mode bits say to others."""
    import struct
    mode = os.stat(path).st_mode
    entries = [(0x01, (mode >> 6) & 7, 0xFFFFFFFF), (0x02, 0, uid), (0x04, (mode >> 3) & 7, 0xFFFFFFFF),
               (0x10, (mode >> 3) & 7, 0xFFFFFFFF), (0x20, mode & 7, 0xFFFFFFFF)]
    os.setxattr(path, "system.posix_acl_access",
                struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, who) for tag, perm, who in entries))


def test_the_lookup_asks_the_kernel_as_the_service_user(tree):
    """Planted: PATH=<tree>/trap:<tree>/open:/usr/bin. trap (root's, mode 0755) holds a root-owned bwrap, but an
    ACL refuses nobody everything there; open (0777) holds nobody's bwrap. execvp as nobody gets EACCES in trap and
    runs open/bwrap - asked here of the kernel itself. The toolkit names the same file and flags open (mutation:
    judging by mode bits, as before, stopped at trap/bwrap and looked no further)."""
    trap, open_dir = os.path.join(tree, "trap"), os.path.join(tree, "open")
    fake_bwrap(trap)
    fake_bwrap(open_dir)
    os.chmod(open_dir, 0o777)
    try:
        _deny_acl(trap, NOBODY.pw_uid)
    except OSError as exc:
        pytest.skip("this filesystem takes no POSIX ACL: %s" % exc)
    path = "%s:%s:/usr/bin" % (trap, open_dir)
    ran = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--init-groups", "sh", "-c",
                          "command -v bwrap"], env={"PATH": path}, capture_output=True, text=True)
    assert ran.stdout.strip() == os.path.join(open_dir, "bwrap"), ran
    user = run_user.resolve_service_user({"User": "nobody"})
    assert run_user.which_as("bwrap", path, user) == os.path.join(open_dir, "bwrap")
    diags = run_user.path_diagnostics(path, os.path.join(open_dir, "bwrap"), "metnos.service")
    assert "%s is writable by group or others" % open_dir in diags[0]["message"]
    assert run_user.which_as("bwrap", path,
                             run_user.resolve_service_user({"User": "root"})) == os.path.join(trap, "bwrap")


def test_the_service_users_groups_are_the_ones_systemd_gives(tree):
    """User=nobody Group=daemon: systemd sets gid daemon and initgroups(nobody, daemon) - nobody's own group
    (nogroup) is not among them, as no group file lists nobody in it. Planted: <tree>/trap root:nogroup 0750 with
    a bwrap, then <tree>/open (0777) with nobody's: that process cannot enter trap and runs open/bwrap (mutation:
    keeping the user's primary group, as before, made trap/bwrap the one it runs). SupplementaryGroups=nogroup
    gives it back."""
    nogroup = NOBODY.pw_gid
    trap, open_dir = os.path.join(tree, "trap"), os.path.join(tree, "open")
    fake_bwrap(trap)
    fake_bwrap(open_dir)
    os.chown(trap, 0, nogroup)
    os.chmod(trap, 0o750)
    os.chmod(open_dir, 0o777)
    path = "%s:%s" % (trap, open_dir)
    daemon = run_user.resolve_service_user({"User": "nobody", "Group": "daemon"})
    assert daemon["gid"] == grp.getgrnam("daemon").gr_gid and nogroup not in daemon["groups"]
    assert run_user.which_as("bwrap", path, daemon) == os.path.join(open_dir, "bwrap")
    more = run_user.resolve_service_user({"User": "nobody", "Group": "daemon", "SupplementaryGroups": ["nogroup"]})
    assert nogroup in more["groups"] and run_user.which_as("bwrap", path, more) == os.path.join(trap, "bwrap")
    dynamic = run_user.resolve_service_user({"DynamicUser": "yes"})
    assert dynamic["groups"] == [dynamic["gid"]] and run_user.which_as("bwrap", path,
                                                                       dynamic) == os.path.join(open_dir,
                                                                                                      "bwrap")


def test_the_running_processs_path_is_judged_too(tree):
    """Planted: the unit configures PATH=/usr/bin, but the running process (started before a change, until it
    restarts) has PATH=<tree>/open:/usr/bin, open being 0777 with nobody's bwrap - what it runs now. The live PATH
    gets the same judgement as the configured one: service_path_unsafe naming open (mutation: judging only the
    configured PATH, as before, reported a difference to restart away and nothing unsafe)."""
    open_dir = os.path.join(tree, "open")
    fake_bwrap(open_dir)
    os.chmod(open_dir, 0o777)
    state = systemd_unit.state_from_show(systemd_unit.parse_show("\n".join(["Id=metnos.service", "LoadState=loaded",
                                                                            "User=nobody",
                                                       "MainPID=4242", "Environment=PATH=/usr/bin"])))
    state["exec_start"] = []
    live = {"pid": 4242, "env": {"PATH": "%s:/usr/bin" % open_dir}, "read_as": "uid 0", "error": None}
    gathered = environment.Gathered(state, {"PATH": "/usr/bin"}, {"PATH": "Environment="}, [], "systemd", False, live)
    res = environment.evaluate(environment.Evaluation("metnos.service", gathered, None, None))
    unsafe = [d for d in res["diagnostics"] if d["code"] == "service_path_unsafe"]
    assert len(unsafe) == 1 and "PATH=%s:/usr/bin" % open_dir in unsafe[0]["message"], res["diagnostics"]
    assert "%s is writable by group or others" % open_dir in unsafe[0]["message"]


def test_each_path_is_looked_up_once_per_evaluation(monkeypatch):
    """A running service whose live PATH is the configured one: bwrap is looked up through it once (each lookup
    asks the kernel in a child with the user's credentials), not again for the live process's status (mutation:
    resolving the live PATH anew in the status view, as before, makes two). The real lookup, counted."""
    asked = []
    real = run_user.which_as

    def counted(*args, **kwargs):
        asked.append(args[1])
        return real(*args, **kwargs)
    monkeypatch.setattr(run_user, "which_as", counted)
    state = systemd_unit.state_from_show(systemd_unit.parse_show("\n".join(["Id=metnos.service", "LoadState=loaded",
                                                                            "User=nobody",
                                                       "MainPID=4242", "Environment=PATH=/usr/bin"])))
    state["exec_start"] = []
    live = {"pid": 4242, "env": {"PATH": "/usr/bin"}, "read_as": "uid 0", "error": None}
    gathered = environment.Gathered(state, {"PATH": "/usr/bin"}, {"PATH": "Environment="}, [], "systemd", False, live)
    res = environment.evaluate(environment.Evaluation("metnos.service", gathered, None, None))
    assert res["status"]["bwrap_path"] == "/usr/bin/bwrap" and asked == ["/usr/bin"]


# (bwrap setuid, the unit's user, the line is written) - filter_keyrings (issue 51): refused only where
# NoNewPrivileges=yes, which systemd implies for SystemCallFilter= in a non-root unit, would stop a setuid bwrap
KEYRING_FILTER_CASES = [
    (False, {"name": "metnos", "uid": 990, "dynamic": False}, True),
    (False, {"name": "root", "uid": 0, "dynamic": False}, True),
    (True, {"name": "root", "uid": 0, "dynamic": False}, True),
    (True, {"name": "metnos", "uid": 990, "dynamic": False}, False),
    (True, {"name": "(dynamic)", "uid": 0, "dynamic": True}, False),
]


@pytest.mark.parametrize("setuid,user,written", KEYRING_FILTER_CASES, ids=[str(i) for i in range(5)])
def test_the_keyring_filter_is_opt_in_and_refused_for_a_setuid_bwrap(setuid, user, written):
    plan = _plan({"PATH": "/usr/sbin:/usr/bin"})
    assert enforce.KEYRING_FILTER not in plan["dropin"]             # off unless asked
    enforce.add_keyring_filter(plan, {}, user, {"setuid": setuid})
    assert (enforce.KEYRING_FILTER + "\n" in plan["dropin"]) == written, plan["dropin"]
    said = plan["healed"] if written else plan["not_healed"]
    assert "probe_keyring_unit" in said[-1]["what"], said
    if not written:
        assert "NoNewPrivileges=yes" in said[-1]["reason"], said
