"""The renderer, rule by rule (rule id in each test name), on a real host tree in a tmp dir.

No mocks: the host context points at real directories created per test; the base system
paths are this machine's own.
"""
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base.diagnostics import codes
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    granters,
    host_context,
    host_layout,
    manifest,
    model,
    renderer,
)
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile.undo import executor_digest
from helpers.fake_host import host_dict

ACTIVE = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "m"
    dirs = ["runtime", "venv/lib", "executors/ex", "executors/other", "i18n", "sheets", "people",
            "proposals", "index/documents", "integrations/google_calendar", "integrations/weather",
            "credentials/mail", "dialog/alice", "dialog/bob", "undo/t1", "undo/t2", "data/notes/sub",
            "data/reports", "outside", "home/user/.local/lib"]
    for d in dirs:
        (root / d).mkdir(parents=True, exist_ok=True)
    for f in ["credentials/mail/work.json", "credentials/mail/work.token", "credentials/mail/personal.json",
              "data/notes/a.md", "data/notes/sub/b.md", "outside/secret", "lexicon.db"]:
        (root / f).write_text("x")
    (root / "data/notes/link").symlink_to(root / "outside")
    (root / "data/notes/inlink").symlink_to(root / "data/notes/sub")
    return root


def host(tree, **over):
    ctx = host_dict(tree, python_package_roots=[str(tree / "venv/lib"), "/usr/lib/python3/dist-packages"],
                    lexicon_dbs=[str(tree / "lexicon.db"), str(tree / "nolex.db")],
                    resources={"sheets": str(tree / "sheets"), "people": str(tree / "people"),
                               "proposals": str(tree / "proposals")},
                    indexes={"documents": str(tree / "index/documents")},
                    mail_credentials_dir=str(tree / "credentials/mail"), systemd_read_paths=[str(tree / "runtime")])
    ctx.update(over)
    return host_context.HostContext(ctx)


def man(caps=(), **kw):
    data = {"name": "ex", "origin": "metnos/core", "revision": 1, "capabilities": list(caps)}
    data.update(kw)
    return manifest.from_dict(data)


def render(tree, caps=(), invocation=None, status=ACTIVE, hostkw=None, **kw):
    return renderer.render(man(caps, **kw), host(tree, **(hostkw or {})), invocation or {}, status)


def mounts(prof):
    return dict((m["dest"], m) for m in prof["mounts"])


def binds(prof, kind=None):
    return [m["dest"] for m in prof["mounts"] if m["kind"] in ((kind,) if kind else ("ro", "rw"))]


# ---------------------------------------------------------------- base profile

@pytest.mark.rule("R-BASE-1")
def test_existing_system_paths_read_only(tree):
    prof = render(tree)
    m = mounts(prof)
    for path in host_layout.SYSTEM_PATHS:
        if os.path.islink(path):
            assert m[path]["kind"] == "symlink" and m[path]["src"] == os.readlink(path)  # merged /usr
        elif os.path.isdir(path):
            assert m[path]["kind"] == "ro"
        else:
            assert path not in m
    assert m["/usr"]["provenance"][0] == {"rule": "R-BASE-1", "source": "base:/usr"}


@pytest.mark.rule("R-BASE-2")
def test_proc_and_minimal_dev(tree):
    m = mounts(render(tree))
    assert m["/proc"]["kind"] == "proc" and m["/dev"]["kind"] == "dev"


@pytest.mark.rule("R-BASE-3")
def test_private_tmp(tree):
    prof = render(tree)
    assert mounts(prof)["/tmp"]["kind"] == "tmpfs"
    argv = prof["argv"]
    assert argv[argv.index("--tmpfs") + 1] == "/tmp"


