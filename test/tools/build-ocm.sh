#!/usr/bin/env bash
# Builds Open Cluster Management (OCM_VERSION in versions.env), the multi-cluster engine the
# multi-cluster tests place EvaTenants with, from its source on the Go module proxy, into
# ~/.cache/eva-operator/ocm-<version>/ (outside the repository): bin/registration (hub controller and
# member agent), bin/work (hub manager and member agent), bin/placement, and the CRDs of its hub and
# member manifests (crds/hub, crds/member). Prints the folder.
#
#   test/tools/build-ocm.sh
#
# The module's zip carries an empty vendor/ (the module proxy strips vendored code), so the build
# resolves dependencies from the proxy (-mod=mod against its go.sum) instead of -mod=vendor. Runs at
# nice 19: the machine is shared with benchmarks. A cold build took about 20 minutes on 2 cores.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=/dev/null
source "$root/versions.env"
version="${OCM_VERSION:?versions.env sets OCM_VERSION}"
cache_root="${EVA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eva-operator}"
dest="$cache_root/ocm-${version}"

if [[ -f "$dest/.complete" ]]; then
  echo "$dest"
  exit 0
fi

export GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
mkdir -p "$cache_root"
exec 9>"$cache_root/ocm.lock"
flock 9
if [[ ! -f "$dest/.complete" ]]; then
  src="$(go mod download -json "open-cluster-management.io/ocm@v${version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -n "$src" && -f "$src/go.mod" ]] || { echo "go mod download open-cluster-management.io/ocm@v${version} gave no source" >&2; exit 1; }
  work=$(mktemp -d "$cache_root/build-ocm-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  cp -r "$src" "$work/src"
  chmod -R u+w "$work/src"
  rm -rf "$work/src/vendor"
  mkdir -p "$work/bin" "$work/crds/hub" "$work/crds/member"
  cp "$work/src"/manifests/cluster-manager/hub/*.crd.yaml "$work/crds/hub/"
  cp "$work/src"/manifests/klusterlet/managed/*.crd.yaml "$work/crds/member/"
  printf '[build %s] OCM %s from %s\n' "$(date +%H:%M:%S)" "$version" "$src" >&2
  start=$SECONDS
  (cd "$work/src" && nice -n 19 go build -trimpath -ldflags "-s -w" -o "$work/bin/" \
    ./cmd/registration ./cmd/work ./cmd/placement)
  echo "built in $((SECONDS - start)) s" >&2
  rm -rf "$work/src"
  touch "$work/.complete"
  rm -rf "$dest"
  mv "$work" "$dest"
  trap - EXIT
fi
echo "$dest"
