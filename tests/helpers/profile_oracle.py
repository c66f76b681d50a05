"""An oracle for rendered profiles, written apart from the renderer, and hypothesis strategies
that generate both manifests and host trees full of symlinks.

``violations(argv, case)`` checks invariants (a)-(c) of docs/profile-invariants.md on a rendered
argv from what the manifest, the invocation and the tree *declare* (resolved with
os.path.realpath here, not by the renderer); (d) is checked by the callers (render twice, and with
the capabilities in another order).
"""
import os
import shutil

from hypothesis import strategies as st

from helpers.fake_host import host_dict

SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc", "/boot", "/sys",
                "/proc", "/dev", "/var/lib/python3")
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc", "/var/lib/python3", "/sys")
BROAD = ("/", "/opt", "/home", "/root", "/var", "/var/lib", "/run", "/srv", "/mnt", "/media", "/tmp", "/usr/local",
         "/boot", "/lost+found")
ARITY = {"--unshare-user": 0, "--unshare-ipc": 0, "--unshare-uts": 0, "--unshare-net": 0, "--die-with-parent": 0,
         "--ro-bind": 2, "--bind": 2, "--ro-bind-fd": 2, "--bind-fd": 2, "--symlink": 2, "--proc": 1, "--dev": 1,
         "--tmpfs": 1, "--chdir": 1}

SKELETON = ["runtime", "venv/lib", "executors/ex", "executors/other", "i18n", "integrations/p1", "creds/mail",
            "dialog/alice", "undo/t1", "data/a/b", "data/c", "data/w", "res/sheets", "idx/docs", "out"]
SKELETON_FILES = ["creds/mail/work.json", "creds/mail/bob.json", "creds/mail/bob.old.json", "data/a/f.txt",
                  "out/secret", "executors/ex/main.py"]
# Where a symlink may be planted, and where it may point (ROOT = the tree).
PLACES = ["data/l1", "data/a/l2", "data/w/l3", "data/l4", "integrations/p2", "dialog/bob", "undo/t2", "res/r2",
          "executors/ex2", "creds/mail/x.json", "idx/i2"]
TARGETS = ["/", "/etc", "/usr", "/var/run", "/run", "/lib", "/proc/self", "/dev", "/home", "/root", "/tmp",
           "/etc/metnos-no-such", "ROOT/runtime", "ROOT/venv", "ROOT/venv/lib", "ROOT/executors", "ROOT/executors/ex",
           "ROOT/executors/other", "ROOT/i18n", "ROOT/creds/mail", "ROOT/creds/mail/work.json", "ROOT/integrations",
           "ROOT/integrations/p1", "ROOT/dialog/alice", "ROOT/undo/t1", "ROOT/data", "ROOT/data/a", "ROOT/data/w",
           "ROOT/out", "ROOT", "..", ".", "ROOT/data/l1", "ROOT/res/sheets"]
RELS = ["", "data", "data/a", "data/a/b", "data/c", "data/w", "out", "runtime", "venv", "executors", "executors/ex",
        "executors/other", "i18n", "creds", "creds/mail", "integrations", "dialog", "undo"] + PLACES + \
    ["data/a", "data/a/b", "data/c", "data/w", "out", "data/w", "data/c"]      # more of the grantable ones
VALUES = ["b", "f.txt", "l2", "l2/x", "../c", "../../out", "/etc", "..", "a/b", "w/l3", "l1", "l4", "", "a\nb",
          "ROOT/data/a/b", "ROOT/out/secret", "ROOT/data/l1/passwd", "~/x", "nope"]


def host_for(root):
    return host_dict(root, resources={"sheets": root + "/res/sheets", "r2": root + "/res/r2"},
                     indexes={"docs": root + "/idx/docs", "i2": root + "/idx/i2"})


@st.composite
def cases(draw):
    """(links, manifest-with-ROOT, invocation-with-ROOT): a tree variant and a manifest for it."""
    links = draw(st.dictionaries(st.sampled_from(PLACES), st.sampled_from(TARGETS), max_size=5))
    fixed = st.builds(lambda mode, rel, glob: "fs:%s:ROOT%s%s" % (mode, "/" + rel if rel else "", glob),
                      st.sampled_from(["read", "write"]), st.sampled_from(RELS), st.sampled_from(["", "/**"]))
    simple = st.sampled_from(["net:http", "provider:access:p1", "provider:access:p2", "skill:p2", "mail:read:work",
                              "mail:read:bob", "mail:read:x", "metnos:read:sheets", "metnos:write:sheets",
                              "metnos:write:r2", "metnos:read:r2", "index:read:docs", "index:read:i2",
                              "dialog.user_input", "system:read:network_interfaces", "fs:read:arg:p",
                              "fs:write:arg:p"])
    caps = draw(st.lists(st.one_of(fixed, simple), max_size=6, unique=True))
    within = draw(st.sampled_from(["data/a", "data", "data/w", "out", "data/l1", "data/w/l3"]))
    manifest = {"name": "ex", "origin": "hypothesis", "capabilities": caps,
                "arguments": {"p": {"within": ["ROOT/%s/**" % within]}}}
    if draw(st.booleans()):
        manifest["inverse"] = {"model": "restore_content"}
    invocation = {"sender": draw(st.sampled_from(["alice", "bob"])), "turn_id": draw(st.sampled_from(["t1", "t2"]))}
    if draw(st.booleans()):
        invocation["arguments"] = {"p": draw(st.sampled_from(VALUES))}
    return links, manifest, invocation


