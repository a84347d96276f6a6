#!/usr/bin/env bash
# Re-vendors the eva-module-lib library into every module chart's charts/ folder (offline: the
# dependency is file://). Run after any change to charts/modules/eva-module-lib.
# Usage: charts/modules/update-deps.sh [path/to/helm]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
helm=${1:-${HELM:-helm}}
for chart in "$here"/*/; do
  chart=${chart%/}
  [[ -f "$chart/Chart.yaml" ]] || continue
  grep -q '^type: library' "$chart/Chart.yaml" && continue
  "$helm" dependency update "$chart" >/dev/null
  echo "vendored eva-module-lib into ${chart#"$here"/}"
done
