#!/usr/bin/env bash
# Bootstrap eva-operator.
#
#   scripts/quickstart.sh --local   build and start the local control plane (scripts/dev-cluster.sh),
#                                   install the EvaTenant CRD and apply the samples
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
  sed -n '2,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

step() { printf '\n==> [%s] %s\n' "$1" "$2"; }

local_mode=false
while (($#)); do
  case "$1" in
    --local) local_mode=true ;;
    -h | --help) usage; exit 0 ;;
    *) echo "quickstart: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
$local_mode || { echo "quickstart: only --local is available yet" >&2; usage >&2; exit 2; }

step 1/4 "installing prerequisites (npm packages, Node 24, pinned control-plane binaries)"
"$root/scripts/bootstrap.sh"
step 2/4 "starting the local control plane"
"$root/scripts/dev-cluster.sh" up
eval "$("$root/scripts/dev-cluster.sh" env)"
step 3/4 "installing the EvaTenant CRD"
kubectl apply -f "$root/crds/"
kubectl wait --for=condition=Established --timeout=60s crd/evatenants.eva.aidonow.com
step 4/4 "applying the samples"
kubectl apply -f "$root/samples/"
kubectl get evt
printf '\nTo use this cluster:  eval "$(%s env)"\n' "scripts/dev-cluster.sh"
