"""What a service hands every executor beyond paths (issue 40): root's capabilities (a root service is no
boundary) and its environment (credentials, key agents, code loaders) - planted in real unit files, real
folders and real running processes; values never reach an output."""
import grp
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.report import (
    document,
    render_html,
    render_json,
    render_junit,
    render_markdown,
    site_summary,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import env_channels, environment
from conftest import adhoc

NOBODY = pwd.getpwnam("nobody")
SECRET = "s3cr3t-%s" % os.urandom(6).hex()


@pytest.fixture
def tree():
    root = tempfile.mkdtemp(prefix="metnos-chan-", dir="/var/tmp")
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root)


def _unit(tree, text, name="metnos.service"):
    directory = os.path.join(tree, "etc/systemd/system")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "w") as handle:
        handle.write(text)
    return {"unit": name, "mode": "disk", "root": tree, "admin_path": "/usr/bin:/bin"}


def _codes(result, code):
    return [d for d in result["diagnostics"] if d["code"] == code]


def test_a_root_service_is_an_error_with_the_drop_in_and_what_it_changes(tree):
    """Planted: units with no User=, User=root and User=0 (systemd runs all three as uid 0), one with
    User=nobody; a root-owned ReadWritePaths= folder the service writes. Each root unit is an error naming the
    drop-in and the folder to hand over (mutation: judging only an explicit User=root missed the unit without
    User=); nobody's is not."""
    data = os.path.join(tree, "data")
    os.makedirs(data)
    for user_line in ("", "User=root\n", "User=0\n"):
        params = _unit(tree, "[Service]\n%sStateDirectory=metnos\nReadWritePaths=%s\nExecStart=/usr/bin/true\n"
                       % (user_line, data))
        found = _codes(environment.inspect(params, environment.bwrap.default_runner).result, "service_runs_as_root")
        assert len(found) == 1 and found[0]["severity"] == "error", user_line
        diag = found[0]
        assert "10-metnos-user.conf" in " ".join(diag["remediation"])
        assert "printf '[Service]\\nUser=<user>\\n' > /etc/systemd/system/metnos.service.d/10-metnos-user.conf" in \
            diag["remediation"]
        assert "chown -R <user>: %s" % data in diag["remediation"]
        assert "/var/lib/metnos (StateDirectory=)" in diag["message"] and data in diag["message"]
    params = _unit(tree, "[Service]\nUser=nobody\nExecStart=/usr/bin/true\n")
    assert not _codes(environment.inspect(params, environment.bwrap.default_runner).result, "service_runs_as_root")


def test_a_running_root_process_is_an_error_although_the_unit_names_a_user(tree):
    """Planted: the unit says User=nobody, the running process (a real one, started here) is root - a
    restart pending, or a wrapper that never dropped. The kernel's uid of the live process decides
    (mutation: judging only the configuration missed it)."""
    params = _unit(tree, "[Service]\nUser=nobody\nExecStart=/usr/bin/true\n")
    gathered = environment.gather(params, environment.bwrap.default_runner)
    proc = subprocess.Popen(["/bin/sleep", "30"], env={"PATH": "/usr/bin:/bin"})
    try:
        live = environment.read_live_environ(proc.pid)
        res = environment.evaluate(environment.Evaluation("metnos.service", gathered._replace(live=live), None, None))
    finally:
        proc.kill()
        proc.wait()
    found = _codes(res, "service_runs_as_root")
    assert len(found) == 1 and "PID %d" % proc.pid in found[0]["message"] and "user nobody" in found[0]["message"]


