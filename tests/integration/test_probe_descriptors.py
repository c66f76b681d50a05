"""The probe runs profiles whose sources are bound by descriptor: its one hook (probe._descriptor_launcher)
puts bwrap behind the launcher (descriptors.py), which opens them race-free as the user the probe runs
as, and the probe's own checks then hold - the mounts are the declared host folders, read-only and
writable as declared - directly as nobody and as root, and through sandbox_probe (the module). The
transient-unit run (the launcher inside the unit) is in tests/system/test_probe_systemd.py."""
import os
import shutil
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import run
from conftest import run_module
from helpers.fake_host import host_dict


@pytest.fixture(scope="module")
def tree():
    base = tempfile.mkdtemp(prefix="metnos-pd-", dir="/var/tmp")
    os.chmod(base, 0o755)
    for rel in ("executors/ex", "data/notes", "data/w"):
        os.makedirs(os.path.join(base, rel))
    for rel in ("data", "data/notes", "data/w"):
        os.chmod(os.path.join(base, rel), 0o777)          # written by others: the sources can move
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _params(base, user):
    manifest = {"name": "ex", "origin": "t", "capabilities": ["fs:read:%s/data/notes" % base,
                                                             "fs:write:%s/data/w" % base]}
    return {"unit": None, "manifest": manifest, "host": host_dict(base, writable_roots=[base + "/data"]),
            "context": "direct", "timeout": 60, "probe_user": user}


@pytest.mark.parametrize("user", ["nobody", "root"])
@pytest.mark.rule("R-DIAG-3")
def test_the_probe_proves_a_profile_with_descriptor_binds(tree, user):
    out = run.probe_service(_params(tree, user), bwrap.default_runner)
    argv = out["profile"]["argv"]
    assert "--ro-bind-fd" in argv and "--bind-fd" in argv, argv
    failed = [c for c in out["checks"] if not c.get("ok")]
    if user == "root":   # the binds hold as declared, but root is no boundary (issue 40): the probe fails for that
        assert not failed and not out["passed"], failed
        assert [d["code"] for d in out["diagnostics"]] == ["probe_root_not_contained"], out["diagnostics"]
    else:
        assert out["passed"], failed or out["diagnostics"]
    names = dict((c["name"], c) for c in out["checks"])
    for check in ("writable:%s/data/w" % tree, "read_only:%s/data/notes" % tree, "bind_source:%s/data/w" % tree,
                  "bind_source:%s/data/notes" % tree, "no_leaked_descriptors"):
        assert names[check]["ok"], names.get(check)


@pytest.mark.rule("R-DIAG-3")
def test_sandbox_probe_module_runs_descriptor_binds(tree):
    params = _params(tree, "nobody")
    res = run_module("metnos.sandbox.sandbox_probe",
                     {"host": params["host"], "manifest": params["manifest"], "context": "direct"})
    assert res.get("passed") is True and "--bind-fd" in res["profile"]["argv"], res.get("diagnostics")