@pytest.mark.rule("R-BASE-4")
def test_executor_runtime_python_read_only(tree):
    m = mounts(render(tree))
    for key in ("executors/ex", "runtime", "venv"):
        assert m[str(tree / key)]["kind"] == "ro"
    assert str(tree / "executors/other") not in m  # other executors' folders stay hidden
    # package roots under an already bound tree are merged into it, not listed twice
    assert str(tree / "venv/lib") not in m
    assert "/usr/lib/python3/dist-packages" not in m


@pytest.mark.rule("R-BASE-4")
def test_never_a_whole_home_folder(tree):
    prof = render(tree, hostkw={"python_package_roots": ["/root", str(tree / "home/user/.local/lib")]})
    assert "/root" not in mounts(prof)
    assert str(tree / "home/user/.local/lib") in mounts(prof)


@pytest.mark.rule("R-BASE-5")
def test_i18n_and_lexicon_when_present(tree):
    m = mounts(render(tree))
    assert m[str(tree / "i18n")]["kind"] == "ro"
    assert m[str(tree / "lexicon.db")]["provenance"][0]["rule"] == "R-BASE-5"
    assert str(tree / "nolex.db") not in m


@pytest.mark.rule("R-BASE-6")
def test_always_on_flags(tree):
    prof = render(tree, ["net:http"])
    flags = [f["flag"] for f in prof["namespaces"]]
    for flag in ("--unshare-user", "--unshare-ipc", "--unshare-uts", "--die-with-parent"):
        assert flag in flags and flag in prof["argv"]


@pytest.mark.rule("R-BASE-7")
def test_unshare_net_without_network_capability(tree):
    prof = render(tree, ["fs:read:%s/data/notes/**" % tree])
    assert "--unshare-net" in prof["argv"] and prof["network"]["host"] is False


@pytest.mark.rule("R-BASE-8", "R-SEC-4")
def test_no_pid_namespace_landlock_or_seccomp(tree):
    argv = render(tree, ["net:x"])["argv"]
    for flag in ("--unshare-pid", "--unshare-all", "--seccomp", "--add-seccomp-fd", "--as-pid-1"):
        assert flag not in argv


@pytest.mark.rule("R-SEC-2")
def test_no_opt_in_base_profile(tree):
    argv = render(tree)["argv"]
    assert "/opt" not in argv
    prof = render(tree, ["fs:read:/opt/**"])
    assert prof["decision"] == "refused" and prof["refusal"] == "scope_too_broad"


def test_argv_layout(tree):
    prof = render(tree)
    argv = prof["argv"]
    assert argv[0] == "/usr/bin/bwrap"
    sep = argv.index("--")
    assert argv[sep + 1:] == ["/usr/bin/python3", str(tree / "executors/ex/main.py")]
    assert argv[sep - 2:sep] == ["--chdir", str(tree / "executors/ex")]


def test_every_entry_has_provenance(tree):
    prof = render(tree, ["fs:write:%s/data/reports" % tree, "metnos:read:sheets", "provider:access:weather"])
    for m in prof["mounts"]:
        assert m["provenance"] and all(p["rule"].startswith("R-") and p["source"] for p in m["provenance"])
    for f in prof["namespaces"]:
        assert f["rule"].startswith("R-") and f["source"]
    assert prof["network"]["rule"] == "R-NET-1"


def test_parents_before_children(tree):
    prof = render(tree, ["fs:read:%s/data/**" % tree, "fs:write:%s/data/reports/**" % tree])
    dests = [m["dest"] for m in prof["mounts"]]
    assert dests.index(str(tree / "data")) < dests.index(str(tree / "data/reports"))
    assert mounts(prof)[str(tree / "data/reports")]["kind"] == "rw"
    for i, d in enumerate(dests):
        for later in dests[i + 1:]:
            assert not (d != "/" and d.startswith(later + "/")), "%s mounted before its parent %s" % (d, later)


# ---------------------------------------------------------------- capabilities

