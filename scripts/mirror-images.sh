#!/usr/bin/env bash
# Mirrors every image of images.txt (see its header) into another registry, e.g. an air-gapped one,
# keeping each image's digest: the operator, run with AIRGAP_REGISTRY=<registry>, then pulls
# <registry>/<path>:<tag>@sha256:<digest>, where <path> is the line's repository without its registry
# host (ghcr.io/aidonow/eva-forge -> <registry>/aidonow/eva-forge, docker.io/library/node ->
# <registry>/library/node).
#
# Every image is copied by its pinned digest (all platforms of a multi-arch index, digests preserved)
# and verified twice: the source's manifest must have the pinned digest, and so must the copy.
#
# Usage: scripts/mirror-images.sh --registry HOST[:PORT][/PREFIX] [options]       mirror, online
#        scripts/mirror-images.sh --archive FILE [options]                        write every image to FILE
#        scripts/mirror-images.sh --from-archive FILE --registry ... [options]    push FILE's images
#   --images FILE            the images file (default: images.txt of this checkout, or with --chart the
#                            images.txt packaged in that chart)
#   --chart REF              also mirror a released operator chart, oci://HOST[:PORT]/PATH:VERSION (as
#                            scripts/release.sh pushes it), by digest, to <registry>/PATH:VERSION; then
#                            `helm install ... oci://<registry>/PATH --set airGapRegistry=<registry>`
#                            needs nothing but the mirror. Reading the chart's images.txt needs helm
#   --registry R             the destination registry, HOST[:PORT] with an optional /PREFIX
#   --archive FILE           write all images into ONE tar file (one `skopeo dir:` copy per image, which
#                            keeps every manifest byte for byte, plus images.txt naming them) for a
#                            disconnected transfer; no registry is written
#   --from-archive FILE      push the images of such a file to --registry (no source registry is read)
#   --tool skopeo|crane|docker|podman   the copy tool (default skopeo); --podman = --tool podman.
#                            Archives need skopeo; digests are read with skopeo (or crane without it)
#   --src-tls-verify=BOOL    require HTTPS with a verified certificate from the source (default true)
#   --dest-tls-verify=BOOL   the same for the destination (default true)
#   --strict                 a PLACEHOLDER digest fails (default: the line is skipped with a warning)
#   --dry-run                print the plan; contacts no registry and writes nothing
# Exit status: 0 every image mirrored and verified; 1 some image failed (each is named on stderr);
# 2 usage or tool errors.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/eva-cli.sh
source "$root/scripts/lib/eva-cli.sh"
images_file="$root/images.txt"
images_given=false
chart=""
registry=""
archive=""
from_archive=""
tool=skopeo
src_tls=true
dest_tls=true
strict=false
dry_run=false

usage_error() { echo "mirror-images: $* (try --help)" >&2; exit 2; }
bool_arg() { # <flag> <value>: prints true/false
  case "$2" in true | false) echo "$2" ;; *) usage_error "$1 takes true or false, got \"$2\"" ;; esac
}

while (($#)); do
  case "$1" in
    --images | --file) images_file=${2:?$1 needs a file}; images_given=true; shift ;;
    --images=* | --file=*) images_file=${1#*=}; images_given=true ;;
    --registry) registry=${2:?--registry needs HOST[:PORT][/PREFIX]}; shift ;;
    --registry=*) registry=${1#*=} ;;
    --chart) chart=${2:?--chart needs oci://HOST[:PORT]/PATH:VERSION}; shift ;;
    --chart=*) chart=${1#*=} ;;
    --archive) archive=${2:?--archive needs a file}; shift ;;
    --archive=*) archive=${1#*=} ;;
    --from-archive) from_archive=${2:?--from-archive needs a file}; shift ;;
    --from-archive=*) from_archive=${1#*=} ;;
    --tool) tool=${2:?--tool needs skopeo, crane, docker or podman}; shift ;;
    --tool=*) tool=${1#*=} ;;
    --podman) tool=podman ;;
    --src-tls-verify=* | --dest-tls-verify=*)
      value=$(bool_arg "${1%%=*}" "${1#*=}")
      if [[ $1 == --src-* ]]; then src_tls=$value; else dest_tls=$value; fi ;;
    --src-tls-verify | --dest-tls-verify)
      value=true
      if [[ ${2:-} == true || ${2:-} == false ]]; then value=$2; shift; fi
      if [[ $1 == --src-tls-verify ]]; then src_tls=$value; else dest_tls=$value; fi ;;
    --strict | --release) strict=true ;;
    --dry-run) dry_run=true ;;
    -h | --help) sed -n '2,33p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument \"$1\"" ;;
  esac
  shift
