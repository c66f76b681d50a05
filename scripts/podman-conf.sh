# shellcheck shell=bash
# Sourced by scripts/molecule.sh: which podman settings the test containers get.
# Podman is used as it comes (users' CI runners, laptops), EXCEPT where this project's build
# machines' constraints are detected, or it is asked for: there tests/podman/containers.conf
# (runc instead of crun, container ulimits under the hard limits) is exported as CONTAINERS_CONF.
#   METNOS_PODMAN_CONF=auto (default)  use it when the cgroup hierarchy is not unified (crun
#                                      refuses cgroup v1/hybrid) or root lacks CAP_SYS_RESOURCE
#                                      (podman's default ulimits above the hard limit then fail)
#   METNOS_PODMAN_CONF=yes | no        force either way
#   CONTAINERS_CONF already set        respected as given
metnos_podman_conf() {
  local root=$1 want=${METNOS_PODMAN_CONF:-auto} why="" capeff
  if [ -n "${CONTAINERS_CONF:-}" ]; then
    echo "podman: CONTAINERS_CONF=$CONTAINERS_CONF (given)"
    return 0
  fi
  case "$want" in
    no) echo "podman: as it comes (METNOS_PODMAN_CONF=no)"; return 0 ;;
    yes) why="METNOS_PODMAN_CONF=yes" ;;
    auto)
      if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]; then
        why="cgroup v1/hybrid hierarchy (crun refuses it)"
      else
        capeff=$(awk '/^CapEff:/ {print $2}' /proc/self/status 2>/dev/null)
        if [ -n "$capeff" ] && [ $(( (16#$capeff >> 24) & 1 )) -eq 0 ]; then
          why="no CAP_SYS_RESOURCE (container ulimits must stay under the hard limits)"
        fi
      fi
      ;;
    *) echo "METNOS_PODMAN_CONF=$want: expected auto, yes or no" >&2; return 2 ;;
  esac
  if [ -n "$why" ]; then
    export CONTAINERS_CONF="$root/tests/podman/containers.conf"
    echo "podman: $CONTAINERS_CONF ($why)"
  else
    echo "podman: as it comes"
  fi
}
