#!/usr/bin/env bash
# HTTP benchmark: builds release binaries of kubemock, the load generator and the axum
# hello-world baseline, then runs every figure of the performance targets in one run (each
# server a separate process) and prints a table with pass/fail per target.
#
#   bench/http.sh                      # defaults: 64 connections, 2 s warm-up, 10 s per row, 3 rounds
#   bench/http.sh --duration 20 --json /tmp/http.json
#
#   bench/http.sh --kubemock /tmp/old/kubemock   # another build of kubemock (not built here)
#
# Arguments are passed to `kubemock-loadgen suite` (see `--help`). With `--kubemock BIN` that
# binary is measured instead of this checkout's (built only when none is given), so builds of
# other commits can be compared with the same generator and baseline. The load generator shares
# the machine with the servers: read the client/server CPU columns before trusting a ratio.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}/release"
# The "over etcd" rows: a real etcd (Debian's 3.4.23, into .tools/); NO_ETCD=1 leaves them out.
etcd=()
if [ -z "${NO_ETCD:-}" ]; then
  etcd=(--etcd "$(scripts/install-etcd.sh | tail -n 1)")
fi
for arg in "$@"; do
  case "$arg" in
    --kubemock | --kubemock=*)
      cargo build --release --quiet -p kubemock-loadgen
      exec "$target/kubemock-loadgen" suite --baseline "$target/hello-baseline" "${etcd[@]}" "$@"
      ;;
  esac
done
cargo build --release --quiet -p kubemock -p kubemock-loadgen
exec "$target/kubemock-loadgen" suite \
  --kubemock "$target/kubemock" \
  --baseline "$target/hello-baseline" \
  "${etcd[@]}" \
  "$@"
