#!/usr/bin/env bash
# Builds pinned binaries from the Go module proxy (versions in versions.env), in two sets:
#
#   control-plane (the default): etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
#                  kubectl, kwok, kwokctl, helm, nats-server      -> <cache>/bin-<key>/
#   node:          a real node (scripts/lib/real-node.sh): kubelet, kube-proxy, containerd,
#                  containerd-shim-runc-v2, ctr, and a static pause binary -> <cache>/node-<key>/
#   dataplane:     a real node's NetworkPolicy enforcer and ingress controller: kube-router (run as
#                  its firewall only) and traefik                  -> <cache>/dataplane-<key>/
#   helm-server:   the operator's helm (helm-server/ here, the helm SDK in one long-lived process):
#                  eva-helm-server                                  -> <cache>/helm-server-<key>/
#   flux:          the peer benchmark (bench/peers.ts): Flux's source-controller and helm-controller,
#                  and their CRDs as their module zips ship them (crds/)  -> <cache>/flux-<key>/
#
# Output: a cache folder OUTSIDE the checkout, so fresh clones (CI) reuse it. Its key hashes only the
# versions.env variables that set uses (name=value lines, in a fixed order) and the set's recipe
# number, never the file itself: adding a version for one set, or editing a comment, does not
# rebuild the other. helm-server's key also hashes its sources (helm-server/), which live here. A half-finished build never looks finished: everything is built into a
# temporary folder that is renamed at the end.
#
# Usage: build-components.sh [control-plane|oldest-control-plane|node|dataplane|helm-server|flux]   -> prints the set's folder (builds it first if needed)
#        build-components.sh --key [control-plane|oldest-control-plane|node|dataplane|helm-server|flux]   -> prints the folder without building
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=/dev/null
source "$root/versions.env"
# shellcheck source=scripts/lib/eva-cli.sh
source "$root/scripts/lib/eva-cli.sh"   # go's JSON is read by `eva-operator manifests`; eva_render
# The wrapper modules' go.mod and tools.go (Kubernetes, etcd) are templates filled by eva_render.
templates="$root/scripts/build-components"

export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
cache_root="${EVA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eva-operator}"

key_only=false
if [[ ${1:-} == --key ]]; then key_only=true; shift; fi
set_name=${1:-control-plane}
# Per set: the versions.env variables it uses, its recipe (bump when the way binaries are built
# changes: flags, extra files, the templates in scripts/build-components/, so caches are rebuilt),
# its folder prefix and its lock.
case "$set_name" in
  control-plane)
    key_vars=(GO_TOOLCHAIN KUBERNETES_VERSION ETCD_VERSION KWOK_VERSION HELM_VERSION NATS_SERVER_VERSION)
    build_recipe=1 prefix=bin lock=build.lock ;;
  oldest-control-plane)
    # The oldest Kubernetes the chart accepts (its kubeVersion floor): the same set, with the API
    # server, controller-manager, scheduler and kubectl of KUBERNETES_OLDEST_VERSION.
    key_vars=(GO_TOOLCHAIN KUBERNETES_OLDEST_VERSION ETCD_VERSION KWOK_VERSION HELM_VERSION NATS_SERVER_VERSION)
    build_recipe=1 prefix=bin-oldest lock=build-oldest.lock ;;
  node)
    key_vars=(GO_TOOLCHAIN KUBERNETES_VERSION CONTAINERD_VERSION)
    build_recipe=1 prefix=node lock=node-build.lock ;;
  dataplane)
    key_vars=(GO_TOOLCHAIN KUBE_ROUTER_VERSION TRAEFIK_VERSION)
    build_recipe=1 prefix=dataplane lock=dataplane-build.lock ;;
  helm-server)
    key_vars=(GO_TOOLCHAIN HELM_VERSION) key_sources=helm-server
    build_recipe=1 prefix=helm-server lock=helm-server-build.lock ;;
  flux)
    key_vars=(GO_TOOLCHAIN FLUX_SOURCE_CONTROLLER_VERSION FLUX_HELM_CONTROLLER_VERSION FLUX_PKG_ARTIFACT_VERSION)
    build_recipe=1 prefix=flux lock=flux-build.lock ;;
  *) echo "usage: $0 [--key] [control-plane|oldest-control-plane|node|dataplane|helm-server|flux]" >&2; exit 2 ;;
