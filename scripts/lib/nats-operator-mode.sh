# shellcheck shell=bash
# NATS in operator mode, shared by scripts/dev-cluster.sh (the kwok cluster) and
# scripts/lib/real-node.sh (the real node): the keys from the operator's own command, and the server
# configuration around them. Source it; it defines functions only.

# nats_ensure_auth <checkout> <folder> <namespace>: the operator identity, system account and the
# operator's two files, made once by `eva-operator nats-bootstrap` (no nsc) into <folder> (0700, files
# 0600; it also writes the Secret manifest for <namespace>). Returns 0 at once when they exist.
nats_ensure_auth() {
  local checkout=$1 dir=$2 namespace=$3
  [[ -f "$dir/operator.jwt" ]] && return 0
  [[ -x "$checkout/node_modules/.bin/node" ]] || "$checkout/scripts/bootstrap.sh" >&2
  "$checkout/node_modules/.bin/node" "$checkout/src/cli.ts" nats-bootstrap --out "$dir" --namespace "$namespace" >/dev/null
}

# nats_write_config <file> <server name> <listen> <http> <auth folder> <store folder>: operator mode
# with a full resolver that takes account JWTs pushed at run time (and their deletion). max_file_store
# is what accounts may reserve, not disk in use: every tenant account reserves its tier's JetStream
# storage, and a cluster may hold thousands of tenants.
nats_write_config() {
  local file=$1 name=$2 listen=$3 http=$4 auth=$5 store=$6 include
  # nats-server resolves an include against the configuration file's folder, even an absolute path.
  include=$(realpath -m --relative-to="$(dirname "$file")" "$auth/nats-auth.conf")
  cat >"$file" <<CONF
server_name: $name
listen: "$listen"
http: "$http"
include "$include"
resolver { type: full, dir: "$store/resolver", allow_delete: true, interval: "2m" }
jetstream { store_dir: "$store", max_file_store: 1T }
CONF
}
