#!/usr/bin/env bash
# Runs every test: installs what a fresh machine lacks (Debian packages, npm packages, the pinned
# control-plane binaries), builds every component set and image the suite uses, then type check, lint,
# unit tests and the tests against the real local control plane (started or reused by the test setup):
# first the files that cover the API, the admission policies and provisioning on the oldest Kubernetes
# the chart accepts (KUBERNETES_OLDEST_VERSION), then everything on the newest (KUBERNETES_VERSION).
# This is the one test command; CI runs exactly this.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
started=$SECONDS
# One stage of the install step, its time printed (with an empty cache, 2 cores: about an hour before the
# images; docs/measurements.md, "Local control plane").
stage() {
  local what=$1 t=$SECONDS
  shift
  echo "test.sh: $what ..." >&2
  "$@"
  echo "test.sh: $what: done in $((SECONDS - t)) s" >&2
}
stage "Debian packages" scripts/lib/prerequisites.sh
stage "npm packages and the control plane" scripts/bootstrap.sh
# Built here, before any test starts, so that no test setup builds under its own time limit: the real
# node's binaries, dataplane (kube-router, Traefik) and asset tool (its certificates and images), the
# Prometheus server the rollout gate is tested against, the multi-cluster engine (Open Cluster
# Management) the multi-cluster tests place tenants with, and the operator and module images. Warm,
# each is a cache hit.
stage "the oldest Kubernetes the chart accepts" scripts/lib/build-components.sh oldest-control-plane >/dev/null
stage "the real node's binaries" scripts/lib/build-components.sh node >/dev/null
stage "the real node's dataplane" scripts/lib/build-components.sh dataplane >/dev/null
stage "the real node's asset tool" test/tools/build.sh node-assets >/dev/null
stage "Prometheus (the rollout gate's tests)" test/tools/build-prometheus.sh >/dev/null
stage "Open Cluster Management (the multi-cluster tests)" test/tools/build-ocm.sh >/dev/null
stage "the operator and module images" scripts/build-image.sh >/dev/null
echo "test.sh: install step done in $((SECONDS - started)) s; now the tests" >&2
export PATH="$root/node_modules/.bin:$PATH"   # Node 24 from the npm `node` package
npm run --silent typecheck
npm run --silent lint
# Compatibility: the files that cover the API, the admission policies and provisioning, on the oldest
# Kubernetes the chart accepts (a plane of its own, removed after); then everything on the newest.
# The last closing line counts both runs (EVA_TEST_TALLY_FILE).
EVA_TEST_TALLY_FILE=$(mktemp)
export EVA_TEST_TALLY_FILE
trap 'rm -f "$EVA_TEST_TALLY_FILE"' EXIT
compatibility=0
# shellcheck source=/dev/null
source "$root/versions.env"
stage "compatibility on Kubernetes $KUBERNETES_OLDEST_VERSION" \
  env EVA_CONTROL_PLANE=oldest-control-plane npx vitest run --project cluster \
  test/cluster/api/ test/cluster/charts/admission-policy.test.ts test/cluster/charts/platform-controls.test.ts \
  test/cluster/charts/operator-chart.test.ts e2e/provisioning.test.ts || compatibility=$?
npm test
exit "$compatibility"
