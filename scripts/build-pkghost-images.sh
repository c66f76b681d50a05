#!/usr/bin/env bash
# Build the test hosts whose bubblewrap comes from a foreign package manager, on top of the
# Debian 13 image (scripts/build-images.sh):
#   scripts/build-pkghost-images.sh [dnf] [pacman]     (default: both)
#   FORCE=1 scripts/build-pkghost-images.sh dnf       rebuild even if the image exists
# dnf:    Debian's dnf 4.23 + python3-dnf, rpm 4.20, createrepo_c 1.2; two signed bubblewrap RPMs
#         (0.10.0-2.el10, 1:0.11.0-1.fc44) in a file:// repository.
# pacman: Debian's pacman 7.0 + makepkg + repo-add; signed bubblewrap 0.11.0-1 and 0.12.0-1,
#         bubblewrap-suid, bubblewrap-git; a file:// sync repository and archive.
# Why Debian 13 for both: its dnf 4.23 / rpm 4.20 are the closest to EL 10's dnf 4.20 / rpm 4.19
# (the newest dnf4 distribution; Fedora 41+ has dnf5, which Debian does not package), and its
# pacman 7.0 is the major release Arch ships (Debian 12 has pacman 6.0, without the download
# sandbox). Everything comes from Debian's mirror (apt inside the build); no registry is used.
# Each image is tagged localhost/metnos-pkghost:<kind>-<key>, where key hashes this script, its
# Containerfile and the files that copies (tests/pkghosts/) and the base image's id, so an unchanged recipe reuses the image; the
# newest build is also tagged localhost/metnos-pkghost:<kind>.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/tests/podman/containers.conf}"
kinds=("$@")
[ ${#kinds[@]} -eq 0 ] && kinds=(dnf pacman)
base=localhost/metnos-debian:13
"$here/scripts/build-images.sh" 13
base_id=$(podman image inspect --format '{{.Id}}' "$base")
for kind in "${kinds[@]}"; do
  case "$kind" in dnf|pacman) ;; *) echo "unknown package-manager host '$kind' (dnf, pacman)" >&2; exit 2 ;; esac
  # the recipe: this script, the Containerfile, the files it copies, the base image
  files=("Containerfile.$kind" $(sed -n 's|^COPY \(.*\) /tmp/pkghost/$|\1|p' "$here/tests/pkghosts/Containerfile.$kind"))
  key=$( { sha256sum "$0"; (cd "$here/tests/pkghosts" && sha256sum -- "${files[@]}"); echo "$base_id"; } | sha256sum | cut -c1-12)
  tag="localhost/metnos-pkghost:$kind-$key"
  if [ -z "${FORCE:-}" ] && podman image exists "$tag"; then
    podman tag "$tag" "localhost/metnos-pkghost:$kind"
    echo "image $tag: cached"
    continue
  fi
  echo "building $tag from $base ..."
  start=$(date +%s)
  log=$(mktemp /tmp/metnos-pkghost-$kind.XXXXXX.log)
  if ! podman build --pull=never --build-arg "BASE=$base" -f "$here/tests/pkghosts/Containerfile.$kind" \
      -t "$tag" "$here/tests/pkghosts" >"$log" 2>&1; then
    tail -30 "$log" >&2; rm -f "$log"; exit 1
  fi
  rm -f "$log"
  podman tag "$tag" "localhost/metnos-pkghost:$kind"
  echo "image $tag: built in $(( $(date +%s) - start ))s"
done
