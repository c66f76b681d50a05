"""Write a stored profile with the one writer (store.write) and die by SIGKILL at its second rename: what a
power cut or an OOM kill between the two files of a profile leaves (issue 52). Run as
``python kill_at_second_rename.py DEST RESULT.json``; it never returns normally."""
import json
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts"))
import core_path  # noqa: E402  the core under its one import name

core_path.use_core()

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import store  # noqa: E402

REAL_RENAME = os.rename
CALLS = []


def rename_then_die(source, target, **folders):
    """files.replace's renameat (os.rename with src_dir_fd/dst_dir_fd, in the folder it opened)."""
    CALLS.append(target)
    if len(CALLS) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    REAL_RENAME(source, target, **folders)


def main(dest, result_path):
    with open(result_path) as handle:
        result = json.load(handle)
    os.rename = rename_then_die
    store.write(dest, result)
    sys.exit("the second rename never came: %s" % CALLS)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
