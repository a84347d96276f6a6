#!/usr/bin/env bash
# Runs a command and starts it again whenever it exits, as a kubelet restarts a container: after 1 s,
# doubling up to 30 s while it keeps failing, back to 1 s once it ran for a minute. SIGTERM or SIGINT
# stop the command (SIGTERM, then waits for it) and the supervisor. Output goes where the supervisor's goes.
#
#   scripts/lib/supervise.sh <command> [args...]
set -uo pipefail
(($#)) || { echo "usage: $0 <command> [args...]" >&2; exit 2; }

child=0
stopping=false
stop() {
  stopping=true
  ((child != 0)) && kill -TERM "$child" 2>/dev/null
}
trap stop TERM INT

delay=1
while ! $stopping; do
  started=$SECONDS
  "$@" &
  child=$!
  wait "$child"
  status=$?
  # A trapped signal ends `wait` early: wait until the command itself is gone.
  while kill -0 "$child" 2>/dev/null; do wait "$child"; status=$?; done
  child=0
  $stopping && break
  ((SECONDS - started >= 60)) && delay=1
  echo "[supervise $(date +%H:%M:%S)] $1 exited with status $status; starting it again in ${delay}s" >&2
  sleep "$delay" &
  wait $!
  delay=$((delay * 2 > 30 ? 30 : delay * 2))
done
