"""Pseudo-filesystems mounted below granted folders, in a private mount namespace (root only).

``run(base, mode)`` starts this file as a script under ``unshare --mount --propagation private``: it
builds a tree in ``base``, mounts a procfs at data/w/proc, the host's cgroup2 hierarchy (a bind of
it: its type stays cgroup2) at data/cg/cgroup and a tmpfs (not a pseudo-filesystem: the control) at
data/t/tmp, and prints JSON. Nothing is mounted outside that namespace; the mounts vanish with it.

- ``faces``: the decision of every case (core, filter preview, audit payload) - the renderer refuses
  a writable grant at, below or above each pseudo-filesystem (scope_pseudo_filesystem; a host-context
  one: host_path_refused), refuses the read grant as unjudged (channel_filesystem_unjudged: the procfs is
  bound along) and renders the tmpfs control;
- ``real``: with the rule mutated away (the mount table's pseudo-filesystems emptied), the writable
  grants rendered and run in real bwrap as root and as nobody: from inside the payload looks at the
  procfs (its type and whether it is writable) and creates a cgroup in a subtree delegated to the
  user; from outside the test looks for that cgroup in the host's hierarchy (then removes it).
"""
import json
import os
import subprocess
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if os.path.join(ROOT, "tests") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "tests"))

from helpers.fake_host import host_dict  # noqa: E402

DIRS = ["runtime", "venv/lib", "executors/ex", "i18n", "integrations", "creds/mail", "dialog", "undo",
        "data/w/proc", "data/cg/cgroup", "data/t/tmp", "data/r"]
CASES = [
    ("proc_below_write", ["fs:write:@T/data/w"], "scope_pseudo_filesystem"),
    ("proc_at_write", ["fs:write:@T/data/w/proc"], "scope_pseudo_filesystem"),
    ("proc_inside_write", ["fs:write:@T/data/w/proc/self"], "scope_pseudo_filesystem"),
    ("cgroup2_below_write", ["fs:write:@T/data/cg"], "scope_pseudo_filesystem"),
    ("above_both_write", ["fs:write:@T/data"], "scope_pseudo_filesystem"),
    ("proc_below_write_within", ["fs:write:arg:p"], "scope_pseudo_filesystem", {"p": {"within": ["@T/data/w/**"]}},
     {"arguments": {"p": "proc"}}),
    ("proc_below_resource", ["metnos:write:wres"], "host_path_refused", None, None,
     {"resources": {"wres": "@T/data/w"}}),
    # a read grant binds the procfs along: not a plain tree, refused as unjudged (issue 50; it was rendered)
    ("proc_below_read_is_unjudged", ["fs:read:@T/data/w"], "channel_filesystem_unjudged"),
    ("tmpfs_below_write_is_fine", ["fs:write:@T/data/t"], "wrapped"),
]
PAYLOAD = r'''
import json, os, sys
spec = json.loads(sys.argv[1])
out = {}
st = os.statvfs(spec["proc"] + "/self")
out["proc_writable"] = not (st.f_flag & os.ST_RDONLY)
out["proc_is_procfs"] = os.path.exists(spec["proc"] + "/self/status")
if spec.get("cgroup"):
    try:
        os.mkdir(spec["cgroup"])
        out["cgroup"] = "created"
    except OSError as exc:
        out["cgroup"] = exc.strerror
sys.stdout.write(json.dumps(out))
'''


def _sub(value, tree):
    return json.loads(json.dumps(value).replace("@T", tree))


def _cgroup2():
    """The host's cgroup2 mount point (/sys/fs/cgroup, or /sys/fs/cgroup/unified in hybrid mode), or None."""
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            fields = line.split()
            if "-" in fields and fields[fields.index("-") + 1] == "cgroup2":
                return fields[4]
    return None


