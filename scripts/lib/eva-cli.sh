#!/usr/bin/env bash
# Sourced by scripts: `eva_cli ARGS...` runs this checkout's `eva-operator` command on Node 24 from
# node_modules (installed on first use). Formats (images.txt, semver, the EvaTenant manifest) are read
# and written there, in TypeScript, by one reader each (src/script-commands/commands.ts); bash keeps the
# process plumbing. `eva_operator_version` prints the version of package.json; `eva_render` fills a
# template file of scripts/.
eva_cli_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
eva_cli_node() {
  if [[ ! -x $eva_cli_root/node_modules/.bin/node ]]; then
    (cd "$eva_cli_root" && npm ci --no-audit --no-fund >/dev/null 2>&1) ||
      { echo "eva-operator: node_modules missing in $eva_cli_root and npm ci failed: run scripts/bootstrap.sh" >&2; return 2; }
  fi
  "$eva_cli_root/node_modules/.bin/node" "$@"
}
eva_cli() { eva_cli_node "$eva_cli_root/src/cli.ts" "$@"; }
eva_operator_version() { eva_cli_node -p 'require(process.argv[1]).version' "$eva_cli_root/package.json"; }
# `eva_render TEMPLATE NAME=value...`: the template with ${NAME} replaced for the names given (scripts/lib/render-template.ts).
eva_render() { eva_cli_node "$eva_cli_root/scripts/lib/render-template.ts" "$@"; }
