#!/usr/bin/env bash
# Builds the Prometheus server that the rollout gate's tests (test/rollout/prometheus-gate.test.ts,
# through scripts/test.sh's install step) and bench/render-dashboard.ts run, from its source on the Go
# module proxy, into ~/.cache/eva-operator/prometheus-<version>/prometheus (outside the repository).
#
#   test/tools/build-prometheus.sh [version]      # default 3.15.0 (Go module version v0.315.0)
#
# `go install github.com/prometheus/prometheus/cmd/prometheus@v0.315.0` refuses to build it (its
# go.mod has replace directives), so this builds the module's own source as the main module, the way
# the Prometheus Makefile does, with its go.sum. No web UI assets (the builtinassets tag needs a
# Node.js build of the UI); the API the render script uses does not need them. Runs at nice 19: the
# machine is shared with benchmarks. A cold build took about 11 minutes on 2 busy cores.
set -euo pipefail

version="${1:-3.15.0}"
IFS=. read -r major minor patch <<<"$version"
module_version="v0.$((major * 100 + minor)).${patch}"
dest="${HOME}/.cache/eva-operator/prometheus-${version}"
binary="${dest}/prometheus"

if [[ -x "$binary" ]]; then
  "$binary" --version | head -1
  exit 0
fi

export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=readonly
mkdir -p "$dest"
src="$(go mod download -json "github.com/prometheus/prometheus@${module_version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -n "$src" && -f "$src/go.mod" ]] || { echo "go mod download github.com/prometheus/prometheus@${module_version} gave no source" >&2; exit 1; }
rm -rf "${dest}/src"
cp -r "$src" "${dest}/src"
chmod -R u+w "${dest}/src"
cd "${dest}/src"
echo "building Prometheus ${version} (${module_version}) from ${src}" >&2
start=$SECONDS
nice -n 19 go build -tags netgo -trimpath \
  -ldflags "-X github.com/prometheus/common/version.Version=${version} -X github.com/prometheus/common/version.Revision=${module_version}-proxy -X github.com/prometheus/common/version.Branch=proxy.golang.org" \
  -o "${binary}.tmp" ./cmd/prometheus
mv "${binary}.tmp" "$binary"
echo "built in $((SECONDS - start)) s" >&2
"$binary" --version | head -1
