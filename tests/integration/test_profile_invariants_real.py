"""A sample of generated (manifest, host tree with symlinks) cases run in real bwrap, as root and as
an unprivileged user (nobody, through setpriv): from inside, the payload tries to create a file in
every folder of the tree (and in the folders its symlinks lead to, and a few system folders) and to
append to every file of the tree; from outside, the test then looks for what was really written on
the host. Every write that landed must be inside a declared writable scope (resolved) and outside
every read-only base tree; what the payload could write must be a writable mount or its private
/tmp. The cases come from the same hypothesis strategy as tests/unit/test_profile_invariants.py
(derandomized: the same sample on every run)."""
import os
import shutil
import tempfile
import uuid

import pytest
from hypothesis import HealthCheck, assume, given, settings

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import host_context, renderer
from helpers import profile_oracle, trees

ACTIVE = {"bwrap_available": True, "bwrap_path": shutil.which("bwrap") or "/usr/bin/bwrap",
          "disabled_via_env": False, "active": True}
SYSTEM_DIRS = ["/", "/etc", "/usr", "/usr/lib", "/run", "/root", "/home", "/var/tmp", "/srv", "/opt"]
PAYLOAD = r'''
import json, os, sys
spec = json.loads(sys.argv[1])
name = ".metnos-w-" + spec["token"]
out = []
for path, append in spec["candidates"]:
    try:
        if os.path.isdir(path):
            fd = os.open(os.path.join(path, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
            out.append(path)
        elif append:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            os.write(fd, spec["token"].encode())
            os.close(fd)
            out.append(path)
    except OSError:
        pass
sys.stdout.write(json.dumps(out))
'''


@pytest.fixture(scope="module")
def base():
    path = tempfile.mkdtemp(prefix="metnos-inv-", dir="/var/tmp")      # reachable by nobody (0755 parents)
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def tree_paths(root):
    """Every entry of the tree (symlinks included, not followed), and the folders its links lead to."""
    paths, targets = [], set(SYSTEM_DIRS)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            paths.append(path)
            if os.path.islink(path) and os.path.isdir(path):
                targets.add(os.path.realpath(path))
    return [root] + sorted(paths), sorted(targets)


def run(argv, spec, user, descriptors=None):
    return trees.run_inside(argv, PAYLOAD, spec, user, descriptors=descriptors)


@settings(max_examples=16, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much,
                                 HealthCheck.too_slow])
@given(case=profile_oracle.cases())
def test_generated_profiles_hold_in_real_bwrap(base, case):
    links, manifest, invocation = case
    root, host, manifest, invocation = profile_oracle.build(base, links, manifest, invocation, mode=0o777)
    try:
        prof = renderer.render_safe(manifest, host_context.HostContext(host), invocation, ACTIVE)
        assume(prof["decision"] == "wrapped")
        assert profile_oracle.violations(prof["argv"], manifest, invocation, host, prof["descriptors"]) == []
        trees = profile_oracle.protected(host)
        allowed = [w for w in profile_oracle.declared_writable(manifest, invocation, host)
                   if not any(profile_oracle.related(w, t) for t in trees)]
        argv = prof["argv"]
        mounts = [(argv[i + 2], a) for i, a in enumerate(argv) if a in ("--bind", "--ro-bind", "--symlink")]
        mounts += [(argv[i + 1], a) for i, a in enumerate(argv) if a in ("--tmpfs", "--proc", "--dev")]
        paths, targets = tree_paths(root)
        for user in (None, "nobody"):
            token = uuid.uuid4().hex
            candidates = [(p, os.path.realpath(p).startswith(root + "/")) for p in paths + targets]
            inside = run(prof["argv"], {"token": token, "candidates": candidates}, user, prof["descriptors"])
            for path in inside:
                # what the payload could write is below a writable bind, the private /tmp or /dev
                # (bwrap's own tmpfs), or in the folders bwrap creates on its private root to hold the
                # mount points; never below a read-only bind
                covering = sorted((d for d, _k in mounts if profile_oracle.under(path, d)), key=len)
                kind = dict(mounts)[covering[-1]] if covering else "skeleton"
                assert kind in ("--bind", "--tmpfs", "--dev", "skeleton"), (user, path, kind, argv)
            landed = []
            for folder in sorted(set(os.path.realpath(p) for p in paths + targets if os.path.isdir(p))):
                marker = os.path.join(folder, ".metnos-w-" + token)
                if os.path.lexists(marker):
                    landed.append(folder)
                    os.unlink(marker)
            for path in paths:
                real = os.path.realpath(path)
                if os.path.isfile(real) and real.startswith(root + "/"):
                    with open(real) as handle:
                        if token in handle.read():
                            landed.append(real)
            for where in landed:         # evidence from outside: every write landed where it was declared
                assert any(profile_oracle.under(where, w) for w in allowed), (user, where, allowed, prof["argv"])
    finally:
        profile_oracle.remove(root)
