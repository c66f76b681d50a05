"""A manifest rewritten in place while root renders it (issue 52 item 3), shared by the safe-read tests
(tests/integration/test_safe_reads.py) and the fault suite (tests/system/test_faults.py): two complete versions
of one manifest, and an editor (another process) that truncates and writes it (the real user who owns the folder:
tests/helpers/real_user.py)."""
import os
import time

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import host_context, model, renderer
from helpers.fake_host import host_dict


def host(root):
    return host_context.HostContext(host_dict(root, python_prefix="/usr", python_package_roots=[], i18n_dbs=[]))


def render(path, root):
    """What the sandbox_profile module renders of the manifest file ``path`` (renderer.render_safe)."""
    return renderer.render_safe(model.FileSource(path), host(root))


def versions(root):
    """Two complete versions of one manifest; a cut of either is a wider or another grant (fs:write of a shorter
    path), which is what a half-read file rendered before this fix."""
    os.makedirs(os.path.join(root, "data", "repo", "sub", "deeper"), exist_ok=True)
    os.makedirs(os.path.join(root, "data", "notes"), exist_ok=True)
    first = ("name: ex\norigin: tests\ncapabilities:\n  - fs:read:%s/data/notes/**\n"
             "  - fs:write:%s/data/repo/sub/deeper\n" % (root, root))
    second = ("name: ex\norigin: tests\ncapabilities:\n  - fs:write:%s/data/repo/sub/deeper\n"
              "  - fs:read:%s/data/notes/**\n  - net:http\n" % (root, root))
    return [first.encode(), second.encode()]


def rewrite_in_place(path, texts, stop):
    """An editor that writes in place: truncate, then the text in two writes."""
    index = 0
    while not stop.is_set():
        text = texts[index % 2]
        index += 1
        with open(path, "r+b") as handle:
            handle.truncate(0)
            handle.write(text[:len(text) // 2])
            handle.flush()
            time.sleep(0.0005)
            handle.write(text[len(text) // 2:])
        time.sleep(0.001 if index % 3 else 0.12)     # now and then a pause: renders of a quiet file happen too
