"""The second hostile set: profiles as bwrap sees them when it acts (issue 19), by class.

Written as an attacker who writes manifests, argument values and files in data folders would try
it, against what bwrap really does: it resolves every destination *inside the new root* as the
earlier mounts left it, follows symbolic links in sources when it runs, and binds recursively.
The earlier set (tests/corpus/hostile_manifests.py) stays as it is and keeps passing.

The cases are data, in tests/unit/cases/hostile_bwrap.yaml (read by tests/helpers/case_table.py); this module
builds the host tree they are rendered against. Classes (``Entry.rule`` is the spec rule, ``cls`` the class):

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

from corpus.hostile_manifests import INPUT, Entry
from helpers import case_table

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


def params():
    import pytest
    return [pytest.param(e.id, marks=pytest.mark.rule(e.rule), id=e.id) for e in CORPUS]


def _entry(case):
    fields = Entry.fields(case, INPUT | {"class", "bwrap"})
    return BwrapEntry(cls=case["input"]["class"], bwrap=case["input"].get("bwrap"), **fields)


CORPUS = [_entry(case) for case in case_table.load("hostile_bwrap")]


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
