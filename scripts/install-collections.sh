#!/usr/bin/env bash
# Install collections from the pinned 'ansible' wheel on PyPI into .ansible/collections.
# Galaxy is not needed (and not reachable on restricted build machines).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py="${1:-python3}"
dest="$here/.ansible/collections"
read -r version colls < <(grep -v '^#' "$here/scripts/collections.txt" | head -n1)
all_present=1
for c in $colls; do [ -f "$dest/ansible_collections/$c/MANIFEST.json" ] || all_present=0; done
[ $all_present = 1 ] && exit 0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$py" -m pip download -q --disable-pip-version-check --no-deps -d "$tmp" "ansible==$version"
mkdir -p "$dest"
for c in $colls; do
  "$py" - "$tmp"/ansible-*.whl "$c" "$dest" <<'PY'
import sys, zipfile
wheel, coll, dest = sys.argv[1], sys.argv[2], sys.argv[3]
prefix = "ansible_collections/%s/" % coll
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix)]
    if not names:
        sys.exit("collection %s not found in %s" % (coll, wheel))
    z.extractall(dest, names)
print("installed %s (%d files) from %s" % (coll, len(names), wheel.rsplit("/", 1)[-1]))
PY
done
