#!/usr/bin/env bash
# Builds the container images without a daemon (buildah, chroot isolation, vfs storage in a cache
# folder; needs root) and writes them as OCI archives:
#
#   * the operator, from the project's Dockerfile, tagged ghcr.io/aidonow/eva-operator:<version of
#     package.json>;
#   * a stand-in image for each of the six modules (images/module-standin: one static Go program
#     that implements the module contract), tagged as images.txt names them (ghcr.io/aidonow/<module>:<tag>),
#     uid 65532, no shell, byte-for-byte the same on every build (fixed timestamps).
#
# Base images (--bases): `public` builds with the Dockerfile's defaults, the pinned public images of
# images.txt (a release, with a registry to pull from). `local` (the default: this machine cannot pull
# them) first builds equivalent local bases from what it can reach, once (kept in the storage):
#   localhost/eva-base/debian:bookworm       mmdebstrap --variant=minbase (+ ca-certificates)
#   localhost/eva-base/node:<NODE_VERSION>-slim   + Node.js from the npm `node` package
#                                            (node_modules/node/bin/node) and npm from the npm registry
#   localhost/eva-base/golang:<go version>   + the Go toolchain from the Go module proxy
#                                            (golang.org/toolchain@v0.0.1-go<version>.linux-amd64)
# and passes them as the Dockerfile's NODE_IMAGE and GOLANG_IMAGE build arguments; the Dockerfile's
# RUN steps reach the npm registry and the Go module proxy (the helm stage mounts this machine's Go
# module and build caches, so a warm build compiles nothing).
#
# Output (--out DIR, default <cache>/eva-operator/images):
#   <name>.oci.tar   one OCI archive per image (eva-operator.oci.tar, eva-forge.oci.tar, ...)
#   images.txt       <image>:<tag>@sha256:<manifest digest> of each, in the format of images.txt
#   images.tar       all of them in the format of `scripts/mirror-images.sh --archive`: push it to a
#                    registry with `scripts/mirror-images.sh --from-archive DIR/images.tar --registry R`
#                    (a real node: `scripts/lib/real-node.sh load-images DIR/images.tar`)
#
# Usage: scripts/build-image.sh [--out DIR] [--bases local|public] [--only operator|modules]
#                               [--refresh-bases] [--no-verify]
#   EVA_BUILD_CA_FILE (default SSL_CERT_FILE): a CA bundle the RUN steps trust (a TLS-inspecting proxy)
# Then, unless --no-verify: `eva-operator version` runs in the operator image, and `version` in a module
# image, as uid 65532 on a read-only root filesystem without network (podman run).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=/dev/null
source "$root/versions.env"
# shellcheck source=lib/eva-cli.sh
source "$root/scripts/lib/eva-cli.sh"
cache_root="${EVA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eva-operator}"
out="$cache_root/images"
bases=local
only=""
refresh_bases=false
verify=true
ca_file=${EVA_BUILD_CA_FILE:-${SSL_CERT_FILE:-}}

usage() { sed -n '2,36p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
    --out) out=${2:?--out needs a folder}; shift ;;
    --bases) bases=${2:?--bases needs local or public}; shift ;;
    --only) only=${2:?--only needs operator or modules}; shift ;;
    --refresh-bases) refresh_bases=true ;;
    --no-verify) verify=false ;;
    -h | --help) usage; exit 0 ;;
    *) echo "build-image: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$bases" in local | public) ;; *) echo "build-image: --bases must be local or public" >&2; exit 2 ;; esac
case "$only" in "" | operator | modules) ;; *) echo "build-image: --only must be operator or modules" >&2; exit 2 ;; esac

