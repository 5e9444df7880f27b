#!/usr/bin/env bash
# The controller manager's cost while a cluster sits idle (issue 6's benchmark figure): starts
# `kubemock serve --no-controllers` and `kubemock controller-manager` as two processes, creates a
# Deployment of N replicas (default 1000) on 10 simulated nodes, waits for every pod to be Ready,
# then samples the manager's CPU time and resident memory over an idle window.
#
#   cargo build --release && scripts/controllers-idle.sh [REPLICAS] [IDLE_SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
replicas=${1:-1000}
idle=${2:-30}
bin=target/release/kubemock
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

"$bin" serve --port 0 --no-controllers --kubeconfig-out "$work/kubeconfig" >"$work/serve.out" 2>/dev/null &
for _ in $(seq 100); do grep -q serving "$work/serve.out" && break; sleep 0.1; done
"$bin" controller-manager --kubeconfig "$work/kubeconfig" --nodes 10 --health-port 0 \
  >/dev/null 2>"$work/manager.err" &
manager=$!
k() { kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/cache" "$@"; }
for _ in $(seq 100); do [ "$(k get nodes -o name 2>/dev/null | wc -l)" -ge 10 ] && break; sleep 0.2; done

start=$(date +%s.%N)
k create deployment idle --image=nginx --replicas="$replicas" >/dev/null
k rollout status deployment/idle --timeout=300s >/dev/null
ready=$(date +%s.%N)
printf 'deployment of %s replicas: rolled out in %.2f s (two processes, HTTP between them)\n' \
  "$replicas" "$(echo "$ready - $start" | bc)"

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$manager/stat"; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$manager/status"; }
before=$(cpu)
sleep "$idle"
after=$(cpu)
printf 'controller manager idle over %s s with %s pods: CPU %.2f %% of one core, RSS %.1f MiB\n' \
  "$idle" "$replicas" "$(echo "($after - $before) * 100 / $ticks / $idle" | bc -l)" \
  "$(echo "$(rss_kib) / 1024" | bc -l)"
