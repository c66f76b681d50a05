"""The second hostile set (tests/unit/cases/hostile_bwrap.yaml, its tree built by tests/corpus/hostile_bwrap.py:
profiles as bwrap sees them when it acts) rendered against its real host tree: every entry gets its expected
decision - a refusal with its stable code, or a profile - from every in-process face (core, filter preview, the
audit payload, the probe for refusals, the module's main() with Ansible's own argument handling), without a
traceback, with a reply that is valid UTF-8 (Ansible refuses any other), under a watchdog. The accepted ones are run
in real bwrap as root and as nobody by tests/integration/test_hostile_bwrap_real.py; time and memory of the worst
are measured by benchmarks/bench-render.py, never asserted here."""
import json
import os

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host.bwrap import default_runner
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import run
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
    host_context,
    manifest,
    model,
    renderer,
)
from corpus import hostile_bwrap
from helpers import faces
from helpers.hostile import Watchdog, bwrap_status, outcome

F = faces.load("filter_plugins/metnos_sandbox.py", "mfilters")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    _root, _host, entries = hostile_bwrap.materialize(str(tmp_path_factory.mktemp("hostile_bwrap")))
    return dict((e.id, (e, path, host, inv, bwrap)) for e, path, host, inv, bwrap in entries)


def core(path, host, inv, bwrap):
    with Watchdog():
        return renderer.render_safe(model.FileSource(path), host_context.HostContext(host), inv, bwrap_status(bwrap))


def test_the_set_covers_every_class():
    classes = set(e.cls for e in hostile_bwrap.CORPUS)
    assert classes == {"dest", "roots", "engine", "chain", "link", "args", "stable"}
    assert len(hostile_bwrap.CORPUS) >= 60
    assert sum(e.expect == "wrapped" for e in hostile_bwrap.CORPUS) >= 8      # accepted: checked for real in bwrap


@pytest.mark.parametrize("entry_id", hostile_bwrap.params())
def test_core_gives_the_expected_decision(corpus, entry_id):
    entry, path, host, inv, bwrap = corpus[entry_id]
    prof = core(path, host, inv, bwrap)
    entry.check(outcome(prof), prof["diagnostics"][:2])
    json.dumps(prof, ensure_ascii=False).encode("utf-8")    # no lone surrogate anywhere in the answer
    text = json.dumps(prof)
    assert "Traceback" not in text and len(text) < 64 * 1024
    if entry.expect == "wrapped":
        sep = prof["argv"].index("--")
        binds = [(o, a, b) for o, a, b in zip(prof["argv"][:sep], prof["argv"][1:sep], prof["argv"][2:sep])
                 if o in ("--bind", "--ro-bind")]
        assert all(a == b for _o, a, b in binds), binds      # every grant at its resolved host path only


@pytest.mark.parametrize("entry_id", hostile_bwrap.params())
def test_every_face_gives_the_core_decision(corpus, entry_id, tmp_path):
    entry, path, host, inv, bwrap = corpus[entry_id]
    want = outcome(core(path, host, inv, bwrap))
    with Watchdog():
        preview = F.metnos_profile(F.metnos_manifest_source(path), host=host, invocation=inv,
                                   status=bwrap_status(bwrap))
    assert outcome(preview) == want and preview["preview"] is True
    if bwrap is not None:
        return                  # the probe and the audit find bwrap on the service's PATH (the module face: below)
    if want != "wrapped":       # a wrapped profile would start bwrap: run for real by the integration test
        with open(path, "rb") as handle:
            raw = handle.read()
        with Watchdog():
            probe = run.probe_service({"unit": None, "manifest": raw, "invocation": inv, "host": host,
                                       "context": "direct", "timeout": 30}, default_runner)
        errors = [d["code"] for d in probe["diagnostics"] if d["severity"] == "error"]
        assert errors[0] == want and probe["passed"] is False
        json.dumps(probe, ensure_ascii=False).encode("utf-8")
    plain = outcome(core(path, host, {}, bwrap))
    with Watchdog():
        drift = host_audit.profile_drift([manifest.transport(model.FileSource(path))], host, str(tmp_path),
                                         bwrap_status(bwrap))
    assert (drift[0].get("refusal") or drift[0]["decision"]) == plain


@pytest.mark.parametrize("entry_id", hostile_bwrap.params())
def test_module_face_gives_the_core_decision(corpus, entry_id, capsys):
    from test_hostile_corpus import run_module_face
    entry, path, host, inv, bwrap = corpus[entry_id]
    if entry_id == "args_lone_surrogate":
        pytest.skip("in-process, Ansible's own decoding of module arguments refuses a lone surrogate before the "
                    "module runs; through a real play it reaches the module (test_hostile_bwrap_real.py)")
    want = outcome(core(path, host, inv, bwrap))
    args = {"host": host, "discover_python_roots": False, "fail_on_refusal": False, "manifest_file": path,
            "path": os.path.dirname(bwrap) if bwrap else "/usr/sbin:/usr/bin:/sbin:/bin"}
    if inv:
        args["invocation"] = inv
    with Watchdog():
        res = run_module_face(args, capsys)
    json.dumps(res, ensure_ascii=False).encode("utf-8")
    assert "exception" not in res, res.get("exception")
    assert outcome(res) == want
