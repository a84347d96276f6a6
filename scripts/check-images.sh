#!/usr/bin/env bash
# Checks images.txt, the one list of container images (see its header), against what uses images
# (the rules live in src/script-commands/check-images.ts, run as `eva-operator images check`):
#
#   * every line is <registry>/<repository>:<tag>@sha256:<64 hex digits | PLACEHOLDER>, listed once;
#     a line without a digest or malformed fails, naming its line number;
#   * every image the charts render is listed: charts/eva-operator (nats.enabled=true) and every
#     module chart under charts/modules for every tier, with `helm template`;
#   * every Dockerfile FROM is pinned by digest, and listed with that digest (a FROM ${ARG} is checked
#     through the ARG's default, declared before the first FROM);
#   * versions agree with versions.env: the Dockerfile's HELM_VERSION/NODE_VERSION build args, and
#     the tags of the node, golang and nats images;
#   * PLACEHOLDER digests: allowed for our own images (ghcr.io/aidonow/, filled by the release step);
#     a third-party PLACEHOLDER is reported as a warning. With --release any PLACEHOLDER fails.
#
# Usage: scripts/check-images.sh [--release] [--root DIR]
#   --root DIR  check DIR/images.txt, DIR/Dockerfile, DIR/charts, DIR/versions.env (default: this checkout)
#   HELM=<path> the helm binary (default: helm on PATH; `eval "$(scripts/dev-cluster.sh env)"` puts the
#               pinned one there)
# Exit status: 0 all good, 1 problems (each printed on stderr), 2 usage or tool errors.
set -euo pipefail
# shellcheck source=lib/eva-cli.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/eva-cli.sh"
case "${1:-}" in -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
helm=${HELM:-helm}
command -v "$helm" >/dev/null 2>&1 ||
  { echo "check-images: helm not found (set HELM, or eval \"\$(scripts/dev-cluster.sh env)\")" >&2; exit 2; }
HELM=$(command -v "$helm") eva_cli images check --root "$eva_cli_root" "$@"
