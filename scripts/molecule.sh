#!/usr/bin/env bash
# Run the Molecule scenarios: scripts/molecule.sh [debian] [fault] [fedora] [arch] [ubuntu]
# Debian images are built locally (debootstrap); Fedora/Arch need their registries: where an image
# cannot be had, the scenario is skipped with one line saying why (it neither fails nor passes).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
export PATH="${METNOS_VENV:-$here/.venv}/bin:$PATH"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/tests/podman/containers.conf}"
export ANSIBLE_COLLECTIONS_PATH="$here/.ansible/collections"
export MOLECULE_NO_LOG=false
scenarios=("$@")
[ ${#scenarios[@]} -eq 0 ] && scenarios=(debian fault fedora arch ubuntu)
"$here/scripts/install-collections.sh" "$(command -v python)"
# ~5 inotify instances per systemd container; the default 128 is shared by all rootful containers.
if [ "$(cat /proc/sys/fs/inotify/max_user_instances 2>/dev/null || echo 1024)" -lt 512 ]; then
  sysctl -qw fs.inotify.max_user_instances=512 2>/dev/null || true
fi
skipped=0
for s in "${scenarios[@]}"; do
  case "$s" in
    debian) scripts/build-images.sh 12 13 ;;
    fault) scripts/build-images.sh 12 ;;
    *)
      missing=""
      why=""
      for img in $(awk '/^ +image:/ {print $2}' "molecule/$s/molecule.yml"); do
        podman image exists "$img" && continue
        if ! err=$(timeout 120 podman pull -q "$img" 2>&1 >/dev/null); then
          missing="$missing $img"
          why=$(printf '%s\n' "$err" | tail -n1 | sed 's/.*: //')
        fi
      done
      if [ -n "$missing" ]; then
        echo "SKIP molecule/$s: image unavailable:$missing (${why:-pull failed}); run it where the registry is reachable"
        skipped=$((skipped + 1))
        continue
      fi
      ;;
  esac
  echo "=== molecule test -s $s ==="
  start=$(date +%s)
  molecule test -s "$s"
  echo "=== molecule/$s passed in $(( $(date +%s) - start ))s ==="
done
