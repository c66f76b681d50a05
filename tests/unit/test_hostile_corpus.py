"""The hostile corpus (tests/unit/cases/hostile_manifests.yaml, read by tests/corpus/hostile_manifests.py:
>= 200 manifests written against each rule of the spec) rendered against a real host tree full of planted symlinks
(tests/corpus/hostile_tree.py): every entry is refused with its stable code, without a traceback,
and every in-process face gives the same decision as the core:

- core: renderer.render_safe on the file (manifest.FileSource, read by the core);
- filters: metnos_manifest_source on the controller, then metnos_profile (a preview);
- audit payload: host_audit.profile_drift on what the audit action ships (manifest.transport);
  it renders without an invocation by design, so it is compared with the core without one;
- probe: run.probe_service with the manifest's bytes (stops before starting bwrap when refused);
- module: library/sandbox_profile.py's main() in this process with Ansible's own argument
  handling (ansible.module_utils.testing.patch_module_args), given the file (manifest_file, read
  on the host by the core) or what the role hands over (metnos_manifest_source).

Real ansible-playbook runs of the module (a sample of every rule and code) and of the audit action
(the whole corpus in one call) are in tests/integration/test_hostile_faces.py. A watchdog (SIGALRM)
turns a hang into a failure; time and memory are measured by benchmarks/bench-render.py, never
asserted here.
"""
import json
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import run
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import host_context, model, renderer
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile.manifest import transport
from corpus import hostile_manifests, hostile_tree
from helpers import faces
from helpers.hostile import Watchdog, outcome

ACTIVE = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}
F = faces.load("filter_plugins/metnos_sandbox.py", "mfilters")


def _load_module_face():
    """library/sandbox_profile.py as Ansible runs it (its imports resolve under ansible.module_utils)."""
    return faces.load("library/sandbox_profile.py", "sandbox_profile_face")


def run_module_face(args, capsys):
    from ansible.module_utils.testing import patch_module_args
    module = _load_module_face.cached = getattr(_load_module_face, "cached", None) or _load_module_face()
    capsys.readouterr()
    with patch_module_args(args):
        try:
            module.main()
        except SystemExit:
            pass
    out = capsys.readouterr().out
    return json.loads(out[out.index("{"):])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    _root, _host, entries = hostile_tree.materialize(str(tmp_path_factory.mktemp("hostile")))
    return dict((entry.id, (entry, path, host, inv)) for entry, path, host, inv in entries)


def core(path, host, inv):
    with Watchdog():
        return renderer.render_safe(model.FileSource(path), host_context.HostContext(host), inv, ACTIVE)


def test_corpus_is_large_and_covers_the_rules():
    assert len(hostile_manifests.CORPUS) >= 200
    rules = set(e.rule for e in hostile_manifests.CORPUS)
    assert rules >= {"R-SCOPE-1", "R-CAP-FS", "R-ARG-1", "R-BASE-1", "R-BASE-4", "R-SEC-2", "R-SEC-5", "R-FAIL-2",
                     "R-CAP-METNOS", "R-CAP-INDEX", "R-CAP-PROVIDER", "R-CAP-MAIL", "R-CAP-DIALOG", "R-CAP-UNDO",
                     "R-CAP-SYS", "R-NET-1"}


@pytest.mark.parametrize("entry_id", hostile_manifests.params())
def test_core_refuses_with_its_code(corpus, entry_id):
    entry, path, host, inv = corpus[entry_id]
    prof = core(path, host, inv)
    entry.check(outcome(prof), prof["diagnostics"][:2])
    assert prof["decision"] == "refused"
    assert prof["argv"] is None and prof["mounts"] == []
    text = json.dumps(prof)
    assert "Traceback" not in text and len(text) < 64 * 1024      # messages quote short excerpts only
    for diag in prof["diagnostics"]:
        assert len(diag["message"]) < 2000, diag


