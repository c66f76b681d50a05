#!/usr/bin/env bash
# Install the test-only collections of requirements.yml into .ansible/collections without Galaxy (not
# needed, and not reachable on restricted build machines): unpacked from the 'ansible' package on PyPI locked
# with its sha256 in requirements-collections.txt (downloaded in pip's hash-checking mode), whose version ships
# exactly the versions requirements.yml names (checked; a mismatch fails).
#   scripts/install-collections.sh [PYTHON]     (a Python with PyYAML: the venv's)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py="${1:-$here/.venv/bin/python}"
[ -x "$py" ] || py=python3
dest="$here/.ansible/collections"
"$py" - "$here/requirements.yml" "$dest" "$here/requirements-collections.txt" <<'PY'
import glob, json, os, re, subprocess, sys, tempfile, zipfile
import yaml
reqs, dest, lock = sys.argv[1], sys.argv[2], sys.argv[3]
with open(lock) as handle:
    wheel_version = re.search(r"^ansible==(\S+)", handle.read(), re.M).group(1)
with open(reqs) as handle:
    wanted = [(c["name"], str(c["version"])) for c in yaml.safe_load(handle)["collections"]]

def installed(name):
    path = os.path.join(dest, "ansible_collections", *name.split("."), "MANIFEST.json")
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return json.load(handle)["collection_info"]["version"]

missing = [(n, v) for n, v in wanted if installed(n) != v]
if not missing:
    sys.exit(0)
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                    "--require-hashes", "--only-binary", ":all:", "-d", tmp, "-r", lock], check=True)
    wheel = glob.glob(os.path.join(tmp, "ansible-*.whl"))[0]
    with zipfile.ZipFile(wheel) as z:
        for name, version in missing:
            prefix = "ansible_collections/%s/" % name.replace(".", "/")
            names = [n for n in z.namelist() if n.startswith(prefix)]
            if not names:
                sys.exit("collection %s not found in %s" % (name, os.path.basename(wheel)))
            shipped = json.loads(z.read(prefix + "MANIFEST.json"))["collection_info"]["version"]
            if shipped != version:
                sys.exit("requirements.yml wants %s %s; ansible %s ships %s: change one of them"
                         % (name, version, wheel_version, shipped))
            z.extractall(dest, names)
            print("installed %s %s (%d files) from %s" % (name, version, len(names), os.path.basename(wheel)))
PY