log() { printf '[build-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (buildah with chroot isolation and vfs storage)"
for tool in buildah skopeo go; do command -v "$tool" >/dev/null || die "$tool is missing (scripts/test.sh installs it: scripts/lib/prerequisites.txt)"; done
$verify && { command -v podman >/dev/null || die "podman is missing (or pass --no-verify)"; }

# ---- buildah's configuration: everything under one cache folder, nothing from /etc/containers ----
work="$cache_root/image-build"
mkdir -p "$work/storage" "$work/run" "$work/tmp" "$out"
# The three files are templates in scripts/build-image/ (WORK: the build's cache folder).
for conf in storage.conf containers.conf registries.conf; do
  eva_render "$root/scripts/build-image/$conf" WORK="$work" >"$work/$conf"
done
export CONTAINERS_STORAGE_CONF="$work/storage.conf" CONTAINERS_CONF="$work/containers.conf" \
  CONTAINERS_REGISTRIES_CONF="$work/registries.conf" TMPDIR="$work/tmp" BUILDAH_ISOLATION=chroot
# Serialise builds sharing this storage.
exec 9>"$work/.lock"
flock 9

# What the images are made from: the build context the Dockerfile reads (.dockerignore), the module
# stand-in, this script, the versions and the options. When the images in $out were built from exactly
# that, they are current and nothing is rebuilt (buildah's layer cache does not carry across runs
# here: every test file that needs the images would otherwise rebuild the operator, ~4 min each).
sources_digest() {
  { echo "bases=$bases only=$only verify=$verify"
    cat "$root/Dockerfile" "$root/.dockerignore" "$root/versions.env" "${BASH_SOURCE[0]}"
    tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$root" -cf - package.json package-lock.json \
      scripts/build.ts src charts/modules charts/eva-operator/Chart.yaml helm-plugins seeds images.txt images/module-standin
  } | sha256sum | cut -d' ' -f1
}
digest=$(sources_digest)
if ! $refresh_bases && [[ -f $out/.built-from && $(<"$out/.built-from") == "$digest" && -f $out/images.tar && -f $out/images.txt ]]; then
  log "current: $out was built from these sources (delete $out/.built-from to rebuild)"
  cat "$out/images.txt"
  exit 0
fi
rm -f "$out/.built-from"
scratch=$(mktemp -d "$work/tmp/build-XXXXXX")
trap 'rm -rf "$scratch"' EXIT

has_image() { buildah images --quiet "$1" >/dev/null 2>&1; }
timed() { # <what> <command...>: runs it, records its seconds in $scratch/times
  local what=$1 t0=$SECONDS
  shift
  "$@"
  echo "$what $((SECONDS - t0))" >>"$scratch/times"
}

# The tags images.txt pins, by repository, from the operator's own reader of it (src/script-commands/commands.ts).
declare -A pinned_tags=()
pinned_lines=$(eva_cli images lines --file "$root/images.txt") || die "cannot read $root/images.txt"
while IFS=$'\t' read -r _ repository tag _ _; do pinned_tags[$repository]=$tag; done <<<"$pinned_lines"
images_tag() { echo "${pinned_tags[$1]:-}"; } # <repository>: its tag in images.txt

# ---- local bases -----------------------------------------------------------------------------------
node_tag="$NODE_VERSION-slim"
go_version=$(images_tag docker.io/library/golang) # 1.26.8-alpine: the Dockerfile's GOLANG_IMAGE (check-images.sh)
go_version=${go_version%%-*}
debian_base=localhost/eva-base/debian:bookworm
node_base="localhost/eva-base/node:$node_tag"
golang_base="localhost/eva-base/golang:$go_version"

base_debian() {
  log "local base $debian_base: mmdebstrap --variant=minbase bookworm (Debian's packages)"
  mmdebstrap --quiet --variant=minbase --mode=root --format=tar --include=ca-certificates \
    bookworm "$scratch/debian.tar" >&2
  local c; c=$(buildah from scratch)
  buildah add --quiet "$c" "$scratch/debian.tar" / >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash \
    --label org.opencontainers.image.description="Debian bookworm minbase, built by scripts/build-image.sh" "$c"
  buildah commit --quiet --rm "$c" "$debian_base" >/dev/null
  rm -f "$scratch/debian.tar"
}

base_node() {
  local node="$root/node_modules/node/bin/node" npm_version
  [[ -x $node ]] || die "$node is missing: run npm ci (the npm \`node\` package, a dev dependency)"
  [[ "$("$node" --version)" == "v$NODE_VERSION" ]] || die "$node is not v$NODE_VERSION (npm ci?)"
  npm_version=$(npm --version)
  log "local base $node_base: Node.js $NODE_VERSION (npm package node) and npm $npm_version (npm registry)"
  (cd "$scratch" && npm pack --silent "npm@$npm_version" >/dev/null)
  mkdir -p "$scratch/node/usr/local/bin" "$scratch/node/usr/local/lib/node_modules/npm"
  cp "$node" "$scratch/node/usr/local/bin/node"
  tar -xzf "$scratch/npm-$npm_version.tgz" -C "$scratch/node/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$scratch/node/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$scratch/node/usr/local/bin/npx"
  local c; c=$(buildah from --pull=never "$debian_base")
  buildah copy --quiet "$c" "$scratch/node/usr/local" /usr/local >/dev/null
  buildah config --env NODE_VERSION="$NODE_VERSION" --cmd node \
    --label org.opencontainers.image.description="Node.js $NODE_VERSION on Debian bookworm minbase, built by scripts/build-image.sh" "$c"
  buildah commit --quiet --rm "$c" "$node_base" >/dev/null
  rm -rf "$scratch/node" "$scratch"/npm-*.tgz
}

base_golang() {
  local mod="golang.org/toolchain@v0.0.1-go$go_version.linux-amd64" dir
  log "local base $golang_base: Go $go_version from the Go module proxy ($mod)"
  mkdir -p "$scratch/toolchain-mod"
  printf 'module eva-operator.local/toolchain\ngo %s\n' "$GO_TOOLCHAIN" >"$scratch/toolchain-mod/go.mod"
  dir=$(cd "$scratch/toolchain-mod" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "$mod" | eva_cli manifests value - Dir)
  [[ -f $dir/bin/go ]] || die "the Go toolchain module has no bin/go ($dir)"
  # The module cache keeps files read-only and without exec bits (the go command sets them when it
  # switches toolchains): restore them on a copy.
  cp -r "$dir" "$scratch/go"
  chmod -R u+w "$scratch/go"
  chmod +x "$scratch/go/bin/"* "$scratch/go/pkg/tool/"*/*
  local c; c=$(buildah from --pull=never "$debian_base")
  buildah copy --quiet "$c" "$scratch/go" /usr/local/go >/dev/null
  rm -rf "$scratch/go"
  buildah config --env GOLANG_VERSION="$go_version" --env GOPATH=/go --env GOTOOLCHAIN=local \
    --env PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --workingdir /go \
    --label org.opencontainers.image.description="Go $go_version on Debian bookworm minbase, built by scripts/build-image.sh" "$c"
  buildah commit --quiet --rm "$c" "$golang_base" >/dev/null
  [[ "$(buildah run "$(buildah from --pull=never "$golang_base")" -- go version 2>/dev/null | awk '{print $3}')" == "go$go_version" ]] ||
    log "WARNING: go version in $golang_base is not go$go_version"
  buildah rm --all >/dev/null
}

local_bases() {
  if $refresh_bases; then buildah rmi --force "$golang_base" "$node_base" "$debian_base" >/dev/null 2>&1 || true; fi
  has_image "$debian_base" || timed base-debian base_debian
  if [[ $only != modules ]]; then
    has_image "$node_base" || timed base-node base_node
    has_image "$golang_base" || timed base-golang base_golang
  fi
}

# ---- the operator ----------------------------------------------------------------------------------
operator_version=$(eva_operator_version)
operator_image="ghcr.io/aidonow/eva-operator:$operator_version"

build_operator() {
  local args=(--isolation chroot --network host --layers --format oci -f "$root/Dockerfile"
    --build-arg "OPERATOR_VERSION=$operator_version" --build-arg "NODE_VERSION=$NODE_VERSION"
    --build-arg "HELM_VERSION=$HELM_VERSION" -t "$operator_image")
  # A build host behind a TLS-inspecting proxy (this one): its CA bundle, for the RUN steps only
  # (a mount, not a layer; Go reads the system bundle, npm the Dockerfile's NODE_EXTRA_CA_CERTS).
  # The local bases have ca-certificates, so the mount point exists and nothing is left in a layer.
  if [[ -n $ca_file && $bases == local ]]; then
    args+=(--volume "$ca_file:/etc/ssl/certs/ca-certificates.crt:ro"
      --build-arg NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt)
  fi
  if [[ $bases == local ]]; then
    # The helm stage's `go install` finds this machine's Go module and build caches (the same
    # sources and flags as scripts/lib/build-components.sh: nothing to download or compile when warm).
    # Made when absent (a machine where Go never built anything): a missing mount source fails the build.
    local gomodcache gocache
    gomodcache=$(go env GOMODCACHE) && gocache=$(go env GOCACHE) && mkdir -p "$gomodcache" "$gocache"
    args+=(--pull=never --build-arg "NODE_IMAGE=$node_base" --build-arg "GOLANG_IMAGE=$golang_base"
      --volume "$gomodcache:/go/pkg/mod" --volume "$gocache:/root/.cache/go-build")
  fi
  log "operator: buildah bud -> $operator_image ($bases bases)"
  buildah bud --quiet "${args[@]}" "$root" >/dev/null
}

# ---- the module stand-ins --------------------------------------------------------------------------
modules=(eva-forge eva-gateway eva-shell eva-whisper orbit-crm orbit-itsm)

build_modules() {
  local ctx="$scratch/module" m tag
  mkdir -p "$ctx"
  log "modules: go build images/module-standin (static)"
  (cd "$root/images/module-standin" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags "-s -w -buildid=" -o "$ctx/eva-module" .)
  chmod 0555 "$ctx/eva-module"
  cp "$root/images/module-standin/Containerfile" "$ctx/Containerfile"
  for m in "${modules[@]}"; do
    tag=$(images_tag "ghcr.io/aidonow/$m")
    [[ -n $tag ]] || die "images.txt has no line for ghcr.io/aidonow/$m"
    buildah bud --quiet --isolation chroot --network host --pull=never --format oci --timestamp 0 \
      --build-arg "MODULE=$m" --build-arg "VERSION=$tag" -t "ghcr.io/aidonow/$m:$tag" -f "$ctx/Containerfile" "$ctx" >/dev/null
    log "modules: ghcr.io/aidonow/$m:$tag"
  done
}

# ---- output ----------------------------------------------------------------------------------------
write_output() { # <image>...
  local image name digest i=0
  mkdir -p "$scratch/archive/images"
  eva_cli images archive-header scripts/build-image.sh >"$scratch/archive/images.txt"
  : >"$scratch/images.txt"
  for image in "$@"; do
    name=${image##*/}; name=${name%%:*}
    rm -f "$out/$name.oci.tar"
    buildah push --quiet --format oci "$image" "oci-archive:$out/$name.oci.tar:$image" >/dev/null
    digest="sha256:$(skopeo inspect --raw "oci-archive:$out/$name.oci.tar" | sha256sum | cut -d' ' -f1)"
    skopeo copy --quiet --preserve-digests "oci-archive:$out/$name.oci.tar" "dir:$scratch/archive/images/$i"
    [[ "sha256:$(sha256sum <"$scratch/archive/images/$i/manifest.json" | cut -d' ' -f1)" == "$digest" ]] ||
      die "$image: the copy's manifest digest differs from the archive's"
    echo "$image@$digest" | tee -a "$scratch/images.txt" >>"$scratch/archive/images.txt"
    log "wrote $out/$name.oci.tar ($image@$digest)"
    i=$((i + 1))
  done
  tar -cf "$out/images.tar" -C "$scratch/archive" images.txt images
  cp "$scratch/images.txt" "$out/images.txt"
}

