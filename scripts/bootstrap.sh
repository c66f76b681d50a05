#!/usr/bin/env bash
# Create the controller virtualenv (.venv) with exactly the locked dependencies.
#   scripts/bootstrap.sh          runtime deps (the lock requirements.txt)
#   scripts/bootstrap.sh --test   test/lint deps (the lock requirements-test.txt, a superset with the same
#                                 versions), then the containers.podman collection, installed without Galaxy
# The locks pin every distribution, transitive ones included, with their sha256 (`make lock` makes them from
# requirements.in and requirements-test.in): pip installs wheels only (nothing built here), with
# --require-hashes --no-deps, and --test removes
# whatever the venv holds beyond its lock (tests/unit/test_lock.py compares the venv with it).
# Idempotent: a stamp keyed on the lock files skips work already done.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
venv="${METNOS_VENV:-$here/.venv}"
want_test=0
print_stamp=0
for arg in "$@"; do
  case "$arg" in
    --test) want_test=1 ;;
    --print-stamp) print_stamp=1 ;;   # the stamp this call would look for, then exit (nothing installed)
    *) echo "bootstrap: unknown argument $arg (--test, --print-stamp)" >&2; exit 2 ;;
  esac
done

find_python() {
  local c v
  # 1. explicit choice
  if [ -n "${METNOS_PYTHON:-}" ]; then echo "$METNOS_PYTHON"; return 0; fi
  # 2. versioned interpreters on PATH (a pyenv shim may exist but not work: run it to check)
  #    The venv's own interpreters are not candidates: make puts $(VENV)/bin first on PATH, so from the second
  #    call on python3 was the venv's, the stamp's key changed and pip ran again (issue 54).
  for c in python3.14 python3.13 python3.12 python3; do
    while IFS= read -r v; do
      case "$v" in "$venv"/*) continue ;; esac
      if "$v" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
        echo "$v"; return 0
      fi
    done < <(type -ap "$c")
  done
  # 3. pyenv / local builds not selected as global
  for v in "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3 /usr/local/bin/python3.1[2-9] /opt/python3.1[2-9]*/bin/python3; do
    if [ -x "$v" ] && "$v" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      echo "$v"; return 0
    fi
  done
  return 1
}

if ! py=$(find_python); then
  cat >&2 <<'MSG'
bootstrap: no Python >= 3.12 found (ansible-core 2.21 needs it on the controller).
  Debian 12 ships 3.11. Any of these works:
    - install python3.12/3.13 (e.g. from backports, pyenv, or uv: 'pip install uv && uv python install 3.13')
    - point METNOS_PYTHON at an interpreter >= 3.12: METNOS_PYTHON=/path/to/python3.13 make run
  Managed hosts only need a Python that ansible-core 2.21 supports (Debian 12's 3.11 is fine).
MSG
  exit 2
fi

reqs=requirements.txt
[ $want_test = 1 ] && reqs=requirements-test.txt
key_files="requirements.txt"
[ $want_test = 1 ] && key_files="$key_files requirements-test.txt requirements.yml requirements-collections.txt scripts/install-collections.sh"
# shellcheck disable=SC2086
# keyed on the interpreter's installation (base_prefix and version: the same for a venv's python, a pyenv shim and
# the interpreter itself), not on the path it was found at
key=$( ("$py" -c 'import sys; print(sys.base_prefix); print(sys.version)'; cat $key_files) | sha256sum | cut -c1-16)
stamp="$venv/.metnos-stamp-$key"
if [ $print_stamp = 1 ]; then
  echo "bootstrap: the interpreter $py" >&2; echo "$stamp"; exit 0
fi
if [ -f "$stamp" ]; then
  exit 0
fi
echo "bootstrap: using $("$py" --version) at $py -> $venv" >&2
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps --only-binary :all: -r "$reqs"
if [ $want_test = 1 ]; then
  # the test venv is the lock, nothing more: what an earlier lock or a hand install left goes
  "$venv/bin/python" "$here/scripts/lock.py" extras "$reqs" | xargs -r "$venv/bin/python" -m pip uninstall -q -y
fi

if [ $want_test = 1 ]; then
  # Collections without Galaxy: unpack them from the pinned 'ansible' wheel on PyPI.
  "$here/scripts/install-collections.sh" "$venv/bin/python"
fi
touch "$stamp"
