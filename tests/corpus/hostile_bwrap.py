"""The second hostile set: profiles as bwrap sees them when it acts (issue 19), by class.

Written as an attacker who writes manifests, argument values and files in data folders would try
it, against what bwrap really does: it resolves every destination *inside the new root* as the
earlier mounts left it, follows symbolic links in sources when it runs, and binds recursively.
The earlier set (tests/corpus/hostile_manifests.py) stays as it is and keeps passing.

Classes (``Entry.rule`` is the spec rule, ``cls`` the class):

    dest       destination games: a relative link in a data folder that resolves elsewhere inside
               the sandbox than on the host, alias chains, binds whose source differs from their
               destination (the signed executor's folder, /etc, /proc, the runtime shadowed)
    roots      writable-root escapes: fs:write outside the admin's writable roots (as written,
               through a link, through 'within')
    engine     interpreter and bwrap tampering: their folders, the installation, libpython
    chain      link chains: 1,000 links, 41 links (ELOOP), loops, many scopes into long chains
    link       hard links and special files in host-context and container grants, the undo broker
    args       '..' in argument values; undecodable bytes and lone surrogates
    stable     sources that can move (a data folder others can write) with a bwrap without --bind-fd,
               nested destinations that can be moved at run time

Each entry is REFUSED with its ``expect`` code by every face, or (``expect == "wrapped"``) rendered,
and then run in real bwrap as root and as nobody (tests/integration/test_hostile_bwrap_real.py):
from inside, the signed executor's code must be the signed one, /etc, /proc and the runtime must be
the host's, read-only base trees unwritable; from outside, nothing outside the declared writable
scopes may change. Pseudo-filesystems below scopes and races need mounts and timing:
tests/helpers/pseudo_mounts.py and tests/integration/test_bind_race_real.py.

``@ROOT@`` is the tree's location; ``@UP@`` climbs from the tree's view folder to / (its depth).
"""
import os
import shutil

from corpus.hostile_manifests import Entry

SIGNED = "print('signed')\n"
ATTACKER = "print('attacker')\n"
CHAIN_LONG = 1000
PAD = ["p%d" % i for i in range(12)]             # a data folder deep enough for '@UP@' to stay inside data


class BwrapEntry(Entry):
    """An entry of this set: ``cls`` its class, ``bwrap`` (optional) the bwrap binary the service uses
    (relative to the tree)."""
    __slots__ = ("cls", "bwrap")

    def __init__(self, id, cls, rule, expect, bwrap=None, **kw):  # noqa: A002
        Entry.__init__(self, id, rule, expect, **kw)
        self.cls = cls
        self.bwrap = bwrap


CORPUS = []


def add(id, cls, rule, expect, caps=(), arguments=None, invocation=None, host=None, bwrap=None,  # noqa: A002
        **fields):
    data = {"name": "ex", "origin": "metnos/core", "revision": 1, "capabilities": list(caps)}
    if arguments:
        data["arguments"] = arguments
    data.update(fields)
    CORPUS.append(BwrapEntry(id, cls, rule, expect, bwrap=bwrap, data=data, invocation=invocation, host=host))


def params():
    import pytest
    return [pytest.param(e.id, marks=pytest.mark.rule(e.rule), id=e.id) for e in CORPUS]


