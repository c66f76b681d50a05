"""Root executes only what root owns (issue 49, item 2), planted for real: a user made here with useradd (removed
after), a venv made with ``python3 -m venv`` and given to that user, a ``.pth`` file in its site-packages and a
wrapper interpreter that each leave a marker named by the uid that ran them, and a ``bwrap`` script first on a
unit's PATH in the user's folder. Proven from outside: no marker of uid 0 after render (the sandbox_profile
module), the probe, the monitor and the service check (validate's bwrap); each with its canary, the same plant
in root's folders, which IS run as root (so the test sees a run when there is one).

Mutations run by hand (each made the tests below fail): base/owners.py judge_component's ``st_uid != 0`` made
``False`` (validate ran the planted bwrap as root; render, probe and monitor ran the user's wrapper as root);
python_roots.ISOLATED emptied (the .pth marker of the user appeared)."""
import json
import os
import shutil
import subprocess

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.audit import host_audit
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.base import envflags, owners
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.host import bwrap
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import proof
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.probe import run
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.profile import python_roots
from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.service import environment
from conftest import run_module
from helpers import real_user

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd"), reason="needs root and useradd")

MANIFEST = {"name": "editor", "origin": "tests", "capabilities": []}


class RootExecPlant(real_user.Plant):
    """The test's tree (real_user.Plant: root's, 0755, under /var/tmp, with its markers folder) and its user: a venv
    the user owns with a .pth plant, a wrapper interpreter the user owns, and the same two in root's folders (the
    canaries)."""

    def __init__(self, user, prefix):
        super(RootExecPlant, self).__init__(user, prefix)
        self.user_venv = self.venv("uservenv", owned=True)
        self.root_venv = self.venv("rootvenv", owned=False)
        self.user_wrapper = self.wrapper("userbin", owned=True)
        self.root_wrapper = self.wrapper("rootbin", owned=False)

    def venv(self, name, owned):
        folder = self.path(name)
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", folder], check=True)
        site = subprocess.run([folder + "/bin/python3", "-I", "-S", "-c",
                               "import sysconfig; print(sysconfig.get_paths('venv' if 'venv' in "
                               "sysconfig.get_scheme_names() else 'posix_prefix', vars={'base': %r, 'platbase': %r})"
                               "['purelib'])" % (folder, folder)], check=True, capture_output=True, text=True)
        with open(os.path.join(site.stdout.strip(), "zz-plant.pth"), "w") as handle:
            handle.write("import os; open(%r + '/pth.%%d.%%d' %% (os.getuid(), os.getpid()), 'w').close()\n"
                         % self.marks)
        if owned:
            subprocess.run(["chown", "-R", "%d:%d" % (self.uid, self.gid), folder], check=True)
        return folder + "/bin/python3"

    def wrapper(self, name, owned):
        folder = self.path(name)
        os.mkdir(folder)
        script = os.path.join(folder, "python3")
        with open(script, "w") as handle:
            handle.write('#!/bin/sh\n: > %s/wrapper.$(id -u).$$ 2>/dev/null\nexec /usr/bin/python3 "$@"\n' % self.marks)
        os.chmod(script, 0o755)
        if owned:
            os.chown(folder, self.uid, self.gid)
            os.chown(script, self.uid, self.gid)
        return script


@pytest.fixture(scope="module")
def plant():
    with real_user.planted("msx", "metnos-rootexec-", RootExecPlant) as made:
        yield made


@pytest.fixture
def fresh(plant):
    plant.clear()
    yield plant
    plant.clear()


def test_the_plants_fire_when_run_as_before(fresh):
    """Canary of the .pth plant: the venv's interpreter run as the toolkit ran it before (``-c``, site on) runs
    the .pth as root; the wrapper run by root leaves a uid-0 marker."""
    subprocess.run([fresh.user_venv, "-c", "pass"], check=True)
    subprocess.run([fresh.root_wrapper, "-c", "pass"], check=True)
    assert fresh.marks_of("pth") == {0: 1} and fresh.marks_of("wrapper") == {0: 1}


def test_render_runs_the_users_interpreter_as_the_user_without_site(fresh):
    found = python_roots.discover_python(fresh.user_venv, bwrap.default_runner)
    assert found.ran_as == fresh.uid and [p.reason for p in found.problems] == ["owned"] * len(found.problems)
    wrapped = python_roots.discover_python(fresh.user_wrapper, bwrap.default_runner)
    assert wrapped.ran_as == fresh.uid and wrapped.roots
    assert fresh.marks_of("pth") == {} and fresh.marks_of("wrapper") == {fresh.uid: 1}
    canary = python_roots.discover_python(fresh.root_wrapper, bwrap.default_runner)
    assert canary.ran_as == 0 and fresh.marks_of("wrapper") == {fresh.uid: 1, 0: 1}