def test_credentials_agents_and_loaders_are_named_and_their_values_never_shown(tree):
    """Planted in a real unit (Environment= and an EnvironmentFile=): two credentials, a key agent's socket, a
    PYTHONPATH entry in a folder nobody owns (an executor running as nobody plants code there), BASH_ENV naming
    a root-owned file; and a LANG that is none of them. Each is reported by name with its own code, the
    writable load path as an error; the secret is in no diagnostic, no module result, not even the whole
    environment the module returns on request (mutations: is_credential answering False; the load path's
    entries not judged - each makes this test fail)."""
    shared = os.path.join(tree, "shared")
    os.makedirs(shared)
    os.chown(shared, NOBODY.pw_uid, NOBODY.pw_gid)
    env_file = os.path.join(tree, "etc", "metnos.env")
    os.makedirs(os.path.dirname(env_file), exist_ok=True)
    with open(env_file, "w") as handle:
        handle.write("DB_PASSWORD=%s\n" % SECRET)
    params = _unit(tree, "[Service]\nUser=nobody\nEnvironment=GITHUB_TOKEN=%s SSH_AUTH_SOCK=/run/agent.%s\n"
                         "Environment=PYTHONPATH=%s BASH_ENV=/etc/profile LANG=C.UTF-8\n"
                         "EnvironmentFile=/etc/metnos.env\nExecStart=/usr/bin/true\n" % (SECRET, SECRET, shared))
    res = environment.inspect(params, environment.bwrap.default_runner).result
    got = dict((d["details"]["name"], (d["code"], d["severity"])) for d in res["diagnostics"]
               if d["code"].startswith("service_env_") and "name" in d.get("details", {}))
    assert got == {"GITHUB_TOKEN": ("service_env_credential", "error"),
                   "DB_PASSWORD": ("service_env_credential", "error"),
                   "SSH_AUTH_SOCK": ("service_env_agent_socket", "error"),
                   "PYTHONPATH": ("service_env_loader", "error"),
                   "BASH_ENV": ("service_env_loader", "warning")}
    assert SECRET not in json.dumps(res)
    _no_secret_in_reports(res)
    out, proc = adhoc("localhost", "metnos.sandbox.metnos_service_env",
                      {"unit": "metnos.service", "mode": "disk", "root": tree, "return_environment": True},
                      options=["-vvv"])
    assert SECRET not in proc.stdout + proc.stderr
    assert out["full_environment"]["GITHUB_TOKEN"] == env_channels.REDACTED
    assert out["full_environment"]["LANG"] == "C.UTF-8"
    assert {d["code"] for d in out["diagnostics"]} >= {"service_env_credential", "service_env_loader"}


def _no_secret_in_reports(svc):
    """The service result as the audit carries it, through every report and summary the controller writes."""
    svc = dict(svc, verdict="fail")
    host = {"schema": "metnos-sandbox-audit/1", "verdict": "fail", "hostname": "h", "service": svc, "profiles": [],
            "probe": None, "diagnostics": svc["diagnostics"]}
    doc = document.build_from_results([("h", host)])
    texts = [render_json.to_json(doc), "".join(render_markdown.iter_markdown(doc)),
             "".join(render_junit.iter_junit(doc)), "".join(render_html.iter_html(doc)),
             "\n".join(document.terminal_summary(doc)),
             json.dumps(site_summary.service_section(svc))]
    assert "service_env_credential" in texts[1]
    for text in texts:
        assert SECRET not in text


def test_the_live_environment_is_judged_first(tree):
    """Planted: the unit sets nothing; the running process (real, started here as nobody) has AWS's secret
    key and an LD_PRELOAD relative to its working directory. The live names are judged (the relative entry an
    error), the configuration's are not; the value appears nowhere."""
    params = _unit(tree, "[Service]\nUser=nobody\nExecStart=/usr/bin/true\n")
    gathered = environment.gather(params, environment.bwrap.default_runner)
    proc = subprocess.Popen(["/bin/sleep", "30"], env={"PATH": "/usr/bin:/bin", "AWS_SECRET_ACCESS_KEY": SECRET,
                                                       "LD_PRELOAD": "lib/evil.so"}, cwd="/",
                            preexec_fn=lambda: (os.setgid(NOBODY.pw_gid), os.setuid(NOBODY.pw_uid)))
    try:
        live = environment.read_live_environ(proc.pid)
        res = environment.evaluate(environment.Evaluation("metnos.service", gathered._replace(live=live), None, None))
    finally:
        proc.kill()
        proc.wait()
    got = dict((d["details"]["name"], d) for d in res["diagnostics"] if d["code"].startswith("service_env_")
               and "name" in d.get("details", {}))
    assert set(got) == {"AWS_SECRET_ACCESS_KEY", "LD_PRELOAD"}
    assert got["LD_PRELOAD"]["severity"] == "error" and "relative" in got["LD_PRELOAD"]["message"]
    assert "live process, PID %d" % proc.pid in got["AWS_SECRET_ACCESS_KEY"]["message"]
    assert SECRET not in json.dumps(res)


CHANNEL_VARIABLES = ["DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "LISTEN_FDS",
                     "NOTIFY_SOCKET"]