esac
key_input() {
  local v
  for v in "${key_vars[@]}"; do
    [[ -n ${!v:-} ]] || { echo "build-components: $v missing from $root/versions.env" >&2; exit 2; }
    echo "$v=${!v}"
  done
  echo "recipe=$build_recipe"
  if [[ -n ${key_sources:-} ]]; then
    (cd "$root" && find "$key_sources" -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -print0 | sort -z | xargs -0 sha256sum) |
      sha256sum | sed 's/ .*/ sources/'
  fi
}
key_text=$(key_input)
key=$(sha256sum <<<"$key_text" | cut -c1-16)
bin="$cache_root/$prefix-$key"

log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if $key_only || [[ -f "$bin/.complete" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/$lock"
flock 9
# Another process may have finished the build while we waited for the lock.
if [[ -f "$bin/.complete" ]]; then echo "$bin"; exit 0; fi

work=$(mktemp -d "$cache_root/build-XXXXXX")
trap 'rm -rf "$work"' EXIT
out="$work/bin"
mkdir -p "$out"
started=$(date +%s)

build_kubernetes() { # <version> <cmd...>: k8s.io/kubernetes/cmd/<cmd> for each
  local k=$1 cmd
  shift
  local minor; minor=$(cut -d. -f2 <<<"$k")
  local dir="$work/kubernetes"
  mkdir -p "$dir"
  # Every staging module (k8s.io/api, client-go, ...) at Kubernetes' own 0.<minor>.<patch>.
  eva_render "$templates/kubernetes.go.mod" GO_TOOLCHAIN="$GO_TOOLCHAIN" KUBERNETES_VERSION="$k" \
    STAGING_VERSION="0.${k#1.}" >"$dir/go.mod"
  eva_render "$templates/kubernetes-tools.go" IMPORTS="$(printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$@")" >"$dir/tools.go"
  log "kubernetes v$k: resolving modules"
  (cd "$dir" && go mod tidy)
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$k -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=v$k -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  for cmd in "$@"; do
    log "kubernetes v$k: building $cmd"
    (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$out/$cmd" "k8s.io/kubernetes/cmd/$cmd")
  done
}

build_etcd() {
  # etcd's server module has relative replace directives, so it cannot be `go install`ed; a wrapper
  # module of its own keeps Kubernetes' newer etcd client out of its dependency graph.
  local dir="$work/etcd"
  mkdir -p "$dir"
  eva_render "$templates/etcd.go.mod" GO_TOOLCHAIN="$GO_TOOLCHAIN" ETCD_VERSION="$ETCD_VERSION" >"$dir/go.mod"
  cat "$templates/etcd-tools.go" >"$dir/tools.go"
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

build_containerd() {
  # No cgo (no btrfs snapshotter, which needs it), no replace directives: `go install` works.
  local c="$CONTAINERD_VERSION" cmd
  for cmd in containerd containerd-shim-runc-v2 ctr; do
    log "installing containerd v$c: $cmd"
    GOBIN="$out" go install -trimpath -tags "urfave_cli_no_docs no_btrfs" \
      -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=v$c -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2" \
      "github.com/containerd/containerd/v2/cmd/$cmd@v$c"
  done
}

build_pause() {
  # The pod sandbox's pause process: Kubernetes' own pause.c (from the module just downloaded), static,
  # as its build/pause/Makefile builds it.
  local src; src="$(go env GOMODCACHE)/k8s.io/kubernetes@v$KUBERNETES_VERSION/build/pause/linux/pause.c"
  log "pause: gcc -static $src"
  gcc -Os -Wall -Werror -static -DVERSION="v$KUBERNETES_VERSION-eva" -o "$out/pause" "$src"
  strip "$out/pause"
}

build_kube_router() {
  # No cgo, no replace directives: `go install` works. Only its firewall is run (real-node.sh).
  go_install "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@v$KUBE_ROUTER_VERSION" kube-router \
    "-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=v$KUBE_ROUTER_VERSION"
}

build_traefik() {
  # Traefik's module has replace directives, so it cannot be `go install`ed: build from a writable
  # copy of the downloaded module. Its web UI is not needed (an empty static folder satisfies embed).
  local t="$TRAEFIK_VERSION" src dir="$work/traefik"
  log "traefik v$t: downloading module"
  src=$(cd "$work" && go mod download -json "github.com/traefik/traefik/v3@v$t" | eva_cli manifests value - Dir)
  [[ -d $src ]] || { echo "build-components: traefik v$t module not downloaded" >&2; exit 1; }
  cp -r "$src" "$dir"
  chmod -R u+w "$dir"
  mkdir -p "$dir/webui/static"
  log "traefik v$t: building (several minutes, ~3 GB of memory)"
  (cd "$dir" && go build -trimpath -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=v$t" \
    -o "$out/traefik" ./cmd/traefik)
}

build_flux_controller() { # <name> <version> [go mod edit flags...]
  # The module zip has no api/ folder, so its `replace .../api => ./api` is dropped (the api module
  # at the version go.mod requires comes from the proxy); the copy is writable, the cache is not.
  local name=$1 version=$2; shift 2
  local src dir="$work/$name"
  log "flux $name v$version: downloading"
  src=$(go mod download -json "github.com/fluxcd/$name@v$version" | eva_cli manifests value - Dir)
  [[ -d $src ]] || { echo "build-components: no module folder for $name v$version" >&2; exit 1; }
  cp -r "$src" "$dir"
  chmod -R u+w "$dir"
  (cd "$dir" && go mod edit "-dropreplace=github.com/fluxcd/$name/api" "$@")
  mkdir -p "$out/crds"
  cp "$dir"/config/crd/bases/*.yaml "$out/crds/"
  log "flux $name v$version: building"
  (cd "$dir" && GOFLAGS="-mod=mod -buildvcs=false" go build -trimpath -ldflags "-s -w" -o "$out/$name" .)
}

build_helm_server() {
  local module_helm
  module_helm=$(cd "$root/helm-server" && go list -m -f '{{.Version}}' helm.sh/helm/v4)
  [[ $module_helm == "v$HELM_VERSION" ]] || { echo "build-components: helm-server/go.mod requires helm $module_helm, versions.env pins v$HELM_VERSION" >&2; exit 2; }
  log "eva-helm-server (helm SDK v$HELM_VERSION): building"
  (cd "$root/helm-server" && GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=v$HELM_VERSION" -o "$out/eva-helm-server" .)
}

case "$set_name" in
  control-plane)
    build_kubernetes "$KUBERNETES_VERSION" kube-apiserver kube-controller-manager kube-scheduler kubectl
    build_etcd
    go_install "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION" kwok "-X sigs.k8s.io/kwok/pkg/consts.Version=v$KWOK_VERSION"
    go_install "sigs.k8s.io/kwok/cmd/kwokctl@v$KWOK_VERSION" kwokctl "-X sigs.k8s.io/kwok/pkg/consts.Version=v$KWOK_VERSION"
    go_install "helm.sh/helm/v4/cmd/helm@v$HELM_VERSION" helm "-X helm.sh/helm/v4/internal/version.version=v$HELM_VERSION"
    go_install "github.com/nats-io/nats-server/v2@v$NATS_SERVER_VERSION" nats-server
    copy_kwok_default_stages ;;
  oldest-control-plane)
    build_kubernetes "$KUBERNETES_OLDEST_VERSION" kube-apiserver kube-controller-manager kube-scheduler kubectl
    # Everything else is the control plane's own (hard links: one copy on disk).
    newest=$("$0" control-plane)
    for f in etcd kwok kwokctl helm nats-server kwok-stages; do cp -al "$newest/$f" "$out/$f"; done ;;
  node)
    build_kubernetes "$KUBERNETES_VERSION" kubelet kube-proxy
    build_containerd
    build_pause ;;
  dataplane)
    build_kube_router
    build_traefik ;;
  helm-server)
    build_helm_server
    # Its key changes with its sources: builds of sources a day gone are dropped (each is ~60 MB).
    find "$cache_root" -maxdepth 1 -name 'helm-server-*' ! -name "helm-server-$key" -mtime +1 -exec rm -rf {} + ;;
  flux)
    # fluxcd/pkg/artifact v0.18.3 (source-controller's go.mod) is not served by the proxy here;
    # FLUX_PKG_ARTIFACT_VERSION pins one that is.
    build_flux_controller source-controller "$FLUX_SOURCE_CONTROLLER_VERSION" \
      "-replace=github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v$FLUX_PKG_ARTIFACT_VERSION"
    build_flux_controller helm-controller "$FLUX_HELM_CONTROLLER_VERSION" ;;
esac

elapsed=$(( $(date +%s) - started ))
echo "$elapsed" >"$out/.build-seconds"
echo "$key_text" >"$out/.versions"
touch "$out/.complete"
rm -rf "$bin"
mv "$out" "$bin"
log "done in ${elapsed}s -> $bin"
echo "$bin"
