#!/usr/bin/env bash
# The air-gap check (run by e2e/air-gap.test.ts; needs root): the local control plane, NATS and the
# operator run in a network namespace with no route beyond loopback, a Starter tenant is provisioned to
# Active, and the script counts every packet to a non-loopback address and every DNS question.
#
#   scripts/lib/air-gap-netns.sh [--code CODE] [--timeout SECONDS]
#
# Progress goes to stderr; the last line on stdout is one JSON summary (AirGapSummary in
# test/support/air-gap.ts). The script judges nothing: the test does.
#
# The namespaces (unshare --net --mount --pid): the network one has lo and a veth pair whose two ends
# both stay inside, carrying an address and an IPv4 and IPv6 default route, so that a connection to any
# non-loopback address really is attempted and passes the OUTPUT chain (instead of failing early with
# ENETUNREACH). OUTPUT accepts loopback destinations over lo (counted) and drops everything else
# (counted). Nothing could leave anyway: the namespace has no link to the outside. /etc/resolv.conf is
# bind-mounted to name 127.0.0.53 only, a recording DNS server inside the namespace that answers
# NXDOMAIN to everything. A private tmpfs (over /tmp, or /mnt when the checkout is in /tmp) holds every file of the run (not on
# /tmp: the checkout itself may live there, as a fresh clone in CI does), and this script is PID 1
# of its own PID namespace: when it ends, however it ends, every process it started and every file
# it wrote go with it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PATH="$root/node_modules/.bin:$PATH"   # Node 24 from the npm `node` package

log() { printf '[air-gap %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ "${EVA_AIR_GAP_INSIDE:-}" != 1 ]]; then
  [[ $(id -u) -eq 0 ]] || { log "ERROR: needs root (unshare --net, iptables)"; exit 1; }
  for tool in unshare ip iptables ip6tables iptables-save ip6tables-save getent mount; do
    command -v "$tool" >/dev/null || { log "ERROR: $tool is missing (scripts/test.sh installs it: scripts/lib/prerequisites.txt)"; exit 1; }
  done
  # Building the binaries needs the Go module proxy: done (once, cached) out here, never inside.
  "$root/scripts/lib/build-components.sh" >/dev/null
  "$root/scripts/lib/build-components.sh" helm-server >/dev/null
  # --kill-child: if unshare is killed (it ignores SIGTERM while it waits: SIGKILL it), PID 1 inside,
  # hence everything inside, dies too.
  EVA_AIR_GAP_INSIDE=1 exec unshare --net --mount --pid --fork --mount-proc --kill-child -- bash "${BASH_SOURCE[0]}" "$@"
fi

code=AIRGAP timeout=240
while (($#)); do
  case "$1" in
    --code) code=${2:?--code needs a value}; shift ;;
    --timeout) timeout=${2:?--timeout needs a value}; shift ;;
    *) log "ERROR: unknown option $1"; exit 2 ;;
  esac
  shift
done
[[ $code =~ ^[A-Z]{6}$ ]] || { log "ERROR: --code must be six uppercase letters"; exit 2; }
name=$(tr '[:upper:]' '[:lower:]' <<<"$code")
control_name=registry.example.invalid

# PID 1 of a PID namespace gets no signal it has no handler for: these make TERM/INT end the run.
trap 'exit 143' TERM
trap 'exit 130' INT