def test_bus_display_runtime_activation_and_notify_variables_are_channels(tree):
    """Planted (issue 50): a real listening abstract unix socket (what unix:abstract= names: no bind needed, a
    net: executor reaches it), a real process (started here as nobody) whose environment points at it through
    DBUS_SESSION_BUS_ADDRESS, plus DISPLAY, WAYLAND_DISPLAY, XDG_RUNTIME_DIR, LISTEN_FDS and NOTIFY_SOCKET; and
    the same names in a real unit's Environment= (configuration). Each is service_env_channel, an error naming
    the variable, its value nowhere (not in the module's whole environment either); LANG is not one. Canary: the
    abstract socket answers a connect from here. Mutation run: channel_diagnostics not classing CHANNEL_NAMES -
    the test fails."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0metnos-bus-%s" % SECRET)
    listener.listen(1)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.connect("\0metnos-bus-%s" % SECRET)
    probe.close()
    values = {"DBUS_SESSION_BUS_ADDRESS": "unix:abstract=metnos-bus-%s" % SECRET, "DISPLAY": ":%s" % SECRET,
              "WAYLAND_DISPLAY": "wayland-%s" % SECRET, "XDG_RUNTIME_DIR": "/run/user/%s" % SECRET,
              "LISTEN_FDS": "1", "NOTIFY_SOCKET": "@notify-%s" % SECRET}
    params = _unit(tree, "[Service]\nUser=nobody\nEnvironment=%s LANG=C.UTF-8\nExecStart=/usr/bin/true\n"
                   % " ".join("%s=%s" % item for item in sorted(values.items())))
    gathered = environment.gather(params, environment.bwrap.default_runner)
    proc = subprocess.Popen(["/bin/sleep", "30"], env=dict(values, PATH="/usr/bin:/bin", LANG="C.UTF-8"), cwd="/",
                            preexec_fn=lambda: (os.setgid(NOBODY.pw_gid), os.setuid(NOBODY.pw_uid)))
    try:
        live = environment.read_live_environ(proc.pid)
        res = environment.evaluate(environment.Evaluation("metnos.service", gathered._replace(live=live), None, None))
    finally:
        proc.kill()
        proc.wait()
        listener.close()
    configured = environment.inspect(params, environment.bwrap.default_runner).result
    for result, origin in ((res, "live process, PID %d" % proc.pid), (configured, "configuration")):
        found = dict((d["details"]["name"], d) for d in _codes(result, "service_env_channel"))
        assert sorted(found) == sorted(CHANNEL_VARIABLES), origin
        for name, diag in found.items():
            assert diag["severity"] == "error" and origin in diag["message"] and name in diag["message"]
            assert "UnsetEnvironment=%s" % name in " ".join(diag["remediation"])
        assert SECRET not in json.dumps(result)
    assert "DBUS_SESSION_BUS_ADDRESS=<redacted>" in env_channels.redacted_text(
        "DBUS_SESSION_BUS_ADDRESS=%s" % values["DBUS_SESSION_BUS_ADDRESS"])
    out, proc = adhoc("localhost", "metnos.sandbox.metnos_service_env",
                      {"unit": "metnos.service", "mode": "disk", "root": tree, "return_environment": True})
    assert SECRET not in proc.stdout + proc.stderr
    assert out["full_environment"]["DISPLAY"] == env_channels.REDACTED
    assert "service_env_channel" in {d["code"] for d in out["diagnostics"]}


def test_names_that_look_like_credentials():
    for name in ("GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "API_KEY", "STRIPE_APIKEY",
                 "SLACK_BOT_TOKEN", "MYSQL_PWD", "DATABASE_URL", "client_secret", "DBPASSWORDFILE", "MYSECRETS"):
        assert env_channels.is_credential(name), name
    for name in ("PATH", "LANG", "PWD", "CREDENTIALS_DIRECTORY", "KEYMAP", "HOME", "INVOCATION_ID",
                 "TOKENIZERS_PARALLELISM", "METNOS_SANDBOX", "JOURNAL_STREAM", "XDG_SESSION_ID",
                 "DBUS_SESSION_BUS_ADDRESS", "MEMORY_PRESSURE_WRITE", "SSH_ASKPASS", "MONKEY_PATCH", "KEYBOARD"):
        assert not env_channels.is_credential(name), name
    assert env_channels.loader_kind("LD_AUDIT") == "paths" and env_channels.loader_kind("BASH_FUNC_ls%%") == "code"
    assert env_channels.loader_kind("LD_BIND_NOW") is None


def test_a_start_command_line_quoted_in_a_message_hides_credentials(tree):
    """Planted: ExecStart=/usr/bin/env GITHUB_TOKEN=<secret> METNOS_SANDBOX=0 /bin/sleep 1 - the line touches
    METNOS_SANDBOX, so service_execstart_sets_env quotes it (message and remediation); the token's value is
    replaced by <redacted> there (mutation: quoting item["value"] as it was leaked the secret)."""
    params = _unit(tree, "[Service]\nUser=nobody\nExecStart=/usr/bin/env GITHUB_TOKEN=%s METNOS_SANDBOX=0 "
                         "/bin/sleep 1\n" % SECRET)
    res = environment.inspect(params, environment.bwrap.default_runner).result
    found = _codes(res, "service_execstart_sets_env")
    assert found and "GITHUB_TOKEN=<redacted>" in found[0]["message"]
    assert SECRET not in json.dumps(res)
    assert env_channels.redacted_text("A=1 DB_PASSWORD='x y' B=2") == "A=1 DB_PASSWORD=<redacted> B=2"


def test_enforce_writes_the_user_drop_in_only_when_asked(tree):
    """A root unit (no User=) enforced through the real module (disk mode below <tree>): without run_as the
    error stays and no user drop-in is written (it changes who owns the service's files); with run_as=nobody the
    drop-in holds User=nobody and the unit is no longer root; run_as=root is refused (invalid_option). Mutation:
    writing the drop-in whatever run_as says fails the first half."""
    _unit(tree, "[Service]\nExecStart=/usr/bin/true\n")
    args = {"unit": "metnos.service", "mode": "disk", "root": tree, "state": "enforce", "daemon_reload": False}
    dropin = os.path.join(tree, "etc/systemd/system/metnos.service.d/10-metnos-user.conf")
    out, _proc = adhoc("localhost", "metnos.sandbox.metnos_service_env", args)
    assert not os.path.exists(dropin) and "user_dropin" not in out["dropin"]
    assert "service_runs_as_root" in [d["code"] for d in out["diagnostics"]]
    refused, _proc = adhoc("localhost", "metnos.sandbox.metnos_service_env", dict(args, run_as="root"))
    assert refused["failed"] and refused["code"] == "invalid_option" and not os.path.exists(dropin)
    out, _proc = adhoc("localhost", "metnos.sandbox.metnos_service_env", dict(args, run_as="nobody"))
    with open(dropin) as handle:
        assert handle.read().endswith("[Service]\nUser=nobody\n")
    assert out["changed"] and out["user"]["name"] == "nobody", out
    assert "service_runs_as_root" not in [d["code"] for d in out["diagnostics"]]


@pytest.fixture
def grouped_user():
    """A real user (useradd) in a real group by the group database, a second real group for
    SupplementaryGroups=, and a real file in /etc (a base bind of every sandbox) readable by the first group
    only (0640 root:<group>)."""
    tag = os.urandom(3).hex()
    user, member, extra = "mtu%s" % tag, "mtg%s" % tag, "mtx%s" % tag
    secret = "/etc/metnos-test-%s.key" % tag
    for group in (member, extra):
        subprocess.run(["groupadd", group], check=True)
    subprocess.run(["useradd", "-M", "-N", "-g", "nogroup", "-G", member, "-s", "/usr/sbin/nologin", user], check=True)
    with open(secret, "w") as handle:
        handle.write(SECRET)
    os.chown(secret, 0, grp.getgrnam(member).gr_gid)
    os.chmod(secret, 0o640)
    yield user, member, extra, secret
    os.unlink(secret)
    subprocess.run(["userdel", user], check=False)
    for group in (member, extra):
        subprocess.run(["groupdel", group], check=False)


def test_supplementary_groups_are_listed_and_the_files_they_open_are_findings(tree, grouped_user):
    """Planted: a real user in a real group (group database), SupplementaryGroups= naming a second one in a
    real unit, a real process running as that user with both groups (the live process's Groups:), and a real
    /etc file readable by the first group only. Canary: in a real bwrap sandbox started as that user with its
    groups, the file reads. Each group is service_supplementary_group with its sources; the file is
    service_group_file (error, readable, the group named); the file's content appears nowhere. Mutation run:
    group_files judging nothing (found list left empty) - the test fails."""
    user, member, extra, secret = grouped_user
    inside = subprocess.run(["setpriv", "--reuid=%s" % user, "--regid=nogroup", "--init-groups", "bwrap",
                             "--unshare-user", "--unshare-net", "--ro-bind", "/", "/", "cat", secret],
                            capture_output=True, text=True)
    assert inside.stdout == SECRET, inside.stderr                         # the canary: the group opens it
    params = _unit(tree, "[Service]\nUser=%s\nSupplementaryGroups=%s\nExecStart=/usr/bin/true\n" % (user, extra))
    gathered = environment.gather(params, environment.bwrap.default_runner)
    ids = [grp.getgrnam(member).gr_gid, grp.getgrnam(extra).gr_gid]
    entry = pwd.getpwnam(user)
    proc = subprocess.Popen(["/bin/sleep", "30"], env={"PATH": "/usr/bin:/bin"}, cwd="/",
                            preexec_fn=lambda: (os.setgroups(ids), os.setgid(entry.pw_gid), os.setuid(entry.pw_uid)))
    try:
        live = environment.read_live_environ(proc.pid)
        res = environment.evaluate(environment.Evaluation("metnos.service", gathered._replace(live=live), None, None))
    finally:
        proc.kill()
        proc.wait()
    groups = dict((d["details"]["group"], d) for d in _codes(res, "service_supplementary_group"))
    assert sorted(groups) == sorted([member, extra]), res["diagnostics"]
    assert "group database" in groups[member]["message"] and "live process, PID %d" % proc.pid in \
        groups[member]["message"]
    assert "SupplementaryGroups=" in groups[extra]["message"]
    assert "gpasswd -d %s %s" % (user, member) in groups[member]["remediation"]
    files = [d for d in _codes(res, "service_group_file") if d["details"]["path"] == "'%s'" % secret]
    assert len(files) == 1 and files[0]["severity"] == "error" and member in files[0]["message"], json.dumps(\
        _codes(res, "service_group_file"))[:3000]
    assert "readable" in files[0]["message"]
    assert SECRET not in json.dumps(res)


def test_files_a_group_opens_in_a_granted_folder_are_findings(tree, grouped_user):
    """Planted: the real user of grouped_user (in a real group by the group database, as SupplementaryGroups= or
    initgroups gives it), a real folder granted by a real stored profile (rendered fs:read and written by the
    core's store, in a profile folder), and a file deep in it readable by that group only (0640 root:<group>).
    Canary: in a real bwrap sandbox started as that user with its groups and that folder bound, the file reads.
    With the profile folder's grants (store.stored_grants, what metnos_service_env's profile_dir gives), the file
    is service_group_file (error, the group named); without them, the base binds alone are searched and it is
    not. Its content appears nowhere.
    A profile folder others can write gives no grants (its profiles could name any folder for root to walk).
    Mutation run: stored_grants returning [] - the test fails; without its folder_problem check - it fails too."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
        host_context,
        renderer,
        store,
    )
    user, member, _extra, _secret = grouped_user
    data = os.path.join(tree, "data")
    secret = os.path.join(data, "deep", "er", "token.key")
    os.makedirs(os.path.dirname(secret))
    with open(secret, "w") as handle:
        handle.write(SECRET)
    os.chown(secret, 0, grp.getgrnam(member).gr_gid)
    os.chmod(secret, 0o640)
    inside = subprocess.run(["setpriv", "--reuid=%s" % user, "--regid=nogroup", "--init-groups", "bwrap",
                             "--unshare-user", "--unshare-net", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib64",
                             "/lib64", "--symlink", "usr/lib", "/lib", "--symlink", "usr/bin", "/bin", "--ro-bind",
                             data, data, "cat", secret], capture_output=True, text=True)
    assert inside.stdout == SECRET, inside.stderr                         # the canary: the group opens it
    status = {"bwrap_available": True, "bwrap_path": shutil.which("bwrap") or "/usr/bin/bwrap",
              "disabled_via_env": False, "active": True}
    rendered = renderer.render_safe({"name": "ex", "origin": "t", "capabilities": ["fs:read:" + data]},
                                    host_context.HostContext({"python_executable": "/usr/bin/python3",
                                                              "writable_roots": ["/var/tmp"]}), {}, status)
    assert rendered["decision"] == "wrapped", rendered["diagnostics"]
    profiles = os.path.join(tree, "profiles")
    store.write(profiles, rendered)
    params = _unit(tree, "[Service]\nUser=%s\nExecStart=/usr/bin/true\n" % user)
    runner = environment.bwrap.default_runner
    found = environment.inspect(dict(params, grants=store.stored_grants(profiles)), runner).result
    files = [d for d in _codes(found, "service_group_file") if d["details"]["path"] == "'%s'" % secret]
    assert len(files) == 1 and files[0]["severity"] == "error" and member in files[0]["message"], json.dumps(
        _codes(found, "service_group_file"))[:3000]
    base_only = environment.inspect(params, runner).result
    assert [d for d in _codes(base_only, "service_group_file") if d["details"]["path"] == "'%s'" % secret] == []
    assert SECRET not in json.dumps(found)
    os.chmod(profiles, 0o777)           # a profile folder others can change names no folder root walks
    try:
        assert store.stored_grants(profiles) == []
    finally:
        os.chmod(profiles, 0o755)
