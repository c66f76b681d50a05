#!/usr/bin/env bash
# Build the Debian test-host images locally with debootstrap and import them into podman.
#   scripts/build-images.sh [12] [13]     (default: 12 13)
#   FORCE=1 scripts/build-images.sh 12    rebuild even if the image exists
# Each image is tagged localhost/metnos-debian:<ver>-<key>, where key hashes this script, so an
# unchanged script reuses the image; the newest build is also tagged localhost/metnos-debian:<ver>.
# Packages come from the Debian mirror configured on this machine (no registry is used).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/tests/podman/containers.conf}"
versions=("$@")
[ ${#versions[@]} -eq 0 ] && versions=(12 13)
key=$(sha256sum "$0" | cut -c1-12)
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '/^deb / && $2 ~ /debian\/?$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
for v in "${versions[@]}"; do
  case "$v" in 12) suite=bookworm ;; 13) suite=trixie ;; *) echo "unknown Debian version $v" >&2; exit 2 ;; esac
  tag="localhost/metnos-debian:$v-$key"
  if [ -z "${FORCE:-}" ] && podman image exists "$tag"; then
    podman tag "$tag" "localhost/metnos-debian:$v"
    echo "image $tag: cached"
    continue
  fi
  dir=$(mktemp -d /var/tmp/metnos-rootfs-$v.XXXXXX)
  trap 'rm -rf "$dir"' EXIT
  echo "building $tag from $mirror ($suite) ..."
  start=$(date +%s)
  debootstrap --variant=minbase \
    --include=systemd,systemd-sysv,dbus,python3,sudo,ca-certificates,procps,iproute2 \
    "$suite" "$dir" "$mirror" >"$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; exit 1; }
  # Same mirror inside, security updates included; no recommends; a machine id per container.
  printf 'APT::Install-Recommends "false";\n' > "$dir/etc/apt/apt.conf.d/90-norecommends"
  : > "$dir/etc/machine-id"
  rm -f "$dir/var/lib/dbus/machine-id"
  tar -C "$dir" -c . | podman import --change 'CMD ["/sbin/init"]' --change 'ENV container=podman' - "$tag" >/dev/null
  podman tag "$tag" "localhost/metnos-debian:$v"
  rm -rf "$dir" "$dir.log"; trap - EXIT
  echo "image $tag: built in $(( $(date +%s) - start ))s"
done