# ---------------------------------------------------------------- dest: bwrap resolves destinations inside
# @ROOT@/view -> data/<PAD>/pub (an alias); pub holds relative links that lead, from the view's depth inside
# the sandbox, onto the executor's folder, /etc, /proc, the runtime - and, from pub's depth on the host,
# into harmless attacker folders in data. Judged on the host and mounted at the declared path, each was a
# mount over the tree it names inside (read-only grants only for the executor: its main.py replaced).
# the admin allows writes through the view as well (rules hold on the path as written and as resolved)
VIEW_ROOTS = {"writable_roots": ["@ROOT@/data", "@ROOT@/view", "@ROOT@/view3"]}
for id_, rule, caps in [
        ("dest_executor_shadowed_readonly", "R-BASE-4", ["fs:read:@ROOT@/view", "fs:read:@ROOT@/view/exe"]),
        ("dest_executor_shadowed_writable", "R-BASE-4", ["fs:read:@ROOT@/view", "fs:write:@ROOT@/view/exe"]),
        ("dest_etc_shadowed_writable", "R-BASE-1", ["fs:read:@ROOT@/view", "fs:write:@ROOT@/view/etcw"]),
        ("dest_proc_covered", "R-BASE-2", ["fs:read:@ROOT@/view", "fs:read:@ROOT@/view/prc"]),
        ("dest_runtime_shadowed_writable", "R-BASE-4", ["fs:read:@ROOT@/view", "fs:write:@ROOT@/view/rtw"]),
        ("dest_alias_chain", "R-BASE-4", ["fs:read:@ROOT@/view3", "fs:read:@ROOT@/view3/exe"])]:
    add(id_, "dest", rule, "wrapped", caps, host=VIEW_ROOTS)
add("dest_arg_value_through_alias", "dest", "R-ARG-1", "arg_symlink_escapes",
    ["fs:read:@ROOT@/view", "fs:write:arg:p"], arguments={"p": {"within": ["@ROOT@/view/**"]}},
    invocation={"arguments": {"p": "exe"}}, host=VIEW_ROOTS)
add("dest_within_alias_read", "dest", "R-ARG-1", "arg_symlink_escapes",
    ["fs:read:arg:p", "fs:read:@ROOT@/view"], arguments={"p": {"within": ["@ROOT@/view/*"]}},
    invocation={"arguments": {"p": "etcw"}}, host=VIEW_ROOTS)

# ---------------------------------------------------------------- roots: writes only where the admin allows
for i, scope in enumerate(["/root/.ssh", "/root/.config", "/home/metnos", "/var/lib/dpkg/info", "/var/lib/systemd",
                           "/var/lib/containers", "/var/spool/cron/crontabs", "/var/spool/cron", "/srv/www",
                           "@ROOT@/outside", "@ROOT@/outside/**", "@ROOT@/datax"]):
    add("roots_write_%02d" % i, "roots", "R-CAP-FS", "scope_outside_writable_roots", ["fs:write:" + scope])
add("roots_write_through_link", "roots", "R-CAP-FS", "scope_outside_writable_roots", ["fs:write:@ROOT@/data/esc"])
add("roots_write_within_outside", "roots", "R-ARG-1", "scope_outside_writable_roots", ["fs:write:arg:p"],
    arguments={"p": {"within": ["@ROOT@/outside/**"]}}, invocation={"arguments": {"p": "x"}})
add("roots_read_outside_is_fine", "roots", "R-CAP-FS", "wrapped", ["fs:read:@ROOT@/outside"])
add("roots_none_configured", "roots", "R-CAP-FS", "scope_outside_writable_roots", ["fs:write:@ROOT@/data/w"],
    host={"writable_roots": []})
add("roots_write_inside", "roots", "R-CAP-FS", "wrapped", ["fs:write:@ROOT@/data/w"])

# ---------------------------------------------------------------- engine: the interpreter and bwrap, whatever
# the roots say (the whole tree is a writable root for these)
EVERYWHERE = {"writable_roots": ["@ROOT@"]}
for i, rel in enumerate(["pyinst/bin", "pyinst", "pyinst/lib/python3.99", "pyinst/lib/libpython3.99.so.1.0",
                         "venv/bin", "tools/bin", "tools/bin/bwrap", "tools"]):
    add("engine_write_%d" % i, "engine", "R-BASE-4", "scope_too_broad", ["fs:write:@ROOT@/" + rel],
        host=EVERYWHERE, bwrap="tools/bin/bwrap")
add("engine_write_through_link", "engine", "R-BASE-4", "scope_symlink_refused", ["fs:write:@ROOT@/data/pylink"],
    host=EVERYWHERE)
