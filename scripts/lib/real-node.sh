#!/usr/bin/env bash
# A real node (needs root): etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd
# (runc, CNI bridge networking), kubelet, kube-proxy (iptables mode, for the `kubernetes` Service that
# in-cluster clients use), nats-server with JetStream in operator mode (keys in nats-auth/, 0700) and a local OCI registry (Debian's
# docker-registry), all inside ONE network namespace this script creates, with no route out: its
# links are lo, a veth pair whose both ends stay inside (the node address), and the pods' bridge.
# Its dataplane: kube-router's firewall enforces NetworkPolicies (a node process, restarted when it
# exits), and Traefik serves Ingresses of class `traefik` as an ordinary pod. Every configuration
# file (containerd, kubelet, kube-proxy, CNI, registry, the manifests) is a template in
# scripts/real-node/, filled by `render` (scripts/lib/render-template.ts); the keys, certificates and
# kubeconfigs and the pause and Traefik images are made by test/tools/node-assets (Go).
# Binaries: scripts/lib/build-components.sh (control-plane, node and dataplane sets, versions.env);
# runc, the CNI plugins, ipset, skopeo and docker-registry from Debian (scripts/lib/prerequisites.txt).
#
#   scripts/dev-cluster.sh up --real-node     (or scripts/lib/real-node.sh up)   start, wait until ready
#   scripts/dev-cluster.sh down --real-node   stop everything, leave nothing on the host
#   scripts/lib/real-node.sh exec -- CMD...   run CMD inside the node's namespaces, with KUBECONFIG,
#                                             NATS_URL, EVA_REGISTRY and the pinned tools on PATH
#   scripts/lib/real-node.sh load-images ARCHIVE   push a scripts/build-image.sh archive (or any
#                                             scripts/mirror-images.sh --archive) into the registry
#   scripts/lib/real-node.sh enforcer stop|start   stop the NetworkPolicy enforcer and remove its rules
#                                             (policies are then stored, not enforced), or start it again
#   scripts/lib/real-node.sh publish API_PORT NATS_PORT   answer on 127.0.0.1:API_PORT (the API server)
#                                             and 127.0.0.1:NATS_PORT (NATS) on the host too, and write
#                                             host.kubeconfig for it (a member cluster the host's
#                                             multi-cluster engine drives); `down` ends it
#   scripts/lib/real-node.sh unpublish        close those ports and their connections: the host loses
#                                             the node as when its network is down; it runs on
#   scripts/lib/real-node.sh peer PORT STATE   the NATS of the real node in folder STATE answers here
#                                             too, on the node address at PORT (a member's NATS as the
#                                             other members reach it: a tenant's data moved between them)
#   scripts/lib/real-node.sh env|status
# State: $EVA_DEV_CLUSTER_DIR, default ${XDG_STATE_HOME:-~/.local/state}/eva-operator/real-node.
#
# Inside the namespace (fixed addresses; every node has its own namespace, so they never clash):
#   node address 10.254.0.1 (veth eva-node0): API server :6443, registry :5000, NATS :4222 (monitor
#   :8222), kubelet :10250; etcd on 127.0.0.1:2379; pods 10.244.0.0/24 on bridge cni0; Services
#   10.96.0.0/16 (`kubernetes` = 10.96.0.1). No cluster DNS: nothing here needs names (the operator's
#   in-cluster client uses KUBERNETES_SERVICE_HOST, modules get NATS by address); pods whose
#   dnsPolicy is ClusterFirst fall back to the node's resolv.conf, which names only 127.0.0.1.
#   NetworkPolicies are enforced by kube-router's firewall (iptables and ipsets in the node's network
#   namespace; it lets every node-local source through, as kube-router does). Traefik: Service
#   ingress-traefik/traefik on the fixed ClusterIP 10.96.0.80 (:80 and :443), which it writes as the
#   address of every Ingress it serves; IngressClass `traefik`.
#   Its doors: the API server and NATS also answer on unix sockets in the state folder (run/api.sock,
#   run/nats.sock, 0600: root's only), bridged to the node address by socat inside. A unix socket is
#   a file, not an address, so a process on the host reaches the node through it with no route into
#   the namespace; `publish` puts a loopback port of the host in front of each.
#
# What keeps the host clean: the namespace's first process is `unshare --net --mount --pid`, so
#   * every process of the node is in one PID namespace: `down` ends its PID 1 and the kernel kills
#     the rest (containers included);
#   * every mount (overlay snapshots, pod volumes, the kubelet's shared root-dir, network namespaces
#     of pods) is in one private mount namespace that goes with its last process; /run is a private
#     tmpfs there (containerd's sockets, shims, fifos, NRI) and /var/lib an overlay whose writes go
#     to the state folder (the kubelet's device-plugins folder and the CNI cache are fixed paths);
#     /etc/resolv.conf names 127.0.0.1 only, so no process tries the host's DNS server;
#   * what is global stays to be undone by `down`: the pods' cgroups (all under one cgroup root,
#     /eva-rn-<id>, in every hierarchy) and the kernel settings the kubelet changes at start
#     (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops), restored when the last real node on
#     the machine goes.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
self="$root/scripts/lib/real-node.sh"
state="${EVA_DEV_CLUSTER_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/eva-operator/real-node}"
cache_root="${EVA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eva-operator}"
# shellcheck source=/dev/null
source "$root/versions.env"

