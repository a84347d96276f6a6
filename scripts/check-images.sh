#!/usr/bin/env bash
# Checks images.txt, the one list of container images (see its header), against what uses images:
#
#   * every line is <registry>/<repository>:<tag>@sha256:<64 hex digits | PLACEHOLDER>, listed once;
#     a line without a digest or malformed fails, naming its line number;
#   * every image the charts render is listed: charts/eva-operator (nats.enabled=true) and every
#     module chart under charts/modules for every tier, with `helm template`;
#   * every Dockerfile FROM is pinned by digest, and listed with that digest (a FROM ${ARG} is checked
#     through the ARG's default, declared before the first FROM);
#   * versions agree with versions.env: the Dockerfile's HELM_VERSION/NODE_VERSION build args, and
#     the tags of the node, golang and nats images;
#   * PLACEHOLDER digests: allowed for our own images (ghcr.io/aidonow/, filled by the release step);
#     a third-party PLACEHOLDER is reported as a warning. With --release any PLACEHOLDER fails.
#
# Usage: scripts/check-images.sh [--release] [--root DIR]
#   --root DIR  check DIR/images.txt, DIR/Dockerfile, DIR/charts, DIR/versions.env (default: this checkout)
#   HELM=<path> the helm binary (default: helm on PATH; `eval "$(scripts/dev-cluster.sh env)"` puts the
#               pinned one there)
# Exit status: 0 all good, 1 problems (each printed on stderr), 2 usage or tool errors.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
release=false
while (($#)); do
  case "$1" in
    --release) release=true ;;
    --root) root=$(cd "${2:?--root needs a folder}" && pwd); shift ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-images: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

helm=${HELM:-helm}
command -v "$helm" >/dev/null 2>&1 ||
  { echo "check-images: helm not found (set HELM, or eval \"\$(scripts/dev-cluster.sh env)\")" >&2; exit 2; }

images_file="$root/images.txt"
dockerfile="$root/Dockerfile"
versions_file="$root/versions.env"
for f in "$images_file" "$dockerfile" "$versions_file" "$root/charts/eva-operator/Chart.yaml"; do
  [[ -f $f ]] || { echo "check-images: $f not found" >&2; exit 2; }
done

OWN_PREFIX=ghcr.io/aidonow/
TIERS=(Starter Customer Enterprise Platform)
problems=0
problem() { echo "check-images: ERROR: $*" >&2; problems=$((problems + 1)); }
warn() { echo "check-images: warning: $*" >&2; }

# ---- versions.env ----------------------------------------------------------------------------------
version_of() { # <NAME>: its value in versions.env
  local value
  value=$(sed -n "s/^$1=\(.*\)$/\1/p" "$versions_file" | tail -n 1)
  [[ -n $value ]] || { echo "check-images: $1 missing from $versions_file" >&2; exit 2; }
  echo "$value"
}
NODE_VERSION=$(version_of NODE_VERSION)
HELM_VERSION=$(version_of HELM_VERSION)
NATS_SERVER_VERSION=$(version_of NATS_SERVER_VERSION)
GO_TOOLCHAIN=$(version_of GO_TOOLCHAIN)