def _sub(value, root):
    if isinstance(value, str):
        return value.replace("ROOT", root)
    if isinstance(value, list):
        return [_sub(v, root) for v in value]
    if isinstance(value, dict):
        return dict((k, _sub(v, root)) for k, v in value.items())
    return value


def build(base, links, manifest, invocation, mode=0o755):
    """Create the tree in a fresh folder below ``base``; return (root, host, manifest, invocation)."""
    import tempfile
    root = tempfile.mkdtemp(prefix="t", dir=base)
    os.chmod(root, mode)
    for d in SKELETON:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for f in SKELETON_FILES:
        with open(os.path.join(root, f), "w") as handle:
            handle.write("x")
    for place, target in sorted(links.items()):
        path = os.path.join(root, place)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.lexists(path):
            os.symlink(target.replace("ROOT", root), path)
    if mode != 0o755:
        for dirpath, dirnames, _files in os.walk(root):
            for d in dirnames:
                if not os.path.islink(os.path.join(dirpath, d)):
                    os.chmod(os.path.join(dirpath, d), mode)
    return root, host_for(root), _sub(manifest, root), _sub(invocation, root)


def remove(root):
    shutil.rmtree(root, ignore_errors=True)


def under(path, root):
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def related(a, b):
    return under(a, b) or under(b, a)


def _glob_root(scope):
    keep = []
    for part in scope.split("/")[1:]:
        if any(c in part for c in "*?[{"):
            break
        keep.append(part)
    return ("/" + "/".join(keep)).rstrip("/") or "/"


def declared_writable(manifest, invocation, host):
    """Resolved roots the manifest + invocation declare writable (whatever the renderer decides)."""
    out = []
    for cap in manifest["capabilities"]:
        if cap.startswith("fs:write:arg:"):
            out += [os.path.realpath(_glob_root(w)) for w in manifest["arguments"]["p"]["within"]]
        elif cap.startswith("fs:write:"):
            out.append(os.path.realpath(_glob_root(cap[len("fs:write:"):])))
        elif cap.startswith("metnos:write:") or cap.startswith("metnos:create:"):
            res = host["resources"].get(cap.split(":", 2)[2])
            if res:
                out.append(os.path.realpath(res))
        elif cap.startswith("provider:access:") or cap.startswith("skill:"):
            out.append(os.path.realpath(os.path.join(host["integrations_dir"], cap.rsplit(":", 1)[1])))
        elif cap == "dialog.user_input" and invocation.get("sender"):
            out.append(os.path.realpath(os.path.join(host["dialog_dir"], invocation["sender"])))
    if manifest.get("inverse") and invocation.get("turn_id"):
        out.append(os.path.realpath(os.path.join(host["undo_root"], invocation["turn_id"])))
    return out


def admin_grants(manifest, invocation, host):
    """The writable folders the admin's host context names (not bound by the writable roots): resources,
    integrations, the sender's dialog folder, the turn's undo folder."""
    out = []
    for cap in manifest["capabilities"]:
        if cap.startswith(("metnos:write:", "metnos:create:")):
            res = host["resources"].get(cap.split(":", 2)[2])
            out += [os.path.realpath(res)] if res else []
        elif cap.startswith(("provider:access:", "skill:")):
            out.append(os.path.realpath(os.path.join(host["integrations_dir"], cap.rsplit(":", 1)[1])))
        elif cap == "dialog.user_input" and invocation.get("sender"):
            out.append(os.path.realpath(os.path.join(host["dialog_dir"], invocation["sender"])))
    if manifest.get("inverse") and invocation.get("turn_id"):
        out.append(os.path.realpath(os.path.join(host["undo_root"], invocation["turn_id"])))
    return out


def protected(host, name="ex"):
    """Read-only base trees (R-BASE-1/4/5), as written and resolved."""
    trees = list(SYSTEM_TREES) + [host["runtime_dir"], host["python_prefix"], host["executors_dir"],
                                  os.path.join(host["executors_dir"], name)]
    trees += host["python_package_roots"] + host["i18n_dbs"] + host["lexicon_dbs"]
    return sorted(set(trees + [os.path.realpath(t) for t in trees]))


