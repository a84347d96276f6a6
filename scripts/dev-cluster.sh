#!/usr/bin/env bash
# A real local control plane for development and tests, built from pinned sources (versions.env):
# etcd, kube-apiserver (RBAC, default admission incl. ResourceQuota/LimitRanger/PodSecurity, audit log),
# kube-controller-manager (garbage collector, namespace controller, ...), kube-scheduler, kwok (a fake
# node whose pods become Running/Ready) orchestrated by kwokctl's binary runtime, plus nats-server
# with JetStream in operator mode (keys from `eva-operator nats-bootstrap`, kept in the state folder).
# Everything listens on 127.0.0.1 only.
#
#   scripts/dev-cluster.sh up       build (cached) and start everything; idempotent; waits until ready
#   scripts/dev-cluster.sh down     stop everything and remove its state
#   scripts/dev-cluster.sh env      print `export KUBECONFIG=... NATS_URL=... NATS_*_FILE=... PATH=...` (use with eval)
#   scripts/dev-cluster.sh status   tell what runs (exit 0 when everything is up, 3 otherwise)
#   scripts/dev-cluster.sh stop-operator   stop the operator that scripts/quickstart.sh --local started
#   scripts/dev-cluster.sh restart <component>   stop and start one process with the same arguments, as a
#                                   kubelet restarts a static pod (etcd, kube-apiserver, kube-controller-manager,
#                                   kube-scheduler, kwok-controller, nats-server); the fault test uses it
#   scripts/dev-cluster.sh up|down|env|status --real-node   a real node instead (scripts/lib/real-node.sh)
# EVA_DEV_CLUSTER_AUDIT_POLICY at `up`: another audit policy (bench/peers.ts records reads as well).
# EVA_CONTROL_PLANE at `up`: oldest-control-plane runs the oldest Kubernetes the chart accepts
# (KUBERNETES_OLDEST_VERSION; scripts/test.sh's compatibility stage), remembered like the NATS ports.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
here="$root/scripts/dev-cluster"
state="${EVA_DEV_CLUSTER_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/eva-operator/dev-cluster}"
cluster=eva
# NATS ports: EVA_NATS_PORT / EVA_NATS_MONITOR_PORT at `up` (a second cluster, e.g. the tests', needs
# its own), remembered in the state folder so that `env` and `status` need only EVA_DEV_CLUSTER_DIR.
ports_file="$state/nats-ports"
if [[ -f "$ports_file" && -z "${EVA_NATS_PORT:-}${EVA_NATS_MONITOR_PORT:-}" ]]; then
  read -r nats_port nats_monitor_port <"$ports_file"
else
  nats_port="${EVA_NATS_PORT:-14222}"
  nats_monitor_port="${EVA_NATS_MONITOR_PORT:-18222}"
fi
set_file="$state/control-plane-set"
if [[ -f "$set_file" && -z "${EVA_CONTROL_PLANE:-}" ]]; then
  read -r control_plane_set <"$set_file"
else
  control_plane_set="${EVA_CONTROL_PLANE:-control-plane}"
fi
case "$control_plane_set" in control-plane | oldest-control-plane) ;; *) echo "EVA_CONTROL_PLANE must be control-plane or oldest-control-plane, got \"$control_plane_set\"" >&2; exit 2 ;; esac
kubeconfig="$state/kubeconfig"
service_range=10.96.0.0/16
# A real node (containerd, kubelet, ...) is scripts/lib/real-node.sh's: `--real-node`, or its state folder.
if [[ " $* " == *" --real-node "* || -f "$state/.real-node" ]]; then exec "$root/scripts/lib/real-node.sh" "$@"; fi
export KWOK_WORKDIR="$state/kwok"
# shellcheck source=lib/eva-cli.sh
source "$root/scripts/lib/eva-cli.sh"

