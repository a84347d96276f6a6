#!/usr/bin/env bash
# The release step: fills the PLACEHOLDER digests of our own images (ghcr.io/aidonow/...) in
# images.txt with the digests the release build pushed. For each such line it reads the manifest
# (or index) of <registry>/<path>:<tag> with skopeo and writes the sha256 of its bytes into the line;
# every other line, comment and blank line is kept byte for byte.
#
# Usage: scripts/release-fill-digests.sh [--registry HOST[:PORT][/PREFIX]] [--file FILE] [options]
#   --registry R          where the release build pushed the images: <path> (the repository without
#                         its registry host, e.g. aidonow/eva-forge) is read from R/<path>:<tag>.
#                         Default: each line's own registry (ghcr.io/aidonow/eva-forge:<tag>)
#   --file FILE           the images file to rewrite (default: images.txt of this checkout)
#   --include-third-party also fill third-party PLACEHOLDER lines (e.g. nats), from R or their registry
#   --tls-verify=BOOL     require HTTPS with a verified certificate (default true)
#   --dry-run             print the digests found; write nothing
# All or nothing: if any image cannot be read (not pushed), each is named on stderr, the file is not
# changed and the exit status is 1. Afterwards `scripts/check-images.sh --release` must pass.
# Exit status: 0 filled (or nothing to fill), 1 some image missing, 2 usage or tool errors.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
file="$root/images.txt"
registry=""
third_party=false
tls=true
dry_run=false

usage_error() { echo "release-fill-digests: $* (try --help)" >&2; exit 2; }
while (($#)); do
  case "$1" in
    --registry) registry=${2:?--registry needs HOST[:PORT][/PREFIX]}; shift ;;
    --registry=*) registry=${1#*=} ;;
    --file | --images) file=${2:?$1 needs a file}; shift ;;
    --file=* | --images=*) file=${1#*=} ;;
    --include-third-party) third_party=true ;;
    --tls-verify=*) tls=${1#*=} ;;
    --tls-verify) tls=true; if [[ ${2:-} == true || ${2:-} == false ]]; then tls=$2; shift; fi ;;
    --dry-run) dry_run=true ;;
    -h | --help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument \"$1\"" ;;
  esac
  shift
done
[[ $tls == true || $tls == false ]] || usage_error "--tls-verify takes true or false, got \"$tls\""
[[ -f $file ]] || { echo "release-fill-digests: $file not found" >&2; exit 2; }
command -v skopeo >/dev/null 2>&1 || { echo "release-fill-digests: skopeo not found on PATH" >&2; exit 2; }

# shellcheck source=lib/eva-cli.sh
source "$root/scripts/lib/eva-cli.sh"
if [[ -n $registry ]]; then
  checked=$(eva_cli images registry "$registry" 2>/dev/null) || usage_error "--registry must be HOST[:PORT][/PREFIX], got \"$registry\""
  registry=$checked
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Our own images' lines (the CLI knows which are ours), or every line with --include-third-party.
lines_args=(--file "$file")
$third_party || lines_args+=(--own)
if ! eva_cli images lines "${lines_args[@]}" >"$work/lines" 2>"$work/lines.err"; then
  sed 's/^/release-fill-digests: /' "$work/lines.err" >&2
  exit 2
fi
failed=()
: >"$work/digests"
while IFS=$'\t' read -r number repository tag digest path; do
  [[ $digest == PLACEHOLDER ]] || continue
  if [[ -n $registry ]]; then source="$registry/$path:$tag"; else source="$repository:$tag"; fi
  if ! skopeo inspect --raw --retry-times 2 --tls-verify="$tls" "docker://$source" >"$work/manifest" 2>"$work/err" ||
    [[ ! -s $work/manifest ]]; then
    echo "release-fill-digests: FAILED: $repository:$tag (line $number): not found at $source: $(tr '\n' ' ' <"$work/err")" >&2
    failed+=("$repository:$tag")
    continue
  fi
  digest=$(sha256sum <"$work/manifest" | cut -d' ' -f1)
  echo "release-fill-digests: $repository:$tag@sha256:$digest (read from $source)"
  echo "$number sha256:$digest" >>"$work/digests"
done <"$work/lines"
filled=$(wc -l <"$work/digests")

if ((${#failed[@]} > 0)); then
  echo "release-fill-digests: ${#failed[@]} image(s) not pushed, $file left unchanged: ${failed[*]}" >&2
  exit 1
fi
if $dry_run; then
  echo "release-fill-digests: --dry-run: $filled digest(s) found, $file left unchanged"
  exit 0
fi
# Only the digests change: every other byte of the file, and its mode, are kept.
eva_cli images write-digests --file "$file" <"$work/digests"
echo "release-fill-digests: $filled digest(s) written to $file"
