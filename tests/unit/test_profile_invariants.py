"""Invariants (a)-(d) of docs/profile-invariants.md, property-based: hypothesis generates manifests,
invocations AND host trees with symlinks (planted in a tmp dir: links to /, /etc, /var/run, /proc,
into the runtime, the Python prefix, other executors' folders, the credential store, chains, ...).
An oracle written apart from the renderer (tests/helpers/profile_oracle.py) checks the rendered
argv; the core's own final check is also exercised directly on hand-weakened argvs.
(tests/integration/test_profile_invariants_real.py runs a sample in real bwrap.)"""
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import diagnostics
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    host_context,
    invariants,
    renderer,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile.manifest import from_dict
from helpers import profile_oracle, trees

ACTIVE = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return str(tmp_path_factory.mktemp("inv"))


def render(host, manifest, invocation):
    return renderer.render_safe(manifest, host_context.HostContext(host), invocation, ACTIVE)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])
@given(case=profile_oracle.cases())
def test_invariants_hold_on_generated_trees_and_manifests(base, case):
    links, manifest, invocation = case
    root, host, manifest, invocation = profile_oracle.build(base, links, manifest, invocation)
    try:
        prof = render(host, manifest, invocation)
        assert prof["refusal"] is None or prof["refusal"] in diagnostics.REGISTRY
        if prof["decision"] != "wrapped":
            assert prof["argv"] is None and prof["refusal"]
            return
        assert profile_oracle.violations(prof["argv"], manifest, invocation, host,
                                         prof["descriptors"]) == []    # (a)-(c), (e)
        again = render(host, manifest, invocation)                                 # (d) same input, same argv
        assert again["argv"] == prof["argv"]
        shuffled = dict(manifest, capabilities=list(reversed(manifest["capabilities"])))
        assert render(host, shuffled, invocation)["argv"] == prof["argv"]          # (d) order of declaration
    finally:
        profile_oracle.remove(root)


# ---------------------------------------------------------------- the core's final check, on weakened argvs

@pytest.fixture
def rendered(tmp_path):
    root, host, manifest, invocation = profile_oracle.build(str(tmp_path), {}, {
        "name": "ex", "origin": "t", "capabilities": ["fs:write:ROOT/data/w", "fs:read:ROOT/data/a"],
        "arguments": {}}, {})
    prof = render(host, manifest, invocation)
    assert prof["decision"] == "wrapped", prof["diagnostics"]
    return root, host_context.HostContext(host), from_dict(manifest), prof["argv"]


def _check(rendered, argv):
    root, host, manifest, _argv = rendered
    return invariants.check_invariants(argv, manifest, host, {}, os.path.join(root, "executors", "ex"))


def _special(path, fifo=False):
    """Plant a socket (or FIFO) at path (in a declared scope) and return the path."""
    if fifo:
        os.mkfifo(path)
        return path
    return trees.socket_file(path)


def _hard_link(path, existing):
    """A second name for a file of a read-only tree, in a declared writable scope."""
    with open(existing, "w") as handle:
        handle.write("x")
    os.link(existing, path)
    return path


def _movable(path):
    """A folder in a declared scope whose parent anyone may write (0777, not sticky): it can be moved."""
    os.makedirs(path, exist_ok=True)
    os.chmod(os.path.dirname(path), 0o777)
    return path


def _insert(argv, *items):
    sep = argv.index("--chdir")
    return argv[:sep] + list(items) + argv[sep:]


def test_final_check_passes_the_rendered_argv(rendered):
    assert _check(rendered, rendered[3]) == []


@pytest.mark.rule("R-CAP-SYS")
def test_final_check_passes_an_admin_read_channel(tmp_path):
    """A socket the admin lists in systemd_read_paths and allows (host.allow_channels, with a reason) is
    bound read-only by systemd:read, listed in the result, and the final check (which resolves the admin's
    channels only when a bind is a special file) lets it through; the same socket bound without being
    allowed is caught (c). Listed but not allowed, it is refused (issue 40: channels denied by default)."""
    root, host, manifest, invocation = profile_oracle.build(str(tmp_path), {}, {
        "name": "ex", "origin": "t", "capabilities": ["systemd:read", "fs:read:ROOT/data/a"], "arguments": {}}, {})
    sock = _special(os.path.join(root, "channel.sock"))
    host = dict(host, systemd_read_paths=[sock])
    assert render(host, manifest, invocation)["refusal"] == "channel_refused"
    host = dict(host, allow_channels=[{"path": sock, "reason": "the test's channel"}])
    prof = render(host, manifest, invocation)
    assert prof["channels"] == [{"path": sock, "kind": "socket", "reason": "the test's channel",
                                 "grant": "host.systemd_read_paths[0]"}]
    assert prof["decision"] == "wrapped", prof["diagnostics"]
    at = prof["argv"].index(sock)
    assert prof["argv"][at - 1:at + 2] == ["--ro-bind", sock, sock]
    own = os.path.join(root, "executors", "ex")
    assert invariants.check_invariants(prof["argv"], from_dict(manifest),
                                       host_context.HostContext(host), invocation, own,
                                       prof["descriptors"]) == []
    other = dict(host, systemd_read_paths=[], allow_channels=[])
    found = invariants.check_invariants(prof["argv"], from_dict(manifest),
                                        host_context.HostContext(other), invocation, own,
                                        prof["descriptors"])
    assert any("(c)" in v for v in found), found


