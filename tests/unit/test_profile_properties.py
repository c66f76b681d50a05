"""Property-based tests of the renderer (hypothesis) over random manifests, argument values
and a real host tree built in a tmp dir (with symlinks pointing in and out of scopes)."""
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    globs,
    host_context,
    host_layout,
    renderer,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile.manifest import parse_capability
from helpers.fake_host import host_dict

SUBDIRS = ["data", "data/a", "data/a/b", "data/c", "out", "out/secret", "integrations/p1", "dialog/alice",
           "undo/t1", "creds/mail", "res/sheets", "idx/docs", "exec/ex", "runtime"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("hyp")
    for d in SUBDIRS:
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "data/a/f.txt").write_text("x")
    (root / "creds/mail/work.json").write_text("x")
    (root / "creds/mail/other.json").write_text("x")
    (root / "data/a/up").symlink_to(root / "out")          # escapes
    (root / "data/a/side").symlink_to(root / "data/c")     # stays inside data
    return root


def host_for(root):
    return host_context.HostContext(host_dict(root, executors_dir=str(root / "exec"), python_package_roots=[],
                                              i18n_dbs=[],
                                   resources={"sheets": str(root / "res/sheets")},
                                   indexes={"docs": str(root / "idx/docs")}))


REL = st.sampled_from(["data", "data/a", "data/a/b", "data/c", "data/a/f.txt", "out", "nothing", "data/a/up",
                       "data/a/side", "data/*", "data/a/**", "da*a/a", "out/secret"])
ARGV = st.sampled_from(["f.txt", "b", "../c", "../../out", "up", "up/x", "side", "/etc", "..", "b/../../..",
                        "nonexistent", "", "a\0b", "/", "//data"])


def cap_strategy(root):
    fixed = st.builds(lambda mode, rel: "fs:%s:%s/%s" % (mode, root, rel), st.sampled_from(["read", "write"]), REL)
    simple = st.sampled_from(["net:http", "network:*", "provider:access:p1", "provider:access:none",
                              "skill:p1", "mail:read:work", "mail:read:ghost", "metnos:read:sheets",
                              "metnos:write:sheets", "index:read:docs", "index:read:ghost", "dialog.user_input",
                              "systemd:read", "system:read", "system:read:network_interfaces"])
    argcap = st.sampled_from(["fs:read:arg:p", "fs:write:arg:p"])
    return st.lists(st.one_of(fixed, simple, argcap), max_size=6)


@st.composite
def cases(draw, root):
    caps = draw(cap_strategy(root))
    within = draw(st.sampled_from(["data/a/**", "data/a", "data", "data/c/**"]))
    manifest = {"name": "ex", "origin": "o", "capabilities": caps,
                "arguments": {"p": {"within": ["%s/%s" % (root, within)]}}}
    if draw(st.booleans()):
        manifest["inverse"] = {"model": "restore"}
    invocation = {"arguments": {"p": draw(ARGV)} if draw(st.booleans()) else {},
                  "sender": draw(st.sampled_from(["alice", "bob", "../alice", None])),
                  "turn_id": draw(st.sampled_from(["t1", "t2", "..", None]))}
    return manifest, invocation


def allowed_roots(root, manifest, invocation, host):
    """Everything a profile may expose, computed independently of the renderer."""
    allowed = [src for kind, src, _d, _r, _s in host.base() if kind in ("ro", "rw")]
    allowed.append(str(root / "exec/ex"))
    for cap in manifest["capabilities"]:
        if cap.startswith("fs:") and ":arg:" not in cap:
            # mounts use the resolved source (issue 10): the scope as written and as resolved
            allowed.append(globs.glob_root(cap.split(":", 2)[2]))
            allowed.append(os.path.realpath(globs.glob_root(cap.split(":", 2)[2])))
    if any(":arg:" in c for c in manifest["capabilities"]):
        allowed.append(os.path.realpath(globs.glob_root(manifest["arguments"]["p"]["within"][0])))
    allowed += [str(root / "integrations/p1"), str(root / "creds/mail/work.json"), str(root / "res/sheets"),
                str(root / "idx/docs")]
    if invocation.get("sender") == "alice":
        allowed.append(str(root / "dialog/alice"))
    if manifest.get("inverse") and invocation.get("turn_id") == "t1":
        allowed.append(str(root / "undo/t1"))
    return allowed


def under(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_properties(tree, data):
    manifest, invocation = data.draw(cases(tree))
    host = host_for(tree)
    prof = renderer.render_safe(manifest, host, invocation)          # never raises
    if prof["decision"] == "refused":
        assert prof["argv"] is None and prof["refusal"]
        return
    allowed = allowed_roots(tree, manifest, invocation, host)
    for m in prof["mounts"]:
        assert m["provenance"], m                            # every entry has provenance
        assert all(p["rule"].startswith("R-") for p in m["provenance"])
        if m["kind"] in ("ro", "rw"):
            assert under(m["src"], allowed), (m, allowed)   # nothing outside base ∪ declared scopes
            assert "/opt" != m["src"]
        if m["kind"] == "rw":
            assert not under(m["src"], list(host_layout.SYSTEM_TREES)), m
        own = [p for p in m["provenance"] if "covers" not in p]   # not merged into from a child
        if own and all(p["rule"] == "R-ARG-1" for p in own):
            bound = os.path.realpath(globs.glob_root(manifest["arguments"]["p"]["within"][0]))
            assert under(m["src"], [bound]), (m, bound)      # an arg: never widens
    needs_net = any(c.split(":")[0] in ("net", "network", "provider", "skill", "mail")
                    or c == "system:read:network_interfaces" for c in manifest["capabilities"])
    assert ("--unshare-net" in prof["argv"]) is (not needs_net)
    assert "--unshare-pid" not in prof["argv"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_random_capability_text_never_raises(text):
    cap, errors = parse_capability(text)
    assert (cap is None) == bool(errors)
    if errors:
        assert errors[0]["code"] in ("capability_unknown", "scope_relative", "scope_nul", "scope_not_normalized",
                                     "capability_whitespace")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_raise(blob):
    prof = renderer.render_safe(blob, host_context.HostContext())
    assert prof["decision"] in ("refused", "wrapped")
