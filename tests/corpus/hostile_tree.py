"""The host tree the hostile corpus is rendered against: a Metnos install in a directory,
with the symlinks an attacker (or a careless admin) plants: aliases of refused roots, links
into /etc, /proc and /, links out of the integrations, credential, dialog and undo folders,
links between executors' folders, chains, loops and dangling links.

``build(root)`` creates it and returns the host-context overrides; manifests in the corpus
write the tree's location as ``@ROOT@``. Everything is created below ``root`` (links point
out of it, nothing outside is written).
"""
import os

from helpers import trees

DIRS = [
    "rt/runtime", "venv/lib/site-packages", "executors/ex", "executors/other", "lib18/i18n",
    "res/sheets", "res/people", "idx/docs", "integrations/cal", "integrations/other", "creds/mail",
    "dialog/alice", "dialog/bob", "undo/t1", "undo/t2", "data/notes/sub", "data/w/sub", "outside",
    "undo_clean/undo_last_turn", "undo_planted/undo_last_turn", "undo_linked/undo_last_turn",
    "undo_cache/undo_last_turn/__pycache__", "special", "shared_tmp/x",
]
# Folders every user may write into (mode 1777, like /tmp and /var/tmp): shared trees.
STICKY = ["shared_tmp"]
FILES = {
    "executors/ex/main.py": "print('ex')\n",
    "executors/other/main.py": "print('other')\n",
    "lexicon.db": "lexicon\n",
    "creds/mail/work.json": "{}\n", "creds/mail/work.token": "t\n", "creds/mail/bob.json": "{}\n",
    "creds/mail/bob.old.json": "{}\n", "creds/mail/bob": "{}\n",
    "data/notes/a.md": "a\n", "data/notes/sub/b.md": "b\n", "outside/secret": "s\n",
    "rt/runtime/lib.py": "x = 1\n", "data/notes/secret.key": "k\n",
}
# Objects that are not plain files or folders: a host daemon's socket, a FIFO.
SOCKETS = ["special/ctl.sock"]
FIFOS = ["special/fifo"]
# Second names that realpath cannot see (hard links): new name -> existing file (relative to root).
HARD_LINKS = {"data/w/hardlink": "rt/runtime/lib.py", "data/notes/creds_hl": "creds/mail/work.json",
              "special/shadow_hl": "outside/secret"}
BROKER = {"main.py": "import restore\nrestore.undo()\n", "restore.py": "def undo():\n    return 0\n"}
# link (relative to root) -> target ("@ROOT@" is replaced by the tree's location)
LINKS = {
    # fixed-scope targets
    "scope_etc": "/etc", "scope_run": "/var/run", "scope_root": "/", "scope_proc": "/proc",
    "scope_dev": "/dev", "scope_home": "/home", "scope_lib": "/lib", "scope_usr": "/usr",
    "scope_sys": "/sys", "scope_boot": "/boot", "scope_opt": "/opt", "scope_tmp": "/tmp",
    "scope_etc_ssh": "/etc/ssh", "scope_python3": "/var/lib/python3", "scope_usr_local": "/usr/local",
    "scope_exec": "@ROOT@/executors", "scope_own": "@ROOT@/executors/ex", "scope_sibling": "@ROOT@/executors/other",
    "scope_runtime": "@ROOT@/rt/runtime", "scope_rt": "@ROOT@/rt", "scope_venv": "@ROOT@/venv/lib/site-packages",
    "scope_i18n": "@ROOT@/lib18/i18n", "scope_lexicon": "@ROOT@/lexicon.db", "scope_creds": "@ROOT@/creds/mail",
    "scope_integrations": "@ROOT@/integrations", "scope_cal": "@ROOT@/integrations/cal",
    "scope_dialog": "@ROOT@/dialog", "scope_alice": "@ROOT@/dialog/alice", "scope_undo": "@ROOT@/undo/t1",
    "scope_up": "..", "scope_self": ".", "scope_chain1": "scope_chain2", "scope_chain2": "scope_chain3",
    "scope_chain3": "/etc", "scope_rel_etc": "../" * 12 + "etc", "scope_dangling_etc": "/etc/metnos-no-such-dir",
    "scope_dangling_proc": "/proc/metnos-no-such-file", "scope_loop": "scope_loop",
    "scope_rootdir": "@ROOT@",
    # links inside a legitimate scope (for arg: values and globbed scopes)
    "data/notes/etc": "/etc", "data/notes/run": "/var/run", "data/notes/usr": "/usr", "data/notes/root": "/",
    "data/notes/up": "../..", "data/notes/exec": "@ROOT@/executors", "data/notes/own": "@ROOT@/executors/ex",
    "data/notes/runtime": "@ROOT@/rt/runtime", "data/notes/creds": "@ROOT@/creds/mail",
    "data/notes/dangling_etc": "/etc/metnos-no-such-dir", "data/notes/proc": "/proc/self",
    "data/notes/lib": "/lib", "data/notes/inlink": "sub",
    "data/w/etc": "/etc", "data/w/runtime": "@ROOT@/rt/runtime", "data/w/venv": "@ROOT@/venv",
    "data/w/sibling": "@ROOT@/executors/other", "data/w/i18n": "@ROOT@/lib18/i18n",
    # host-context entries that lead somewhere else
    "res/etc_link": "/etc", "res/proc_link": "/proc/self", "res/runtime_link": "@ROOT@/rt/runtime",
    "idx/proc_link": "/proc", "idx/root_link": "/",
    "integrations/etclink": "/etc", "integrations/sib": "cal", "integrations/up": "..",
    "integrations/rootlink": "/",
    "creds/mail/evil.json": "/etc/shadow", "creds/mail/evil2.json": "../../outside/secret",
    "creds/mail/sib.json": "work.json",
    "dialog/mallory": "/root", "dialog/sib": "alice", "dialog/up": "..",
    "undo/t_etc": "/etc", "undo/t_up": "..", "undo/t_sib": "t1",
    "executors/evil": "/etc", "executors/sib": "other", "executors/up": "..",
    "undo_linked/undo_last_turn/main.py": "/etc/hostname",
    # links to objects that are not plain files or folders, and into /run (host daemons' sockets)
    "scope_sock": "@ROOT@/special/ctl.sock", "scope_fifo": "@ROOT@/special/fifo", "scope_run_sub": "/run/lock",
    "special/sock_link": "ctl.sock", "scope_shared": "@ROOT@/shared_tmp",
    # a name that matches a 'within' pattern for a file that does not
    "data/notes/key.md": "secret.key",
}


