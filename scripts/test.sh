#!/usr/bin/env bash
# Runs every test: installs what a fresh machine lacks (Debian packages, npm packages, the pinned
# control-plane binaries), then type check, lint, unit tests and the tests against the real local
# control plane (started or reused by the test setup). This is the one test command; CI runs exactly this.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/lib/prerequisites.sh
scripts/bootstrap.sh
export PATH="$root/node_modules/.bin:$PATH"   # Node 24 from the npm `node` package
npm run --silent typecheck
npm run --silent lint
npm test