@pytest.mark.rule("R-CAP-FS")
def test_glob_reduced_to_root(tree):
    m = mounts(render(tree, ["fs:read:%s/data/notes/**/*.md" % tree]))
    assert m[str(tree / "data/notes")]["kind"] == "ro"
    m = mounts(render(tree, ["fs:read:%s/data/no*s/sub" % tree]))
    assert m[str(tree / "data")]["provenance"][0]["rule"] == "R-CAP-FS"


@pytest.mark.rule("R-CAP-FS")
def test_write_is_rw_and_merges_with_read(tree):
    notes = str(tree / "data/notes")
    prof = render(tree, ["fs:read:%s/**" % notes, "fs:write:%s" % notes])
    entry = mounts(prof)[notes]
    assert entry["kind"] == "rw" and len(entry["provenance"]) == 2
    prof = render(tree, ["fs:read:%s" % notes])
    assert mounts(prof)[notes]["kind"] == "ro"


@pytest.mark.rule("R-CAP-FS")
def test_read_child_under_write_parent_is_merged(tree):
    prof = render(tree, ["fs:write:%s/data/notes" % tree, "fs:read:%s/data/notes/sub" % tree])
    assert str(tree / "data/notes/sub") not in mounts(prof)
    parent = mounts(prof)[str(tree / "data/notes")]
    assert any(p.get("covers") == str(tree / "data/notes/sub") for p in parent["provenance"])


@pytest.mark.rule("R-CAP-FS")
def test_missing_path_not_mounted(tree):
    prof = render(tree, ["fs:read:%s/nothing/**" % tree])
    assert prof["decision"] == "wrapped" and "grant_skipped" in codes(prof["diagnostics"])
    assert str(tree / "nothing") not in mounts(prof)


@pytest.mark.parametrize("cap,root", [
    ("fs:write:/**", "/"), ("fs:read:/**", "/"), ("fs:read:/*", "/"), ("fs:write:/home/**", "/home"),
    ("fs:write:/etc/metnos", "/etc/metnos"), ("fs:write:/usr/local/bin", "/usr/local/bin"),
    ("fs:read:/proc/1", "/proc/1"), ("fs:write:/var", "/var"), ("fs:read:/opt", "/opt"),
])
@pytest.mark.rule("R-CAP-FS")
def test_over_broad_scopes_refused(tree, cap, root):
    prof = render(tree, [cap])
    assert prof["decision"] == "refused" and prof["refusal"] == "scope_too_broad", prof["diagnostics"]
    assert prof["argv"] is None


@pytest.mark.rule("R-CAP-FS")
def test_write_into_runtime_refused(tree):
    prof = render(tree, ["fs:write:%s/runtime/x" % tree])
    assert prof["refusal"] == "scope_too_broad"


@pytest.mark.rule("R-ARG-1")
def test_value_narrows(tree):
    within = {"path": {"within": ["%s/data/notes/**" % tree]}}
    prof = render(tree, ["fs:read:arg:path"], {"arguments": {"path": str(tree / "data/notes/a.md")}},
                  arguments=within)
    entry = mounts(prof)[str(tree / "data/notes/a.md")]
    assert entry["kind"] == "ro" and entry["provenance"][0]["rule"] == "R-ARG-1"
    assert str(tree / "data/notes") not in mounts(prof)


@pytest.mark.rule("R-ARG-1")
def test_relative_value_resolved_in_scope(tree):
    within = {"path": {"within": ["%s/data/notes" % tree]}}
    prof = render(tree, ["fs:write:arg:path"], {"arguments": {"path": "sub"}}, arguments=within)
    assert mounts(prof)[str(tree / "data/notes/sub")]["kind"] == "rw"