remove_cgroup_parent() { # <name>: the cgroup podman run made under it, in every hierarchy
  local h
  for h in /sys/fs/cgroup/*/; do
    [[ -d $h$1 ]] && find "$h$1" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  return 0
}

verify_images() {
  # --ulimit: this machine has no CAP_SYS_RESOURCE (podman's defaults exceed the hard limits). Runc
  # cannot run without cgroups (--cgroups disabled): podman's go under a parent of ours, removed after.
  # No --user: the image's own USER must be the non-root one.
  local parent="eva-build-image-$$" image user out
  local run=(podman run --rm --network none --read-only --cgroup-parent "/$parent"
    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
  trap 'remove_cgroup_parent '"$parent"'; rm -rf "$scratch"' EXIT
  check_user() { # <image>
    user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$1")
    [[ $user == 65532:65532 ]] || die "$1 runs as \"$user\", not 65532:65532"
  }
  if [[ $only != modules ]]; then
    check_user "$operator_image"
    # As the chart runs it: OPERATOR_VERSION set, /tmp a tmpfs.
    out=$("${run[@]}" --tmpfs /tmp -e "OPERATOR_VERSION=$operator_version" "$operator_image" version 2>&1) ||
      { echo "$out" >&2; die "eva-operator version failed in $operator_image"; }
    [[ $out == "$operator_version" ]] || die "eva-operator version printed \"$out\", expected $operator_version"
    out=$("${run[@]}" --tmpfs /tmp --entrypoint node "$operator_image" -e \
      'process.stdout.write(`uid=${process.getuid()} node=${process.version}`)' 2>&1) ||
      { echo "$out" >&2; die "node failed in $operator_image"; }
    log "verify: $operator_image: \`eva-operator version\` -> $operator_version; $out; read-only root, no network"
  fi
  if [[ $only != operator ]]; then
    image="ghcr.io/aidonow/eva-forge:$(images_tag ghcr.io/aidonow/eva-forge)"
    check_user "$image"
    out=$("${run[@]}" "$image" version 2>&1) || { echo "$out" >&2; die "version failed in $image"; }
    log "verify: $image: $out (user 65532:65532, read-only root, no network)"
  fi
}

started=$SECONDS
built=()
[[ $bases == local && $only != modules ]] && local_bases
if [[ $only != modules ]]; then timed operator build_operator; built+=("$operator_image"); fi
if [[ $only != operator ]]; then
  timed modules build_modules
  for m in "${modules[@]}"; do built+=("ghcr.io/aidonow/$m:$(images_tag "ghcr.io/aidonow/$m")"); done
fi
timed output write_output "${built[@]}"
$verify && timed verify verify_images
# vfs storage keeps a full copy of every layer: the intermediate images of this build (and any a
# crashed build left) go, the tagged ones (bases, the images just built) stay. Without this the
# storage grew by ~2 GB a build and filled the disk (41 GB after a day of runs).
buildah rm --all >/dev/null
buildah rmi --prune >/dev/null 2>&1 || log "warning: buildah rmi --prune failed; $work/storage keeps old layers"
echo "$digest" >"$out/.built-from"
log "done in $((SECONDS - started))s ($(awk '{printf "%s%s %ss", (NR > 1 ? ", " : ""), $1, $2}' "$scratch/times")): $out/images.tar"
cat "$out/images.txt"
