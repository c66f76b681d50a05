"""Small host-side fixtures shared by the tests: write a tree of folders and files, plant a Unix
socket's inode, run a Python payload inside a rendered bwrap argv."""
import json
import os
import socket
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def inside_writer():
    """The text of tests/helpers/inside_writer.py: the payload run_inside runs for the channel and object tests."""
    with open(os.path.join(HERE, "inside_writer.py")) as handle:
        return handle.read()


def write_tree(root, dirs, files):
    """Create ``dirs`` and the ``files`` ({relative path: text}) below ``root``."""
    for d in dirs:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for rel, text in files.items():
        with open(os.path.join(root, rel), "w") as handle:
            handle.write(text)


def socket_file(path):
    """A Unix socket's inode left on disk (bound, then closed: what a daemon's socket looks like to
    stat). Bound by a relative name so that a long tree path does not hit the 108-byte limit."""
    cwd = os.getcwd()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.chdir(os.path.dirname(path))
        sock.bind(os.path.basename(path))
    finally:
        os.chdir(cwd)
        sock.close()
    return path


def run_inside(argv, payload, spec, user=None, timeout=60, descriptors=None):
    """Run ``payload`` (Python source, given ``spec`` as JSON in argv[1]) with the rendered ``argv``'s
    bwrap words, as ``user`` (setpriv) when given; its JSON answer. A profile's ``descriptors`` are
    opened by the core's launcher (descriptors.launcher_words), as the user, as a runtime would."""
    from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile.descriptors import (
        launcher_words,
    )
    sep = argv.index("--")
    full = launcher_words(argv[:sep + 1] + ["/usr/bin/python3", "-c", payload, json.dumps(spec)],
                          "/usr/bin/python3", descriptors)
    if user:
        full = ["setpriv", "--reuid=%s" % user, "--regid=nogroup", "--clear-groups"] + full
    proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (proc.stderr, full)
    return json.loads(proc.stdout)