@pytest.mark.parametrize("value,code", [
    ("../../etc", "arg_escapes_scope"), ("/etc/passwd", "arg_escapes_scope"),
    ("sub/../../../outside", "arg_escapes_scope"), ("link/secret", "arg_symlink_escapes"),
    ("link", "arg_symlink_escapes"), ("a.md\0x", "scope_nul"), (5, "arg_value_invalid"), ("", "arg_value_invalid"),
])
@pytest.mark.rule("R-ARG-1")
def test_never_widens(tree, value, code):
    within = {"path": {"within": ["%s/data/notes/**" % tree]}}
    prof = render(tree, ["fs:read:arg:path"], {"arguments": {"path": value}}, arguments=within)
    assert prof["decision"] == "refused" and prof["refusal"] == code, prof["diagnostics"]


@pytest.mark.parametrize("within,value,mounted", [
    ("data/notes/*.md", "a.md", "data/notes/a.md"), ("data/notes/**", "/data/notes", "data/notes"),
    ("data/notes/**", "sub/b.md", "data/notes/sub/b.md"), ("data/notes/*/b.md", "sub/b.md", "data/notes/sub/b.md"),
    ("data/notes/{a,b}.md", "a.md", "data/notes/a.md"), ("data/notes/**/b.md", "sub/b.md", "data/notes/sub/b.md"),
    ("data/notes/s[tu]b", "sub/b.md", "data/notes/sub/b.md"), ("data/notes/?.md", "a.md", "data/notes/a.md"),
    ("data/notes/*", "inlink", "data/notes/sub"),        # a link: mounted at its resolved path only
])
@pytest.mark.rule("R-ARG-1")
def test_value_inside_its_within_pattern(tree, within, value, mounted):
    """A value at or below a path the 'within' glob matches is granted (and only such a value)."""
    value = str(tree) + value if value.startswith("/") else value        # '/...': absolute in the tree
    prof = render(tree, ["fs:read:arg:path"], {"arguments": {"path": value}},
                  arguments={"path": {"within": ["%s/%s" % (tree, within)]}})
    assert prof["decision"] == "wrapped", prof["diagnostics"]
    assert str(tree / mounted) in mounts(prof)


@pytest.mark.rule("R-ARG-1")
def test_symlink_inside_scope_is_fine(tree):
    within = {"path": {"within": ["%s/data/notes/**" % tree]}}
    prof = render(tree, ["fs:read:arg:path"], {"arguments": {"path": "inlink"}}, arguments=within)
    # mounted at its resolved host path only (the mount model): the declared name is in the provenance
    assert str(tree / "data/notes/inlink") not in mounts(prof)
    entry = mounts(prof)[str(tree / "data/notes/sub")]
    assert entry["src"] == entry["dest"] == str(tree / "data/notes/sub")
    assert "declared as %s" % (tree / "data/notes/inlink") in entry["provenance"][0]["source"]


@pytest.mark.rule("R-ARG-1")
def test_missing_path_or_value_not_mounted(tree):
    within = {"path": {"within": ["%s/data/notes/**" % tree]}}
    for inv in ({"arguments": {"path": "nope.md"}}, {}):
        prof = render(tree, ["fs:read:arg:path"], inv, arguments=within)
        assert prof["decision"] == "wrapped" and "grant_skipped" in codes(prof["diagnostics"])
        assert not any(d.startswith(str(tree / "data")) for d in binds(prof))


@pytest.mark.rule("R-CAP-METNOS")
def test_canonical_paths_only(tree):
    prof = render(tree, ["metnos:read:sheets", "metnos:write:people", "metnos:create:proposals"])
    m = mounts(prof)
    assert m[str(tree / "sheets")]["kind"] == "ro"
    assert m[str(tree / "people")]["kind"] == "rw" and m[str(tree / "proposals")]["kind"] == "rw"
    prof = render(tree, ["metnos:read:payroll"])
    assert prof["refusal"] == "metnos_resource_unknown"


@pytest.mark.rule("R-CAP-INDEX")
def test_known_read_only_unknown_nothing(tree):
    prof = render(tree, ["index:read:documents", "index:read:secret_index"])
    assert mounts(prof)[str(tree / "index/documents")]["kind"] == "ro"
    assert prof["decision"] == "wrapped" and "grant_skipped" in codes(prof["diagnostics"])
    assert len([d for d in binds(prof) if "index" in d]) == 1


