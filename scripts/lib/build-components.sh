#!/usr/bin/env bash
# Builds the local control plane's binaries from the Go module proxy, pinned by versions.env.
# Output: a cache folder OUTSIDE the checkout, keyed by the content of versions.env and the recipe,
# so fresh clones (CI) reuse it and a version change rebuilds. A half-finished build never looks
# finished: everything is built into a temporary folder that is renamed at the end.
#
# Usage: build-components.sh            -> prints the bin folder (builds it first if needed)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=/dev/null
source "$root/versions.env"

export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
cache_root="${EVA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eva-operator}"
# Bump when the way binaries are built changes (flags, extra files), so caches are rebuilt.
build_recipe=1
key=$( { cat "$root/versions.env"; echo "recipe=$build_recipe"; } | sha256sum | cut -c1-16)
bin="$cache_root/bin-$key"

log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ -x "$bin/.complete" || -f "$bin/.complete" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/build.lock"
flock 9
# Another process may have finished the build while we waited for the lock.
if [[ -f "$bin/.complete" ]]; then echo "$bin"; exit 0; fi

work=$(mktemp -d "$cache_root/build-XXXXXX")
trap 'rm -rf "$work"' EXIT
out="$work/bin"
mkdir -p "$out"
started=$(date +%s)

staging_modules=(
  api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
  cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt
  kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller streaming
)

build_kubernetes() {
  local k="$KUBERNETES_VERSION" staging="0.${KUBERNETES_VERSION#1.}"
  local minor; minor=$(cut -d. -f2 <<<"$k")
  local dir="$work/kubernetes"
  mkdir -p "$dir"
  {
    echo "module eva-operator.local/kubernetes-build"
    echo "go $GO_TOOLCHAIN"
    echo "require k8s.io/kubernetes v$k"
    echo "replace ("
    for m in "${staging_modules[@]}"; do echo "  k8s.io/$m => k8s.io/$m v$staging"; done
    echo ")"
  } >"$dir/go.mod"
  cat >"$dir/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  log "kubernetes v$k: resolving modules"
  (cd "$dir" && go mod tidy)
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$k -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=v$k -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    log "kubernetes v$k: building $cmd"
    (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$out/$cmd" "k8s.io/kubernetes/cmd/$cmd")
  done
}

build_etcd() {
  # etcd's server module has relative replace directives, so it cannot be `go install`ed; a wrapper
  # module of its own keeps Kubernetes' newer etcd client out of its dependency graph.
  local dir="$work/etcd"
  mkdir -p "$dir"
  printf 'module eva-operator.local/etcd-build\ngo %s\nrequire go.etcd.io/etcd/server/v3 v%s\n' \
    "$GO_TOOLCHAIN" "$ETCD_VERSION" >"$dir/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$dir/tools.go"
  log "etcd v$ETCD_VERSION: building"
  (cd "$dir" && go mod tidy && go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)
}

go_install() { # <package@version> <binary name>
  log "installing $1"
  GOBIN="$out" go install -trimpath -ldflags "-s -w ${3:-}" "$1"
}

copy_kwok_default_stages() {
  # Passing any custom Stage to kwokctl drops its defaults, so the dev cluster passes kwok's own
  # default Stages (read from the downloaded module, not copied into this repo) next to ours.
  local src; src="$(go env GOMODCACHE)/sigs.k8s.io/kwok@v$KWOK_VERSION/kustomize/stage"
  mkdir -p "$out/kwok-stages"
  cp "$src/node/fast/node-initialize.yaml" "$src/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
    "$src"/pod/fast/pod-{ready,complete,delete}.yaml "$out/kwok-stages/"
}

build_kubernetes
build_etcd
go_install "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION" kwok "-X sigs.k8s.io/kwok/pkg/consts.Version=v$KWOK_VERSION"
go_install "sigs.k8s.io/kwok/cmd/kwokctl@v$KWOK_VERSION" kwokctl "-X sigs.k8s.io/kwok/pkg/consts.Version=v$KWOK_VERSION"
go_install "helm.sh/helm/v4/cmd/helm@v$HELM_VERSION" helm "-X helm.sh/helm/v4/internal/version.version=v$HELM_VERSION"
go_install "github.com/nats-io/nats-server/v2@v$NATS_SERVER_VERSION" nats-server
copy_kwok_default_stages

elapsed=$(( $(date +%s) - started ))
echo "$elapsed" >"$out/.build-seconds"
touch "$out/.complete"
rm -rf "$bin"
mv "$out" "$bin"
log "done in ${elapsed}s -> $bin"
echo "$bin"
