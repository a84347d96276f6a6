#!/usr/bin/env bash
# Sourced by scripts: `eva_cli ARGS...` runs this checkout's `eva-operator` command on Node 24 from
# node_modules (installed on first use). Formats (images.txt, semver) are read there, in TypeScript,
# by one reader each (src/release/commands.ts); bash keeps the process plumbing.
eva_cli_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
eva_cli() {
  if [[ ! -x $eva_cli_root/node_modules/.bin/node ]]; then
    (cd "$eva_cli_root" && npm ci --no-audit --no-fund >/dev/null 2>&1) ||
      { echo "eva-operator: node_modules missing in $eva_cli_root and npm ci failed: run scripts/bootstrap.sh" >&2; return 2; }
  fi
  "$eva_cli_root/node_modules/.bin/node" "$eva_cli_root/src/cli.ts" "$@"
}
