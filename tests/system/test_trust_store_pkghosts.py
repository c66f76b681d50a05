"""A bwrap verification kept from one audit to the next, with the real rpm and pacman databases
(host/trust_store.py; Debian's dpkg is tested in tests/unit/test_trust_store.py and
tests/system/test_audit_one_inspection.py).

The hosts are the dnf and pacman images of tests/system/test_pkghosts.py (Debian 13 with Debian's rpm
4.20 + dnf 4.23, pacman 7.0, a local signed repository). bubblewrap is installed from it by the real
package manager; the audit's payload (the real bootstrap and core, as metnos_audit sends them) runs as
root three times, the package manager being a wrapper on PATH that logs each call and runs the real one:
- the first audit asks the package manager, the second asks nothing and says the same: rpm's readers
  write SQLite's -shm index and touch the -wal journal's ctime at every ``rpm -V``, which must not count
  as a change of the database;
- a real change of the database (``dnf reinstall``; pacman's ``mtree`` of the package rewritten in place)
  is asked again;
- bwrap itself written: asked again, and found modified."""
import subprocess
import uuid

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import transport
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.options import spec
from conftest import PODMAN_ENV, podman
from helpers.paths import CORE

IMAGES = {"rpm": "localhost/metnos-pkghost:dnf", "pacman": "localhost/metnos-pkghost:pacman"}
INSTALL = {"rpm": "dnf -y -q install bubblewrap", "pacman": "pacman -Sy --noconfirm bubblewrap"}
CHANGE = {"rpm": "dnf -y -q reinstall bubblewrap",
          "pacman": "f=$(ls -d /var/lib/pacman/local/bubblewrap-[0-9]*/mtree); cp $f /tmp/m && cat /tmp/m > $f"}
VERIFY = {"rpm": "rpm -V bubblewrap", "pacman": "pacman -Qkk bubblewrap"}
WRAPPER = "#!/bin/sh\necho \"%s $*\" >> /tmp/pm.log\nexec /usr/bin/%s \"$@\"\n"


@pytest.fixture(params=sorted(IMAGES))
def host(request):
    manager = request.param
    if podman("image", "exists", IMAGES[manager], check=False).returncode != 0:
        pytest.skip("%s is not built (scripts/build-pkghost-images.sh)" % IMAGES[manager])
    name = "metnos-trust-%s-%s" % (manager, uuid.uuid4().hex[:8])
    podman("run", "-d", "--privileged", "--name", name, IMAGES[manager], "sleep", "900")
    try:
        sh(name, INSTALL[manager] + " >/dev/null 2>&1")
        sh(name, "printf '%%s' '%s' > /usr/local/bin/%s && chmod 0755 /usr/local/bin/%s"
           % (WRAPPER % (manager, manager), manager, manager))
        yield manager, name
    finally:
        podman("rm", "-f", "-t", "0", name, check=False)


def sh(name, script):
    proc = podman("exec", name, "sh", "-c", script, check=False)
    assert proc.returncode == 0, (script, proc.stdout, proc.stderr)
    return proc.stdout


def _audit(name):
    """One audit by the real payload as root, its message on stdin as metnos_audit sends it: (the host
    record, the package-manager commands it ran)."""
    sh(name, "rm -f /tmp/pm.log")
    frame = transport.new_frame()
    options = spec.with_defaults(spec.AUDIT, {"unit": "", "manifests": [], "probe": True})  # complete, as the action's
    for controller_only in ("result", "from_vars", "manifest_sources"):      # what the action never ships
        options.pop(controller_only, None)
    data = transport.message(frame, options, transport.build_payload(CORE))
    proc = subprocess.run(["podman", "exec", "-i", name, "sh", "-c", transport.stdin_command("python3")], input=data,
                          capture_output=True, env=PODMAN_ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr
    record = transport.unframe(proc.stdout.decode("utf-8", "replace"), frame)
    return record, sh(name, "cat /tmp/pm.log 2>/dev/null || true").splitlines()


def _trust(record):
    return record["probe"]["bwrap_trust"]["bwrap"]


def test_the_next_audit_asks_the_real_package_manager_nothing_until_something_changes(host):
    manager, name = host
    first, asked = _audit(name)
    assert _trust(first)["state"] == "packaged" and VERIFY[manager] in asked, (asked, _trust(first))
    second, asked = _audit(name)
    assert asked == [] and _trust(second) == _trust(first), asked
    assert sh(name, "ls /run/metnos-audit").count(".trust") == 1
    sh(name, "{ %s; } >/dev/null 2>&1" % CHANGE[manager])
    third, asked = _audit(name)
    assert VERIFY[manager] in asked and _trust(third)["state"] == "packaged", (asked, _trust(third)["detail"])
    assert _audit(name)[1] == []
    sh(name, "printf x >> /usr/bin/bwrap")
    fourth, asked = _audit(name)
    assert VERIFY[manager] in asked and _trust(fourth)["state"] == "modified", (asked, _trust(fourth))
    assert "probe_bwrap_modified" in [d["code"] for d in fourth["diagnostics"]]