add("engine_bwrap_through_link", "engine", "R-BASE-4", "scope_symlink_refused", ["fs:write:@ROOT@/data/bwlink"],
    host=EVERYWHERE, bwrap="tools/bin/bwrap")
add("engine_resource_on_interpreter", "engine", "R-BASE-4", "host_path_refused", ["metnos:write:py"],
    host=dict(EVERYWHERE, resources={"py": "@ROOT@/pyinst/lib"}))

# ---------------------------------------------------------------- chain: bounded resolution
add("chain_1000_links", "chain", "R-CAP-FS", "scope_too_many_links", ["fs:read:@ROOT@/data/chain/l0"])
add("chain_41_links", "chain", "R-CAP-FS", "scope_too_many_links", ["fs:read:@ROOT@/data/c41/l0"])
add("chain_40_links_resolve", "chain", "R-CAP-FS", "wrapped", ["fs:read:@ROOT@/data/c40/l0"])
add("chain_loop", "chain", "R-CAP-FS", "scope_too_many_links", ["fs:read:@ROOT@/data/loop_a/x"])
add("chain_128_scopes", "chain", "R-SCOPE-1", "scope_too_many_links",
    ["fs:read:@ROOT@/data/chain/l%d" % (i * 7) for i in range(128)])
add("chain_arg_value", "chain", "R-ARG-1", "scope_too_many_links", ["fs:read:arg:p"],
    arguments={"p": {"within": ["@ROOT@/data/**"]}}, invocation={"arguments": {"p": "chain/l0"}})
add("chain_host_resource", "chain", "R-CAP-METNOS", "host_path_refused", ["metnos:read:chained"],
    host={"resources": {"chained": "@ROOT@/data/chain/l0"}})
for key in ("runtime_dir", "executors_dir", "mail_credentials_dir", "undo_root"):
    add("chain_host_" + key, "chain", "R-BASE-4", "host_path_refused", [], host={key: "@ROOT@/data/loop_a/x"})

# ---------------------------------------------------------------- link: every rule on every path
add("link_credential_hard_link", "link", "R-CAP-MAIL", "host_path_refused", ["mail:read:hl"])
add("link_credential_socket", "link", "R-CAP-MAIL", "host_path_refused", ["mail:read:sock"])
add("link_credential_mapped_hard_link", "link", "R-CAP-MAIL", "host_path_refused", ["mail:read:mapped"],
    host={"mail_accounts": {"mapped": ["@ROOT@/data/secret_hl"]}})
add("link_resource_fifo", "link", "R-CAP-METNOS", "host_path_refused", ["metnos:read:fifo"],
    host={"resources": {"fifo": "@ROOT@/special/fifo"}})
add("link_index_hard_link", "link", "R-CAP-INDEX", "host_path_refused", ["index:read:hl"],
    host={"indexes": {"hl": "@ROOT@/data/secret_hl"}})
add("link_system_read_hard_link", "link", "R-CAP-SYS", "host_path_refused", ["system:read:network_interfaces"],
    host={"system_read_paths": ["@ROOT@/data/secret_hl"]})
add("link_undo_broker_hard_link", "link", "R-FAIL-2", "undo_files_invalid", [], host={
    "executors_dir": "@ROOT@/undo_hl"}, name="undo_last_turn", owner="metnos", revision=12,
    capabilities=["system:undo"], files=["main.py", "restore.py"], digest="@DIGEST@")

# ---------------------------------------------------------------- args: '..' and undecodable names
for i, value in enumerate(["sub/../a.md", "./a.md", "a.md/", "sub//b.md", "lnk/../secret", "sub/."]):
    add("args_dots_%d" % i, "args", "R-ARG-1", "scope_not_normalized", ["fs:read:arg:p"],
        arguments={"p": {"within": ["@ROOT@/data/notes/**"]}}, invocation={"arguments": {"p": value}})
add("args_lone_surrogate", "args", "R-ARG-1", "scope_nul", ["fs:read:arg:p"],
    arguments={"p": {"within": ["@ROOT@/data/notes/**"]}}, invocation={"arguments": {"p": "a\ud800b"}})
