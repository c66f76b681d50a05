"""A stored profile and the launcher that runs it, shared by the launcher's tests
(tests/integration/test_stored_profile_exec.py) and the fault suite (tests/system/test_faults.py): the launcher as
the metnos_sandbox role of the collection installed from the built tarball puts it on this host (``shipped``), and
an executor ``ex`` rendered by the sandbox_profile module into a profile folder (``stored``): two fixtures, defined
here once, that a test module names (``shipped = stored_profiles.shipped``)."""
import json
import os
import pwd
import shutil
import subprocess
import tempfile

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import envflags
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap
from helpers import installed_collection
from helpers.ansible_run import adhoc, ansible_env
from helpers.fake_host import host_dict

NOBODY = pwd.getpwnam("nobody")
MAIN = "import sys\nopen(sys.argv[1] if len(sys.argv) > 1 else '%s/data/w/out', 'w').write('ran')\n"
KILLER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kill_at_second_rename.py")


def run_module(module, args):
    """One module on localhost through `ansible`: its result dict (with the process's ``_rc`` and ``_stderr``)."""
    result, proc = adhoc("localhost", module, args or None, env=ansible_env())
    result["_rc"] = proc.returncode
    result["_stderr"] = proc.stderr
    return result


def host_of(base):
    return host_dict(base, writable_roots=[base + "/data"], python_executable="/usr/bin/python3")


def render(base, host, run_as=None, capabilities=None, dest=None):
    """sandbox_profile of the executor ``ex`` (a write grant to <base>/data/w unless said) into ``dest``
    (<base>/profiles unless said; False: none, nothing written)."""
    args = {"manifest": {"name": "ex", "origin": "t", "capabilities": capabilities or ["fs:write:%s/data/w" % base]},
            "host": host, "discover_python_roots": False}
    if dest is not False:
        args["dest"] = dest or base + "/profiles"
    if run_as:
        args["run_as"] = run_as
    return run_module("metnos.sandbox.sandbox_profile", args)


def run_stored(base, user, *argv, launcher=None, profile=None):
    """The launcher on a stored profile (<base>/profiles/ex.json unless said), as ``user`` (None: root)."""
    cmd = list(argv) or [launcher, "--profile", profile or base + "/profiles/ex.json"]
    if user:
        cmd = ["setpriv", "--reuid=%s" % user, "--regid=nogroup", "--clear-groups"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def audit_states(base, profile_dir, capabilities):
    """The audit's states of the manifest ``ex`` (these capabilities) against ``profile_dir`` (host_audit.profile_drift,
    what the audit payload and the monitor run on the host)."""
    status = envflags.status(bwrap.which("bwrap", "/usr/bin:/bin"), {})
    manifest = {"name": "ex", "origin": "t", "capabilities": capabilities}
    return host_audit.profile_drift([manifest], host_of(base), profile_dir, status)


@pytest.fixture(scope="module")
def shipped():
    """The launcher installed by the role from the installed tarball, in a folder the user nobody can traverse (a
    fixture: a test file names it, ``shipped = stored_profiles.shipped``)."""
    top = tempfile.mkdtemp(prefix="metnos-exec-", dir="/var/tmp")
    os.chmod(top, 0o755)
    installed_collection.install(top)
    link = os.path.join(top, "sbin", "metnos-sandbox-exec")
    os.makedirs(os.path.dirname(link))
    proc = installed_collection.run_exec_role(top, os.path.join(top, "lib", "metnos-sandbox-exec"), link)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    yield link
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def stored():
    """A folder with the executor ``ex`` (it writes 'ran' to <base>/data/w/out) and its profile rendered into
    <base>/profiles, run as nobody (a fixture: a test file names it, ``stored = stored_profiles.stored``)."""
    base = tempfile.mkdtemp(prefix="metnos-st-", dir="/var/tmp")
    os.chmod(base, 0o755)
    for rel in ("executors/ex", "data/w", "profiles"):
        os.makedirs(os.path.join(base, rel))
    os.chmod(base + "/data", 0o777)
    os.chmod(base + "/data/w", 0o777)
    with open(base + "/executors/ex/main.py", "w") as handle:
        handle.write(MAIN % base)
    res = render(base, host_of(base), run_as="nobody")
    assert res["decision"] == "wrapped" and res["descriptors"], res.get("diagnostics")
    assert res["run_as"] == {"user": "nobody", "uid": NOBODY.pw_uid, "gid": NOBODY.pw_gid}, res
    yield base
    shutil.rmtree(base, ignore_errors=True)


def wider_result(base):
    """The sandbox_profile result of ``ex`` with a wider grant (<base>/data, not <base>/data/w), rendered without
    a folder, saved as JSON for kill_at_second_rename.py."""
    wider = render(base, host_of(base), run_as="nobody", capabilities=["fs:write:%s/data" % base], dest=False)
    assert wider["decision"] == "wrapped", wider.get("diagnostics")
    with open(base + "/wider.json", "w") as handle:
        json.dump(dict((k, v) for k, v in wider.items() if not k.startswith("_")), handle)
    return wider
