#!/usr/bin/env bash
# Stops what the demo started: the controller-manager, then the clusters.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$root/.local}
pidfile=$dir/controller-manager.pid
if [[ -f "$pidfile" ]]; then
  pid=$(cat "$pidfile")
  # Only signal the pid if it still runs our controller-manager.
  if [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == "$root/bin/controller-manager"* ]]; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
fi
cd "$root"
go run ./hack/localcluster down --dir "$dir"