NODE_IP=10.254.0.1
NODE_NAME=eva-real-node
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1
REGISTRY="$NODE_IP:5000"
NATS_PORT=4222
NATS_MONITOR_PORT=8222
API_PORT=6443
PAUSE_REPO="$REGISTRY/eva/pause"
TRAEFIK_REPO="$REGISTRY/eva/traefik"
TRAEFIK_IP=10.96.0.80
# The kernel settings the kubelet sets at start (its setupKernelTunables) and their values.
KUBELET_SYSCTLS=(vm.overcommit_memory=1 kernel.panic=10 kernel.panic_on_oops=1)

# shellcheck source=scripts/lib/eva-cli.sh
source "$root/scripts/lib/eva-cli.sh"
# shellcheck source=scripts/lib/nats-operator-mode.sh
source "$root/scripts/lib/nats-operator-mode.sh"

log() { printf '[real-node %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# The cgroup root of this node's pods: one per state folder.
node_id() { echo "eva-rn-$(printf '%s' "$state" | sha256sum | cut -c1-10)"; }

# ---- the namespaces ------------------------------------------------------------------------------
# holder.pid: the `unshare` process (outside the PID namespace); init.pid: PID 1 inside it, as the
# host sees it. A pid is trusted only while its command line still names this state folder.
ours() { # <pid>
  [[ -n ${1:-} && -r /proc/$1/cmdline ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$state"
}
init_pid() {
  local p
  p=$(cat "$state/run/init.pid" 2>/dev/null) || return 1
  [[ -n $p && -e /proc/$p ]] || return 1
  # PID 1 ends as `pause` (exec'd by the init script): check its parent, the holder, instead.
  ours "$(cat "$state/run/holder.pid" 2>/dev/null)" || return 1
  echo "$p"
}
running() { init_pid >/dev/null 2>&1; }

bins() {
  cp_bin=$("$root/scripts/lib/build-components.sh" control-plane)
  node_bin=$("$root/scripts/lib/build-components.sh" node)
  dp_bin=$("$root/scripts/lib/build-components.sh" dataplane)
}

# Runs a command inside the node's network, mount and PID namespaces.
in_node() {
  local pid; pid=$(init_pid) || die "the real node in $state is not running"
  [[ -n ${cp_bin:-} ]] || bins
  nsenter --target "$pid" --net --mount --pid --wd="$PWD" -- env \
    KUBECONFIG="$state/kubeconfig" NATS_URL="nats://$NODE_IP:$NATS_PORT" EVA_REGISTRY="$REGISTRY" \
    NATS_SYSTEM_CREDS_FILE="$state/nats-auth/system.creds" NATS_OPERATOR_SIGNING_KEY_FILE="$state/nats-auth/operator-signing-key.nk" \
    EVA_NATS_MONITOR_URL="http://$NODE_IP:$NATS_MONITOR_PORT" \
    EVA_TOOLS_DIR="$cp_bin" EVA_NODE_TOOLS_DIR="$node_bin" PATH="$cp_bin:$node_bin:$dp_bin:$PATH" "$@"
}
kube() { in_node "$cp_bin/kubectl" "$@"; }

wait_for() { # <seconds> <description> <command...>
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "timed out after waiting for $what (logs: $state/logs/)"
    running || die "the node's namespace ended while waiting for $what (logs: $state/logs/)"
    sleep 0.5
  done
}

# Writes a template of scripts/real-node/ with only the variables named substituted, their values
# given as arguments (never this script's environment): render <template> <file> NAME=value...
render() {
  local template="$root/scripts/real-node/$1" file=$2
  shift 2
  eva_render "$template" "$@" >"$file"
}

# ---- preparation, outside the namespace ----------------------------------------------------------
check_prerequisites() {
  [[ $(id -u) -eq 0 ]] || die "needs root (namespaces, cgroups, mounts)"
  local tool
  for tool in unshare nsenter ip iptables iptables-save iptables-restore ipset runc skopeo docker-registry socat; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/test.sh installs it: scripts/lib/prerequisites.txt)"
  done
  for tool in bridge host-local loopback; do
    [[ -x /usr/lib/cni/$tool ]] || die "/usr/lib/cni/$tool is missing (package containernetworking-plugins)"
  done
  [[ -d /sys/fs/cgroup/memory && -d /sys/fs/cgroup/cpu ]] ||
    die "this script knows cgroup v1 (hybrid) only: /sys/fs/cgroup/memory is missing"
}

# The cluster's keys, certificates (ECDSA P-256, a fresh CA for every node) and kubeconfigs, and the
# pause and Traefik images: data, made by test/tools/node-assets (Go's standard library; built once,
# cached by test/tools/build.sh, and by scripts/test.sh before any test starts).
assets_tool() { assets_bin=$("$root/test/tools/build.sh" node-assets); }

pki() { # $state/pki: ca, sa (ServiceAccount tokens) and one pair per identity; its kubeconfigs in $state
  "$assets_bin" pki --node-name "$NODE_NAME" --node-ip "$NODE_IP" --service-ip "$SERVICE_IP" \
    --api-port "$API_PORT" "$state/pki" "$state"
}

# The pod sandbox image: the static pause binary.
# A one-layer image of one static binary, byte for byte the same for the same binary and tool build;
# `oci-image` prints its manifest digest.
pause_image() {
  mkdir -p "$state/images"
  rm -rf "$state/images/pause"
  "$assets_bin" oci-image "$state/images/pause" "$node_bin/pause" 65535:65535 "$("$node_bin/pause" -v | awk '{print $2}')" >"$state/images/pause.digest"
}

# The ingress controller's image: the Traefik binary of the dataplane set, built once per build of it
# and of the tool (cached beside it, written under a temporary name and renamed when complete).
traefik_image() {
  local d="$cache_root/images/traefik-$(basename "$dp_bin")-$(basename "$(dirname "$assets_bin")")"
  if [[ ! -f $d/.digest ]]; then
    mkdir -p "$cache_root/images"
    exec 6>"$cache_root/images/traefik.lock"
    flock 6
    if [[ ! -f $d/.digest ]]; then
      local tmp; tmp=$(mktemp -d "$cache_root/images/traefik-build-XXXXXX")
      "$assets_bin" oci-image "$tmp/layout" "$dp_bin/traefik" 65532:65532 "v$TRAEFIK_VERSION" >"$tmp/digest" ||
        { rm -rf "$tmp"; die "building the Traefik image failed"; }
      mv "$tmp/digest" "$tmp/layout/.digest"
      rm -rf "$d"; mv "$tmp/layout" "$d"; rm -rf "$tmp"
    fi
    exec 6>&-
  fi
  traefik_layout=$d
  traefik_digest=$(cat "$d/.digest")
}

configs() {
  local e="$state/etc" pause_ref id
  pause_ref="$PAUSE_REPO@$(cat "$state/images/pause.digest")"
  id=$(node_id)
  mkdir -p "$e/cni/net.d" "$e/containerd/certs.d" "$state/cni/ipam" "$state/logs" "$state/run" \
    "$state/nats/jetstream" "$state/registry" "$state/kubelet" "$state/containerd"
  printf 'nameserver 127.0.0.1\n' >"$e/resolv.conf"

  render registry.yml "$e/registry.yml" STATE="$state" REGISTRY="$REGISTRY"

  # NATS: JetStream on the node address, in operator mode like the kwok dev cluster (the same keys
  # command and configuration: scripts/lib/nats-operator-mode.sh); the keys stay in nats-auth/ (0700).
  nats_ensure_auth "$root" "$state/nats-auth" eva-system
  nats_write_config "$state/nats/nats.conf" "$NODE_NAME" "0.0.0.0:$NATS_PORT" "0.0.0.0:$NATS_MONITOR_PORT" \
    "$state/nats-auth" "$state/nats/jetstream"

  render cni.conflist "$e/cni/net.d/10-eva-real-node.conflist" STATE="$state" POD_CIDR="$POD_CIDR"

  # Every registry, whatever its name (ghcr.io, docker.io, the node's own), is served by the local one:
  # a pull never goes anywhere else. Paths are mirror-images.sh's: <registry>/<repository without host>.
  local host
  for host in _default "$REGISTRY"; do
    mkdir -p "$e/containerd/certs.d/$host"
    render containerd-hosts.toml "$e/containerd/certs.d/$host/hosts.toml" REGISTRY="$REGISTRY"
  done
  render containerd.toml "$e/containerd/config.toml" STATE="$state" ETC="$e" PAUSE_REF="$pause_ref" RUNC="$(command -v runc)"
  render kubelet.yaml "$e/kubelet.yaml" CGROUP_ROOT="$id" NODE_IP="$NODE_IP" ETC="$e" STATE="$state"
  render kube-proxy.yaml "$e/kube-proxy.yaml" STATE="$state" NODE_NAME="$NODE_NAME" POD_CIDR="$POD_CIDR"
}

# ---- kernel settings and cgroups: global, so recorded and undone -----------------------------------
other_kubelets() { # kubelets on this machine other than this node's
  local p
  for p in $(pgrep -x kubelet || true); do ours "$p" || echo "$p"; done
}

save_sysctls() {
  mkdir -p "$cache_root"
  exec 7>"$cache_root/real-node.lock"
  flock 7
  # The first real node on the machine records the values; later ones find the kubelet's already.
  if [[ ! -f "$cache_root/real-node-sysctl.orig" && -z "$(other_kubelets)" ]]; then
    local kv
    for kv in "${KUBELET_SYSCTLS[@]}"; do echo "${kv%%=*}=$(sysctl -n "${kv%%=*}")"; done >"$cache_root/real-node-sysctl.orig"
  fi
  exec 7>&-
}

restore_sysctls() {
  [[ -d "$cache_root" ]] || return 0
  exec 7>"$cache_root/real-node.lock"
  flock 7
  if [[ -f "$cache_root/real-node-sysctl.orig" ]]; then
    if [[ -n "$(other_kubelets)" ]]; then
      log "another real node's kubelet still runs: the kernel settings stay as the kubelet set them"
    else
      local kv
      while IFS= read -r kv; do sysctl -qw "$kv"; done <"$cache_root/real-node-sysctl.orig"
      log "kernel settings restored: $(paste -sd' ' "$cache_root/real-node-sysctl.orig")"
      rm -f "$cache_root/real-node-sysctl.orig"
    fi
  fi
  exec 7>&-
}

cgroup_dirs() { # this node's cgroup root in every hierarchy that has it
  local h
  for h in /sys/fs/cgroup/*/; do [[ -d "$h$(node_id)" ]] && echo "$h$(node_id)"; done
  return 0
}

make_cgroup_root() {
  local h id; id=$(node_id)
  for h in /sys/fs/cgroup/*/; do
    [[ -f ${h}cgroup.procs ]] || continue
    mkdir -p "$h$id"
    if [[ -f ${h}cpuset.cpus ]]; then
      cat "${h}cpuset.cpus" >"$h$id/cpuset.cpus"
      cat "${h}cpuset.mems" >"$h$id/cpuset.mems"
    fi
  done
}

remove_cgroups() {
  local dir deadline=$((SECONDS + 30)) left
  while :; do
    left=0
    for dir in $(cgroup_dirs); do
      find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      [[ -d $dir ]] && left=1
    done
    ((left == 0)) && return 0
    ((SECONDS < deadline)) || { log "WARNING: cgroups left (processes still in them?): $(cgroup_dirs | tr '\n' ' ')"; return 1; }
    sleep 0.5
  done
}

# ---- inside the namespaces (PID 1) ---------------------------------------------------------------
inside() {
  # Mounts private to this namespace (nothing propagates to the host, nothing from the host shows up).
  mount --make-rprivate /
  mount -t tmpfs -o mode=0755,size=1g eva-real-node-run /run
  mkdir -p "$state/varlib/upper" "$state/varlib/work"
  mount -t overlay -o "lowerdir=/var/lib,upperdir=$state/varlib/upper,workdir=$state/varlib/work" eva-real-node-varlib /var/lib
  mount --bind "$state/etc/resolv.conf" /etc/resolv.conf

  # The network: lo, and the node address on a veth pair whose both ends stay here. No default route.
  ip link set lo up
  sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  ip link add eva-node0 type veth peer name eva-node1
  ip addr add "$NODE_IP/32" dev eva-node0
  ip link set eva-node0 up
  ip link set eva-node1 up
  # Services from the node itself (curl to an Ingress address, as a client on the node would): with no
  # default route, a ClusterIP is unreachable before kube-proxy's NAT ever sees it.
  ip route add "$SERVICE_CIDR" dev eva-node0 src "$NODE_IP"
  sysctl -qw net.ipv4.ip_forward=1
  [[ -f /proc/sys/net/bridge/bridge-nf-call-iptables ]] && sysctl -qw net.bridge.bridge-nf-call-iptables=1

  local l="$state/logs" p="$state/pki"
  start() { # <name> <command...>: a daemon with its own log, restarted when it exits
    # (unless run/<name>.stopped exists: `enforcer stop`; it starts again once that file is gone)
    local name=$1; shift
    (
      while :; do
        if [[ -f $state/run/$name.stopped ]]; then sleep 0.5; continue; fi
        "$@" </dev/null >>"$l/$name.log" 2>&1 &
        echo "$!" >"$state/run/$name.pid"
        wait "$!" && status=0 || status=$?
        echo "[real-node] $name exited with status $status; restarting it in 1 s" >>"$l/$name.log"
        sleep 1
      done
    ) &
  }
  api_ready() {
    curl -fsS --max-time 2 --cacert "$p/ca.crt" --cert "$p/admin.crt" --key "$p/admin.key" \
      "https://$NODE_IP:$API_PORT/readyz" >/dev/null 2>&1
  }
  start etcd "$cp_bin/etcd" --name "$NODE_NAME" --data-dir "$state/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster "$NODE_NAME=http://127.0.0.1:2380" --listen-metrics-urls http://127.0.0.1:2381 \
    --quota-backend-bytes 2147483648 --log-level warn
  start kube-apiserver "$cp_bin/kube-apiserver" --etcd-servers http://127.0.0.1:2379 \
    --bind-address 0.0.0.0 --secure-port "$API_PORT" --advertise-address "$NODE_IP" \
    --service-cluster-ip-range "$SERVICE_CIDR" --allow-privileged=true \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --client-ca-file "$p/ca.crt" --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
    --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" --kubelet-client-key "$p/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --audit-policy-file "$root/scripts/dev-cluster/audit-policy.yaml" --audit-log-path "$l/audit.log" \
    --profiling=false
  start registry docker-registry serve "$state/etc/registry.yml"
  start nats-server "$cp_bin/nats-server" --config "$state/nats/nats.conf"
  start containerd "$node_bin/containerd" --config "$state/etc/containerd/config.toml"
  # The controller-manager and the scheduler read RBAC-protected objects at start: after /readyz.
  local i
  for i in $(seq 1 600); do api_ready && break; sleep 0.2; done
  start kube-controller-manager "$cp_bin/kube-controller-manager" --kubeconfig "$state/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$state/controller-manager.kubeconfig" --authorization-kubeconfig "$state/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
    --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" --allocate-node-cidrs=false --profiling=false
  start kube-scheduler "$cp_bin/kube-scheduler" --kubeconfig "$state/scheduler.kubeconfig" \
    --authentication-kubeconfig "$state/scheduler.kubeconfig" --authorization-kubeconfig "$state/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --profiling=false
  for i in $(seq 1 200); do
    "$node_bin/ctr" --address /run/containerd/containerd.sock version >/dev/null 2>&1 && break
    sleep 0.1
  done
  start kubelet "$node_bin/kubelet" --config "$state/etc/kubelet.yaml" --kubeconfig "$state/kubelet.kubeconfig" \
    --root-dir "$state/kubelet" --cert-dir "$state/kubelet/pki" --node-ip "$NODE_IP" \
    --hostname-override "$NODE_NAME"
  start kube-proxy "$node_bin/kube-proxy" --config "$state/etc/kube-proxy.yaml"
  start kube-router kube_router
  start api-door socat "UNIX-LISTEN:$state/run/api.sock,fork,unlink-early,mode=600" "TCP:$NODE_IP:$API_PORT"
  start nats-door socat "UNIX-LISTEN:$state/run/nats.sock,fork,unlink-early,mode=600" "TCP:$NODE_IP:$NATS_PORT"
  touch "$state/run/started"
  # PID 1 from here on is the pause binary: it reaps orphans and ends (with everything) on TERM/INT.
  exec "$node_bin/pause"
}

# The NetworkPolicy enforcer: kube-router's firewall alone (no routing, no service proxy: kube-proxy
# serves Services). Its rules and ipsets live in the node's network namespace.
kube_router() { # [extra flags]
  "$dp_bin/kube-router" --kubeconfig "$state/kube-router.kubeconfig" \
    --run-firewall=true --run-router=false --run-service-proxy=false \
    --hostname-override "$NODE_NAME" --service-cluster-ip-range "$SERVICE_CIDR" "$@"
}
kube_router_gone() { ! in_node kill -0 "$(cat "$state/run/kube-router.pid")" 2>/dev/null; }
enforcer_ready() { in_node sh -c 'iptables-save -t filter | grep -q -- "^:KUBE-ROUTER-FORWARD"'; }

# The enforcer and the ingress controller, once the API server answers; records the seconds each took.
start_dataplane() {
  local t0=$SECONDS
  kube apply -f "$root/scripts/real-node/kube-router-rbac.yaml" >&2
  wait_for 60 "kube-router's firewall rules (KUBE-ROUTER-FORWARD)" enforcer_ready
  echo "$((SECONDS - t0))" >"$state/run/enforcer-seconds"
  t0=$SECONDS
  traefik_image
  in_node skopeo copy -q --preserve-digests --dest-tls-verify=false "oci:$traefik_layout" "docker://$TRAEFIK_REPO:v$TRAEFIK_VERSION" >&2
  render traefik.yaml "$state/etc/traefik.yaml" TRAEFIK_IMAGE="$TRAEFIK_REPO@$traefik_digest" TRAEFIK_IP="$TRAEFIK_IP"
  kube apply -f "$state/etc/traefik.yaml" >&2
  wait_for 180 "Traefik Ready (ingress-traefik/traefik)" kube rollout status deployment/traefik -n ingress-traefik --timeout=2s
  echo "$((SECONDS - t0))" >"$state/run/ingress-seconds"
  log "dataplane: enforcer ready in $(cat "$state/run/enforcer-seconds")s, Traefik ($TRAEFIK_REPO@$traefik_digest) Ready in $(cat "$state/run/ingress-seconds")s"
}

cmd_enforcer() { # stop|start
  running || die "the real node in $state is not running"
  case "${1:-}" in
    stop)
      touch "$state/run/kube-router.stopped"
      in_node kill "$(cat "$state/run/kube-router.pid")" 2>/dev/null || true
      wait_for 30 "kube-router to exit" kube_router_gone
      # Its rules and ipsets stay behind it: remove them, so that policies are stored, not enforced.
      # (kube-router --cleanup-config v2.1.0 panics in its service-proxy cleanup here.)
      in_node bash "$self" __remove-enforcer-rules "$state" >>"$state/logs/kube-router.log" 2>&1
      ! enforcer_ready || die "kube-router's rules are still there after --cleanup-config"
      log "enforcer stopped, its rules removed: NetworkPolicies are not enforced" ;;
    start)
      rm -f "$state/run/kube-router.stopped"
      wait_for 60 "kube-router's firewall rules (KUBE-ROUTER-FORWARD)" enforcer_ready
      log "enforcer running: NetworkPolicies enforced" ;;
    *) die "usage: $self enforcer stop|start" ;;
  esac
}

