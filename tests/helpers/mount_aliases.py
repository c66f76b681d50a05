"""A host tree with bind mounts (the same folder under two paths, which realpath cannot see), and
hostile manifests against it. Bind mounts need a private mount namespace: ``run(base)`` starts this
file as a script under ``unshare --mount --propagation private`` (root only), which builds the tree
in ``base``, mounts, renders every case through every in-process face and prints the decisions
as JSON. Nothing is mounted outside that namespace; the mounts vanish with the process.

The layout is what an admin plausibly has: the Metnos install on a data disk bind-mounted at the
configured path (fstab ``/data/metnos /srv/metnos none bind``), a backup or container volume that
is /etc or a part of it, a folder holding a bind of /, /proc or /run.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if os.path.join(ROOT, "tests") not in sys.path:        # also run as a script (run() below)
    sys.path.insert(0, os.path.join(ROOT, "tests"))

from helpers import faces as repo_files  # noqa: E402
from helpers import trees  # noqa: E402
from helpers.fake_host import host_dict  # noqa: E402

DIRS = ["data/metnos/runtime", "data/metnos/venv", "data/metnos/executors/ex", "data/metnos/executors/other",
        "data/metnos/integrations/cal", "data/metnos/i18n", "data/other", "srv/metnos", "etcalias", "subssh",
        "holder/x", "hostroot", "hr/root", "procalias", "runalias", "box/rt", "box2/ex", "data/plugins", "data/excode",
        "data/metnos/runtime/plugins"]
FILES = {"data/metnos/executors/ex/main.py": "print('ex')\n", "data/metnos/executors/other/main.py": "x\n",
         "data/metnos/runtime/metnos.py": "# runtime\n", "data/excode/main.py": "other's code\n"}
# bind source (absolute, or relative to the tree) -> mount point (relative to the tree)
BINDS = [("data/metnos", "srv/metnos"), ("/etc", "etcalias"), ("/etc/ssh", "subssh"), ("/etc", "holder/x"),
         ("/", "hostroot"), ("/", "hr/root"), ("/proc", "procalias"), ("/run", "runalias"),
         ("data/metnos/runtime", "box/rt"), ("data/metnos/executors", "box2/ex"),
         # a folder mounted *inside* a protected tree (a plugins folder kept on the data disk and bound into the
         # runtime; another executor's code kept elsewhere and bound into the executors' folder, on its data-disk
         # side): writing or reading that folder where it is kept reaches inside the tree
         ("data/plugins", "srv/metnos/runtime/plugins"), ("data/excode", "data/metnos/executors/other")]

# (id, capabilities, expected code or "wrapped", invocation, arguments, host overrides)
CASES = [
    ("runtime_via_data_disk", ["fs:write:@T/data/metnos/runtime"], "scope_mount_alias"),
    ("runtime_file_via_data_disk", ["fs:write:@T/data/metnos/runtime/metnos.py"], "scope_mount_alias"),
    ("install_via_data_disk", ["fs:write:@T/data/metnos"], "scope_mount_alias"),
    ("venv_via_data_disk", ["fs:write:@T/data/metnos/venv/**"], "scope_mount_alias"),
    ("i18n_via_data_disk", ["fs:write:@T/data/metnos/i18n"], "scope_mount_alias"),
    ("executors_via_data_disk", ["fs:read:@T/data/metnos/executors"], "scope_mount_alias"),
    ("sibling_via_data_disk", ["fs:read:@T/data/metnos/executors/other/main.py"], "scope_mount_alias"),
    ("integrations_via_data_disk", ["fs:write:@T/data/metnos/integrations/cal"], "scope_mount_alias"),
    ("etc_alias_write", ["fs:write:@T/etcalias"], "scope_mount_alias"),
    ("etc_alias_below_write", ["fs:write:@T/etcalias/ssh"], "scope_mount_alias"),
    ("etc_part_write", ["fs:write:@T/subssh"], "scope_mount_alias"),
    ("etc_submount_above_write", ["fs:write:@T/holder"], "scope_mount_alias"),
    ("runtime_submount_above_write", ["fs:write:@T/box"], "scope_mount_alias"),
    ("executors_submount_above_read", ["fs:read:@T/box2"], "scope_mount_alias"),
    ("host_root_alias_read", ["fs:read:@T/hostroot"], "scope_mount_alias"),
    ("folder_mounted_in_runtime_write", ["fs:write:@T/data/plugins"], "scope_mount_alias"),
    ("folder_mounted_in_runtime_file_write", ["fs:write:@T/data/plugins/evil.py"], "scope_mount_alias"),
    ("folder_mounted_in_executors_write", ["fs:write:@T/data/excode"], "scope_mount_alias"),
    ("folder_mounted_in_executors_read", ["fs:read:@T/data/excode/main.py"], "scope_mount_alias"),
    ("host_root_submount_read", ["fs:read:@T/hr"], "scope_mount_alias"),
    ("proc_alias_read", ["fs:read:@T/procalias/self"], "scope_mount_alias"),
    ("run_alias_read", ["fs:read:@T/runalias/lock"], "scope_mount_alias"),
    ("arg_value_into_alias", ["fs:write:arg:p"], "scope_mount_alias", {"arguments": {"p": "runtime"}},
     {"p": {"within": ["@T/data/metnos/**"]}}),
    ("symlink_to_alias", ["fs:write:@T/data/link_rt"], "scope_symlink_refused"),
    ("resource_via_data_disk", ["metnos:write:rt"], "host_path_refused", None, None,
     {"resources": {"rt": "@T/data/metnos/runtime"}}),
    ("base_path_via_data_disk", [], "host_path_refused", None, None, {"lexicon_dbs": ["@T/data/metnos/executors"]}),
    # no false positives: the install through its configured path, an unrelated folder, /etc read-only
    ("own_folder_and_other_data", ["fs:write:@T/data/other", "provider:access:cal"], "wrapped"),
    ("etc_alias_read", ["fs:read:@T/etcalias"], "wrapped"),
]
LINKS = {"data/link_rt": "@T/data/metnos/runtime"}


def host_for(tree):
    m = tree + "/srv/metnos"
    return host_dict(m, python_package_roots=[m + "/venv"], mail_credentials_dir=m + "/creds", writable_roots=[tree])


def _sub(value, tree):
    return json.loads(json.dumps(value).replace("@T", tree))


def build(tree):
    trees.write_tree(tree, DIRS, FILES)
    for rel, target in LINKS.items():
        os.symlink(target.replace("@T", tree), os.path.join(tree, rel))
    for src, point in BINDS:
        subprocess.run(["mount", "--bind", src if src.startswith("/") else os.path.join(tree, src),
                        os.path.join(tree, point)], check=True)


def cases(tree):
    out = []
    for case in CASES:
        case = tuple(case) + (None,) * (6 - len(case))
        cid, caps, expect, invocation, arguments, host = case
        manifest = {"name": "ex", "origin": "t", "capabilities": _sub(caps, tree)}
        if arguments:
            manifest["arguments"] = _sub(arguments, tree)
        host = dict(host_for(tree), **_sub(host or {}, tree))
        out.append((cid, manifest, expect, _sub(invocation or {}, tree), host))
    return out


def _use_core():
    """The core under its one import name (the collection's) in this script's own process."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import core_path
    core_path.use_core()


def faces(manifest, host, invocation):
    """The decision of every in-process face (core, filter preview, probe, audit payload)."""

    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe.run import probe_service
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import host_context, renderer
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile.manifest import transport
    active = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}
    core = renderer.render_safe(manifest, host_context.HostContext(host), invocation, active)
    out = {"core": [core["decision"], core["refusal"]], "argv": core["argv"],
           "messages": [d["message"] for d in core["diagnostics"] if d["severity"] == "error"]}
    filters = repo_files.load("filter_plugins/metnos_sandbox.py", "mfilters")
    preview = filters.metnos_profile(manifest, host=host, invocation=invocation, status=active)
    out["filter"] = [preview["decision"], preview["refusal"]]
    if core["decision"] == "refused":       # the probe would start bwrap for a wrapped profile
        probe = probe_service({"unit": None, "manifest": json.dumps(manifest), "invocation": invocation,
                               "host": host, "context": "direct", "timeout": 30}, bwrap.default_runner)
        errors = [d["code"] for d in probe["diagnostics"] if d["severity"] == "error"]
        out["probe"] = [probe["profile"]["decision"], errors[0] if errors else None]
    if not invocation:
        drift = host_audit.profile_drift([transport(json.dumps(manifest))], host, "/nonexistent", active)
        out["audit"] = [drift[0]["decision"], drift[0].get("refusal")]
    return out


