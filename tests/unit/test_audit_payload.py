"""The metnos_audit action's payload (action_plugins/metnos_audit.py): the core minus the documented
controller-only modules, small enough to travel as one argument over connections without
pipelining (podman, docker) so that the audit writes nothing on the host (no remote temp dir:
tests/system/test_audit_fleet.py checks the hosts stay byte-identical), and self-contained: every
module a shipped module imports is shipped."""
import ast
import importlib.util
import json
import os
import sys
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _action():
    sys.path.insert(0, os.path.join(ROOT, "module_utils"))
    spec = importlib.util.spec_from_file_location("metnos_audit_action",
                                                  os.path.join(ROOT, "action_plugins", "metnos_audit.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_payload_travels_as_one_argument():
    action = _action()
    # the largest task arguments of the corpus-sized audits stay far below the margin left here
    assert len(action.payload("base64")) < action.MAX_ARG - 8000, len(action.payload("base64"))


def test_payload_is_the_core_minus_the_controller_only_modules_and_self_contained():
    action = _action()
    shipped = json.loads(zlib.decompress(action.payload()).decode("utf-8"))
    on_disk = sorted(n[:-3] for n in os.listdir(os.path.join(ROOT, "module_utils", "metnos_sandbox"))
                     if n.endswith(".py"))
    want = sorted("metnos_sandbox" if n == "__init__" else "metnos_sandbox." + n for n in on_disk
                  if n not in action.CONTROLLER_ONLY)
    assert sorted(shipped) == want
    for name, source in shipped.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                needed = [node.module] if node.module else [a.name for a in node.names]
                for mod in needed:
                    assert "metnos_sandbox." + mod.split(".")[0] in shipped, (name, mod)