done

[[ -n $archive && -n $from_archive ]] && usage_error "--archive and --from-archive exclude each other"
[[ -n $chart && -n $from_archive ]] && usage_error "--from-archive pushes the chart the archive holds (written with --archive --chart): drop --chart"
[[ -n $archive && -n $registry ]] && usage_error "--archive writes a file, not a registry: drop --registry"
[[ -z $archive && -z $registry ]] && usage_error "--registry is required (or --archive FILE)"
if [[ -n $registry ]]; then
  checked=$(eva_cli images registry "$registry" 2>/dev/null) || usage_error "--registry must be HOST[:PORT][/PREFIX], got \"$registry\""
  registry=$checked
fi
case "$tool" in skopeo | crane | docker | podman) ;; *) usage_error "--tool must be skopeo, crane, docker or podman, got \"$tool\"" ;; esac
if [[ -n $archive || -n $from_archive ]] && [[ $tool != skopeo ]]; then
  usage_error "--archive and --from-archive need --tool skopeo"
fi

if ! $dry_run; then
  command -v "$tool" >/dev/null 2>&1 || { echo "mirror-images: $tool not found on PATH (--tool $tool)" >&2; exit 2; }
  if command -v skopeo >/dev/null 2>&1; then digest_tool=skopeo
  elif command -v crane >/dev/null 2>&1; then digest_tool=crane
  else echo "mirror-images: reading digests needs skopeo or crane on PATH" >&2; exit 2; fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---- the images ------------------------------------------------------------------------------------
# Fills sources[] (repository:tag), digests[] (sha256:<hex>) and paths[] (repository without registry).
sources=() digests=() paths=()
failed=()
fail() { # <image> <reason>
  echo "mirror-images: FAILED: $1: $2" >&2
  failed+=("$1")
}
read_images() { # <file> <name shown in messages>
  local file=$1 shown=$2 number repository tag digest path lines
  [[ -f $file ]] || { echo "mirror-images: $file not found" >&2; exit 2; }
  if ! lines=$(eva_cli images lines --file "$file" --name "$shown" 2>"$work/lines.err"); then
    sed 's/^/mirror-images: /' "$work/lines.err" >&2
    exit 2
  fi
  while IFS=$'\t' read -r number repository tag digest path; do
    [[ -n $number ]] || continue
    if [[ $digest == PLACEHOLDER ]]; then
      if $strict; then
        fail "$repository:$tag" "$shown line $number has the PLACEHOLDER digest (--strict)"
      else
        echo "mirror-images: warning: skipping $repository:$tag ($shown line $number has the PLACEHOLDER digest)" >&2
      fi
      continue
    fi
    sources+=("$repository:$tag") digests+=("sha256:$digest") paths+=("$path:$tag")
  done <<<"$lines"
}

