"""A paired Linux device's profile (R-SCOPE-4, the spec's Linux device row): host.placement device renders the
server profile plus --unshare-pid and --new-session, exactly; a flag the platform cannot give is left out only when
declared with a reason (device_profile_downgraded, the result's placement.downgrades), never silently; the final
check holds a device argv to the device's flags.

No mocks: the host context points at real directories created per test (helpers.fake_host)."""
import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    host_context,
    host_layout,
    invariants,
    manifest,
    renderer,
    store,
)
from helpers.fake_host import host_dict

pytestmark = pytest.mark.rule("R-SCOPE-4")

ACTIVE = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}
SERVER_FLAGS = ["--unshare-user", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--die-with-parent"]
DEVICE_FLAGS = ["--unshare-user", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-pid",
                "--new-session", "--die-with-parent"]


@pytest.fixture
def tree(tmp_path):
    for folder in ("runtime", "venv/lib", "executors/ex"):
        (tmp_path / folder).mkdir(parents=True)
    return tmp_path


def render(tree, caps=(), **over):
    ctx = host_context.HostContext(dict(host_dict(tree), **over))
    data = {"name": "ex", "origin": "metnos/core", "revision": 1, "capabilities": list(caps)}
    return renderer.render(manifest.from_dict(data), ctx, {}, ACTIVE), ctx


def flags(prof):
    argv = prof["argv"]
    return [w for w in argv[1:argv.index("--")] if w.startswith("--unshare") or w in ("--new-session",
                                                                                         "--die-with-parent")]


def test_device_placement_a_server_renders_the_server_profile_as_before(tree):
    prof, _ctx = render(tree)
    assert prof["decision"] == "wrapped" and flags(prof) == SERVER_FLAGS
    assert "placement" not in prof


def test_device_placement_a_device_is_the_server_profile_plus_its_pid_namespace_and_session(tree):
    server, _ctx = render(tree)
    device, _ctx = render(tree, placement="device")
    assert device["decision"] == "wrapped" and flags(device) == DEVICE_FLAGS
    extra = list(device["argv"])
    for word in ("--unshare-pid", "--new-session"):
        extra.remove(word)
    assert extra == server["argv"]         # nothing else differs: mounts, private /tmp, network, command
    assert device["placement"] == {"placement": "device", "rule": "R-SCOPE-4",
                                   "flags": ["--unshare-pid", "--new-session"], "downgrades": []}
    assert [f for f in device["namespaces"] if f["rule"] == "R-SCOPE-4"] == [
        {"flag": "--unshare-pid", "rule": "R-SCOPE-4", "source": "placement device"},
        {"flag": "--new-session", "rule": "R-SCOPE-4", "source": "placement device"}]
    assert ["--tmpfs", "/tmp"] == device["argv"][device["argv"].index("--tmpfs"):device["argv"].index("--tmpfs") + 2]
    assert not any(d["code"] == "device_profile_downgraded" for d in device["diagnostics"])


def test_device_placement_a_device_keeps_the_host_network_only_when_a_capability_needs_it(tree):
    device, _ctx = render(tree, caps=["net:http"], placement="device")
    assert flags(device) == ["--unshare-user", "--unshare-ipc", "--unshare-uts", "--unshare-pid", "--new-session",
                             "--die-with-parent"]
    assert device["network"]["host"] is True


def test_device_placement_a_declared_downgrade_leaves_the_flag_out_and_says_so(tree):
    reason = "the client's platform mounts no procfs in a new PID namespace"
    device, _ctx = render(tree, placement="device", device_downgrades=[{"flag": "--unshare-pid", "reason": reason}])
    assert device["decision"] == "wrapped"
    assert "--unshare-pid" not in device["argv"] and "--new-session" in device["argv"]
    assert device["placement"]["downgrades"] == [{"flag": "--unshare-pid", "reason": reason}]
    found = [d for d in device["diagnostics"] if d["code"] == "device_profile_downgraded"]
    assert len(found) == 1 and found[0]["severity"] == "warning"
    assert reason in found[0]["message"] and "--unshare-pid" in found[0]["message"]


@pytest.mark.parametrize("over, words", [
    ({"placement": "workstation"}, "host.placement must be one of server, device"),
    ({"placement": None}, "host.placement must be one of"),
    ({"device_downgrades": [{"flag": "--unshare-pid", "reason": "x"}]}, "applies to placement device only"),
    ({"placement": "device", "device_downgrades": [{"flag": "--unshare-net", "reason": "x"}]}, ".flag must be one of"),
    ({"placement": "device", "device_downgrades": [{"flag": "--unshare-pid"}]}, "exactly flag and reason"),
    ({"placement": "device", "device_downgrades": [{"flag": "--unshare-pid", "reason": " "}]}, "must say why"),
    ({"placement": "device", "device_downgrades": [{"flag": "--unshare-pid", "reason": "a\nb"}]}, "must say why"),
    ({"placement": "device", "device_downgrades": [{"flag": "--new-session", "reason": "a"},
                                                   {"flag": "--new-session", "reason": "b"}]}, "once"),
    ({"placement": "device", "device_downgrades": "--unshare-pid"}, "must be a list"),
])
def test_device_placement_placement_and_downgrades_are_exact_or_refused(tree, over, words):
    with pytest.raises(host_layout.ContextError, match=words.replace(".", r"\.")):
        host_context.HostContext(dict(host_dict(tree), **over))


@pytest.mark.parametrize("drop", ["--unshare-pid", "--new-session"])
def test_device_placement_the_final_check_refuses_a_device_argv_without_a_device_flag(tree, drop):
    device, ctx = render(tree, placement="device")
    weakened = [w for w in device["argv"] if w != drop]
    data = {"name": "ex", "origin": "metnos/core", "revision": 1, "capabilities": []}
    found = invariants.check_invariants(weakened, manifest.from_dict(data), ctx, {}, str(tree / "executors/ex"),
                                        device["descriptors"])
    assert any("the rules give" in v and drop in v for v in found), found
    assert invariants.check_invariants(device["argv"], manifest.from_dict(data), ctx, {},
                                       str(tree / "executors/ex"), device["descriptors"]) == []


def test_device_placement_the_final_check_refuses_device_flags_on_a_server(tree):
    server, ctx = render(tree)
    argv = list(server["argv"])
    argv.insert(1, "--unshare-pid")
    data = {"name": "ex", "origin": "metnos/core", "revision": 1, "capabilities": []}
    found = invariants.check_invariants(argv, manifest.from_dict(data), ctx, {}, str(tree / "executors/ex"),
                                        server["descriptors"])
    assert any("the rules give" in v for v in found), found


def test_device_placement_the_stored_profile_keeps_the_placement_and_the_reviewer_sees_it(tree):
    reason = "no procfs in a new PID namespace here"
    device, _ctx = render(tree, placement="device", device_downgrades=[{"flag": "--unshare-pid", "reason": reason}])
    doc = store.documents(device).doc
    assert doc["placement"]["downgrades"] == [{"flag": "--unshare-pid", "reason": reason}]
    assert "placement: device (--new-session); without --unshare-pid: %s" % reason in store.review_lines(doc)
    server, _ctx = render(tree)
    assert "placement" not in store.documents(server).doc and "placement: " not in store.review_lines(
        store.documents(server).doc)
