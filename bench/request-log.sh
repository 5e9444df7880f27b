#!/usr/bin/env bash
# The request log's cost (docs/test-powers.md): the same release binary with the log
# off (`--request-log-size 0`) and on (the default, bodies off), create and GET of one
# ConfigMap, rounds interleaved so that both see the same machine. Prints each run and the
# medians: req/s and server CPU per request (the figure to trust on a shared machine).
#
#   bench/request-log.sh                       # 5 rounds of 5 s, 32 connections
#   ROUNDS=7 DURATION=10 bench/request-log.sh
#   bench/request-log.sh --request-log-bodies  # extra serve arguments for the "on" server
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}/release"
rounds="${ROUNDS:-5}"
duration="${DURATION:-5}"
connections="${CONNECTIONS:-32}"
cargo build --release --quiet -p kubemock -p kubemock-loadgen
work="$(mktemp -d)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

# Starts `kubemock serve` with the given arguments; prints "PID URL".
start() {
  local log="$work/serve-$RANDOM.log"
  "$target/kubemock" serve --port 0 --no-controllers "$@" >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 200); do
    if url=$(grep -o 'serving on http://[0-9.:]*' "$log" | head -1 | cut -d' ' -f3) && [ -n "$url" ]; then
      echo "$pid $url"
      return
    fi
    sleep 0.05
  done
  echo "kubemock did not start: $(cat "$log")" >&2
  exit 1
}

read -r off_pid off_url < <(start --request-log-size 0)
pids+=("$off_pid")
read -r on_pid on_url < <(start "$@")
pids+=("$on_pid")

results="$work/results"
for round in $(seq "$rounds"); do
  for scenario in create get; do
    for mode in off on; do
      if [ "$mode" = off ]; then pid=$off_pid url=$off_url; else pid=$on_pid url=$on_url; fi
      "$target/kubemock-loadgen" load --url "$url" --scenario "$scenario" --server-pid "$pid" \
        --connections "$connections" --warmup 1 --duration "$duration" --json "$work/run.json" >/dev/null
      python3 - "$work/run.json" "$round" "$scenario" "$mode" >>"$results" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(sys.argv[2], sys.argv[3], sys.argv[4], r["rps"], r["server_cpu_us_per_request"] or 0, r["errors"])
PY
    done
  done
done

python3 - "$results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
print("round scenario log   req/s     server-us/req errors")
for r in rows:
    print(f"{r[0]:>5} {r[1]:<8} {r[2]:<4} {float(r[3]):>9.0f} {float(r[4]):>13.1f} {r[5]}")
print()
for scenario in ("create", "get"):
    med = {}
    for mode in ("off", "on"):
        sel = [r for r in rows if r[1] == scenario and r[2] == mode]
        med[mode] = (statistics.median(float(r[3]) for r in sel),
                     statistics.median(float(r[4]) for r in sel))
    rps = (1 - med["on"][0] / med["off"][0]) * 100
    cpu = (med["on"][1] / med["off"][1] - 1) * 100
    print(f"{scenario}: median req/s off {med['off'][0]:.0f}, on {med['on'][0]:.0f} "
          f"(throughput cost {rps:+.1f} %); server CPU/request off {med['off'][1]:.1f} us, "
          f"on {med['on'][1]:.1f} us (cost {cpu:+.1f} %)")
PY
