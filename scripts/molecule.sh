#!/usr/bin/env bash
# Run the Molecule tests: scripts/molecule.sh [--syntax] [PLATFORM|fault ...]
#   platforms: debian12 debian13 dnf-debian13 pacman-debian13 ubuntu2404 fedora-newest
#              fedora-previous el9 el10 arch
#   aliases:   debian (12 and 13), pkghosts (dnf-debian13, pacman-debian13), fedora (newest and
#              previous), el (9 and 10), all (default)
# Every platform runs the ONE scenario molecule/default, the host chosen by MOLECULE_DISTRO /
# MOLECULE_IMAGE / MOLECULE_PREBUILT from the table below; `fault` is molecule/fault (Debian 12).
# Debian images are built here (scripts/build-images.sh: debootstrap, no registry), and so are
# the hosts whose bubblewrap comes from real dnf + rpm or real pacman (dnf-debian13,
# pacman-debian13: scripts/build-pkghost-images.sh, Debian 13 underneath, so the role is told
# which package manager to use: MOLECULE_PKG_MANAGER); the others are official images pulled from
# their registries. Where one cannot be pulled, the platform is
# skipped with one line saying why, unless METNOS_MOLECULE_STRICT=1 (CI runners: a registry
# outage must fail the job, not pass it).
# METNOS_MOLECULE_JOBS (default 2): platform runs at a time (each run drives one host).
# --syntax: only `molecule syntax` for each target (config rendered and validated, converge
# playbook syntax-checked): no image, no registry, no container; two at a time.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
export PATH="${METNOS_VENV:-$here/.venv}/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$here/collections:$here/.ansible/collections"
export MOLECULE_NO_LOG=false
# The Fedora releases under test: the newest and the one before it. ONE number to move every
# six months (or set METNOS_FEDORA_NEWEST in the environment).
fedora_newest=${METNOS_FEDORA_NEWEST:-44}

# platform id -> image, whether it is pre-built here (true) or built from Dockerfile.j2 (false),
# and bwrap_host_package_manager for it
platform() {
  case "$1" in
    debian12) echo "localhost/metnos-debian:12 true auto" ;;
    debian13) echo "localhost/metnos-debian:13 true auto" ;;
    dnf-debian13) echo "localhost/metnos-pkghost:dnf true dnf" ;;
    pacman-debian13) echo "localhost/metnos-pkghost:pacman true pacman" ;;
    ubuntu2404) echo "docker.io/library/ubuntu:24.04 false auto" ;;
    fedora-newest) echo "registry.fedoraproject.org/fedora:$fedora_newest false auto" ;;
    fedora-previous) echo "registry.fedoraproject.org/fedora:$((fedora_newest - 1)) false auto" ;;
    el9) echo "docker.io/library/almalinux:9 false auto" ;;
    el10) echo "docker.io/library/almalinux:10 false auto" ;;
    arch) echo "docker.io/archlinux/archlinux:latest false auto" ;;
    *) return 1 ;;
  esac
}

# The environment of one platform's Molecule run (molecule/default/molecule.yml reads it).
platform_env() {   # platform -> KEY=VALUE words for env(1)
  local image prebuilt manager
  read -r image prebuilt manager < <(platform "$1")
  echo "MOLECULE_DISTRO=$1 MOLECULE_IMAGE=$image MOLECULE_PREBUILT=$prebuilt MOLECULE_PKG_MANAGER=$manager"
  # the local package-manager hosts hold an older build (their side effect must pin it); the
  # pacman host's archive for pins is on disk (the Arch Linux Archive's layout)
  case "$manager" in dnf|pacman) echo "MOLECULE_EXPECT_PINS=true" ;; esac
  [ "$manager" = pacman ] && echo "MOLECULE_PACMAN_ARCHIVE_URL=file:///srv/metnos/archive/packages"
  return 0
}

syntax=0
if [ "${1:-}" = --syntax ]; then syntax=1; shift; fi
targets=()
for arg in "${@:-all}"; do
  case "$arg" in
    all) targets+=(debian12 debian13 dnf-debian13 pacman-debian13 fault ubuntu2404 fedora-newest fedora-previous
                   el9 el10 arch) ;;
    debian) targets+=(debian12 debian13) ;;
    pkghosts) targets+=(dnf-debian13 pacman-debian13) ;;
    fedora) targets+=(fedora-newest fedora-previous) ;;
    el) targets+=(el9 el10) ;;
    fault) targets+=(fault) ;;
    *) platform "$arg" >/dev/null || { echo "molecule.sh: unknown platform or scenario '$arg'" >&2; exit 2; }
       targets+=("$arg") ;;
  esac
done

base=(-c "$here/.config/molecule/config.yml")