# ---- the commands --------------------------------------------------------------------------------
cmd_up() {
  check_prerequisites
  mkdir -p "$state"
  if [[ -d "$state" && -n "$(ls -A "$state")" && ! -f "$state/.real-node" ]]; then
    die "$state exists and is not a real node's state folder (a kwok dev cluster?): choose another EVA_DEV_CLUSTER_DIR"
  fi
  local started=$SECONDS
  bins
  assets_tool
  if running && kube get --raw /readyz >/dev/null 2>&1; then
    start_dataplane # idempotent: a node whose dataplane did not finish gets it now
    log "already running ($state)"
    return 0
  fi
  # A node that is not answering is disposable: a fresh one takes seconds.
  [[ -f "$state/.real-node" ]] && { log "a stopped or broken node is in $state: removing it"; cmd_down; }
  mkdir -p "$state/run" "$state/logs"
  echo "real node; scripts/lib/real-node.sh down removes it" >"$state/.real-node"
  pki
  pause_image
  configs
  save_sysctls
  make_cgroup_root
  log "starting the namespaces (kubernetes $("$node_bin/kubelet" --version | awk '{print $2}'), containerd $("$node_bin/containerd" --version | awk '{print $3}'))"
  # --kill-child: if the holder dies, PID 1 inside (and so everything inside) dies too.
  EVA_REAL_NODE_INSIDE=1 cp_bin="$cp_bin" node_bin="$node_bin" dp_bin="$dp_bin" EVA_DEV_CLUSTER_DIR="$state" \
    setsid unshare --net --mount --pid --fork --mount-proc --kill-child -- bash "$self" __inside "$state" \
    </dev/null >"$state/logs/init.log" 2>&1 7>&- 8>&- 9>&- &
  echo "$!" >"$state/run/holder.pid"
  local holder=$! child="" i
  for i in $(seq 1 100); do
    child=$(pgrep -P "$holder" | head -n1 || true)
    [[ -n $child ]] && break
    sleep 0.05
  done
  [[ -n $child ]] || { cat "$state/logs/init.log" >&2; die "the namespace did not start"; }
  echo "$child" >"$state/run/init.pid"
  wait_for 60 "the node's processes to start" test -f "$state/run/started"
  wait_for 120 "kube-apiserver /readyz" kube get --raw /readyz
  wait_for 60 "the registry" in_node curl -fsS "http://$REGISTRY/v2/"
  in_node skopeo copy -q --preserve-digests --dest-tls-verify=false "oci:$state/images/pause" \
    "docker://$PAUSE_REPO:$("$node_bin/pause" -v | awk '{print $2}')" >&2
  wait_for 60 "NATS with JetStream" in_node curl -fsS "http://$NODE_IP:$NATS_MONITOR_PORT/healthz?js-enabled-only=true"
  wait_for 120 "node $NODE_NAME Ready" node_ready
  # The ServiceAccount admission plugin rejects pods until the controller-manager made this.
  wait_for 60 "the default ServiceAccount" kube get serviceaccount default -n default
  wait_for 60 "the kubernetes Service's iptables rules (kube-proxy)" in_node sh -c "iptables-save -t nat | grep -q -- '-d $SERVICE_IP/32 .*default/kubernetes:https'"
  start_dataplane
  echo "$((SECONDS - started))" >"$state/run/up-seconds"
  log "ready in $((SECONDS - started))s: node $NODE_NAME, API https://$NODE_IP:$API_PORT, registry $REGISTRY, NATS nats://$NODE_IP:$NATS_PORT, NetworkPolicies enforced (kube-router), ingress class traefik at $TRAEFIK_IP (inside the namespace; use: $self exec -- kubectl get nodes)"
}

