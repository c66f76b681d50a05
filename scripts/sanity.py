#!/usr/bin/env python3
"""``ansible-test sanity`` on the BUILT collection (the tarball of ``make collection``), as Ansible's
own CI runs it on a collection, on this machine (``--local``), offline from Galaxy:

    python scripts/sanity.py [TARBALL] [-- ANSIBLE-TEST OPTIONS ...]

- The tarball is unpacked into a temporary ``ansible_collections/metnos/sandbox/`` outside the checkout
  (inside it, ansible-test would take the checkout's git index for the collection's file list).
- The tests' Python requirements are the pins of requirements-test.in (ansible-test's own, for this
  ansible-core), installed from the lock in the venv that runs this script: no ``--requirements``.
- The import test builds throw-away virtualenvs and bootstraps pip in them with get-pip.py, which
  ansible-test fetches from a host build machines cannot reach: a stand-in in its cache runs the pip
  wheel of the same version instead. What those venvs are given comes from a wheelhouse of the lock
  requirements-sanity.txt (every wheel downloaded with ``--require-hashes``, per Python found), and pip
  in them is configured to take nothing else (``no-index``, ``find-links`` the wheelhouse, in the pip
  configuration of ansible-test's HOME). That HOME is ``.ansible/test-home`` in the checkout, so nothing
  is written to the user's home.
- The multiple-version tests (compile, import) run on every Python ansible-core 2.21 supports for
  modules that is found here and runs (a broken pyenv shim is skipped): the controller's and Debian 12's
  /usr/bin/python3 at least.
"""
import glob
import os
import re
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOME = os.path.join(ROOT, ".ansible", "test-home")
SANITY_LOCK = os.path.join(ROOT, "requirements-sanity.txt")
VERSIONS = ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14")
CANDIDATES = ("/usr/bin/python{v}", "/usr/local/bin/python{v}",
              os.path.expanduser("~/.pyenv/versions/{v}*/bin/python{v}"))

STAND_IN = '''"""Stand-in for get-pip.py {version}, written by scripts/sanity.py: ansible-test downloads
get-pip.py from a host this machine cannot reach. It runs pip {version} from its wheel to install
what get-pip would."""
import runpy
import sys

sys.path.insert(0, {wheel!r})
sys.argv = ["pip", "install"] + [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
runpy.run_module("pip", run_name="__main__", alter_sys=True)
'''


def _tool(name):
    path = os.path.join(os.path.dirname(sys.executable), name)
    return path if os.path.exists(path) else name


def bootstrap_pip_version():
    """The pip version ansible-test bootstraps into its virtualenvs (python_requirements.get_venv_packages)."""
    import ansible_test
    src = os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")
    with open(src) as handle:
        found = re.findall(r"\bpip='([0-9][0-9.]*)'", handle.read())
    if len(found) != 1:
        raise SystemExit("sanity: cannot tell which pip ansible-test bootstraps (%s): update scripts/sanity.py" % src)
    return found[0]


def wheelhouse(versions, home=HOME, lock=SANITY_LOCK):
    """The wheels of the lock for each Python version, downloaded with their sha256 checked (pip's own
    hash-checking mode), and a pip configuration in ansible-test's HOME that installs from them only."""
    house = os.path.join(home, "wheelhouse")
    for version in versions:
        abi = "cp" + version.replace(".", "")
        # every sanity test's tools for every version (only the import test runs on them all; the others'
        # tools may want a newer Python, hence --ignore-requires-python: ansible-test installs per test)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                        "--require-hashes", "--no-deps", "--only-binary", ":all:", "--ignore-requires-python",
                        "--python-version", version,
                        "--implementation", "cp", "--abi", abi, "-r", lock, "-d", house], check=True)
    config = os.path.join(home, ".config", "pip", "pip.conf")
    os.makedirs(os.path.dirname(config), exist_ok=True)
    with open(config, "w") as handle:
        handle.write("# written by scripts/sanity.py: the sanity venvs take the locked wheels only\n"
                     "[global]\nno-index = true\nfind-links = %s\n" % house)
    return house


def get_pip_stand_in(house, home=HOME):
    version = bootstrap_pip_version()
    cache = os.path.join(home, ".ansible", "test", "cache")
    os.makedirs(cache, exist_ok=True)
    target = os.path.join(cache, "get_pip_%s.py" % version.replace(".", "_"))
    wheels = glob.glob(os.path.join(house, "pip-%s-*.whl" % version))
    if len(wheels) != 1:
        raise SystemExit("sanity: ansible-test bootstraps pip %s; requirements-sanity.in must pin it (make lock)"
                         % version)
    with open(target, "w") as handle:
        handle.write(STAND_IN.format(version=version, wheel=wheels[0]))
    return target


def pythons(bindir):
    """Link every working interpreter of VERSIONS into ``bindir`` (ansible-test finds them as pythonX.Y on PATH)."""
    os.makedirs(bindir, exist_ok=True)
    found = {"%d.%d" % sys.version_info[:2]: sys.executable}
    for version in VERSIONS:
        for pattern in CANDIDATES:
            for path in sorted(glob.glob(pattern.format(v=version))):
                if version in found:
                    break
                ok = subprocess.run([path, "-c", "import sys, venv; sys.exit(sys.version_info[:2] != (%s))"
                                     % version.replace(".", ", ")], capture_output=True).returncode == 0
                if ok:
                    found[version] = path
    for version, path in found.items():
        link = os.path.join(bindir, "python" + version)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(path, link)
    return found


def unpack(tarball, top):
    dest = os.path.join(top, "ansible_collections", "metnos", "sandbox")
    os.makedirs(dest)
    with tarfile.open(tarball) as archive:
        archive.extractall(dest, filter="data")
    return dest


def main(argv):
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    tarballs = argv or sorted(glob.glob(os.path.join(ROOT, "dist", "metnos-sandbox-*.tar.gz")))
    if len(tarballs) != 1:
        raise SystemExit("sanity: expected one built collection (make collection), found %s" % (tarballs or "none"))
    with tempfile.TemporaryDirectory(prefix="metnos-sanity-") as top:
        bindir = os.path.join(top, "bin")
        found = pythons(bindir)
        get_pip_stand_in(wheelhouse(sorted(found)))
        print("sanity: %s on Python %s" % (os.path.basename(tarballs[0]), ", ".join(sorted(found, key=lambda v: tuple(
            map(int, v.split(".")))))), flush=True)
        coll = unpack(tarballs[0], top)
        env = dict(os.environ, HOME=HOME, PATH=os.pathsep.join([bindir, os.path.dirname(sys.executable),
                                                                 os.environ.get("PATH", "")]))
        env.pop("ANSIBLE_CONFIG", None)
        cmd = [_tool("ansible-test"), "sanity", "--local", "--color", "no"] + extra
        return subprocess.run(cmd, cwd=coll, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
