"""The Python dependency locks (scripts/lock.py, ``make lock``): what a fresh machine installs is what was
tested. Every distribution of every venv the project makes is pinned with its sha256, the venv these tests run
in is its lock and nothing else, and each human-edited input agrees with its lock."""
import glob
import importlib.util
import os
import sys

import pytest

from helpers.paths import ROOT


def _lock_module():
    spec = importlib.util.spec_from_file_location("lock", os.path.join(ROOT, "scripts", "lock.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lock = _lock_module()


def _inputs(path):
    """{name: version} of the exact pins an input file names (ranges are the resolver's business)."""
    found = {}
    with open(os.path.join(ROOT, path)) as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if "==" in line and not line.startswith("-"):
                name, version = line.split("==", 1)
                found[lock.normalize(name.split("[", 1)[0])] = version.strip()
    return found


def _environment(version):
    """Marker variables of a CPython ``version`` on Linux x86_64 (packaging's, with the version replaced)."""
    from packaging.markers import default_environment
    env = dict(default_environment())
    env.update(python_version=version, python_full_version=version + ".0", implementation_name="cpython",
               platform_python_implementation="CPython", sys_platform="linux", platform_system="Linux")
    return env


def test_the_venv_is_the_test_lock():
    """What the tests run in was installed from requirements-test.txt, nothing more, nothing else (a
    distribution added by hand, another version, or one the lock lost makes this fail)."""
    assert sys.prefix != sys.base_prefix, "the tests run in the project's venv (make test)"
    assert lock.differences(os.path.join(ROOT, "requirements-test.txt")) == []


def test_differences_names_what_is_off(tmp_path, monkeypatch):
    """The comparison itself: a missing, an extra and a different distribution each named."""
    path = tmp_path / "some.txt"
    path.write_text("alpha==1.0 \\\n    --hash=sha256:%s\nbeta==2.0 --hash=sha256:%s\n" % ("a" * 64, "b" * 64))
    monkeypatch.setattr(lock, "installed", lambda: {"beta": "2.1", "gamma": "3"})
    assert lock.differences(str(path)) == ["missing: alpha==1.0", "beta: 2.1 installed, 2.0 locked",
                                           "not in some.txt: gamma==3"]


@pytest.mark.parametrize("source, target, options", lock.LOCKS, ids=[entry[1] for entry in lock.LOCKS])
def test_every_entry_is_pinned_with_its_hash_and_the_input_agrees(source, target, options):
    """Each lock parses with a pin and a sha256 on every entry (``pins`` refuses anything else), and every
    exact pin of its input is in it at the same version: an input edited without ``make lock`` fails here."""
    env = _environment("3.13" if "3.13" in options else "3.12")
    pinned = lock.pins(os.path.join(ROOT, target), env)
    for name, version in _inputs(source).items():
        assert pinned.get(name) == version, (target, name, pinned.get(name), version)


def test_pins_refuses_an_entry_without_a_hash(tmp_path):
    path = tmp_path / "some.txt"
    path.write_text("alpha==1.0 --hash=sha256:%s\nbeta==2.0\n" % ("a" * 64))
    with pytest.raises(ValueError, match="entry 2: not a pinned requirement with its sha256"):
        lock.pins(str(path))


def test_one_lock_serves_every_python_bootstrap_accepts():
    """requirements.txt and requirements-test.txt are universal: for 3.12, 3.13 and 3.14 the same
    versions, each input's pins among them, and the controller's lock inside the test lock."""
    seen = []
    for version in ("3.12", "3.13", "3.14"):
        env = _environment(version)
        controller = lock.pins(os.path.join(ROOT, "requirements.txt"), env)
        test = lock.pins(os.path.join(ROOT, "requirements-test.txt"), env)
        assert {name: test.get(name) for name in controller} == controller
        seen.append((controller, test))
    assert all(pair == seen[0] for pair in seen)


def test_the_sanity_lock_is_what_ansible_test_installs():
    """scripts/sanity.py gives ansible-test's venvs the wheels of requirements-sanity.txt only: its input
    must be ansible-test's own pins (the bootstrapped pip and every sanity test's requirements)."""
    import ansible_test
    data = os.path.join(os.path.dirname(ansible_test.__file__), "_data", "requirements")
    theirs = {}
    for path in glob.glob(os.path.join(data, "sanity.*.txt")):
        with open(path) as handle:
            for line in handle:
                if "==" in line and not line.startswith("#"):
                    name, version = line.strip().split("==", 1)
                    theirs[lock.normalize(name)] = version
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        import sanity
    finally:
        sys.path.pop(0)
    theirs["pip"] = sanity.bootstrap_pip_version()
    assert _inputs("requirements-sanity.in") == theirs


def test_the_venv_installer_reads_the_locks():
    """bootstrap installs the locks in pip's hash-checking mode, without resolving anything itself."""
    with open(os.path.join(ROOT, "scripts", "bootstrap.sh")) as handle:
        text = handle.read()
    assert "--require-hashes --no-deps --only-binary :all: -r \"$reqs\"" in text
    assert "reqs=requirements.txt" in text and "reqs=requirements-test.txt" in text