@pytest.mark.rule("R-CAP-SYS")
def test_read_and_network_interfaces(tree):
    prof = render(tree, ["systemd:read"])
    assert mounts(prof)[str(tree / "runtime")]["provenance"][-1]["rule"] in ("R-BASE-4", "R-CAP-SYS")
    assert "--unshare-net" in prof["argv"]
    prof = render(tree, ["system:read:network_interfaces"])
    assert "--unshare-net" not in prof["argv"] and prof["network"]["because"] == ["system:read:network_interfaces"]


@pytest.mark.rule("R-CAP-PROVIDER")
def test_folder_rw_and_network(tree):
    for cap, folder in (("provider:access:google_calendar", "google_calendar"), ("skill:weather", "weather")):
        prof = render(tree, [cap])
        assert mounts(prof)[str(tree / "integrations" / folder)]["kind"] == "rw"
        assert str(tree / "integrations") not in mounts(prof)
        assert prof["network"]["host"] is True and "--unshare-net" not in prof["argv"]


@pytest.mark.rule("R-CAP-MAIL")
def test_only_named_account_files(tree):
    prof = render(tree, ["mail:read:work"])
    m = mounts(prof)
    assert m[str(tree / "credentials/mail/work.json")]["kind"] == "ro"
    assert m[str(tree / "credentials/mail/work.token")]["kind"] == "ro"
    assert str(tree / "credentials/mail/personal.json") not in m
    assert str(tree / "credentials/mail") not in m
    assert prof["network"]["host"] is True


@pytest.mark.rule("R-CAP-DIALOG")
def test_only_authenticated_sender(tree):
    prof = render(tree, ["dialog.user_input"], {"sender": "alice"})
    assert mounts(prof)[str(tree / "dialog/alice")]["kind"] == "rw"
    assert str(tree / "dialog/bob") not in mounts(prof)
    for sender in (None, "../bob", "alice/../bob"):
        prof = render(tree, ["dialog.user_input"], {"sender": sender})
        assert not [d for d in binds(prof) if "dialog" in d] and "grant_skipped" in codes(prof["diagnostics"])


@pytest.mark.rule("R-CAP-UNDO")
def test_only_current_turn(tree):
    prof = render(tree, [], {"turn_id": "t1"}, inverse={"model": "restore_content"})
    assert mounts(prof)[str(tree / "undo/t1")]["kind"] == "rw"
    assert str(tree / "undo/t2") not in mounts(prof)
    prof = render(tree, [], {"turn_id": "t1"})  # no inverse model declared: nothing
    assert not [d for d in binds(prof) if "undo" in d]


@pytest.mark.parametrize("cap", ["network:*", "net:http", "provider:access:google_calendar", "skill:weather",
                                 "mail:read:work", "system:read:network_interfaces"])
@pytest.mark.rule("R-NET-1", "R-SEC-3")
def test_network_capabilities_keep_host_network(tree, cap):
    prof = render(tree, [cap])
    assert "--unshare-net" not in prof["argv"] and cap in prof["network"]["because"]


# ---------------------------------------------------------------- fail closed

