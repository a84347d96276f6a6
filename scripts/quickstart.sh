#!/usr/bin/env bash
# Bootstrap eva-operator and provision one tenant, end to end.
#
#   scripts/quickstart.sh --local [--code CODE] [--tier TIER] [--wave N] [--timeout SECONDS]
#
#   --local     build (once) and start the local control plane and NATS, install the CRD, run the
#               operator as a local process (no container engine needed), create an EvaTenant and
#               wait until it is Active, printing each condition as it turns True
#   --code      capsule code of the tenant to create (six uppercase letters; default DEMOCO)
#   --tier      Starter | Customer | Enterprise | Platform (default Starter)
#   --wave      1..3 (default 1)
#   --timeout   seconds to wait for Active (default 300)
#
# The five steps: 1 preflight, 2 install the CRD, 3 start the operator, 4 create the EvaTenant,
# 5 wait for Active. Installing into an existing cluster with the operator chart (and --air-gap,
# --dry-run) is not available yet.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() { sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
step() { printf '\n==> [%s/5] %s\n' "$1" "$2"; }
die() { printf 'quickstart: %s\n' "$*" >&2; exit 1; }

local_mode=false code=DEMOCO tier=Starter wave=1 timeout=300
while (($#)); do
  case "$1" in
    --local) local_mode=true ;;
    --code) code=${2:?--code needs a value}; shift ;;
    --tier) tier=${2:?--tier needs a value}; shift ;;
    --wave) wave=${2:?--wave needs a value}; shift ;;
    --timeout) timeout=${2:?--timeout needs a value}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) printf 'quickstart: unknown option %s\n\n' "$1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
$local_mode || { usage >&2; die "only --local is available yet"; }
[[ $code =~ ^[A-Z]{6}$ ]] || die "--code must be six uppercase letters, got '$code'"
[[ $tier =~ ^(Starter|Customer|Enterprise|Platform)$ ]] || die "--tier must be Starter, Customer, Enterprise or Platform, got '$tier'"
[[ $wave =~ ^[1-3]$ ]] || die "--wave must be 1, 2 or 3, got '$wave'"
name=$(tr '[:upper:]' '[:lower:]' <<<"$code")
operator_version=$(node -e 'process.stdout.write(require(process.argv[1]).version)' "$root/package.json" 2>/dev/null || echo 0.1.0)

step 1 "preflight: prerequisites, local control plane, NATS"
"$root/scripts/bootstrap.sh"
"$root/scripts/dev-cluster.sh" up
eval "$("$root/scripts/dev-cluster.sh" env)"
export PATH="$root/node_modules/.bin:$PATH"
kubectl version -o json | grep -m1 gitVersion | tr -d ' ",' | sed 's/^/  server /'
helm version --short | sed 's/^/  helm /'

step 2 "installing the EvaTenant CRD"
kubectl apply -f "$root/crds/"
kubectl wait --for=condition=Established --timeout=60s crd/evatenants.eva.aidonow.com >/dev/null

step 3 "starting the operator $operator_version as a local process"
state="${EVA_DEV_CLUSTER_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/eva-operator/dev-cluster}"
pidfile="$state/operator.pid"
if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "  already running (pid $(cat "$pidfile"), log $state/operator.log)"
else
  secrets_dir=/dev/shm/eva-operator-helm-secrets   # tmpfs: secret values never touch the disk
  mkdir -p "$secrets_dir"
  OPERATOR_VERSION="$operator_version" HELM_SECRETS_DIR="$secrets_dir" HELM_BINARY="$EVA_TOOLS_DIR/helm" \
    INGRESS_CLASS=eva-lb METRICS_PORT="${EVA_METRICS_PORT:-18080}" METRICS_BIND_ADDRESS=127.0.0.1 \
    setsid node "$root/src/cli.ts" run </dev/null >"$state/operator.log" 2>&1 &
  echo $! >"$pidfile"
  echo "  pid $(cat "$pidfile"), log $state/operator.log, metrics http://127.0.0.1:${EVA_METRICS_PORT:-18080}/metrics"
fi

step 4 "creating EvaTenant $name ($tier, wave $wave, operatorVersion $operator_version)"
kubectl apply -f - <<EOF
apiVersion: eva.aidonow.com/v1alpha1
kind: EvaTenant
metadata:
  name: $name
spec:
  capsuleCode: $code
  tier: $tier
  wave: $wave
  seedsVersion: "1.0.0"
  operatorVersion: "$operator_version"
EOF

step 5 "waiting for Active (up to ${timeout}s)"
"$root/scripts/lib/wait-for-tenant.sh" "$name" "$timeout"
kubectl get evt "$name"
printf '\nUse the cluster:  eval "$(scripts/dev-cluster.sh env)"; kubectl describe evt %s\n' "$name"
