#!/usr/bin/env bash
# Instructions per request of the test-backend powers (docs/test-powers.md),
# counted by callgrind on the release server: deterministic where CPU time on a shared VM is
# not (instructions do not count cache misses or lock waits, so this complements
# bench/request-log.sh and bench/faults.sh rather than replacing them). One run measures, for
# create and for GET of one ConfigMap, in the same binary:
#   baseline    --request-log-size 0 (no request log, no Fault)
#   log         the request log as shipped (bodies off, 100,000 entries, not full)
#   log-full    --request-log-size 500: a full ring, evicting on every push
#   faults      no request log, 100 Faults on `configmaps` in other namespaces (the index by
#               resource and namespace leaves a request none to check)
#   faults-ns   no request log, 100 Faults on `configmaps` in the load's namespace whose name
#               globs match nothing: every request is checked against all 100 (the worst case
#               short of a match)
# and prints each one's instructions per request and its cost over the baseline.
#
#   bench/instructions.sh                 # 3 s of warm-up, then 8 s measured, 4 connections
#   DURATION=15 bench/instructions.sh
#   NO_BUILD=1 bench/instructions.sh      # measure the release binaries already built
# Needs valgrind (Debian: `apt-get install valgrind`).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
target="${CARGO_TARGET_DIR:-target}/release"
duration="${DURATION:-8}"
connections="${CONNECTIONS:-4}"
[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet -p kubemock -p kubemock-loadgen
work="$(mktemp -d)"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT

# Runs one configuration: name, scenario, then `kubemock serve` arguments. Prints
# "name scenario requests instructions".
measure() {
  local name=$1 scenario=$2
  shift 2
  local log="$work/$name-$scenario.log" url=""
  valgrind --tool=callgrind --callgrind-out-file="$work/$name-$scenario.%p.out" \
    "$target/kubemock" serve --port 0 --no-controllers "$@" >"$log" 2>&1 &
  server=$!
  for _ in $(seq 600); do
    url=$(grep -o 'serving on http://[0-9.:]*' "$log" | head -1 | cut -d' ' -f3) && [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || { echo "kubemock did not start: $(cat "$log")" >&2; exit 1; }
  if [ "$name" = faults ] || [ "$name" = faults-ns ]; then
    for i in $(seq 100); do
      if [ "$name" = faults ]; then namespace="elsewhere-$i"; else namespace=loadgen; fi
      curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' \
        "$url/apis/testing.kubemock.dev/v1/faults" -d "{\"metadata\":{\"name\":\"bench-$i\"},
          \"spec\":{\"match\":{\"verbs\":[\"get\",\"create\",\"update\"],\"resource\":\"configmaps\",
          \"namespace\":\"$namespace\",\"name\":\"web-$i-*\"},\"action\":{\"status\":{\"code\":500}}}}"
    done
  fi
  "$target/kubemock-loadgen" load --url "$url" --scenario "$scenario" --connections "$connections" \
    --warmup 0 --duration 3 --json "$work/warm.json" >/dev/null
  callgrind_control --zero "$server" >/dev/null 2>&1
  "$target/kubemock-loadgen" load --url "$url" --scenario "$scenario" --connections "$connections" \
    --warmup 0 --duration "$duration" --json "$work/run.json" >/dev/null
  callgrind_control --dump=measured "$server" >/dev/null 2>&1
  kill -INT "$server"
  wait "$server" || true
  server=""
  local dump
  dump=$(ls -t "$work/$name-$scenario".*.out.* | head -1)
  local instructions requests errors
  instructions=$(grep -m1 '^summary:\|^totals:' "$dump" | awk '{print $2}')
  requests=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['requests'])" "$work/run.json")
  errors=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['errors'])" "$work/run.json")
  [ "$errors" = 0 ] || { echo "$name $scenario: $errors errors" >&2; exit 1; }
  echo "$name $scenario $requests $instructions"
}

results="$work/results"
for scenario in create get; do
  measure baseline "$scenario" --request-log-size 0 >>"$results"
  measure log "$scenario" >>"$results"
  measure log-full "$scenario" --request-log-size 500 >>"$results"
  measure faults "$scenario" --request-log-size 0 >>"$results"
  measure faults-ns "$scenario" --request-log-size 0 >>"$results"
done

python3 - "$results" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1])]
per = {(r[0], r[1]): int(r[3]) / int(r[2]) for r in rows}
print(f"{'configuration':<10} {'scenario':<8} {'requests':>9} {'instr/req':>10} {'vs baseline':>11}")
for name, scenario, requests, _ in rows:
    base = per[("baseline", scenario)]
    cost = per[(name, scenario)]
    print(f"{name:<10} {scenario:<8} {requests:>9} {cost:>10.0f} {(cost / base - 1) * 100:>+10.1f}%")
PY