# ---- image references ------------------------------------------------------------------------------
# Prints "<repository>|<tag>|<digest>" for a reference, with Docker's defaults made explicit:
# node -> docker.io/library/node, no tag and no digest -> latest.
normalize() {
  local ref=$1 name tag="" digest="" first last
  if [[ $ref == *@* ]]; then digest=${ref#*@}; ref=${ref%%@*}; fi
  last=${ref##*/}
  if [[ $last == *:* ]]; then tag=${last##*:}; name=${ref%:*}; else name=$ref; fi
  first=${name%%/*}
  if [[ $name != */* ]] || [[ $first != *.* && $first != *:* && $first != localhost ]]; then name="docker.io/$name"; fi
  case "$name" in index.docker.io/* | registry-1.docker.io/*) name="docker.io/${name#*/}" ;; esac
  if [[ $name == docker.io/* && ${name#docker.io/} != */* ]]; then name="docker.io/library/${name#docker.io/}"; fi
  [[ -n $tag || -n $digest ]] || tag=latest
  echo "$name|$tag|$digest"
}

# ---- images.txt ------------------------------------------------------------------------------------
declare -A listed_digest=()   # "<repository>:<tag>" -> sha256:<hex> or sha256:PLACEHOLDER
declare -A listed_line=()     # "<repository>:<tag>" -> line number
line_re='^([a-z0-9][a-z0-9._:/-]*[a-z0-9]):([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})(@sha256:([a-f0-9]{64}|PLACEHOLDER))?$'
number=0
while IFS= read -r raw || [[ -n $raw ]]; do
  number=$((number + 1))
  line=${raw%$'\r'}
  line="${line#"${line%%[![:space:]]*}"}"; line="${line%"${line##*[![:space:]]}"}"
  [[ -z $line || $line == \#* ]] && continue
  where="images.txt line $number"
  if ! [[ $line =~ $line_re ]]; then
    problem "$where: malformed, expected <registry>/<repository>:<tag>@sha256:<64 hex digits>, got \"$line\""
    continue
  fi
  repository=${BASH_REMATCH[1]} tag=${BASH_REMATCH[2]} digest=${BASH_REMATCH[4]}
  first=${repository%%/*}
  if [[ $repository != */* || ( $first != *.* && $first != *:* && $first != localhost ) ]]; then
    problem "$where: malformed, the registry is missing (write $(normalize "$repository:$tag" | cut -d'|' -f1):$tag), got \"$line\""
    continue
  fi
  if [[ -z $digest ]]; then
    if [[ $repository == "$OWN_PREFIX"* ]]; then
      problem "$where: $repository:$tag has no digest (add @sha256:PLACEHOLDER until the release step fills it)"
    else
      problem "$where: third-party image $repository:$tag has no digest: pin it (@sha256:<64 hex digits>)"
    fi
    continue
  fi
  key="$repository:$tag"
  if [[ -n ${listed_line[$key]:-} ]]; then
    problem "$where: $key is listed twice (also line ${listed_line[$key]})"
    continue
  fi
  listed_line[$key]=$number
  listed_digest[$key]="sha256:$digest"
  if [[ $digest == PLACEHOLDER ]]; then
    if $release; then
      problem "$where: $key still has the PLACEHOLDER digest (a release needs every digest)"
    elif [[ $repository != "$OWN_PREFIX"* ]]; then
      warn "$where: third-party image $key has the PLACEHOLDER digest; the release step must fill it (--release fails)"
    fi
  fi
  # Versions pinned in versions.env.
  case "$repository" in
    docker.io/library/node)
      [[ $tag == "$NODE_VERSION" || $tag == "$NODE_VERSION"-* ]] ||
        problem "$where: $key does not match NODE_VERSION=$NODE_VERSION in versions.env" ;;
    docker.io/library/nats)
      [[ $tag == "$NATS_SERVER_VERSION" || $tag == "$NATS_SERVER_VERSION"-* ]] ||
        problem "$where: $key does not match NATS_SERVER_VERSION=$NATS_SERVER_VERSION in versions.env" ;;
    docker.io/library/golang)
      [[ $tag == "$GO_TOOLCHAIN" || $tag == "$GO_TOOLCHAIN".* || $tag == "$GO_TOOLCHAIN"-* ]] ||
        problem "$where: $key does not match GO_TOOLCHAIN=$GO_TOOLCHAIN in versions.env" ;;
  esac
done <"$images_file"

# Is a referenced image listed? <reference> <where it is used> [pinned: the reference must carry a digest]
check_listed() {
  local ref=$1 where=$2 pinned=${3:-} repository tag digest key
  IFS='|' read -r repository tag digest <<<"$(normalize "$ref")"
  if [[ -n $pinned && -z $digest ]]; then
    problem "$where $ref is not pinned by digest (@sha256:<64 hex digits>)"
  fi
  if [[ -n $tag ]]; then
    key="$repository:$tag"
    if [[ -z ${listed_line[$key]:-} ]]; then
      problem "$where $ref is not listed in images.txt (expected a line $key@sha256:...)"
    elif [[ -n $digest && $digest != "${listed_digest[$key]}" ]]; then
      problem "$where $ref has digest $digest but images.txt line ${listed_line[$key]} has ${listed_digest[$key]}"
    fi
    return
  fi
  # repository@digest: some line of that repository must carry this digest.
  for key in "${!listed_digest[@]}"; do
    [[ ${key%:*} == "$repository" && ${listed_digest[$key]} == "$digest" ]] && return
  done
  problem "$where $ref is not listed in images.txt (no $repository line with digest $digest)"
}

# ---- the charts ------------------------------------------------------------------------------------
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Prints every image: value of a rendered manifest, one per line.
images_in() {
  sed -n -E 's/^[[:space:]]*(- )?image:[[:space:]]*["'"'"']?([^"'"'"'[:space:]]+)["'"'"']?[[:space:]]*$/\2/p' "$1" | sort -u
}

render() { # <what> <chart folder> <helm template args...>: renders into $tmp/out.yaml, 1 when helm fails
  local what=$1 chart=$2; shift 2
  if ! "$helm" template check-images "$chart" "$@" >"$tmp/out.yaml" 2>"$tmp/err.txt"; then
    problem "$what: helm template failed: $(tr '\n' ' ' <"$tmp/err.txt")"
    return 1
  fi
}

