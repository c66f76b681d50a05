"""The host context's base mounts reached by descriptor (issue 49, left from the last session), for real: a real
user swaps its package folder and a symbolic link of its own to a folder below a root-only 0700 folder
(renameat2 RENAME_EXCHANGE, tests/helpers/exchange_racer.py, as that user) while root builds the base mounts of a
host context whose python_package_roots names the user's folder, again and again (what every render does).

Before, HostContext._base_state asked ``os.path.exists``/``os.path.isdir`` as root and resolved the path again
after: a swap in between made root mount the root-only folder read-only into every sandbox (readable there
whatever the 0700 folder above it) and write its path in the 0644 profile. Now the candidate is reached by
descriptor (files.reached: no link followed that someone other than root controls) and refused when its
resolution is not the object reached: neither a mount nor a refusal ever names the root-only folder. Canary: the
old sequence (exists, isdir, then realpath, as root) lands in the root-only folder within the same loop.

Mutation run by hand: host_context._base_state with ``real != seen`` made ``False`` (the resolution no longer
compared with the object reached): the root-only folder was mounted (the test failed)."""
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import files
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import host_context
from helpers import real_user
from helpers.fake_host import host_dict

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (useradd, a root-only folder)")
PYTHON = "/usr/bin/python3"          # the racer runs as the user: the packaged interpreter, stdlib only
RACER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers", "exchange_racer.py")
SECONDS = 25.0
HIDDEN = "root-only-hidden"


def old_base_path(given):
    """What _base_state mounted before the fix (exists, isdir, then the path resolved again): the canary."""
    if not os.path.exists(given) or not os.path.isdir(given):
        return None
    try:
        return os.path.realpath(given)
    except OSError:                  # the link became a folder between realpath's lstat and its readlink
        return None


@pytest.fixture()
def raced():
    """(user, base, the package root root's context names): base/user/pkgs (the user's folder) and base/user/swap
    (its link to base/secret/root-only-hidden, a 0755 folder below root's 0700 one) exchanged by the user for as
    long as the test runs."""
    base = tempfile.mkdtemp(prefix="metnos-base-race-", dir="/var/tmp")
    os.chmod(base, 0o755)
    with real_user.made("mbrace") as user:
        os.makedirs(os.path.join(base, "secret", HIDDEN))
        os.chmod(os.path.join(base, "secret"), 0o700)
        mine = os.path.join(base, "user")
        os.makedirs(os.path.join(mine, "pkgs"))
        os.symlink(os.path.join(base, "secret", HIDDEN), os.path.join(mine, "swap"))
        for name in ("", "pkgs", "swap"):
            os.lchown(os.path.join(mine, name), user.uid, user.gid)
        shutil.copy(RACER, os.path.join(base, "racer.py"))
        os.chmod(os.path.join(base, "racer.py"), 0o644)
        racer = subprocess.Popen(["setpriv", "--reuid=%d" % user.uid, "--regid=%d" % user.gid, "--clear-groups",
                                  PYTHON, "-I", os.path.join(base, "racer.py"), mine, "pkgs", "swap", "300"],
                                 stdout=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"})
        try:
            yield user, base, os.path.join(mine, "pkgs")
        finally:
            racer.kill()
            racer.wait()
            shutil.rmtree(base)


def test_root_never_mounts_or_names_the_root_only_folder_through_the_users_swap(raced):
    _user, base, pkgs = raced
    host = host_dict(base + "/ctx", python_package_roots=[pkgs], i18n_dbs=[])
    canary = mounted = refused = rounds = 0
    leaks = []
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        rounds += 1
        canary += HIDDEN in (old_base_path(pkgs) or "")
        context = host_context.HostContext(host)
        mounts = [mount for mount in context.base() if mount.source == "base:python_package_root"]
        refusals = [diag["message"] for diag in context.base_refusals()]
        mounted += bool(mounts)
        refused += bool(refusals)
        leaks += [mount.src for mount in mounts if HIDDEN in (mount.src or "") or mount.src != pkgs]
        leaks += [text for text in refusals if HIDDEN in text or "secret" in text]
    print("%d rounds: the old sequence reached the root-only folder %d times; the package root was mounted %d "
          "times (the user's own folder), refused %d times (a link or a swap), the root-only folder never"
          % (rounds, canary, mounted, refused))
    assert canary > 0, "the swap never won against the old sequence: the test proves nothing"
    assert mounted > 0 and refused > 0, "the swap was never met (or never missed): the test proves nothing"
    assert not leaks, leaks[:5]


def test_reached_follows_roots_links_and_refuses_the_users(raced):
    """files.reached: a link root owns in root's folder is followed (the real path, a folder); a link the user
    owns is refused naming the link alone; nothing there is FileNotFoundError."""
    _user, base, pkgs = raced
    root_link = os.path.join(base, "roots-link")
    os.symlink(os.path.join(base, "secret", HIDDEN), root_link)
    assert files.reached(root_link) == (os.path.join(base, "secret", HIDDEN), True)
    with pytest.raises(files.LinkRefused) as refused:
        for _attempt in range(10000):        # the user's link is at pkgs or at swap: one of the two is a link
            files.reached(pkgs)
            files.reached(os.path.join(os.path.dirname(pkgs), "swap"))
    assert HIDDEN not in str(refused.value) and "secret" not in str(refused.value)
    with pytest.raises(FileNotFoundError):
        files.reached(os.path.join(base, "absent", "x"))