# Over a folder that exists already (nothing is created on the host, not even a mount point) and
# holds nothing the run needs: not the checkout (CI clones into /tmp), not the binary cache. The mount
# is private to this mount namespace: concurrent runs each see their own, the host's folder is
# untouched and hidden from the run only.
scratch=""
for candidate in /tmp /mnt /media /srv; do
  [[ -d $candidate ]] || continue
  case "$root/ $HOME/" in "$candidate"/* | *" $candidate"/*) continue ;; esac
  scratch=$candidate
  break
done
[[ -n $scratch ]] || { log "ERROR: no folder to mount the run's tmpfs over (/tmp, /mnt, /media, /srv hold the checkout or HOME)"; exit 1; }
mount -t tmpfs -o mode=1777,size=4g eva-air-gap "$scratch"
export TMPDIR=$scratch
out=$(mktemp -d "$scratch/air-gap.XXXXXX")   # what the summary is built from
echo "$code" >"$out/code"
echo "$control_name" >"$out/control.name"
mark() { echo "$1 $(date +%s%3N)" >>"$out/timings"; }
mark start

seal_network() {
  ip link set lo up
  iptables -A OUTPUT -o lo -d 127.0.0.0/8 -m comment --comment air-gap:loopback -j ACCEPT
  iptables -A OUTPUT -m comment --comment air-gap:other -j DROP
  ip6tables -A OUTPUT -o lo -d ::1 -m comment --comment air-gap:loopback -j ACCEPT
  ip6tables -A OUTPUT -m comment --comment air-gap:other -j DROP
  # The kernel's own IPv6 chatter on a new link (router solicitations, duplicate address detection,
  # MLD reports for solicited-node groups) is no process reaching out: no link-local addresses, no
  # router solicitations, and NOARP links (no neighbour discovery, hence no solicited-node groups).
  local k
  for k in all default; do
    sysctl -qw "net.ipv6.conf.$k.accept_ra=0" "net.ipv6.conf.$k.router_solicitations=0" \
      "net.ipv6.conf.$k.dad_transmits=0" "net.ipv6.conf.$k.addr_gen_mode=1"
  done
  ip link add eva-gap0 type veth peer name eva-gap1
  ip link set eva-gap0 arp off
  ip link set eva-gap1 arp off
  # Benchmarking (RFC 2544) and unique-local addresses, on a link that leads nowhere.
  ip addr add 198.18.0.1/30 dev eva-gap0
  ip -6 addr add fd00:e7a::1/64 dev eva-gap0 nodad
  ip link set eva-gap0 up
  ip link set eva-gap1 up
  ip route add default via 198.18.0.2 dev eva-gap0
  ip -6 route add default via fd00:e7a::2 dev eva-gap0
}

start_dns() {
  node "$root/test/support/air-gap.ts" dns "$out/dns.jsonl" "$out/dns.ready" </dev/null >"$out/dns.log" 2>&1 &
  echo $! >"$out/dns.pid"
  for _ in $(seq 1 100); do [[ -f "$out/dns.ready" ]] && break; sleep 0.1; done
  [[ -f "$out/dns.ready" ]] || { cat "$out/dns.log" >&2; fail "the loopback DNS server did not start"; }
  : >>"$out/dns.jsonl"
  printf 'nameserver 127.0.0.53\n' >"$out/resolv.conf"
  mount --bind "$out/resolv.conf" /etc/resolv.conf
  touch "$out/resolver.bound"
}

cluster() { EVA_DEV_CLUSTER_DIR="$out/cluster" "$root/scripts/dev-cluster.sh" "$@"; }
cluster_up() { cluster up; }

start_operator() {
  local version
  version=$(node -e 'process.stdout.write(require(process.argv[1]).version)' "$root/package.json")
  echo "$version" >"$out/operator-version"
  mkdir -p "$out/helm-secrets" "$out/home"
  # An empty HOME: no helm repository, cache or plugin from this machine can help.
  (cd "$root" && exec env -i PATH="$PATH" HOME="$out/home" TMPDIR="$TMPDIR" KUBECONFIG="$KUBECONFIG" NATS_URL="$NATS_URL" \
    NATS_SYSTEM_CREDS_FILE="$NATS_SYSTEM_CREDS_FILE" NATS_OPERATOR_SIGNING_KEY_FILE="$NATS_OPERATOR_SIGNING_KEY_FILE" \
    OPERATOR_VERSION="$version" HELM_BINARY="$EVA_TOOLS_DIR/helm" HELM_SECRETS_DIR="$out/helm-secrets" \
    HELM_SERVER_BINARY="$("$root/scripts/lib/build-components.sh" --key helm-server)/eva-helm-server" \
    INGRESS_CLASS=eva-lb METRICS_PORT=18080 METRICS_BIND_ADDRESS=127.0.0.1 LOG_LEVEL=info \
    node src/cli.ts run </dev/null >"$out/operator.log" 2>&1) &
  echo $! >"$out/operator.pid"
  for _ in $(seq 1 300); do
    grep -q '"msg":"eva-operator started"' "$out/operator.log" && return 0
    kill -0 "$(cat "$out/operator.pid")" 2>/dev/null || break
    sleep 0.1
  done
  tail -n 30 "$out/operator.log" >&2
  fail "the operator did not start"
}

install_crd() {
  kubectl apply -f "$root/crds/" >&2
  kubectl wait --for=condition=Established --timeout=60s crd/evatenants.eva.aidonow.com >/dev/null
}

create_tenant() {
  # shellcheck source=scripts/lib/eva-cli.sh
  source "$root/scripts/lib/eva-cli.sh"
  eva_cli tenant-manifest --name "$name" --code "$code" --tier Starter --wave 1 --operator-version "$(cat "$out/operator-version")" |
    kubectl apply -f - >&2
}

wait_active() { "$root/scripts/lib/wait-for-tenant.sh" "$name" "$timeout" >&2; }

failed=""
fail() { echo "$failed_step: $*" >"$out/error"; exit 1; }

# Runs one step in a subshell with errexit on. Never call it from a condition (`if run`, `run ||`):
# bash would then ignore errexit inside it. What later steps need is in files under $out.
run() {
  failed_step=$1
  log "$1"
  set +e
  ( set -e; "$@" )
  local status=$?
  set -e
  mark "$1"
  if ((status != 0)); then
    failed=$1
    [[ -f "$out/error" ]] || echo "$1 failed (exit $status)" >"$out/error"
  fi
  return 0
}

snapshot() { # <phase>: firewall counters now
  iptables-save -c -t filter >"$out/iptables.$1" || true
  ip6tables-save -c -t filter >"$out/ip6tables.$1" || true
}

collect() { # the tenant, its releases, then the counters and DNS questions up to now
  if [[ -n "${KUBECONFIG:-}" ]]; then
    kubectl get evt "$name" -o json >"$out/tenant.json" 2>/dev/null || rm -f "$out/tenant.json"
    helm list -n "eva-tenant-$name" -o json >"$out/releases.json" 2>/dev/null || true
  fi
  snapshot provisioning
  wc -l <"$out/dns.jsonl" >"$out/dns.mark" 2>/dev/null || true
}

# The positive controls, loopback only: an external-looking name goes to the loopback DNS server and
# is recorded; a TCP connection to [::1]:53 shows in the IPv6 loopback counter.
controls() {
  # Never without the loopback resolver in place: the machine's resolv.conf names another address.
  [[ -f "$out/resolver.bound" ]] || return 0
  local status=0
  getent hosts "$control_name" >&2 || status=$?
  echo "$status" >"$out/control.exit"
  (exec 3<>/dev/tcp/::1/53) 2>/dev/null || true
  for _ in $(seq 1 20); do grep -q "\"name\":\"$control_name\"" "$out/dns.jsonl" 2>/dev/null && break; sleep 0.1; done
  snapshot control
}

teardown() {
  local pid
  if [[ -f "$out/operator.pid" ]]; then
    pid=$(cat "$out/operator.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  # This namespace's own cluster and nothing else: its own state folder.
  [[ -d "$out/cluster" ]] && { cluster down || true; }
  if [[ -f "$out/dns.pid" ]]; then kill "$(cat "$out/dns.pid")" 2>/dev/null || true; fi
}

steps() { local step; for step in "$@"; do [[ -z $failed ]] || return 0; run "$step"; done; }

steps seal_network start_dns cluster_up
[[ -n $failed ]] || eval "$(cluster env)"   # KUBECONFIG, NATS_URL and its two key files, EVA_TOOLS_DIR, PATH with kubectl and helm
steps install_crd start_operator create_tenant wait_active
[[ -z $failed ]] || log "ERROR: $(cat "$out/error")"
collect
controls
log "tearing down"
teardown
mark teardown
node "$root/test/support/air-gap.ts" summary "$out"
[[ -z $failed ]]
