#!/usr/bin/env bash
# The whole test suite: lint, unit, integration (and the Molecule scenarios once present).
#   scripts/test.sh                 everything
#   scripts/test.sh lint|unit|integration|system|molecule
# Run through `make test`, which prepares the venv first.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
export PATH="${METNOS_VENV:-$here/.venv}/bin:$PATH"
export ANSIBLE_CONFIG="$here/ansible.cfg"
export ANSIBLE_COLLECTIONS_PATH="$here/.ansible/collections"
export PYTHONDONTWRITEBYTECODE=1
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(lint unit integration system molecule)
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/tests/podman/containers.conf}"

preflight() {
  local missing=()
  command -v bwrap >/dev/null || missing+=(bubblewrap)
  [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import seccomp' 2>/dev/null || missing+=(python3-seccomp)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "test: missing host packages: ${missing[*]} (apt-get install -y ${missing[*]}; .ci/run does this)" >&2
    exit 2
  fi
}

for stage in "${stages[@]}"; do
  echo "=== $stage ==="
  case "$stage" in
    lint)
      ruff check .
      mypy
      ansible-lint --profile production playbooks/ roles/
      # The users' CI workflow: JSON schema (SchemaStore's, vendored by the pinned
      # check-jsonschema), actionlint, and `molecule syntax` for every platform and scenario.
      check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
      scripts/actionlint.sh
      scripts/molecule.sh --syntax
      ;;
    unit)
      python -m pytest -q tests/unit
      ;;
    integration)
      preflight
      python -m pytest -q tests/integration
      ;;
    system)
      # Real systemd hosts: podman containers from locally built Debian images.
      command -v podman >/dev/null || { echo "system: podman is missing (apt-get install podman runc)" >&2; exit 2; }
      scripts/build-images.sh 12 13
      python -m pytest -q tests/system
      ;;
    molecule)
      if [ -d molecule ] && ls molecule/*/molecule.yml >/dev/null 2>&1; then
        scripts/molecule.sh
      else
        echo "molecule: no scenarios yet"
      fi
      ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
done
