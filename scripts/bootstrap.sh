#!/usr/bin/env bash
# Installs what eva-operator needs on a fresh machine: npm packages (including Node.js 24 from the
# npm `node` package, so nothing runs on an older system Node), the pinned control-plane binaries
# and the operator's helm server (built once from the Go module proxy, cached outside the checkout).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

need() { command -v "$1" >/dev/null 2>&1 || { echo "bootstrap: '$1' is required: $2" >&2; exit 1; }; }
need npm "install Node.js with npm (any version; Node 24 itself comes from the npm registry)"
need go "install Go >= 1.26 (the control plane is built from the Go module proxy)"
need curl "install curl"

# Reinstall npm packages only when the lockfile changed since the last install.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund
fi
[[ "$(node_modules/.bin/node --version)" == v24.* ]] || { echo "bootstrap: node_modules/.bin/node is not Node 24" >&2; exit 1; }

scripts/lib/build-components.sh >/dev/null
scripts/lib/build-components.sh helm-server >/dev/null