def test_a_user_owned_venv_renders_the_same_profile_as_a_root_owned_one(fresh):
    """The normal Metnos layout (the service user owns its venv): the same roots and the same profile as the
    same venv owned by root (asked as root); the roots include the venv's site-packages, found without site."""
    base = {"dest": None, "fail_on_refusal": False}
    venv = os.path.dirname(os.path.dirname(fresh.user_venv))
    as_user = run_module("metnos.sandbox.sandbox_profile", dict(base, manifest=MANIFEST,
                                                                host={"python_executable": fresh.user_venv}))
    found_as_user = python_roots.discover_python(fresh.user_venv, bwrap.default_runner)
    subprocess.run(["chown", "-R", "0:0", venv], check=True)
    try:
        assert owners.problems(fresh.user_venv) == []
        as_root = run_module("metnos.sandbox.sandbox_profile", dict(base, manifest=MANIFEST,
                                                                    host={"python_executable": fresh.user_venv}))
        found_as_root = python_roots.discover_python(fresh.user_venv, bwrap.default_runner)
    finally:
        subprocess.run(["chown", "-R", "%d:%d" % (fresh.uid, fresh.gid), venv], check=True)
    assert as_user["decision"] == "wrapped" and as_user["argv"] == as_root["argv"], (as_user, as_root)
    assert (found_as_user.ran_as, found_as_root.ran_as) == (fresh.uid, 0)
    assert found_as_user[:2] == found_as_root[:2]
    assert [p for p in found_as_user.roots if p.startswith(venv + "/") and p.endswith("site-packages")]
    assert fresh.marks_of("pth") == {}


def test_render_refuses_an_interpreter_no_one_user_owns(fresh):
    """A root-owned folder others can write: no owner to run it as, so it is not run (profile_python_not_run,
    naming the folder, with a fix that runs as pasted); the wrapper's marker is absent."""
    folder = fresh.path("shared")
    os.mkdir(folder)
    os.chmod(folder, 0o777)
    script = os.path.join(folder, "python3")
    shutil.copy(fresh.root_wrapper, script)
    try:
        res = run_module("metnos.sandbox.sandbox_profile", {"manifest": MANIFEST,
                                                            "host": {"python_executable": script}})
        assert res["failed"] and res["code"] == "profile_python_not_run", res
        assert res["diagnostics"][0]["remediation"] == ["chmod o-w %s" % folder]
        drift = host_audit.profile_drift([MANIFEST], {"python_executable": script}, fresh.top,
                                         envflags.status(None, {}))
        assert [(d["state"], folder in d["message"]) for d in drift] == [("error", True)]     # the audit, the monitor
        assert fresh.marks_of("wrapper") == {}
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("interpreter,ran", [("user_wrapper", False), ("root_wrapper", True)])
def test_the_probe_never_runs_the_users_interpreter_as_root(fresh, interpreter, ran):
    """The probe as root (probe_user root) on the user's interpreter: not started (probe_python_not_roots), its
    roots asked as the user; the canary (root's wrapper) is run as root."""
    python = getattr(fresh, interpreter)
    out = run.probe_service({"unit": None, "probe_user": "root", "python": python, "timeout": 30.0,
                             "context": "direct"}, bwrap.default_runner)
    codes = [d["code"] for d in out["diagnostics"]]
    assert ("probe_python_not_roots" in codes) is not ran, codes
    assert (0 in fresh.marks_of("wrapper")) is ran, fresh.marks_of("wrapper")


def test_the_probe_passes_with_the_users_own_venv(fresh):
    """The normal Metnos layout: the service user owns its venv; the probe as that user passes (roots found as the
    user, the payload on the venv's interpreter with -I -S: the .pth plant never runs)."""
    out = run.probe_service({"unit": None, "probe_user": fresh.user, "python": fresh.user_venv,
                             "host": {"python_executable": fresh.user_venv}, "timeout": 30.0, "context": "direct"},
                            bwrap.default_runner)
    assert out["passed"] is True, [d["code"] for d in out["diagnostics"]]
    assert fresh.marks_of("pth") == {}