@pytest.mark.parametrize("weaken,invariant", [
    (lambda r, a: [x if x != "--ro-bind" else "--bind" for x in a], "(b)"),                # base made writable
    (lambda r, a: _insert(a, "--bind", r + "/out", r + "/out"), "(a)"),                      # undeclared write
    (lambda r, a: _insert(a, "--bind", r + "/runtime", r + "/runtime"), "(b)"),              # runtime writable
    (lambda r, a: _insert(a, "--bind", r + "/data/w", r + "/executors"), "(b)"),              # shadows the executors
    (lambda r, a: _insert(a, "--bind", r, r + "/data/w/x"), "(a)"),                          # ancestor of base trees
    (lambda r, a: _insert(a, "--ro-bind", "/root", "/root"), "(a)"),                         # undeclared read
    (lambda r, a: _insert(a, "--ro-bind", r + "/executors/other", r + "/x"), "(a)"),        # a sibling's code
    (lambda r, a: _insert(a, "--ro-bind", r + "/creds/mail", r + "/creds/mail"), "(a)"),    # the whole store
    (lambda r, a: _insert(a, "--ro-bind", "/", r + "/data/a/x"), "(a)"),                     # a shared root
    (lambda r, a: [x for x in a if x != "--unshare-net"], "(c)"),                            # host network
    (lambda r, a: _insert(a, "--unshare-pid"), "(c)"),                                       # extra namespace flag
    (lambda r, a: _insert(a, "--dev-bind", "/dev", "/dev"), "(c)"),                          # host devices
    (lambda r, a: _insert(a, "--proc", "/srv/proc"), "(c)"),
    (lambda r, a: _insert(a, "--ro-bind", "/proc/1", "/x"), "(c)"),
    (lambda r, a: _insert(a, "--symlink", "/etc", "/data"), "(c)"),
    (lambda r, a: _insert(a, "--bind", r + "/data/w", r + "/data/w"), "(d)"),               # out of canonical order
    (lambda r, a: _insert(a, "--ro-bind", r + "/data/a\n", r + "/data/a"), "control"),
    (lambda r, a: _insert(a, "--ro-bind", _special(r + "/data/a/s"), r + "/data/a/s"), "(c)"),  # a host socket
    (lambda r, a: _insert(a, "--bind", _special(r + "/data/w/f", True), r + "/data/w/f"), "(c)"),  # a FIFO
    (lambda r, a: _insert(a, "--bind", _hard_link(r + "/data/w/h", r + "/runtime/m.py"), r + "/data/w/h"),
     "(b)"),                                                                              # a runtime file's 2nd name
    # (e) the mount model and stable sources
    (lambda r, a: _insert(a, "--ro-bind", r + "/data/a", r + "/data/l9"), "(e)"),           # source is not dest
    (lambda r, a: _insert(a, "--ro-bind", "/bin/sh", "/bin/sh"), "(e)"),                    # through the --symlink /bin
    (lambda r, a: _insert(a, "--ro-bind", _movable(r + "/data/a/m/x"), r + "/data/a/m/x"), "(e)"),  # by path, movable
    (lambda r, a: _insert(a, "--ro-bind-fd", "100", r + "/data/a"), "(e)"),                 # an undeclared descriptor
])
@pytest.mark.rule("R-SEC-1")
def test_final_check_catches_each_weakening(rendered, weaken, invariant):
    root, _host, _manifest, argv = rendered
    found = _check(rendered, weaken(root, list(argv)))
    assert found, "the final check missed a weakened argv"
    assert any(invariant in v or invariant == "control" for v in found), found


@pytest.mark.rule("R-SEC-1")
def test_final_check_is_applied_by_render(rendered, monkeypatch):
    """Defence in depth: if a granting rule above is removed, the final check still withholds the profile."""
    root, _host, _manifest, _argv = rendered
    monkeypatch.setattr(host_context.HostContext, "judge", lambda self, path, mode, grant=None, own=None: None)
    prof = renderer.render_safe({"name": "ex", "origin": "t", "capabilities": ["fs:write:%s/runtime" % root]},
                                host_context.HostContext(profile_oracle.host_for(root)), {}, ACTIVE)
    assert prof["refusal"] == "profile_invariant_violated", prof["diagnostics"]


@pytest.mark.rule("R-SCOPE-3")
def test_rendering_is_deterministic_across_host_contexts_and_orders(tmp_path):
    root, host, manifest, invocation = profile_oracle.build(str(tmp_path), {"data/l1": "ROOT/data/a"}, {
        "name": "ex", "origin": "t", "arguments": {"p": {"within": ["ROOT/data/**"]}},
        "capabilities": ["fs:read:ROOT/data/a/**", "fs:write:ROOT/data/w", "fs:read:arg:p", "provider:access:p1",
                         "mail:read:work", "metnos:write:sheets", "dialog.user_input"]}, {
        "sender": "alice", "arguments": {"p": "l1/b"}})
    first = render(host, manifest, invocation)
    assert first["decision"] == "wrapped", first["diagnostics"]
    rng = random.Random(10)
    for _ in range(20):
        caps = list(manifest["capabilities"])
        rng.shuffle(caps)
        keys = list(host)
        rng.shuffle(keys)
        again = render(dict((k, host[k]) for k in keys), dict(manifest, capabilities=caps), invocation)
        assert again["argv"] == first["argv"]