def needs_network(manifest):
    return any(c.split(":")[0] in ("net", "network", "provider", "skill", "mail")
               or c == "system:read:network_interfaces" for c in manifest["capabilities"])


def parse(argv):
    """bwrap argv -> (flags, [(option, params)]); raises AssertionError on anything unknown."""
    sep = argv.index("--")
    opts, i, flags, mounts = argv[1:sep], 0, [], []
    while i < len(opts):
        opt = opts[i]
        assert opt in ARITY, "unknown option %r" % opt
        params = opts[i + 1:i + 1 + ARITY[opt]]
        assert len(params) == ARITY[opt], opt
        i += 1 + ARITY[opt]
        (flags if ARITY[opt] == 0 else mounts).append(opt if ARITY[opt] == 0 else (opt, params))
    return flags, mounts


def movable(path):
    """A folder on the way from / to ``path`` in which someone other than root can replace the next entry
    (not root's, or group/world-writable, unless root's, sticky and the entry root's), or None."""
    current = "/"
    for part in [p for p in path.split("/") if p]:
        entry = os.path.join(current, part)
        folder, info = os.lstat(current), os.lstat(entry)
        writable = folder.st_uid != 0 or folder.st_mode & 0o022
        if writable and not (folder.st_mode & 0o1000 and folder.st_uid == 0 and info.st_uid == 0):
            return current
        current = entry
    return None


def _stability(opt, params, descriptors):
    """(e) a bind is at its resolved source; one whose way can be changed by others is by descriptor, and
    that descriptor names the very object on the host. Returns (option as a path bind, src, dest, problems)."""
    out = []
    if opt in ("--ro-bind-fd", "--bind-fd"):
        number, dest = params
        want = [d for d in descriptors if str(d["fd"]) == number]
        info = os.lstat(dest) if os.path.lexists(dest) else None
        if not want or info is None or (want[0]["dev"], want[0]["ino"]) != (info.st_dev, info.st_ino):
            out.append("(e) %s %s %s is not the descriptor of the object judged" % (opt, number, dest))
        return opt[:-3], dest, dest, out
    src, dest = params
    if src != dest or os.path.realpath(src) != src:
        out.append("(e) %s %s %s is not mounted at its resolved source" % (opt, src, dest))
    elif movable(src):
        out.append("(e) %s %s can be moved (%s) and is not bound by descriptor" % (opt, src, movable(src)))
    return opt, src, dest, out


def violations(argv, manifest, invocation, host, descriptors=()):
    """Invariants (a)-(c) and (e) on a rendered argv; [] when they hold."""
    out = []
    try:
        flags, mounts = parse(argv)
    except AssertionError as exc:
        return ["(c) %s" % exc]
    want = ["--unshare-user", "--unshare-ipc", "--unshare-uts"] + ([] if needs_network(manifest) else
                                                                   ["--unshare-net"]) + ["--die-with-parent"]
    if flags != want:
        out.append("(c) flags %s != %s" % (flags, want))
    writable = declared_writable(manifest, invocation, host)
    trees = protected(host, manifest["name"])
    singles = {}
    for opt, params in mounts:
        if opt in ("--proc", "--dev", "--tmpfs"):
            expected = {"--proc": "/proc", "--dev": "/dev", "--tmpfs": "/tmp"}[opt]
            if params != [expected] or opt in singles:
                out.append("(c) %s %s" % (opt, params))
            singles[opt] = True
        elif opt == "--symlink":
            if params[1] not in SYSTEM_PATHS or os.readlink(params[1]) != params[0]:
                out.append("(c) --symlink %s" % params)
        elif opt in ("--bind", "--ro-bind", "--bind-fd", "--ro-bind-fd"):
            opt, src, dest, problems = _stability(opt, params, descriptors or [])
            out += problems
            for path in (src, dest):
                if under(path, "/proc") or under(path, "/dev") or path in BROAD:
                    out.append("(c) %s %s %s reaches %s" % (opt, src, dest, path))
            if opt == "--bind":
                if os.path.realpath(src) != src:
                    out.append("(a) --bind %s is not resolved" % src)
                if not any(under(src, w) for w in writable):
                    out.append("(a) --bind %s outside the declared writable %s" % (src, writable))
                roots = [os.path.realpath(r) for r in host.get("writable_roots", ["/var/lib/metnos"])]
                if src not in admin_grants(manifest, invocation, host) and not any(under(src, r) for r in roots):
                    out.append("(a) --bind %s outside the admin's writable roots %s" % (src, roots))
                for tree in trees:
                    if related(src, tree) or related(dest, tree):
                        out.append("(b) --bind %s %s touches the read-only %s" % (src, dest, tree))
    return out
