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
    packages = shipped.pop(action.PACKAGES)
    core = os.path.join(ROOT, "module_utils", "metnos_sandbox")
    on_disk = []
    for base, dirs, names in os.walk(core):       # every source on disk, not the core's own listing
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(base, core)
        on_disk += [os.path.normpath(os.path.join(rel, n)) for n in names if n.endswith(".py")]
    want = sorted(".".join(["metnos_sandbox"] + [p for p in n[:-3].split("/") if p != "__init__"]) for n in on_disk)
    assert sorted(shipped) == sorted(n for n in want if n not in action.CONTROLLER_ONLY)
    assert sorted(packages) == sorted(n for n in want if n == "metnos_sandbox" or
                                      os.path.isdir(os.path.join(core, *n.split(".")[1:])))
    for name, source in shipped.items():
        package = name if name in packages else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                if node.module:
                    needed = [base + "." + node.module]
                else:
                    needed = [base + "." + a.name for a in node.names]
                for mod in needed:
                    assert mod in shipped, (name, mod)


def test_the_bootstrap_imports_every_shipped_module_by_its_package(tmp_path):
    """The bootstrap's own loader, run by the host's interpreter without Ansible (python3 -I, nothing on
    sys.path but the standard library), imports every module it is given: the core's packages are packages
    (their modules import relatively from one another), and nothing is read from disk."""
    import subprocess
    action = _action()
    loader = action.BOOTSTRAP.split("from metnos_sandbox.audit import audit")[0]
    script = loader + "import importlib\nfor name in sorted(src):\n    importlib.import_module(name)\n" \
                      "print(len(src))\n"
    stdin = b'{"unit": ""}\n' + action.payload()
    proc = subprocess.run(["/usr/bin/python3", "-I", "-c", script], input=stdin, capture_output=True,
                          cwd=str(tmp_path), timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    shipped = json.loads(zlib.decompress(action.payload()).decode("utf-8"))
    assert int(proc.stdout) == len(shipped) - 1      # every module but the list of packages
