# shellcheck shell=bash
# NATS in operator mode, shared by scripts/dev-cluster.sh (the kwok cluster) and
# scripts/lib/real-node.sh (the real node): the keys from the operator's own command, and the server
# configuration around them. Source it; it defines functions only.
# shellcheck source=scripts/lib/eva-cli.sh
source "$(dirname "${BASH_SOURCE[0]}")/eva-cli.sh"

# nats_ensure_auth <checkout> <folder> <namespace>: the operator identity, system account and the
# operator's two files, made once by `eva-operator nats-bootstrap` (no nsc) into <folder> (0700, files
# 0600; it also writes the Secret manifest for <namespace>). Returns 0 at once when they exist.
nats_ensure_auth() {
  local checkout=$1 dir=$2 namespace=$3
  [[ -f "$dir/operator.jwt" ]] && return 0
  [[ -x "$checkout/node_modules/.bin/node" ]] || "$checkout/scripts/bootstrap.sh" >&2
  "$checkout/node_modules/.bin/node" "$checkout/src/cli.ts" nats-bootstrap --out "$dir" --namespace "$namespace" >/dev/null
}

# nats_write_config <file> <server name> <listen> <http> <auth folder> <store folder>: the server's
# configuration, from the template scripts/dev-cluster/nats.conf (operator mode, a full resolver).
nats_write_config() {
  local file=$1 include
  # nats-server resolves an include against the configuration file's folder, even an absolute path.
  include=$(realpath -m --relative-to="$(dirname "$file")" "$5/nats-auth.conf")
  eva_render "$eva_cli_root/scripts/dev-cluster/nats.conf" SERVER_NAME="$2" LISTEN="$3" HTTP="$4" \
    AUTH_INCLUDE="$include" STORE="$6" >"$file"
}
