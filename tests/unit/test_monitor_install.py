"""The core the monitor runs, as one release (monitor_install, the metnos_monitor_install module): the same
digest on the controller (the role's filter) and on an installed copy; the bundle is unpacked only when its
sources are the release it names, bounded, file names exact; root's alone, written aside then renamed, every
other release removed, nothing changed when it is there, nothing written in check mode."""
import base64
import json
import os
import shutil
import zlib

import pytest

from ansible_collections.metnos.sandbox.plugins.module_utils.metnos_sandbox.monitor import core_install
from helpers import faces
from helpers.paths import CORE, ROOT

ENTRY = open(os.path.join(ROOT, "roles", "metnos_sandbox", "files", "metnos-sandbox-monitor.py")).read()


def bundle_of(sources, version=None):
    data = {"version": version or core_install.version_of(dict((k, v.encode()) for k, v in sources.items())),
            "sources": sources}
    return base64.b64encode(zlib.compress(json.dumps(data).encode())).decode()


def tree(path):
    """{relative path: (mode, uid, gid)} below ``path``."""
    out = {}
    for base, dirs, names in os.walk(path):
        for name in dirs + names:
            full = os.path.join(base, name)
            st = os.lstat(full)
            out[os.path.relpath(full, path)] = (oct(st.st_mode & 0o7777), st.st_uid, st.st_gid)
    return out


def test_release_is_the_same_on_the_controller_and_on_an_installed_copy(tmp_path):
    rel = core_install.release(CORE)
    assert rel["version"] == "%s+%s" % (core_install.TOOLKIT_VERSION, rel["digest"]) and len(rel["digest"]) == 12
    assert "monitor/proof.py" in rel["files"] and "__init__.py" in rel["files"] and "bundle" not in rel
    filters = faces.load("filter_plugins/metnos_sandbox.py", "mfilters_release")
    shown = filters.metnos_monitor_release(CORE)
    assert dict((k, shown[k]) for k
                in rel) == rel and core_install.unpack(shown["bundle"])["version"] == rel["version"]
    copy = tmp_path / "metnos_sandbox"
    shutil.copytree(CORE, str(copy), ignore=shutil.ignore_patterns("__pycache__"))
    assert core_install.release(str(copy)) == rel
    with open(str(copy / "probe" / "run.py"), "a") as handle:
        handle.write("\n")
    assert core_install.release(str(copy))["digest"] != rel["digest"]
    (copy / "probe" / "run.py").unlink()
    assert core_install.release(str(copy))["digest"] != rel["digest"]


def test_release_filter_refuses_what_is_not_a_directory():
    from ansible.errors import AnsibleFilterError
    filters = faces.load("filter_plugins/metnos_sandbox.py", "mfilters_release2")
    with pytest.raises(AnsibleFilterError, match="metnos_monitor_release: expected the core's directory"):
        filters.metnos_monitor_release("/nonexistent")


def test_install_is_one_release_root_s_alone_and_idempotent(tmp_path):
    prefix = str(tmp_path / "prefix")
    bundle = core_install.release(CORE, bundle=True)["bundle"]
    version = core_install.release(CORE)["version"]
    check = core_install.install(prefix, bundle, ENTRY, check_mode=True)
    assert check["changed"] is True and check["installed"] is True and not os.path.exists(prefix)
    first = core_install.install(prefix, bundle, ENTRY)
    assert first == dict(check) and os.listdir(prefix) == [version]
    listing = tree(os.path.join(prefix, version))
    assert listing["metnos-sandbox-monitor.py"] == ("0o755", 0, 0) and listing["metnos_sandbox"] == ("0o755", 0, 0)
    assert set(v for k, v in listing.items() if k.startswith("metnos_sandbox/") and k.endswith(".py")) == \
        {("0o644", 0, 0)}
    assert set(v for k, v in listing.items() if k.startswith("metnos_sandbox/") and not k.endswith(".py")) == \
        {("0o755", 0, 0)}                                                          # the package folders
    assert core_install.release(os.path.join(prefix, version, "metnos_sandbox"))["version"] == version
    assert core_install.install(prefix, bundle, ENTRY)["changed"] is False
    assert core_install.install(prefix, bundle, ENTRY, check_mode=True)["changed"] is False


def test_other_releases_and_a_tampered_one_are_replaced(tmp_path):
    prefix = tmp_path / "prefix"
    bundle = core_install.release(CORE, bundle=True)["bundle"]
    folder = core_install.install(str(prefix), bundle, ENTRY)["folder"]
    (prefix / "0.0.9+000000000000" / "metnos_sandbox").mkdir(parents=True)
    (prefix / "stray").write_text("x")
    with open(os.path.join(folder, "metnos_sandbox", "audit", "host_audit.py"), "a") as handle:
        handle.write("# changed by hand\n")
    check = core_install.install(str(prefix), bundle, ENTRY, check_mode=True)
    assert check["installed"] is True and sorted(os.path.basename(p) for p in check["removed"]) == [
        "0.0.9+000000000000", "stray"]
    assert len(os.listdir(str(prefix))) == 3                                     # check mode wrote nothing
    core_install.install(str(prefix), bundle, ENTRY)
    assert os.listdir(str(prefix)) == [os.path.basename(folder)]
    assert core_install.release(os.path.join(folder, "metnos_sandbox"))["version"] == os.path.basename(folder)
    os.chmod(os.path.join(folder, "metnos_sandbox", "probe", "run.py"), 0o664)          # a mode drifts: repaired too
    assert core_install.install(str(prefix), bundle, ENTRY)["installed"] is True
    assert core_install.install(str(prefix), bundle, ENTRY[:-1]
                                + "# other\n")["installed"] is True   # another entry point


@pytest.mark.parametrize("bundle,why", [
    ("not base64!", "the bundle cannot be read"),
    (base64.b64encode(b"not zlib").decode(), "the bundle cannot be read"),
    (base64.b64encode(zlib.compress(b"[]")).decode(), "the bundle holds no sources"),
    (bundle_of({"a.py": "x = 1\n"}, version="0.1.0+000000000000"), "its sources are 1.0.0+"),
    (bundle_of({"../../etc/cron.d/x.py": "x"}), "not a source file of the core"),
    (bundle_of({"evil.sh": "x"}), "not a source file of the core"),
    (base64.b64encode(zlib.compress(b" " * (core_install.MAX_BUNDLE_BYTES + 10))).decode(), "unpacks to more than"),
])
def test_a_bundle_that_is_not_its_release_is_refused_before_anything_is_written(tmp_path, bundle, why):
    with pytest.raises(core_install.ReleaseError, match=why.replace("+", r"\+")):
        core_install.install(str(tmp_path / "prefix"), bundle, ENTRY)
    assert not (tmp_path / "prefix").exists()


@pytest.mark.parametrize("prefix", ["relative/dir", "/", "/usr/local/../lib/x"])
def test_the_prefix_is_a_plain_absolute_folder(prefix):
    with pytest.raises(core_install.ReleaseError, match="prefix must be"):
        core_install.install(prefix, core_install.release(CORE, bundle=True)["bundle"], ENTRY)


def test_the_release_names_the_collection_s_version():
    """The monitor's release (and the metrics' toolkit_version) carry the collection's own version, galaxy.yml's."""
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = [line.split(":", 1)[1].strip() for line in handle if line.startswith("version:")]
    assert version == [core_install.TOOLKIT_VERSION]