def _planted_bwrap(plant, owned):
    folder = plant.path("ubin" if owned else "rbin")
    os.makedirs(folder, exist_ok=True)
    script = os.path.join(folder, "bwrap")
    with open(script, "w") as handle:
        handle.write("#!/bin/sh\n: > %s/bwrap.$(id -u).$$ 2>/dev/null\necho 'bubblewrap 0.8.0'\n" % plant.marks)
    os.chmod(script, 0o755)
    if owned:
        os.chown(folder, plant.uid, plant.gid)
    return folder


@pytest.mark.parametrize("owned", [True, False])
def test_the_probe_never_runs_the_users_bwrap_as_root(fresh, owned, monkeypatch):
    """The bwrap the probe finds first on its PATH, in the user's folder: not started as root
    (bwrap_not_run_not_roots); the canary (root's folder) is started."""
    folder = _planted_bwrap(fresh, owned)
    monkeypatch.setenv("PATH", folder + ":/usr/bin:/bin")
    out = run.probe_service({"unit": None, "probe_user": "root", "python": "/usr/bin/python3", "timeout": 30.0,
                             "context": "direct"}, bwrap.default_runner)
    codes = [d["code"] for d in out["diagnostics"]]
    assert ("bwrap_not_run_not_roots" in codes) is owned, codes
    assert (0 in fresh.marks_of("bwrap")) is not owned, fresh.marks_of("bwrap")


@pytest.mark.parametrize("interpreter,ran", [("user_wrapper", False), ("root_wrapper", True)])
def test_the_monitor_never_runs_the_users_interpreter_as_root(fresh, interpreter, ran, tmp_path):
    python = getattr(fresh, interpreter)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"schema": proof.CONFIG_SCHEMA, "audit": {
        "unit": "", "probe": True, "timeout": 30.0, "manifests": [MANIFEST],
        "host": {"python_executable": python}, "profile_dir": str(tmp_path)}}))
    (tmp_path / "textfile").mkdir()
    outputs = proof.Outputs(str(tmp_path / "textfile"), str(tmp_path / "last.json"), lambda fields: None)
    proof.run(str(config), outputs)
    assert (0 in fresh.marks_of("wrapper")) is ran, fresh.marks_of("wrapper")
    assert fresh.marks_of("pth") == {}


def _unit(plant, path_text):
    folder = plant.path("root", "etc", "systemd", "system")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "metnos.service"), "w") as handle:
        handle.write("[Service]\nUser=%s\nEnvironment=PATH=%s\nExecStart=/usr/bin/true\n" % (plant.user, path_text))
    return {"unit": "metnos.service", "mode": "disk", "root": plant.path("root"), "admin_path": "/usr/bin:/bin"}


@pytest.mark.parametrize("owned", [True, False])
def test_validate_never_runs_a_users_bwrap_as_root(fresh, owned):
    """The unit's PATH finds the planted bwrap first: in the user's folder it is judged from the filesystem
    (bwrap_not_run_not_roots names the folder and its owner, with the chown that heals it) and never run; the
    canary, the same script in root's folder, is run (--version, --help) as root."""
    folder = _planted_bwrap(fresh, owned)
    found = environment.inspect(_unit(fresh, folder + ":/usr/bin:/bin"), bwrap.default_runner)
    mine = [d for d in found.result["diagnostics"] if d["code"] == "bwrap_not_run_not_roots"]
    if owned:
        assert fresh.marks_of("bwrap") == {}
        assert [(d["details"]["path"], d["details"]["owner"], d["remediation"]) for d in mine] == [
            (folder, fresh.user, ["chown -h root:root %s" % folder])]
    else:
        assert mine == [] and fresh.marks_of("bwrap").get(0)


@pytest.mark.parametrize("interpreter,refused", [("user_wrapper", True), ("relative", True), ("root_wrapper", False)])
def test_the_monitors_own_interpreter_must_be_roots(fresh, interpreter, refused, tmp_path):
    """The role hands metnos_monitor_install its unit's interpreter: the user's (or a bare name, as
    ``env python`` would find) is refused before anything is installed (monitor_python_not_roots, with the fix);
    the canary, root's, passes that check (and then fails on the made-up bundle, another code)."""
    python = "python3" if interpreter == "relative" else getattr(fresh, interpreter)
    res = run_module("metnos.sandbox.metnos_monitor_install", {"prefix": str(tmp_path / "prefix"), "bundle": "x",
                                                               "entry_point": "x", "python": python})
    assert res["failed"] and (res["code"] == "monitor_python_not_roots") is refused, res
    if interpreter == "user_wrapper":
        assert res["diagnostics"][0]["remediation"] == ["chown -h root:root %s" % os.path.dirname(python)]
    assert not os.path.exists(str(tmp_path / "prefix")) and fresh.marks_of("wrapper") == {}
