#!/usr/bin/env bash
# Waits until an EvaTenant is Active, printing each condition as it changes (with the time since
# waiting started) and the reason and message whenever one is not True.
#   wait-for-tenant.sh <name> [timeout seconds]
set -euo pipefail
name=${1:?usage: wait-for-tenant.sh <name> [timeout]}
timeout=${2:-300}
declare -A shown=()
start=$(date +%s.%N)

elapsed() { awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN { printf "%6.2fs", n - s }'; }

jsonpath='{.status.phase}{"\n"}{range .status.conditions[*]}{.type}{"\t"}{.status}{"\t"}{.reason}{"\t"}{.message}{"\n"}{end}'
deadline=$((SECONDS + timeout))
while ((SECONDS < deadline)); do
  if out=$(kubectl get evt "$name" -o jsonpath="$jsonpath" 2>/dev/null); then
    phase=$(head -n1 <<<"$out")
    while IFS=$'\t' read -r type status reason message; do
      [[ -z "$type" ]] && continue
      key="$status/$reason"
      [[ "${shown[$type]:-}" == "$key" ]] && continue
      shown[$type]=$key
      if [[ "$status" == True ]]; then
        printf '  %s  %-16s True\n' "$(elapsed)" "$type"
      elif [[ "$reason" != Pending && "$reason" != Progressing ]]; then
        printf '  %s  %-16s %s  %s: %s\n' "$(elapsed)" "$type" "$status" "$reason" "$message"
      fi
    done < <(tail -n +2 <<<"$out")
    if [[ "$phase" == Active ]]; then
      printf '  %s  phase Active; operator-measured seconds per condition: %s\n' "$(elapsed)" \
        "$(kubectl get evt "$name" -o jsonpath='{.status.elapsedSeconds}')"
      exit 0
    fi
  fi
  sleep 0.3
done
echo "EvaTenant $name is not Active after ${timeout}s (phase: ${phase:-unknown})" >&2
kubectl get evt "$name" -o jsonpath='{range .status.conditions[*]}{.type}: {.status} {.reason} {.message}{"\n"}{end}' >&2 || true
exit 1