# A bind through an alias, inserted in a rendered argv, with a manifest that declares it (so that
# only the alias rules can catch it): capability, bind.
WEAKENINGS = {"etc_alias": ("fs:write:@T/etcalias", ("--bind", "@T/etcalias", "@T/etcalias")),
              "runtime_alias": ("fs:write:@T/data/metnos/runtime",
                                ("--bind", "@T/data/metnos/runtime", "@T/data/metnos/runtime")),
              "executors_alias": ("fs:read:@T/data/metnos/executors",
                                  ("--ro-bind", "@T/data/metnos/executors", "@T/data/metnos/executors")),
              "submount_above_etc": ("fs:write:@T/holder", ("--bind", "@T/holder", "@T/holder")),
              "host_root_alias": ("fs:read:@T/hostroot", ("--ro-bind", "@T/hostroot", "@T/hostroot")),
              "folder_mounted_in_runtime": ("fs:write:@T/data/plugins",
                                            ("--bind", "@T/data/plugins", "@T/data/plugins"))}


def final_check(tree, argv):
    """The core's final check on a rendered argv with one alias bind inserted: its violations other
    than mount order (the inserted bind is not at its canonical place)."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import host_context, invariants
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile.manifest import from_dict
    _cid, manifest, _expect, invocation, host = [c for c in cases(tree) if c[0] == "own_folder_and_other_data"][0]
    ctx = host_context.HostContext(host)
    own = os.path.join(host["executors_dir"], "ex")
    out = {"unchanged": invariants.check_invariants(argv, from_dict(manifest), ctx, invocation, own)}
    for name, (cap, items) in WEAKENINGS.items():
        at = argv.index("--chdir")
        weak = argv[:at] + _sub(list(items), tree) + argv[at:]
        declared = dict(manifest, capabilities=manifest["capabilities"] + [_sub(cap, tree)])
        found = invariants.check_invariants(weak, from_dict(declared), ctx, invocation, own)
        out[name] = [v for v in found if "(d)" not in v]
    return out


def main(base):
    _use_core()
    tree = os.path.join(base, "tree")
    os.makedirs(tree)
    build(tree)
    results = {"tree": tree}
    for cid, manifest, expect, invocation, host in cases(tree):
        results[cid] = dict(faces(manifest, host, invocation), expect=expect)
    results["final_check"] = final_check(tree, results["own_folder_and_other_data"]["argv"])
    sys.stdout.write(json.dumps(results))


WRITER = r'''
import json, os, sys
out = {}
for path in sys.argv[1:]:
    try:
        with open(path, "w") as handle:
            handle.write("x")
        out[path] = "written"
    except OSError as exc:
        out[path] = exc.strerror
sys.stdout.write(json.dumps(out))
'''


def real(base):
    """In real bwrap, as root and as nobody: the runtime (R-BASE-4, read-only) reached through the
    data disk's path. The renderer's decision, then the same manifest rendered with the mount table
    mutated away (an empty table: no alias known), run with a payload that writes through both paths;
    what landed in the runtime is looked up outside the sandbox."""
    import uuid
    _use_core()
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
        host_context,
        mounts,
        renderer,
    )
    tree = os.path.join(base, "tree")
    os.makedirs(tree)
    build(tree)
    os.chmod(os.path.join(tree, "data/metnos/runtime"), 0o777)         # the service user's own install
    active = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}
    manifest = {"name": "ex", "origin": "t", "capabilities": ["fs:write:%s/data/metnos/runtime" % tree]}
    results = {"decision": renderer.render_safe(manifest, host_context.HostContext(host_for(tree)), {},
                                                active)["refusal"]}
    mounts.MountTable.read = classmethod(lambda cls, *a, **k: cls())               # the mutation
    weak = renderer.render_safe(manifest, host_context.HostContext(host_for(tree)), {}, active)
    results["mutated"] = weak["decision"]
    argv = weak["argv"][:weak["argv"].index("--") + 1]
    for user in ("root", "nobody"):
        name = "landed-%s-%s" % (user, uuid.uuid4().hex[:8])
        paths = [os.path.join(tree, "data/metnos/runtime", name), os.path.join(tree, "srv/metnos/runtime", name + "b")]
        prefix = [] if user == "root" else ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        proc = subprocess.run(prefix + argv + ["/usr/bin/python3", "-c", WRITER] + paths, capture_output=True,
                              text=True, timeout=60)
        inside = json.loads(proc.stdout) if proc.returncode == 0 else {"error": proc.stderr[-500:]}
        results[user] = {"inside": [inside.get(p) for p in paths],
                         "in_runtime": os.path.exists(os.path.join(tree, "srv/metnos/runtime", name))}
    sys.stdout.write(json.dumps(results))


READER = r'''
import sys
try:
    with open(sys.argv[1]) as handle:
        sys.stdout.write(handle.read())
except OSError as exc:
    sys.stdout.write("error: " + exc.strerror)
'''


def reserved_in_system(base):
    """In real bwrap, as root and as nobody: a mail credential store configured inside /etc (here a
    tmpfs on /etc/opt in this private namespace: the host's /etc is not touched). The renderer's
    decision for a manifest without mail:read, then the same with the check mutated away (no
    reserved tree known), run with a payload that reads a credential file."""
    _use_core()
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
        host_context,
        host_layout,
        renderer,
    )
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/etc/opt"], check=True)
    os.makedirs("/etc/opt/metnos/mail")
    with open("/etc/opt/metnos/mail/work.json", "w") as handle:
        handle.write("oauth-refresh-token")
    os.chmod("/etc/opt/metnos/mail/work.json", 0o644)
    active = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}
    host = {"mail_credentials_dir": "/etc/opt/metnos/mail", "python_executable": "/usr/bin/python3"}
    manifest = {"name": "ex", "origin": "t", "capabilities": ["net:http"]}
    results = {"decision": renderer.render_safe(manifest, host_context.HostContext(host), {}, active)["refusal"]}
    host_layout.RESERVED_KEYS = ()                                                          # the mutation
    weak = renderer.render_safe(manifest, host_context.HostContext(host), {}, active)
    results["mutated"] = weak["decision"]
    argv = weak["argv"][:weak["argv"].index("--") + 1]
    for user in ("root", "nobody"):
        prefix = [] if user == "root" else ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        proc = subprocess.run(prefix + argv + ["/usr/bin/python3", "-c", READER, "/etc/opt/metnos/mail/work.json"],
                              capture_output=True, text=True, timeout=60)
        results[user] = proc.stdout if proc.returncode == 0 else "bwrap failed: " + proc.stderr[-300:]
    sys.stdout.write(json.dumps(results))


def run(base, python=sys.executable, mode="faces"):
    """Run main(base) (mode faces), real(base) or reserved_in_system(base) in a private mount
    namespace; returns the decoded results."""
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", python, os.path.abspath(__file__), mode,
                           base], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


if __name__ == "__main__":
    {"real": real, "reserved": reserved_in_system, "faces": main}[sys.argv[1]](sys.argv[2])