@pytest.mark.parametrize("entry_id", hostile_manifests.params())
def test_every_face_gives_the_core_decision(corpus, entry_id, tmp_path):
    entry, path, host, inv = corpus[entry_id]
    want = outcome(core(path, host, inv))
    with Watchdog():
        preview = F.metnos_profile(F.metnos_manifest_source(path), host=host, invocation=inv, status=ACTIVE)
    assert outcome(preview) == want and preview["preview"] is True
    with open(path, "rb") as handle:
        raw = handle.read()
    with Watchdog():
        probe = run.probe_service({"unit": None, "manifest": raw, "invocation": inv, "host": host,
                                   "context": "direct", "timeout": 30}, bwrap.default_runner)
    errors = [d["code"] for d in probe["diagnostics"] if d["severity"] == "error"]
    assert probe["profile"]["decision"] == "refused" and errors[0] == want and probe["passed"] is False
    want_plain = outcome(core(path, host, {}))        # the audit renders without an invocation
    with Watchdog():
        drift = host_audit.profile_drift([transport(model.FileSource(path))], host, str(tmp_path), ACTIVE)
    assert outcome(drift[0]) == want_plain


@pytest.mark.parametrize("entry_id", hostile_manifests.params())
def test_module_face_gives_the_core_decision(corpus, entry_id, capsys):
    entry, path, host, inv = corpus[entry_id]
    want = outcome(core(path, host, inv))
    index = [e.id for e in hostile_manifests.CORPUS].index(entry_id)
    args = {"host": host, "discover_python_roots": False, "fail_on_refusal": index % 3 == 0,
            "path": "/usr/sbin:/usr/bin:/sbin:/bin"}
    if index % 2 == 0:
        args["manifest_file"] = path
    else:
        args["manifest"] = F.metnos_manifest_source(path)
    if inv:
        args["invocation"] = inv
    with Watchdog():
        res = run_module_face(args, capsys)
    assert "Traceback" not in json.dumps(res) and "exception" not in res
    if entry.expect == "invocation_invalid" and "decision" not in res:
        assert res["failed"] and "invocation" in res["msg"]        # Ansible's own argument validation
        return
    assert outcome(res) == want
    assert res.get("failed", False) is (index % 3 == 0)


@pytest.mark.parametrize("invocation", [{"turn_id": 12}, {"sender": True}, {"turn_id": 1.5, "sender": 7},
                                        {"turn_id": ["t1"], "sender": {"a": 1}}])
def test_module_face_does_not_convert_the_invocation(corpus, invocation, capsys):
    """Input is data: a turn_id or sender that is not a string names no folder in the core; the
    module must not turn it into one (Ansible's type conversion would make 12 the folder '12')."""
    _entry, _path, host, _inv = corpus["billion_laughs"]
    for name in ("12", "True", "1.5", "7"):
        os.makedirs(os.path.join(host["undo_root"], name), exist_ok=True)
        os.makedirs(os.path.join(host["dialog_dir"], name), exist_ok=True)
    manifest = {"name": "ex", "origin": "o", "capabilities": ["dialog.user_input"], "inverse": {"model": "m"}}
    want = renderer.render_safe(manifest, host_context.HostContext(host), invocation, ACTIVE)
    res = run_module_face({"manifest": manifest, "host": host, "invocation": invocation, "fail_on_refusal": False,
                           "discover_python_roots": False, "path": "/usr/sbin:/usr/bin:/sbin:/bin"}, capsys)
    assert "decision" in res, res.get("msg")
    assert (res["decision"], res["refusal"]) == (want["decision"], want["refusal"])
    assert [m for m in res["mounts"] if m["kind"] == "rw"] == [m for m in want["mounts"] if m["kind"] == "rw"] == []


def test_a_failing_entry_names_its_file_and_id():
    entry = hostile_manifests.CORPUS[0]
    with pytest.raises(AssertionError, match="tests/unit/cases/hostile_manifests.yaml, case 'billion_laughs': "
                                             "got 'direct', want 'manifest_too_many_nodes'"):
        entry.check("direct")