add("args_undecodable_link_target", "args", "R-CAP-FS", "scope_symlink_refused", ["fs:read:@ROOT@/data/badlink"])

# ---------------------------------------------------------------- stable: sources and destinations that can move
add("stable_no_fd_bwrap", "stable", "R-SEC-1", "bind_source_unstable", ["fs:read:@ROOT@/data/notes"],
    bwrap="oldbwrap/bin/bwrap")
add("stable_nested_destination", "stable", "R-SEC-1", "mount_dest_unstable",
    ["fs:read:@ROOT@/data/nest", "fs:write:@ROOT@/data/nest/a/w"])
add("stable_descriptor_binds", "stable", "R-SEC-1", "wrapped",
    ["fs:read:@ROOT@/data/notes", "fs:write:@ROOT@/data/w", "fs:read:@ROOT@/data/nest"])
add("stable_child_of_descriptor_bind", "stable", "R-SEC-1", "wrapped",
    ["fs:read:@ROOT@/data/nest", "fs:write:@ROOT@/data/nest/a"])


# ---------------------------------------------------------------- the tree
DIRS = ["rt/runtime", "venv/lib/site-packages", "venv/bin", "executors/ex", "integrations/cal", "creds/mail",
        "dialog/alice", "undo/t1", "outside", "datax", "pyinst/bin", "pyinst/lib/python3.99", "tools/bin",
        "oldbwrap/bin", "special", "undo_hl/undo_last_turn", "data/w", "data/notes/sub", "data/nest/a/w",
        "data/chain", "data/c40", "data/c41", "data/loop_a", "data/" + "/".join(PAD) + "/pub",
        "data/" + "/".join(PAD) + "/executors/ex", "data/" + "/".join(PAD) + "/rt/runtime"]
FILES = {"executors/ex/main.py": SIGNED, "rt/runtime/metnos.py": "# runtime\n", "outside/secret": "outside\n",
         "data/notes/a.md": "a\n", "data/notes/sub/b.md": "b\n", "data/secret": "secret\n",
         "pyinst/bin/python3.99": "#!fake interpreter\n", "pyinst/lib/libpython3.99.so.1.0": "\x7fELF\n",
         "data/" + "/".join(PAD) + "/executors/ex/main.py": ATTACKER,          # what pub/exe leads to on the host
         "data/" + "/".join(PAD) + "/rt/runtime/metnos.py": "# attacker's runtime\n",
         "undo_hl/undo_last_turn/restore.py": "def undo():\n    return 0\n",
         "oldbwrap/bin/bwrap": "#!/bin/sh\ncat <<'EOF'\nusage: bwrap [OPTIONS...] [--] COMMAND [ARGS...]\n"
                               "    --bind SRC DEST              Bind mount the host path SRC on DEST\n"
                               "    --ro-bind SRC DEST           Bind mount the host path SRC readonly on DEST\n"
                               "EOF\n"}
LINKS = {"view": "data/" + "/".join(PAD) + "/pub", "view2": "view", "view3": "view2",
         "data/esc": "@ROOT@/outside", "data/pylink": "@ROOT@/pyinst/bin", "data/bwlink": "@ROOT@/tools/bin",
         "venv/bin/python3": "../../pyinst/bin/python3.99", "data/loop_a/x": "../loop_b", "data/loop_b": "loop_a/x",
         "data/notes/lnk": "/etc/ssh"}


def _pub_links(root):
    """The links of pub: each resolves, from the view's depth inside the sandbox, onto a tree of the
    host, and from pub's own depth on the host into data (where the attacker keeps harmless look-alikes)."""
    depth = root.count("/")
    up = "../" * (depth + 1)                       # from @ROOT@/view (depth+1) to /
    return {"exe": "../executors/ex", "rtw": "../rt/runtime", "etcw": up + "etc", "prc": up + "proc"}