# The host's side of the doors: socat on 127.0.0.1 (a process of the host, recorded in run/ and ended
# by `down`, whose command line names the state folder) and a kubeconfig that goes through it (the API
# server's certificate names 127.0.0.1). Idempotent: a bridge already listening is kept.
cmd_publish() { # <api-port> <nats-port>
  local api=${1:?publish needs API_PORT NATS_PORT} nats=${2:?publish needs API_PORT NATS_PORT}
  [[ $api =~ ^[0-9]+$ && $nats =~ ^[0-9]+$ ]] || die "publish: ports are numbers"
  running || die "the real node in $state is not running"
  wait_for 30 "the node's doors (run/api.sock, run/nats.sock)" test -S "$state/run/api.sock" -a -S "$state/run/nats.sock"
  local door port
  for door in api:$api nats:$nats; do
    port=${door#*:}; door=${door%%:*}
    ours "$(cat "$state/run/published-$door.pid" 2>/dev/null)" && continue
    setsid socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" "UNIX-CONNECT:$state/run/$door.sock" \
      </dev/null >>"$state/logs/published-$door.log" 2>&1 &
    echo "$!" >"$state/run/published-$door.pid"
  done
  bins
  local kc="$state/host.kubeconfig.tmp" cluster
  install -m 600 "$state/kubeconfig" "$kc"
  cluster=$("$cp_bin/kubectl" --kubeconfig "$kc" config view -o jsonpath='{.clusters[0].name}')
  "$cp_bin/kubectl" --kubeconfig "$kc" config set-cluster "$cluster" --server "https://127.0.0.1:$api" >/dev/null
  mv "$kc" "$state/host.kubeconfig"
  wait_for 30 "the API server on 127.0.0.1:$api" "$cp_bin/kubectl" --kubeconfig "$state/host.kubeconfig" get --raw /readyz
  log "published: API https://127.0.0.1:$api (KUBECONFIG=$state/host.kubeconfig), NATS nats://127.0.0.1:$nats"
}

unpublish() { # the listeners and the connections they forked
  local door pid
  for door in api nats; do
    for pid in $(pgrep -f -- "UNIX-CONNECT:$state/run/$door.sock" || true); do
      ours "$pid" && kill "$pid" 2>/dev/null || true
    done
  done
}

# Another node's NATS at NODE_IP:<port> inside this one, through that node's door (a file, so no route
# joins the two namespaces): socat in this node's namespaces, gone with them.
cmd_peer() { # <port> <state folder of the other node>
  local port=${1:?peer needs PORT STATE} other=${2:?peer needs PORT STATE}
  [[ $port =~ ^[0-9]+$ ]] || die "peer: PORT is a number"
  [[ -S $other/run/nats.sock ]] || die "peer: no running real node's NATS door in $other (run/nats.sock)"
  running || die "the real node in $state is not running"
  if ! in_node socat -u OPEN:/dev/null "TCP:$NODE_IP:$port,connect-timeout=1" 2>/dev/null; then
    in_node setsid socat "TCP-LISTEN:$port,bind=$NODE_IP,reuseaddr,fork" "UNIX-CONNECT:$other/run/nats.sock" \
      </dev/null >>"$state/logs/peer-$port.log" 2>&1 &
    wait_for 10 "the peer door on $NODE_IP:$port" in_node socat -u OPEN:/dev/null "TCP:$NODE_IP:$port,connect-timeout=1"
  fi
  log "peer: the NATS of $other answers here on nats://$NODE_IP:$port"
}

node_ready() {
  [[ "$(kube get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

cmd_down() {
  # An empty folder is what an `up` that failed before its first file leaves: nothing runs there.
  if [[ ! -d "$state" || -z "$(ls -A "$state")" ]]; then
    [[ -d "$state" ]] && rmdir "$state"
    log "nothing to stop ($state)"
    return 0
  fi
  [[ -f "$state/.real-node" ]] || die "$state is not a real node's state folder; not touching it"
  unpublish
  local holder init
  holder=$(cat "$state/run/holder.pid" 2>/dev/null || true)
  init=$(cat "$state/run/init.pid" 2>/dev/null || true)
  # PID 1 (pause) exits on TERM; the kernel then kills every process of the PID namespace, the
  # containers' included, and the mount namespace goes with the last of them.
  if ours "$holder"; then
    [[ -n $init ]] && kill -TERM "$init" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$holder" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$holder" 2>/dev/null || true
  fi
  # Every process of the node was in its PID namespace, so none should be left; name any that is.
  local pids
  pids=$(pgrep -f -- "$state/" | grep -vx "$$" || true)
  [[ -z $pids ]] || log "WARNING: processes naming $state still run (not ours to kill?): $(echo $pids)"
  remove_cgroups || true
  restore_sysctls
  if grep -qF -- " $state" /proc/self/mountinfo; then
    die "mounts under $state are still there (see /proc/self/mountinfo); not removing it"
  fi
  rm -rf "$state"
  log "stopped; state removed ($state)"
}

cmd_env() {
  bins
  printf '# The real node answers inside its own network namespace only: run commands with\n'
  printf '#   %q exec -- kubectl get nodes\n' "$self"
  printf 'export EVA_DEV_CLUSTER_DIR=%q\n' "$state"
  printf 'export KUBECONFIG=%q\n' "$state/kubeconfig"
  printf 'export NATS_URL=%q\n' "nats://$NODE_IP:$NATS_PORT"
  printf 'export EVA_REGISTRY=%q\n' "$REGISTRY"
  printf 'export NATS_SYSTEM_CREDS_FILE=%q\n' "$state/nats-auth/system.creds"
  printf 'export NATS_OPERATOR_SIGNING_KEY_FILE=%q\n' "$state/nats-auth/operator-signing-key.nk"
  printf 'export EVA_NATS_MONITOR_URL=%q\n' "http://$NODE_IP:$NATS_MONITOR_PORT"
  printf 'export EVA_TOOLS_DIR=%q\n' "$cp_bin"
  printf 'export PATH=%q:"$PATH"\n' "$cp_bin"
}

cmd_status() {
  if ! running; then echo "real node: not running ($state)"; return 3; fi
  bins
  echo "real node: running ($state, PID 1 of its namespaces: $(init_pid))"
  local name ok=0
  for name in etcd kube-apiserver kube-controller-manager kube-scheduler registry nats-server containerd kubelet kube-proxy kube-router; do
    if [[ $name == kube-router && -f $state/run/kube-router.stopped ]]; then echo "  kube-router: STOPPED (enforcer stop): NetworkPolicies not enforced"; ok=3
    elif in_node kill -0 "$(cat "$state/run/$name.pid" 2>/dev/null || echo 0)" 2>/dev/null; then echo "  $name: running"
    else echo "  $name: NOT running (log: $state/logs/$name.log)"; ok=3; fi
  done
  if enforcer_ready; then echo "  NetworkPolicy enforcement: on (kube-router firewall rules present)"
  else echo "  NetworkPolicy enforcement: OFF (no kube-router rules)"; ok=3; fi
  local ready
  ready=$(kube get deployment traefik -n ingress-traefik -o jsonpath='{.status.readyReplicas}/{.spec.replicas}' 2>/dev/null || true)
  if [[ $ready == 1/1 ]]; then echo "  ingress controller: Traefik Ready (class traefik, address $TRAEFIK_IP)"
  else echo "  ingress controller: Traefik NOT Ready (${ready:-absent})"; ok=3; fi
  kube get nodes -o wide 2>/dev/null | sed 's/^/  /' || ok=3
  return $ok
}

cmd_load_images() { # <archive written by scripts/build-image.sh or scripts/mirror-images.sh --archive>
  local archive=${1:?load-images needs an archive (scripts/build-image.sh writes one)}
  [[ -f $archive ]] || die "$archive not found"
  running || die "the real node in $state is not running"
  in_node "$root/scripts/mirror-images.sh" --from-archive "$(realpath "$archive")" --registry "$REGISTRY" --dest-tls-verify=false
}

if [[ ${1:-} == __remove-enforcer-rules ]]; then # inside the node: kube-router's chains, the jumps to them, its ipsets
  iptables-save | grep -vE -- 'KUBE-(ROUTER|NWPLCY|POD-FW)-' | iptables-restore
  { ipset list -n | grep -E '^(KUBE-|kube-router)' || true; } | while read -r set; do ipset destroy "$set"; done
  exit 0
fi
if [[ ${1:-} == __inside ]]; then
  [[ ${EVA_REAL_NODE_INSIDE:-} == 1 ]] || die "__inside is internal"
  state=${2:?}; inside
fi

args=()
for a in "$@"; do [[ $a == --real-node ]] || args+=("$a"); done
set -- "${args[@]+"${args[@]}"}"
case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  env) cmd_env ;;
  status) cmd_status ;;
  exec) shift; [[ ${1:-} == -- ]] && shift; (($#)) || die "usage: $0 exec -- CMD..."; in_node "$@" ;;
  load-images) shift; cmd_load_images "$@" ;;
  enforcer) shift; bins; cmd_enforcer "$@" ;;
  publish) shift; cmd_publish "$@" ;;
  unpublish) unpublish; log "unpublished: the host reaches the node no more (it runs on; publish again to reach it)" ;;
  peer) shift; cmd_peer "$@" ;;
  *) echo "usage: $0 up|down|env|status|exec -- CMD...|load-images ARCHIVE|enforcer stop|start|publish API_PORT NATS_PORT|unpublish|peer PORT STATE" >&2; exit 2 ;;
esac