rendered=0
# The quick-start NATS renders only with the bootstrap's public JWTs; any text will do for listing images.
quick_start_nats=(--set nats.enabled=true --set nats.auth.operatorJwt=unused --set nats.auth.systemAccount=unused --set nats.auth.systemAccountJwt=unused)
if render "charts/eva-operator (nats.enabled=true)" "$root/charts/eva-operator" --namespace eva-system "${quick_start_nats[@]}"; then
  while IFS= read -r image; do
    [[ -n $image ]] && { check_listed "$image" "charts/eva-operator renders image"; rendered=$((rendered + 1)); }
  done < <(images_in "$tmp/out.yaml")
fi

for chart in "$root"/charts/modules/*/; do
  chart=${chart%/}
  [[ -f $chart/Chart.yaml ]] || continue
  grep -Eq '^type:[[:space:]]*library' "$chart/Chart.yaml" && continue
  name=$(basename "$chart")
  for tier in "${TIERS[@]}"; do
    render "charts/modules/$name (tier $tier)" "$chart" --namespace eva-tenant-abcdef \
      --set tenant.code=ABCDEF --set "tenant.tier=$tier" || continue
    while IFS= read -r image; do
      [[ -n $image ]] && { check_listed "$image" "charts/modules/$name (tier $tier) renders image"; rendered=$((rendered + 1)); }
    done < <(images_in "$tmp/out.yaml")
  done
done

# ---- the Dockerfile --------------------------------------------------------------------------------
# A FROM may name its image through a global build argument (ARG NAME=<image> before the first FROM,
# so that scripts/build-image.sh can pass local bases): the argument's default is what is checked.
declare -A stages=()
declare -A global_args=()
froms=0
number=0
seen_from=false
arg_re='^[Aa][Rr][Gg][[:space:]]+([A-Za-z_][A-Za-z0-9_]*)=["'"'"']?([^"'"'"'[:space:]]*)["'"'"']?[[:space:]]*$'
while IFS= read -r raw || [[ -n $raw ]]; do
  number=$((number + 1))
  line=${raw%$'\r'}
  if ! $seen_from && [[ $line =~ $arg_re ]]; then global_args[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}; fi
  read -r -a words <<<"$line"
  [[ ${#words[@]} -gt 0 && ${words[0],,} == from ]] || continue
  seen_from=true
  i=1
  while [[ ${words[$i]:-} == --* ]]; do i=$((i + 1)); done
  image=${words[$i]:-}
  [[ ${words[$((i + 1))]:-} =~ ^[Aa][Ss]$ ]] && stages[${words[$((i + 2))],,}]=1
  [[ -z $image || ${image,,} == scratch || -n ${stages[${image,,}]:-} ]] && continue
  where="Dockerfile line $number: FROM"
  if [[ $image == *'$'* ]]; then
    if [[ $image =~ ^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$ && -n ${global_args[${BASH_REMATCH[1]}]:-} ]]; then
      where="Dockerfile line $number (FROM $image, the default of ARG ${BASH_REMATCH[1]}): FROM"
      image=${global_args[${BASH_REMATCH[1]}]}
    else
      problem "Dockerfile line $number: FROM $image uses a build argument without a default: declare ARG NAME=<image pinned by digest> before the first FROM, so it can be checked"
      continue
    fi
  fi
  check_listed "$image" "$where" pinned
  froms=$((froms + 1))
done <"$dockerfile"

arg_default() { # <NAME>: the default of `ARG NAME=...` in the Dockerfile
  sed -n -E "s/^[[:space:]]*ARG[[:space:]]+$1=[\"']?([^\"'[:space:]]*)[\"']?[[:space:]]*$/\1/p" "$dockerfile" | head -n 1
}
for pair in "HELM_VERSION=$HELM_VERSION" "NODE_VERSION=$NODE_VERSION"; do
  name=${pair%%=*} want=${pair#*=} got=$(arg_default "${pair%%=*}")
  if [[ -z $got ]]; then
    problem "Dockerfile: no ARG $name=<version> (it must default to versions.env's $name=$want)"
  elif [[ $got != "$want" ]]; then
    problem "Dockerfile: ARG $name=$got disagrees with versions.env $name=$want"
  fi
done

if ((problems > 0)); then
  echo "check-images: $problems problem(s)" >&2
  exit 1
fi
echo "check-images: OK: ${#listed_line[@]} images listed; $rendered chart image references and $froms Dockerfile base images are listed$($release && echo '; no PLACEHOLDER (release)')"