def build(root):
    """Create the tree below ``root`` (folders 0755; data/ 0777: written by others); host overrides."""
    from helpers import trees
    trees.write_tree(root, DIRS, FILES)
    os.chmod(os.path.join(root, "oldbwrap/bin/bwrap"), 0o755)
    shutil.copy2(shutil.which("bwrap") or "/usr/bin/bwrap", os.path.join(root, "tools/bin/bwrap"))
    pub = os.path.join(root, "data", *PAD, "pub")
    for name, target in _pub_links(root).items():
        os.symlink(target, os.path.join(pub, name))
        # what the link names on the host, from pub's depth: inside data, created as the attacker's
        os.makedirs(os.path.normpath(os.path.join(pub, target)), exist_ok=True)
    for rel, target in LINKS.items():
        os.symlink(target.replace("@ROOT@", root), os.path.join(root, rel))
    os.symlink(b"/etc/\xff", os.path.join(root, "data/badlink").encode())
    for name, count, last in (("chain", CHAIN_LONG, "../w"), ("c41", 41, "../w"), ("c40", 40, "../w")):
        for i in range(count):
            os.symlink("l%d" % (i + 1) if i + 1 < count else last, os.path.join(root, "data", name, "l%d" % i))
    os.link(os.path.join(root, "data/secret"), os.path.join(root, "creds/mail/hl.json"))
    os.link(os.path.join(root, "data/secret"), os.path.join(root, "data/secret_hl"))
    os.mkfifo(os.path.join(root, "special/fifo"), 0o600)
    trees.socket_file(os.path.join(root, "creds/mail/sock.json"))
    broker = os.path.join(root, "undo_hl/undo_last_turn/main.py")
    with open(os.path.join(root, "data/broker_second_name.py"), "w") as handle:
        handle.write("import restore\nrestore.undo()\n")
    os.link(os.path.join(root, "data/broker_second_name.py"), broker)
    for dirpath, dirnames, _files in os.walk(os.path.join(root, "data")):
        for d in dirnames:
            if not os.path.islink(os.path.join(dirpath, d)):
                os.chmod(os.path.join(dirpath, d), 0o777)
    os.chmod(os.path.join(root, "data"), 0o777)
    return host_for(root)


def host_for(root):
    r = root
    return {"runtime_dir": r + "/rt/runtime", "executors_dir": r + "/executors",
            "python_executable": r + "/venv/bin/python3", "python_prefix": r + "/venv",
            "python_package_roots": [r + "/venv/lib/site-packages"], "python_installation": [r + "/pyinst"],
            "i18n_dbs": [], "lexicon_dbs": [], "resources": {}, "indexes": {},
            "integrations_dir": r + "/integrations", "mail_credentials_dir": r + "/creds/mail", "mail_accounts": {},
            "dialog_dir": r + "/dialog", "undo_root": r + "/undo", "systemd_read_paths": [], "system_read_paths": [],
            "writable_roots": [r + "/data"],
            "undo_exception": {"name": "undo_last_turn", "origin": "metnos/core", "revision": 12, "owner": "metnos",
                               "capability": "system:undo", "files": ["main.py", "restore.py"],
                               "digest": "sha256:" + "0" * 64}}


def materialize(base):
    """The tree in ``base``/tree and every entry's manifest as a file: (root, host, [(entry, path, host,
    invocation, bwrap path or None)])."""
    root = os.path.join(base, "tree")
    os.makedirs(root)
    os.chmod(base, 0o755)
    host = build(root)
    subs = {"@ROOT@": root, "@DIGEST@": "sha256:" + "0" * 64}
    folder = os.path.join(base, "manifests")
    os.makedirs(folder)
    out = []
    for entry in CORPUS:
        path = os.path.join(folder, entry.file_name)
        with open(path, "wb") as handle:
            handle.write(entry.content(subs))
        bwrap = os.path.join(root, entry.bwrap) if entry.bwrap else None
        out.append((entry, path, entry.host_for(subs, host), entry.invocation_for(subs), bwrap))
    return root, host, out


def _check():
    ids = [e.id for e in CORPUS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


_check()
