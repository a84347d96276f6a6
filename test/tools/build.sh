#!/usr/bin/env bash
# Builds one of the Go test tools in this folder (kstatus, argo-health, node-assets) once, into a cache
# folder OUTSIDE the checkout (as scripts/lib/build-components.sh does), keyed by the tool's go.mod,
# go.sum (a tool of the standard library alone has none) and Go sources and the Go toolchain: a fresh
# clone builds it on first use, every later run (and every other checkout of the same sources) reuses
# it. Built into a temporary folder renamed when complete, behind a lock, so a half-finished build
# never looks finished.
#
# Usage: test/tools/build.sh <tool>   -> prints the path of the built binary
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tool=${1:?usage: $0 <tool>}
[[ -f "$here/$tool/go.mod" ]] || { echo "build.sh: no Go tool $tool in $here" >&2; exit 2; }
command -v go >/dev/null || { echo "build.sh: go not found in PATH (the Go toolchain builds the test tools)" >&2; exit 1; }

export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
cache_root="${EVA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eva-operator}"
sums=(go.mod)
[[ -f "$here/$tool/go.sum" ]] && sums+=(go.sum)
key=$( (go env GOVERSION; cd "$here/$tool" && sha256sum "${sums[@]}" ./*.go) | sha256sum | cut -c1-16)
dir="$cache_root/test-tools/$tool-$key"

if [[ ! -f "$dir/.complete" ]]; then
  mkdir -p "$cache_root/test-tools"
  exec 9>"$cache_root/test-tools/$tool.lock"
  flock 9
  if [[ ! -f "$dir/.complete" ]]; then
    work=$(mktemp -d "$cache_root/test-tools/build-$tool-XXXXXX")
    trap 'rm -rf "$work"' EXIT
    printf '[build %s] %s (go.mod/go.sum key %s)\n' "$(date +%H:%M:%S)" "$tool" "$key" >&2
    (cd "$here/$tool" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$work/$tool" .)
    touch "$work/.complete"
    rm -rf "$dir"
    mv "$work" "$dir"
    trap - EXIT
  fi
fi
echo "$dir/$tool"