@pytest.mark.parametrize("status", [
    {"bwrap_available": False, "bwrap_path": None, "disabled_via_env": False, "active": False},
    {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": True, "active": False},
])
@pytest.mark.rule("R-FAIL-1", "R-SEC-6")
def test_refuses_when_unavailable(tree, status):
    prof = render(tree, ["net:x"], status=status)
    assert prof["decision"] == "refused" and prof["refusal"] == "executor_os_sandbox_unavailable"
    assert prof["argv"] is None


@pytest.mark.rule("R-FAIL-1")
def test_scope_checked_before_bwrap(tree):
    status = {"bwrap_available": False, "bwrap_path": None, "disabled_via_env": False, "active": False}
    prof = render(tree, ["fs:write:/**"], status=status)
    assert prof["refusal"] == "scope_too_broad"


def undo_broker(tree):
    """The broker's files on disk: the digest is computed from them, never taken from a manifest."""
    folder = tree / "executors" / "undo_last_turn"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.py").write_text("import restore\n")
    (folder / "restore.py").write_text("def undo():\n    pass\n")
    digest, problem = executor_digest(str(folder), ["main.py", "restore.py"])
    assert problem is None
    undo = {"name": "undo_last_turn", "origin": "metnos/core", "owner": "metnos", "revision": 12,
            "digest": digest, "capabilities": ["system:undo"], "files": ["main.py", "restore.py"]}
    pinned = {"name": "undo_last_turn", "origin": "metnos/core", "owner": "metnos", "revision": 12,
              "capability": "system:undo", "files": ["main.py", "restore.py"], "digest": digest}
    return folder, undo, pinned


@pytest.mark.rule("R-FAIL-2")
def test_pinned_undo_runs_direct_even_without_bwrap(tree):
    _folder, undo, pinned = undo_broker(tree)
    status = {"bwrap_available": False, "bwrap_path": None, "disabled_via_env": False, "active": False}
    prof = renderer.render(manifest.from_dict(undo), host(tree, undo_exception=pinned), {}, status)
    assert prof["decision"] == "direct" and prof["argv"][0] == "/usr/bin/python3"
    assert prof["exception"]["rule"] == "R-FAIL-2"


@pytest.mark.parametrize("field,value", [("digest", "sha256:" + "cd" * 32), ("origin", "evil/fork"),
                                         ("owner", "mallory"), ("files", ["main.py"]), ("revision", 13)])
@pytest.mark.rule("R-FAIL-2")
def test_other_revisions_fail_closed(tree, field, value):
    _folder, undo, pinned = undo_broker(tree)
    data = dict(undo, **{field: value})
    prof = renderer.render(manifest.from_dict(data), host(tree, undo_exception=pinned), {}, ACTIVE)
    assert prof["decision"] == "refused" and prof["refusal"] == "undo_exception_mismatch"
    assert field in prof["diagnostics"][0]["message"]


@pytest.mark.rule("R-FAIL-2")
def test_no_pinned_exception_fails_closed(tree):
    _folder, undo, _pinned = undo_broker(tree)
    prof = renderer.render(manifest.from_dict(undo), host(tree), {}, ACTIVE)
    assert prof["refusal"] == "undo_exception_mismatch"


@pytest.mark.rule("R-SEC-5")
def test_system_undo_reserved(tree):
    prof = render(tree, ["system:undo"])
    assert prof["refusal"] == "capability_reserved"


# ---------------------------------------------------------------- manifests

@pytest.mark.parametrize("data,code,field", [
    ({"name": "x", "origin": "o", "capabilities": ["fs:exec:/x"]}, "capability_unknown", "capabilities[0]"),
    ({"name": "x", "origin": "o", "capabilities": ["root"]}, "capability_unknown", "capabilities[0]"),
    ({"name": "x", "origin": "o", "capabilities": ["fs:read:relative/path"]}, "scope_relative", "capabilities[0]"),
    ({"name": "x", "origin": "o", "capabilities": ["fs:read:/a/../etc"]}, "scope_not_normalized", "capabilities[0]"),
    ({"name": "x", "origin": "o", "capabilities": ["fs:read:/a\0b"]}, "scope_nul", "capabilities[0]"),
    ({"name": "x", "origin": "o", "capabilities": ["fs:read:arg:p"]}, "arg_undeclared", "capabilities"),
    ({"name": "x", "origin": "o", "capabilities": ["fs:read:arg:p"], "arguments": {"p": {}}},
     "arg_scope_unbounded", "arguments.p.within"),
    ({"origin": "o", "capabilities": []}, "manifest_invalid", "name"),
    ({"name": "Bad Name", "origin": "o"}, "manifest_invalid", "name"),
    ({"name": "x", "origin": "o", "capabilites": []}, "manifest_invalid", "capabilites"),
    ({"name": "x", "origin": "o", "capabilities": "net:x"}, "manifest_invalid", "capabilities"),
    ({"name": "x", "origin": "o", "digest": "md5:abc"}, "manifest_invalid", "digest"),
])
def test_manifest_rejections_name_field_and_code(data, code, field):
    with pytest.raises(model.ManifestError) as err:
        manifest.from_dict(data)
    diag = err.value.diagnostics[0]
    assert diag["code"] == code and diag["details"]["field"] == field
    assert field in diag["message"]


def test_manifest_not_utf8_and_parse_errors():
    with pytest.raises(model.ManifestError) as err:
        manifest.coerce(b"name: caf\xe9\norigin: o\n", "m.yml")
    assert err.value.diagnostics[0]["code"] == "manifest_not_utf8"
    with pytest.raises(model.ManifestError) as err:
        manifest.coerce("name: [unclosed", "m.yml")
    assert err.value.diagnostics[0]["code"] == "manifest_parse_error"
    prof = renderer.render_safe(b"\xff\xfe", host_context.HostContext())
    assert prof["decision"] == "refused" and prof["refusal"] == "manifest_not_utf8"


def test_manifest_yaml_json_and_flow_forms():
    for text in ('{"name": "x", "origin": "o", "capabilities": ["net:a"]}',
                 "{'name': 'x', 'origin': 'o', 'capabilities': ['net:a']}",
                 "name: x\norigin: o\ncapabilities: [net:a]\n"):
        assert manifest.coerce(text).capabilities[0].kind == "network"


def test_host_context_rejects_unknown_keys_and_relative_paths():
    with pytest.raises(host_layout.ContextError, match="runtime_dri"):
        host_context.HostContext({"runtime_dri": "/x"})
    with pytest.raises(host_layout.ContextError, match="runtime_dir must be an absolute path"):
        host_context.HostContext({"runtime_dir": "relative"})


def test_every_example_manifest_loads_and_renders():
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "manifests")
    names = sorted(f for f in os.listdir(examples) if f.endswith(".yml"))
    assert len(names) >= 9
    kinds = set()
    for name in names:
        m = manifest.coerce(model.FileSource(os.path.join(examples, name)))
        kinds.update(c.kind for c in m.capabilities)
        prof = renderer.render(m, host_context.HostContext(), {"sender": "alice", "turn_id": "t1"}, ACTIVE)
        assert prof["decision"] in ("wrapped", "refused")
    assert kinds >= {"fs", "metnos", "index", "systemd", "system", "provider", "skill", "mail", "dialog",
                     "network", "undo"}


def test_every_kind_of_the_grammar_has_a_granter_or_a_documented_reason():
    """The grammar (manifest.Kind) and the renderer (profile._GRANTERS) share one set of kinds: a kind
    the grammar accepts either grants through its table entry, or is one of the two kinds that grant
    no mount (network: the host network only; undo: the pinned broker, decided before any grant)."""
    assert set(granters.GRANTERS) | {model.Kind.NETWORK, model.Kind.UNDO} == set(model.KINDS)
    assert not set(granters.GRANTERS) & {model.Kind.NETWORK, model.Kind.UNDO}
    parsed = [manifest.parse_capability(text).capability for text in (
        "fs:read:/srv/x", "metnos:read:sheets", "index:read:docs", "systemd:read", "system:read",
        "provider:access:cal", "skill:cal", "mail:read:bob", "dialog.user_input", "net:a", "system:undo")]
    assert sorted(set(c.kind for c in parsed)) == sorted(model.KINDS)
