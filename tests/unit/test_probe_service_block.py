"""The probe handed the audit's service inspection builds no ``service`` block (issue 53, item 4): before, the
probe copied the service's result into its own and the audit popped it (built and thrown away); now the audit's
own ``service`` is the one copy. The inspection is a record as environment.inspect returns it, made by hand:
systemd does not run here (no unit to inspect). Its environment is real: METNOS_SANDBOX=0 and this machine's
PATH, so the runtime's status() (envflags.status, computed for real) is inactive and the probe fails closed
before any bwrap starts, as it would for that service."""
import os

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import envflags
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import run
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import environment


def test_the_probe_handed_an_inspection_builds_no_service_block():
    env = {"PATH": os.environ["PATH"], envflags.ENV_VAR: "0"}
    status = envflags.status(bwrap.which("bwrap", env["PATH"]), env)
    assert status["disabled_via_env"] and not status["active"], status           # the canary: it fails closed
    svc = {"unit": "metnos.service", "user": {"name": "nobody", "uid": 65534, "gid": 65534, "groups": [65534]},
           "status": status, "status_view": "the live process's environment", "diagnostics": []}
    handed = run.Handed(environment.Inspection(svc, env))
    out = run.probe_service({"unit": "metnos.service", "scope": "system", "timeout": 30}, bwrap.bounded_runner(30),
                            inspection=handed)
    assert out["context"] == "not started: the runtime would fail closed" and out["passed"] is False, out
    assert out["status_view"] == "the live process's environment"            # the handed inspection was used
    assert "service" not in out, sorted(out)