# ---- the tools -------------------------------------------------------------------------------------
# Prints the digest of the manifest (or index) at a transport reference, e.g. docker://host/repo:tag
# or dir:/path: the sha256 of its raw bytes, exactly what a pull by digest checks.
manifest_digest() { # <reference> <tls verify: true|false>
  local ref=$1 tls=$2
  if [[ $ref == dir:* ]]; then
    echo "sha256:$(sha256sum <"${ref#dir:}/manifest.json" | cut -d' ' -f1)"
  elif [[ $digest_tool == skopeo ]]; then
    local raw
    raw=$(mktemp -p "$work")
    skopeo inspect --raw --retry-times 2 --tls-verify="$tls" "$ref" >"$raw" || return 1
    [[ -s $raw ]] || return 1
    echo "sha256:$(sha256sum <"$raw" | cut -d' ' -f1)"
  else
    local insecure=()
    [[ $tls == true ]] || insecure=(--insecure)
    crane digest "${insecure[@]}" "${ref#docker://}"
  fi
}

copy_image() { # <source reference> <destination reference>, transport-qualified (docker://, dir:)
  local src=$1 dest=$2
  case "$tool" in
    skopeo)
      local args=(copy --all --preserve-digests --retry-times 2 -q)
      [[ $src == docker://* ]] && args+=(--src-tls-verify="$src_tls")
      [[ $dest == docker://* ]] && args+=(--dest-tls-verify="$dest_tls")
      skopeo "${args[@]}" "$src" "$dest" ;;
    crane)
      local insecure=()
      [[ $src_tls == true && $dest_tls == true ]] || insecure=(--insecure)
      crane copy "${insecure[@]}" "${src#docker://}" "${dest#docker://}" ;;
    docker | podman)
      # A daemon pull/push keeps one platform; docker takes plain HTTP registries from its own
      # insecure-registries setting. The digest check below fails if the pushed manifest differs.
      local tls_src=() tls_dest=()
      if [[ $tool == podman ]]; then tls_src=(--tls-verify="$src_tls"); tls_dest=(--tls-verify="$dest_tls"); fi
      "$tool" pull "${tls_src[@]}" "${src#docker://}" &&
        "$tool" tag "${src#docker://}" "${dest#docker://}" &&
        "$tool" push "${tls_dest[@]}" "${dest#docker://}" ;;
  esac
}

# Copies one image and verifies its digest at both ends. <image> <wanted digest> <source ref> <dest ref>
mirror_one() {
  local image=$1 want=$2 src=$3 dest=$4 got log
  log="$work/copy.log"
  if [[ $src == docker://* ]]; then
    if ! got=$(manifest_digest "$src" "$src_tls" 2>"$log"); then
      fail "$image" "cannot read $src: $(tr '\n' ' ' <"$log")"; return
    fi
  else
    got=$(manifest_digest "$src" true)
  fi
  [[ $got == "$want" ]] || { fail "$image" "the source $src has digest $got, expected $want"; return; }
  if ! copy_image "$src" "$dest" >"$log" 2>&1; then
    fail "$image" "copy $src -> $dest failed: $(tr '\n' ' ' <"$log")"; return
  fi
  if ! got=$(manifest_digest "$dest" "$dest_tls" 2>"$log"); then
    fail "$image" "cannot read the copy $dest: $(tr '\n' ' ' <"$log")"; return
  fi
  [[ $got == "$want" ]] || { fail "$image" "the copy $dest has digest $got, expected $want"; return; }
  echo "mirror-images: ok $image@$want -> ${dest}"
}

finish() {
  if ((${#failed[@]} > 0)); then
    echo "mirror-images: ${#failed[@]} image(s) failed: ${failed[*]}" >&2
    exit 1
  fi
}

# ---- from an archive -------------------------------------------------------------------------------
if [[ -n $from_archive ]]; then
  [[ -f $from_archive ]] || { echo "mirror-images: $from_archive not found" >&2; exit 2; }
  mkdir "$work/archive"
  tar -xf "$from_archive" -C "$work/archive" --no-same-owner ||
    { echo "mirror-images: $from_archive is not a readable tar" >&2; exit 2; }
  [[ -f $work/archive/images.txt ]] ||
    { echo "mirror-images: $from_archive has no images.txt (not written by --archive)" >&2; exit 2; }
  read_images "$work/archive/images.txt" "$(basename "$from_archive"):images.txt"
  for i in "${!sources[@]}"; do
    dest="docker://$registry/${paths[$i]}"
    if $dry_run; then echo "would push ${sources[$i]}@${digests[$i]} from the archive -> ${dest#docker://}"; continue; fi
    if [[ ! -f $work/archive/images/$i/manifest.json ]]; then
      fail "${sources[$i]}" "missing from the archive (images/$i)"; continue
    fi
    mirror_one "${sources[$i]}" "${digests[$i]}" "dir:$work/archive/images/$i" "$dest"
  done
  finish
  $dry_run || echo "mirror-images: ${#sources[@]} image(s) pushed from $from_archive to $registry, digests verified"
  exit 0
fi

# ---- the chart ---------------------------------------------------------------------------------------
# One more artifact to copy by digest (skopeo copies an OCI chart as it copies an image, digest kept);
# its images.txt, without --images, is the list to mirror.
if [[ -n $chart ]]; then
  [[ $chart =~ ^oci://([A-Za-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+):([A-Za-z0-9_][A-Za-z0-9_.+-]*)$ ]] ||
    usage_error "--chart must be oci://HOST[:PORT]/PATH:VERSION, got \"$chart\""
  chart_repo=${BASH_REMATCH[1]} chart_version=${BASH_REMATCH[3]}
  if ! $images_given && ! $dry_run; then
    command -v helm >/dev/null 2>&1 || { echo "mirror-images: --chart without --images reads the chart's images.txt with helm: not found on PATH" >&2; exit 2; }
    plain_http=()
    $src_tls || plain_http=(--plain-http)
    mkdir "$work/chart"
    helm pull "oci://$chart_repo" --version "$chart_version" --destination "$work/chart" "${plain_http[@]}" >"$work/pull.log" 2>&1 ||
      { echo "mirror-images: cannot pull $chart: $(tr '\n' ' ' <"$work/pull.log")" >&2; exit 1; }
    tar -xzf "$work"/chart/*.tgz -C "$work/chart" --no-same-owner
    images_file=$(find "$work/chart" -mindepth 2 -maxdepth 2 -name images.txt | head -n 1)
    [[ -n $images_file ]] || { echo "mirror-images: $chart carries no images.txt (not a chart scripts/release.sh published)" >&2; exit 1; }
  fi
fi

read_images "$images_file" "$(basename "$images_file")"
if [[ -n $chart ]]; then
  if $dry_run; then chart_digest="sha256:(read at copy time)"
  elif ! chart_digest=$(manifest_digest "docker://$chart_repo:$chart_version" "$src_tls" 2>"$work/chart.err"); then
    echo "mirror-images: cannot read $chart: $(tr '\n' ' ' <"$work/chart.err")" >&2; exit 1
  fi
  sources+=("$chart_repo:$chart_version") digests+=("$chart_digest") paths+=("${chart_repo#*/}:$chart_version")
fi

# ---- into an archive -------------------------------------------------------------------------------
if [[ -n $archive ]]; then
  if $dry_run; then
    for i in "${!sources[@]}"; do echo "would archive ${sources[$i]%:*}@${digests[$i]} (${sources[$i]}) -> $archive (images/$i)"; done
    finish
    exit 0
  fi
  mkdir -p "$work/archive/images"
  eva_cli images archive-header "scripts/mirror-images.sh --archive" >"$work/archive/images.txt"
  for i in "${!sources[@]}"; do
    echo "${sources[$i]}@${digests[$i]}" >>"$work/archive/images.txt"
    mirror_one "${sources[$i]}" "${digests[$i]}" "docker://${sources[$i]%:*}@${digests[$i]}" "dir:$work/archive/images/$i"
  done
  finish
  tar -cf "$work/archive.tar" -C "$work/archive" images.txt images
  mv -f "$work/archive.tar" "$archive"
  echo "mirror-images: ${#sources[@]} image(s) written to $archive, digests verified"
  exit 0
fi

# ---- registry to registry --------------------------------------------------------------------------
for i in "${!sources[@]}"; do
  src="docker://${sources[$i]%:*}@${digests[$i]}" # by digest alone: a tag and a digest together is refused
  dest="docker://$registry/${paths[$i]}"
  if $dry_run; then echo "would copy ${src#docker://} (${sources[$i]}) -> ${dest#docker://}"; continue; fi
  mirror_one "${sources[$i]}" "${digests[$i]}" "$src" "$dest"
done
finish
$dry_run || echo "mirror-images: ${#sources[@]} image(s) mirrored to $registry, digests verified"
