"""The metnos_audit action's payload (action_plugins/metnos_audit.py): the core minus the documented
controller-only modules, travelling as arguments of one command over connections without
pipelining (podman, docker) so that the audit writes nothing on the host (no remote temp dir:
tests/system/test_audit_fleet.py checks the hosts stay byte-identical), and self-contained: every
module a shipped module imports is shipped."""
import ast
import json
import os
import zlib

from helpers import faces

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _action():
    return faces.load("action_plugins/metnos_audit.py", "metnos_audit_action")


def test_payload_travels_as_arguments_of_one_command():
    """Over podman/docker the payload goes as arguments of one shell-less command: every argument
    stays under Linux's MAX_ARG_STRLEN (128 KiB) and the whole far under ARG_MAX, so nothing is
    written on the host."""
    import shlex
    import types
    action = _action()
    blob = action.payload("base64")
    fake = types.SimpleNamespace(_play_context=types.SimpleNamespace(become=False))
    command = action.ActionModule._argv_chunks(fake, "/usr/bin/python3", json.dumps({"unit": "metnos.service"}))
    assert command is not None, len(blob)
    argv = shlex.split(command)
    assert "".join(argv[4:]).encode("ascii") == blob
    assert max(len(a.encode("utf-8")) for a in argv) < 128 * 1024
    assert len(command) < 1024 * 1024, len(command)


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
