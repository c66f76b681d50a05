#!/usr/bin/env bash
# Install Debian packages the test stages need, from Debian's mirrors only, without recommends, when they
# are missing (make test's host-packages target; .ci/run installs the same before make test).
#   scripts/host-packages.sh PACKAGE...
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
need=()
for pkg in "$@"; do
  dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null | grep -qx installed || need+=("$pkg")
done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "host-packages: missing ${need[*]}: apt-get install --no-install-recommends ${need[*]} (as root)" >&2
  exit 2
fi
apt_opts=(-o Dir::Etc::sourceparts=/dev/null -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/debian.sources)
[ -f /etc/apt/sources.list.d/debian.sources ] || apt_opts=()
apt-get "${apt_opts[@]}" update -qq
apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "${need[@]}"
