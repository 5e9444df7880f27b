#!/usr/bin/env bash
# Audit logging's cost: create and GET throughput of `kubemock serve --no-controllers` without
# audit and with every request audited at Metadata level into a file (docs/security.md#audit), with
# the load generator's `load` (64 connections by default), the two servers alternating for
# ROUNDS rounds so that a shared machine's noise falls on both.
#
#   bench/audit.sh                 # 3 rounds, 2 s warm-up, 10 s per row
#   ROUNDS=1 DURATION=5 bench/audit.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${ROUNDS:-3}"
duration="${DURATION:-10}"
target="${CARGO_TARGET_DIR:-target}/release"
cargo build --release --quiet -p kubemock -p kubemock-loadgen
work="$(mktemp -d)"
trap '[ -n "${pid:-}" ] && kill -TERM "$pid" 2>/dev/null; rm -rf "$work"' EXIT
cat >"$work/policy.yaml" <<'YAML'
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
YAML

# Starts kubemock with the given extra flags; sets $pid and $url.
start() {
  "$target/kubemock" serve --port 0 --no-controllers "$@" >"$work/out" 2>/dev/null &
  pid=$!
  for _ in $(seq 200); do
    url="$(sed -n 's/^kubemock: serving on //p' "$work/out")"
    [ -n "$url" ] && return 0
    sleep 0.05
  done
  echo "kubemock did not start" >&2
  exit 1
}

for round in $(seq "$rounds"); do
  for mode in off metadata; do
    case "$mode" in
      off) start ;;
      metadata) start --audit-log-path "$work/audit.log" --audit-policy-file "$work/policy.yaml" ;;
    esac
    for scenario in create get; do
      printf 'round %s audit=%-8s %-6s ' "$round" "$mode" "$scenario"
      "$target/kubemock-loadgen" load --url "$url" --scenario "$scenario" \
        --duration "$duration" --server-pid "$pid" --json "$work/report.json" >/dev/null
      python3 - "$work/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cpu = r.get("server_cpu_us_per_request")
print(f"{r['rps']:9.0f} req/s  p50 {r['latency_ms']['p50']:.2f} ms  p99 {r['latency_ms']['p99']:.2f} ms"
      f"  server {cpu if cpu is None else round(cpu, 1)} us/req  errors {r['errors']}")
PY
    done
    kill -TERM "$pid"
    wait "$pid" || true
    rm -f "$work/audit.log"
  done
done
