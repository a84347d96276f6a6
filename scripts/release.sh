#!/usr/bin/env bash
# Publishes a release: the operator and module images, and the operator chart and the hub chart
# (charts/eva-hub, for a multi-cluster hub) as OCI artifacts, to one registry, with the digests it
# pushed written into the images.txt the operator chart carries.
#
# Usage: scripts/release.sh VERSION --registry HOST[:PORT][/PREFIX] [options]
#   VERSION              must already be charts/eva-operator/Chart.yaml's version and appVersion (and
#                        charts/eva-hub's), and the operator's tag in images.txt (a version is decided
#                        in a reviewed commit)
#   --registry R         where everything goes: images at R/<path> (R/aidonow/eva-forge, as
#                        scripts/mirror-images.sh names them), the charts at oci://R/charts/eva-operator
#                        and oci://R/charts/eva-hub
#   --tls-verify=BOOL    require HTTPS with a verified certificate (default true; false: plain HTTP)
#   --bases local|public the base images of scripts/build-image.sh (default: its default)
#   --built DIR          publish what scripts/build-image.sh --out DIR already built (a build job
#                        before a release job) instead of building
#   --out DIR            where the record of the release goes (default dist/VERSION): the charts' .tgz,
#                        the released images.txt, release.json (the charts and every image by digest) and
#                        kubectl-eva, the day-2 plugin (docs/cli.md), with its sha256
#
# In order, and nothing is pushed until every check before it passed:
#   1. build the images (scripts/build-image.sh: nothing is rebuilt when the build is current);
#   2. the released images.txt: every own image must have been built, no PLACEHOLDER may stay;
#   3. the chart: version checked, default image = the operator by digest, images.txt packaged in it;
#      `helm lint`, `helm package`; every image it renders must be in its images.txt by digest;
#      kubectl-eva built (npm run build:cli) and checked to report VERSION; the hub chart the same way
#      (its controller runs the operator image, by digest);
#   4. push the images, each read back from the registry by its digest;
#   5. push the charts (last: a chart is only published once every image it names can be pulled).
# Install it: helm install eva oci://R/charts/eva-operator --version VERSION -n eva-system ...
# Exit status: 0 published, 1 refused or a push failed (each reason on stderr), 2 usage or tool errors.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/eva-cli.sh
source "$root/scripts/lib/eva-cli.sh"
cache_root="${EVA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eva-operator}"

usage_error() { echo "release: $* (try --help)" >&2; exit 2; }
version="" registry="" tls=true bases=() out="" built=""
while (($#)); do
  case "$1" in
    --registry) registry=${2:?--registry needs HOST[:PORT][/PREFIX]}; shift ;;
    --registry=*) registry=${1#*=} ;;
    --tls-verify=*) tls=${1#*=} ;;
    --bases) bases=(--bases "${2:?--bases needs local or public}"); shift ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    --built) built=${2:?--built needs a folder scripts/build-image.sh wrote}; shift ;;
    -h | --help) sed -n '2,31p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) usage_error "unknown option \"$1\"" ;;
    *) [[ -z $version ]] || usage_error "one VERSION only, got \"$version\" and \"$1\""; version=$1 ;;
  esac
  shift
done
[[ -n $version ]] || usage_error "VERSION is required"
[[ -n $registry ]] || usage_error "--registry is required"
[[ $tls == true || $tls == false ]] || usage_error "--tls-verify takes true or false, got \"$tls\""
registry=$(eva_cli images registry "$registry") || exit 2
helm=${HELM:-helm}
for tool in "$helm" skopeo tar; do command -v "$tool" >/dev/null 2>&1 || { echo "release: $tool not found on PATH" >&2; exit 2; }; done
out=${out:-$root/dist/$version}
plain_http=()
$tls || plain_http=(--plain-http)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
step() { echo "release: $*" >&2; }

if [[ -n $built ]]; then
  step "1/5 the images scripts/build-image.sh built in $built"
  [[ -f $built/images.txt && -f $built/images.tar ]] || { echo "release: $built has no images.txt and images.tar (scripts/build-image.sh --out writes them)" >&2; exit 2; }
else
  step "1/5 building the images (scripts/build-image.sh)"
  "$root/scripts/build-image.sh" "${bases[@]}" >&2
  built="$cache_root/images"
fi

step "2/5 the released images.txt"
eva_cli release images --file "$root/images.txt" --built "$built/images.txt" --registry "$registry" --version "$version" >"$work/images.txt"

step "3/5 the chart"
mkdir "$work/chart" "$work/package"
cp -r "$root/charts/eva-operator" "$work/chart/eva-operator"
eva_cli release stage-chart "$work/chart/eva-operator" --images "$work/images.txt" --version "$version"
"$helm" lint "$work/chart/eva-operator" --set nats.url=nats://nats.example:4222 >&2
"$helm" package "$work/chart/eva-operator" --destination "$work/package" >&2
chart="$work/package/eva-operator-$version.tgz"
HELM=$(command -v "$helm") eva_cli release verify-chart "$chart" --images "$work/images.txt"
(cd "$root" && eva_cli_node scripts/build-cli.ts) >&2
built_as=$("$root/dist/kubectl-eva" version)
[[ $built_as == "$version" ]] || { echo "release: refused: kubectl-eva was built as $built_as (package.json), not $version" >&2; exit 1; }
cp -r "$root/charts/eva-hub" "$work/chart/eva-hub"
eva_cli release stage-chart "$work/chart/eva-hub" --images "$work/images.txt" --version "$version"
"$helm" lint "$work/chart/eva-hub" >&2
"$helm" package "$work/chart/eva-hub" --destination "$work/package" >&2
hub_chart="$work/package/eva-hub-$version.tgz"
HELM=$(command -v "$helm") eva_cli release verify-chart "$hub_chart" --images "$work/images.txt"

step "4/5 pushing the images to $registry"
"$root/scripts/mirror-images.sh" --from-archive "$built/images.tar" --registry "$registry" --dest-tls-verify="$tls" >&2

step "5/5 pushing the charts to oci://$registry/charts"
push_chart() { # <package> -> its digest
  "$helm" push "$1" "oci://$registry/charts" "${plain_http[@]}" 2>&1 | tee "$work/push.log" >&2
  local digest; digest=$(sed -n 's/^Digest: *//p' "$work/push.log")
  [[ -n $digest ]] || { echo "release: helm push of $(basename "$1") printed no digest" >&2; exit 1; }
  echo "$digest"
}
chart_digest=$(push_chart "$chart")
hub_chart_digest=$(push_chart "$hub_chart")

mkdir -p "$out"
eva_cli release manifest --version "$version" --registry "$registry" --chart-digest "$chart_digest" \
  --hub-chart-digest "$hub_chart_digest" --images "$work/images.txt" >"$out/release.json"
cp "$work/images.txt" "$chart" "$hub_chart" "$root/dist/kubectl-eva" "$out/"
(cd "$out" && sha256sum kubectl-eva >kubectl-eva.sha256)
step "published eva-operator $version: oci://$registry/charts/eva-operator:$version@$chart_digest, oci://$registry/charts/eva-hub:$version@$hub_chart_digest; record in $out"