if [ $syntax = 1 ]; then
  logs=$(mktemp -d /tmp/metnos-molecule-syntax.XXXXXX)
  trap 'rm -rf "$logs"' EXIT
  syntax_one() {   # target -> molecule syntax with its own ephemeral directory; rc in $logs/$t.rc
    local t=$1 rc=0
    mkdir -p "$logs/$t.eph"
    if [ "$t" = fault ]; then
      MOLECULE_EPHEMERAL_DIRECTORY="$logs/$t.eph" molecule "${base[@]}" syntax -s fault >"$logs/$t.log" 2>&1 || rc=$?
    else
      # shellcheck disable=SC2046  # platform_env prints KEY=VALUE words without spaces
      env MOLECULE_EPHEMERAL_DIRECTORY="$logs/$t.eph" $(platform_env "$t") \
        molecule "${base[@]}" syntax -s default >"$logs/$t.log" 2>&1 || rc=$?
    fi
    echo $rc >"$logs/$t.rc"
  }
  running=0
  for t in "${targets[@]}"; do
    if [ $running -ge 2 ]; then wait -n; running=$((running - 1)); fi
    syntax_one "$t" &
    running=$((running + 1))
  done
  wait
  failed=0
  for t in "${targets[@]}"; do
    if [ "$(cat "$logs/$t.rc" 2>/dev/null)" = 0 ]; then
      echo "molecule syntax [$t]: ok"
    else
      echo "molecule syntax [$t]: FAILED"; cat "$logs/$t.log"; failed=1
    fi
  done
  exit $failed
fi

# shellcheck source=scripts/podman-conf.sh
. "$here/scripts/podman-conf.sh"
metnos_podman_conf "$here"
"$here/scripts/install-collections.sh" "$(command -v python)"
# ~5 inotify instances per systemd container; the default 128 is shared by all rootful containers.
if [ "$(cat /proc/sys/fs/inotify/max_user_instances 2>/dev/null || echo 1024)" -lt 512 ]; then
  sysctl -qw fs.inotify.max_user_instances=512 2>/dev/null || true
fi
# 1. images: Debian built here, the others pulled (or skipped with one line)
ready=()
run_fault=0
for t in "${targets[@]}"; do
  if [ "$t" = fault ]; then run_fault=1; continue; fi
  read -r image prebuilt _manager < <(platform "$t")
  if [ "$prebuilt" = true ]; then
    case "$image" in
      localhost/metnos-pkghost:*) scripts/build-pkghost-images.sh "${image##*:}" ;;
      *) scripts/build-images.sh "${image##*:}" ;;
    esac
  elif ! podman image exists "$image"; then
    if ! err=$(timeout 300 podman pull -q "$image" 2>&1 >/dev/null); then
      why=$(printf '%s\n' "$err" | tail -n1 | sed 's/.*: //')
      if [ "${METNOS_MOLECULE_STRICT:-0}" = 1 ]; then
        echo "FAIL molecule/default[$t]: cannot pull $image (${why:-pull failed})" >&2
        exit 1
      fi
      echo "SKIP molecule/default[$t]: image unavailable: $image (${why:-pull failed}); run it where the registry is reachable"
      continue
    fi
  fi
  ready+=("$t")
done

# 2. the platforms, METNOS_MOLECULE_JOBS at a time (default 2: one scenario run drives one host,
#    so two runs keep both cores busy as one two-host run did). Each run has its own ephemeral
#    directory; with more than one at a time, a run's output is shown when it ends.
jobs=${METNOS_MOLECULE_JOBS:-2}
[ ${#ready[@]} -le 1 ] && jobs=1
runs=$(mktemp -d /tmp/metnos-molecule-runs.XXXXXX)
trap 'rm -rf "$runs"' EXIT
run_platform() {   # platform [logfile] -> molecule test of molecule/default for it
  local t=$1 log=${2:-} image prebuilt start rc=0
  read -r image prebuilt _manager < <(platform "$t")
  start=$(date +%s)
  mkdir -p "$runs/$t"
  echo "=== molecule test (MOLECULE_DISTRO=$t, $image) ==="
  # shellcheck disable=SC2046  # platform_env prints KEY=VALUE words without spaces
  if [ -n "$log" ]; then
    env MOLECULE_EPHEMERAL_DIRECTORY="$runs/$t" $(platform_env "$t") \
      molecule "${base[@]}" test -s default >"$log" 2>&1 || rc=$?
  else
    env MOLECULE_EPHEMERAL_DIRECTORY="$runs/$t" $(platform_env "$t") \
      molecule "${base[@]}" test -s default || rc=$?
  fi
  if [ $rc = 0 ]; then
    echo "=== molecule/default[$t] passed in $(( $(date +%s) - start ))s ==="
  else
    [ -n "$log" ] && cat "$log"
    echo "=== molecule/default[$t] FAILED (rc $rc) after $(( $(date +%s) - start ))s ==="
  fi
  return $rc
}
failed=0
if [ "$jobs" -le 1 ]; then
  for t in "${ready[@]}"; do run_platform "$t" || failed=1; done
else
  running=0
  for t in "${ready[@]}"; do
    if [ $running -ge "$jobs" ]; then wait -n || failed=1; running=$((running - 1)); fi
    run_platform "$t" "$runs/$t.log" &
    running=$((running + 1))
  done
  while [ $running -gt 0 ]; do wait -n || failed=1; running=$((running - 1)); done
fi

# 3. the fault scenario (six Debian 12 hosts at once: alone)
if [ $run_fault = 1 ]; then
  start=$(date +%s)
  scripts/build-images.sh 12
  echo "=== molecule test -s fault ==="
  if molecule "${base[@]}" test -s fault; then
    echo "=== molecule/fault passed in $(( $(date +%s) - start ))s ==="
  else
    echo "=== molecule/fault FAILED after $(( $(date +%s) - start ))s ==="; failed=1
  fi
fi
exit $failed