log() { printf '[dev-cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

bin_dir() { "$root/scripts/lib/build-components.sh" "$control_plane_set"; }

kube() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

api_ready() { [[ -f "$kubeconfig" ]] && kube get --raw /readyz >/dev/null 2>&1; }

nats_ready() { curl -fsS "http://127.0.0.1:$nats_monitor_port/healthz?js-enabled-only=true" >/dev/null 2>&1; }

wait_for() { # <seconds> <description> <command...>
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@"; do
    ((SECONDS < deadline)) || die "timed out after waiting for $what"
    sleep 0.5
  done
}

# kwokctl's configuration (the template scripts/dev-cluster/kwokctl.yaml, no header of its own: the
# rendered file is compared with the running cluster's recipe) and the kwok stages.
render_kwokctl_config() { # <file>
  {
    eva_render "$here/kwokctl.yaml" AUDIT_POLICY="${EVA_DEV_CLUSTER_AUDIT_POLICY:-$here/audit-policy.yaml}" \
      BIN="$bin" SERVICE_RANGE="$service_range" \
      PKI="$KWOK_WORKDIR/clusters/$cluster/pki"
    for stage in "$bin"/kwok-stages/*.yaml "$here/ingress-stage.yaml"; do
      echo "---"
      cat "$stage"
    done
  } >"$1"
}

create_cluster() {
  log "creating cluster (kube-apiserver $("$bin/kube-apiserver" --version | awk '{print $2}'))"
  rm -rf "$KWOK_WORKDIR" "$kubeconfig"
  mv "$state/kwokctl.yaml.next" "$state/kwokctl.yaml"
  cluster_recipe "$state/kwokctl.yaml" >"$state/recipe"
  "$bin/kwokctl" create cluster --name "$cluster" --config "$state/kwokctl.yaml" \
    --kubeconfig "$kubeconfig" --wait 3m --quiet-pull >"$state/kwokctl.log" 2>&1 8>&- ||
    { cat "$state/kwokctl.log" >&2; die "kwokctl create cluster failed (log above)"; }
}

# kwokctl removes the cluster's context from a kubeconfig: this plane's own, never $KUBECONFIG's or
# ~/.kube/config (the user's, or another plane's: the tests' plane lost its context to a member's `down`).
kwokctl_delete() { "$bin/kwokctl" delete cluster --name "$cluster" --kubeconfig "$kubeconfig"; }

# What a cluster is made from (its kwokctl configuration and node), remembered when it is created.
cluster_recipe() { cat "$1" "$here/node.yaml"; }

ensure_cluster() {
  render_kwokctl_config "$state/kwokctl.yaml.next"
  if api_ready; then
    if cluster_recipe "$state/kwokctl.yaml.next" | cmp -s - "$state/recipe"; then
      rm -f "$state/kwokctl.yaml.next"; log "control plane already running"; return
    fi
    # A running cluster keeps its data and flags unless its owner says it is throwaway (the test suite's).
    if [[ ${EVA_DEV_CLUSTER_RECREATE:-} != changed ]]; then
      rm -f "$state/kwokctl.yaml.next"
      log "control plane already running, made from an older scripts/dev-cluster (flags, node size):"
      log "  \`$0 down\` then \`up\` applies the new one (and empties the cluster)"
      return
    fi
    log "control plane made from an older scripts/dev-cluster; recreating it (EVA_DEV_CLUSTER_RECREATE=changed)"
  fi
  # A cluster that is not answering (e.g. its processes died with the last session) is disposable:
  # recreating it takes seconds and leaves no half-restarted state behind.
  if [[ -d "$KWOK_WORKDIR/clusters/$cluster" ]]; then
    api_ready || log "control plane not answering; recreating it"
    kwokctl_delete >/dev/null 2>&1 8>&- || true
    stop_processes_under "$KWOK_WORKDIR"
  fi
  create_cluster
  wait_for 120 "kube-apiserver /readyz" api_ready
}

node_ready() {
  [[ "$(kube get node kwok-node-0 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

default_service_account() { kube get serviceaccount default -n default >/dev/null 2>&1; }

ensure_cluster_objects() {
  kube apply -f "$here/node.yaml" -f "$here/ingress-classes.yaml" >/dev/null
  # spec.deletionProtection, the module values contract and the platform's controls (restore, force,
  # owner, shard, pin, suspend), enforced by admission: the policies exactly as the operator chart
  # installs them (the NATS address only satisfies the chart's required values).
  "$bin/helm" template eva "$root/charts/eva-operator" --set nats.url=nats://127.0.0.1:4222 \
    --show-only templates/deletion-protection.yaml --show-only templates/tenant-values-policy.yaml \
    --show-only templates/platform-controls.yaml | kube apply -f - >/dev/null
  wait_for 60 "node kwok-node-0 Ready" node_ready
  # The ServiceAccount admission plugin rejects pods until the controller-manager made this.
  wait_for 60 "the default ServiceAccount" default_service_account
}

nats_pid() { [[ -f "$state/nats.pid" ]] && cat "$state/nats.pid"; }
nats_auth="$state/nats-auth"

# shellcheck source=scripts/lib/nats-operator-mode.sh
source "$root/scripts/lib/nats-operator-mode.sh"

# The operator's NATS keys, made once per dev cluster; the seeds stay in this 0700 folder; `down`
# removes it.
ensure_nats_auth() {
  [[ -f "$nats_auth/operator.jwt" ]] && return
  nats_ensure_auth "$root" "$nats_auth" default
  log "NATS operator keys generated in $nats_auth"
}

write_nats_config() {
  nats_write_config "$state/nats.conf" eva-dev "127.0.0.1:$nats_port" "127.0.0.1:$nats_monitor_port" "$nats_auth" "$state/nats"
}

ensure_nats() {
  if nats_ready; then
    # Started from another build (versions.env changed): kept, unless this is a throwaway cluster.
    [[ $(cat "$state/nats.bin" 2>/dev/null) == "$bin" || ${EVA_DEV_CLUSTER_RECREATE:-} != changed ]] && return
    log "nats-server from an older build; restarting it (EVA_DEV_CLUSTER_RECREATE=changed)"
    kill "$(nats_pid)" 2>/dev/null || true
    wait_for 15 "the old nats-server to stop" bash -c "! curl -fsS http://127.0.0.1:$nats_monitor_port/healthz >/dev/null 2>&1"
  fi
  echo "$bin" >"$state/nats.bin"
  mkdir -p "$state/nats"
  ensure_nats_auth
  write_nats_config
  log "starting nats-server $("$bin/nats-server" --version | awk '{print $2}') on 127.0.0.1:$nats_port (operator mode)"
  setsid "$bin/nats-server" -c "$state/nats.conf" --pid "$state/nats.pid" --log "$state/nats.log" \
    </dev/null >/dev/null 2>&1 8>&- &
  wait_for 30 "nats-server with JetStream" nats_ready
}

cmd_up() {
  mkdir -p "$state"
  # The lock serialises concurrent `up`s (tests and humans); daemons started below get fd 8 closed
  # so they do not inherit and hold it.
  exec 8>"$state/.lock"
  flock -w 300 8 || die "another dev-cluster.sh has held the lock for 5 minutes"
  local started=$SECONDS
  bin=$(bin_dir)
  echo "$nats_port $nats_monitor_port" >"$ports_file"
  echo "$control_plane_set" >"$set_file"
  ensure_cluster
  ensure_cluster_objects
  ensure_nats
  log "ready in $((SECONDS - started))s: kubernetes $(kube version -o json | eva_cli manifests value - serverVersion gitVersion)"
}

stop_processes_under() { # <folder>: kill anything still running from it (crash leftovers)
  local pids
  pids=$(pgrep -f -- "${1%/}/" || true)   # the slash: not a sibling whose name starts the same (test-cluster-<hash>)
  [[ -z "$pids" ]] && return
  kill $pids 2>/dev/null || true
  sleep 1
  kill -9 $pids 2>/dev/null || true
}

cmd_stop_operator() {
  local pidfile="$state/operator.pid" pid
  [[ -f "$pidfile" ]] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping the local operator (pid $pid)"
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$pidfile"
}

cmd_down() {
  [[ -d "$state" ]] || { log "nothing to stop"; return; }
  cmd_stop_operator
  exec 8>"$state/.lock"
  flock -w 300 8 || die "another dev-cluster.sh has held the lock for 5 minutes"
  bin=$(bin_dir)
  cmd_stop_operator
  if [[ -d "$KWOK_WORKDIR/clusters/$cluster" ]]; then
    kwokctl_delete >/dev/null 2>&1 || log "kwokctl delete failed; killing processes"
  fi
  local pid; pid=$(nats_pid || true)
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
  stop_processes_under "$state"
  rm -rf "$state" "$(local_secrets_dir)"
  log "stopped; state removed"
}

# One per state folder, so two clusters' local operators never share it.
local_secrets_dir() { echo "/dev/shm/eva-operator-$(id -u)-$(printf %s "$state" | sha256sum | cut -c1-8)"; }

cmd_env() {
  bin=$(bin_dir)
  printf 'export KUBECONFIG=%q\n' "$kubeconfig"
  printf 'export NATS_URL=%q\n' "nats://127.0.0.1:$nats_port"
  printf 'export NATS_SYSTEM_CREDS_FILE=%q\n' "$nats_auth/system.creds"
  printf 'export NATS_OPERATOR_SIGNING_KEY_FILE=%q\n' "$nats_auth/operator-signing-key.nk"
  printf 'export EVA_NATS_MONITOR_URL=%q\n' "http://127.0.0.1:$nats_monitor_port"
  printf 'export EVA_TOOLS_DIR=%q\n' "$bin"
  printf 'export PATH=%q:"$PATH"\n' "$bin"
  # For an operator run from this checkout (docs/operator.md, "Running the operator from a checkout"): its version, secret values
  # on a tmpfs (the operator refuses a disk; /run is not a tmpfs everywhere), metrics on loopback.
  printf 'export OPERATOR_VERSION=%q\n' "$(eva_operator_version)"
  printf 'export HELM_SECRETS_DIR=%q\n' "$(local_secrets_dir)"
  printf 'export METRICS_BIND_ADDRESS=127.0.0.1\n'
}

cmd_status() {
  bin=$(bin_dir)
  local ok=0
  if api_ready; then
    echo "kube-apiserver: running ($(kube config view --minify -o jsonpath='{.clusters[0].cluster.server}'))"
    "$bin/kwokctl" get components --name "$cluster" 2>/dev/null || true
    kube get nodes --no-headers 2>/dev/null | sed 's/^/node: /'
  else
    echo "kube-apiserver: not running"; ok=3
  fi
  if nats_ready; then echo "nats-server: running (nats://127.0.0.1:$nats_port, pid $(nats_pid))"
  else echo "nats-server: not running"; ok=3
  fi
  return $ok
}

stop_gracefully() { # <pid> <name>: SIGTERM, then SIGKILL after 10 s (kube-apiserver can take minutes to drain its watches)
  kill "$1" 2>/dev/null || return 0
  local deadline=$((SECONDS + 10))
  while kill -0 "$1" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  if kill -0 "$1" 2>/dev/null; then log "$2 (pid $1) still running after 10 s; SIGKILL"; kill -9 "$1" 2>/dev/null || true; sleep 0.5; fi
}

restart_kwok_component() { # <name>: same command line, working folder, log and pid file
  local dir="$KWOK_WORKDIR/clusters/$cluster" pid cwd
  pid=$(cat "$dir/pids/$1.pid" 2>/dev/null) || die "no $1 in this cluster"
  local -a argv
  mapfile -d '' argv <"/proc/$pid/cmdline" || die "$1 (pid $pid) is not running"
  cwd=$(readlink "/proc/$pid/cwd")
  stop_gracefully "$pid" "$1"
  pushd "$cwd" >/dev/null
  setsid "${argv[@]}" </dev/null >>"$dir/logs/$1.log" 2>&1 8>&- &
  echo $! >"$dir/pids/$1.pid"
  disown
  popd >/dev/null
  log "restarted $1 (pid $(cat "$dir/pids/$1.pid"))"
}

cmd_restart() { # <component>
  bin=$(bin_dir)
  case "${1:-}" in
    nats-server)
      local pid; pid=$(nats_pid) || die "nats-server is not running"
      stop_gracefully "$pid" nats-server
      ensure_nats ;;
    etcd | kube-apiserver | kube-controller-manager | kube-scheduler | kwok-controller)
      restart_kwok_component "$1"
      [[ $1 == kube-apiserver || $1 == etcd ]] && wait_for 120 "kube-apiserver /readyz" api_ready ;;
    *) die "restart: one of etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok-controller, nats-server" ;;
  esac
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  env) cmd_env ;;
  status) cmd_status ;;
  stop-operator) cmd_stop_operator ;;
  restart) cmd_restart "${2:-}" ;;
  *) echo "usage: $0 up|down|env|status|stop-operator|restart <component>" >&2; exit 2 ;;
esac