def build(tree):
    for d in DIRS:
        os.makedirs(os.path.join(tree, d), exist_ok=True)
    for dirpath, _dirnames, _files in os.walk(tree):
        os.chmod(dirpath, 0o755)
    subprocess.run(["mount", "-t", "proc", "proc", os.path.join(tree, "data/w/proc")], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", os.path.join(tree, "data/t/tmp")], check=True)
    cgroup = _cgroup2()
    if cgroup:
        subprocess.run(["mount", "--bind", cgroup, os.path.join(tree, "data/cg/cgroup")], check=True)
    return cgroup


def cases(tree):
    out = []
    for case in CASES:
        cid, caps, expect, arguments, invocation, host = tuple(case) + (None,) * (6 - len(case))
        manifest = {"name": "ex", "origin": "t", "capabilities": _sub(caps, tree)}
        if arguments:
            manifest["arguments"] = _sub(arguments, tree)
        host = dict(host_dict(tree, writable_roots=[tree + "/data"]), **_sub(host or {}, tree))
        out.append((cid, manifest, expect, _sub(invocation or {}, tree), host))
    return out


def _use_core():
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import core_path
    core_path.use_core()


ACTIVE = {"bwrap_available": True, "bwrap_path": "/usr/bin/bwrap", "disabled_via_env": False, "active": True}


def faces(base):
    _use_core()
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import host_context, renderer
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile.manifest import transport
    from helpers import faces as repo_files
    tree = os.path.join(base, "tree")
    build(tree)
    filters = repo_files.load("filter_plugins/metnos_sandbox.py", "mfilters")
    out = {}
    for cid, manifest, expect, invocation, host in cases(tree):
        core = renderer.render_safe(manifest, host_context.HostContext(host), invocation, ACTIVE)
        preview = filters.metnos_profile(manifest, host=host, invocation=invocation, status=ACTIVE)
        got = {"expect": expect, "core": core["refusal"] or core["decision"],
               "filter": preview["refusal"] or preview["decision"]}
        if not invocation:
            drift = host_audit.profile_drift([transport(json.dumps(manifest))], host, "/nonexistent",
                                             ACTIVE)
            got["audit"] = drift[0].get("refusal") or drift[0]["decision"]
        out[cid] = got
    sys.stdout.write(json.dumps(out))


def real(base):
    """The writable grants with the rule mutated away, run as root and as nobody."""
    _use_core()
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import (
        granters,
        host_context,
        mounts,
        renderer,
    )
    from helpers import trees
    tree = os.path.join(base, "tree")
    cgroup = build(tree)
    own = "metnos-i19-%s" % uuid.uuid4().hex[:8]       # a subtree delegated to the payload's user
    host = host_dict(tree, writable_roots=[tree + "/data"])
    manifest = {"name": "ex", "origin": "t",
                "capabilities": ["fs:write:%s/data/w" % tree, "fs:write:%s/data/cg" % tree]}
    out = {"refused": renderer.render_safe(manifest, host_context.HostContext(host), {}, ACTIVE)["refusal"],
           "cgroup2": cgroup}
    mounts.MountTable.pseudo_related = lambda self, path: None          # the mutation
    granters.Render.allowed = lambda self, path, kind, what: True      # and the channel search's (issue 50)
    weak = renderer.render_safe(manifest, host_context.HostContext(host), {}, ACTIVE)
    out["mutated"] = weak["refusal"] or weak["decision"]
    for user in ("root", "nobody"):
        spec = {"proc": tree + "/data/w/proc"}
        made = None
        if cgroup:
            made = os.path.join(cgroup, "%s-%s" % (own, user))
            os.mkdir(made)
            if user == "nobody":
                os.chown(made, 65534, 65534)
            spec["cgroup"] = os.path.join(tree, "data/cg/cgroup", os.path.basename(made), "child")
        try:
            inside = trees.run_inside(weak["argv"], PAYLOAD, spec, None if user == "root" else "nobody",
                                      descriptors=weak["descriptors"])
            inside["host_sees_cgroup"] = bool(made) and os.path.isdir(os.path.join(made, "child"))
        finally:
            if made:
                if os.path.isdir(os.path.join(made, "child")):
                    os.rmdir(os.path.join(made, "child"))
                os.rmdir(made)
        out[user] = inside
    sys.stdout.write(json.dumps(out))


def run(base, mode):
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, os.path.abspath(__file__),
                           mode, base], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


if __name__ == "__main__":
    {"faces": faces, "real": real}[sys.argv[1]](sys.argv[2])
