#!/usr/bin/env bash
# HTTP benchmark: builds release binaries of kubemock, the load generator and the axum
# hello-world baseline, then runs every figure of the performance targets in one run (each
# server a separate process) and prints a table with pass/fail per target.
#
#   bench/http.sh                      # defaults: 64 connections, 2 s warm-up, 10 s per row, 3 rounds
#   bench/http.sh --duration 20 --json /tmp/http.json
#
# Arguments are passed to `kubemock-loadgen suite` (see `--help`). The load generator shares the
# machine with the servers: read the client/server CPU columns before trusting a ratio.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet -p kubemock -p kubemock-loadgen
target="${CARGO_TARGET_DIR:-target}/release"
exec "$target/kubemock-loadgen" suite \
  --kubemock "$target/kubemock" \
  --baseline "$target/hello-baseline" \
  "$@"