def broker_digest(root):
    """The digest of the clean broker's files (what the admin pins after review)."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import undo
    digest, problem = undo.executor_digest(os.path.join(root, "undo_clean", "undo_last_turn"), sorted(BROKER))
    assert problem is None, problem
    return digest


def build(root):
    """Create the tree below ``root``; return the host-context overrides for it."""
    trees.write_tree(root, DIRS, FILES)
    for folder in ("undo_clean", "undo_planted", "undo_linked", "undo_cache"):
        for name, text in BROKER.items():
            path = os.path.join(root, folder, "undo_last_turn", name)
            if folder == "undo_linked" and name == "main.py":
                continue
            with open(path, "w") as handle:
                handle.write(text)
    with open(os.path.join(root, "undo_planted/undo_last_turn/json.py"), "w") as handle:
        handle.write("import os\nos.system('id')\n")
    with open(os.path.join(root, "undo_cache/undo_last_turn/__pycache__/restore.cpython-311.pyc"), "wb") as handle:
        handle.write(b"\0" * 16)
    for rel in STICKY:
        os.chmod(os.path.join(root, rel), 0o1777)
    for rel in SOCKETS:
        if not os.path.lexists(os.path.join(root, rel)):
            trees.socket_file(os.path.join(root, rel))
    for rel in FIFOS:
        if not os.path.lexists(os.path.join(root, rel)):
            os.mkfifo(os.path.join(root, rel), 0o600)
    for rel, existing in HARD_LINKS.items():
        if not os.path.lexists(os.path.join(root, rel)):
            os.link(os.path.join(root, existing), os.path.join(root, rel))
    for rel, target in LINKS.items():
        path = os.path.join(root, rel)
        if not os.path.lexists(path):
            os.symlink(target.replace("@ROOT@", root), path)
    digest = broker_digest(root)
    return {
        "runtime_dir": root + "/rt/runtime", "executors_dir": root + "/executors",
        "python_executable": "/usr/bin/python3", "python_prefix": root + "/venv",
        "python_package_roots": [root + "/venv/lib/site-packages", "/usr/lib/python3/dist-packages"],
        "i18n_dbs": [root + "/lib18/i18n"], "lexicon_dbs": [root + "/lexicon.db"],
        "resources": {"sheets": root + "/res/sheets", "people": root + "/res/people",
                      "etcres": root + "/res/etc_link", "procres": root + "/res/proc_link",
                      "runtimeres": root + "/res/runtime_link", "credsres": root + "/creds/mail",
                      "rootres": "/", "runres": "/var/run", "venvres": root + "/venv/lib",
                      "parentres": root, "i18nres": root + "/lib18"},
        "indexes": {"docs": root + "/idx/docs", "procidx": root + "/idx/proc_link", "rootidx": root + "/idx/root_link",
                    "homeidx": "/home", "devidx": "/dev/shm", "execidx": root + "/executors/other"},
        "integrations_dir": root + "/integrations", "mail_credentials_dir": root + "/creds/mail",
        "mail_accounts": {"mapped": ["/proc/1/environ"], "mappedroot": ["/"],
                          "mappedexec": [root + "/executors/other/main.py"]},
        "dialog_dir": root + "/dialog", "undo_root": root + "/undo",
        "systemd_read_paths": [], "system_read_paths": [],
        # the whole tree: the earlier hostile set is judged by the rules it was written against (the
        # writable roots are the newer set's, tests/corpus/hostile_bwrap.py)
        "writable_roots": [root],
        "undo_exception": {"name": "undo_last_turn", "origin": "metnos/core", "revision": 12, "owner": "metnos",
                           "capability": "system:undo", "files": sorted(BROKER), "digest": digest},
    }


def materialize(base):
    """Build the tree in ``base``/tree and write every corpus entry as a file in ``base``/manifests.

    Returns (root, host overrides, [(entry, path, host overrides, invocation)])."""
    from corpus import hostile_manifests
    root = os.path.join(base, "tree")
    os.makedirs(root, exist_ok=True)
    host = build(root)
    subs = {"@ROOT@": root, "@DIGEST@": host["undo_exception"]["digest"]}
    folder = os.path.join(base, "manifests")
    os.makedirs(folder, exist_ok=True)
    out = []
    for entry in hostile_manifests.CORPUS:
        path = os.path.join(folder, entry.file_name)
        with open(path, "wb") as handle:
            handle.write(entry.content(subs))
        out.append((entry, path, entry.host_for(subs, host), entry.invocation_for(subs)))
    return root, host, out
