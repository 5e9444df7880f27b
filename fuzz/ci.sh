#!/usr/bin/env bash
# Fuzzing in CI (docs/development.md#fuzzing): every target of fuzz/ for a bounded time, from a corpus
# seeded by seed.py (fuzz/seeds, and upstream's protobuf fixture pairs when the
# reference data is present: see seed.py); any crash, failed property,
# timeout (-timeout) or memory blow-up (-rss_limit_mb) fails the script, and the input that did
# it is left in fuzz/artifacts/<target>/.
#
# Usage: fuzz/ci.sh [SECONDS_PER_TARGET]   (default 20; FUZZ_SECONDS also sets it)
#        fuzz/ci.sh --build-only            (install cargo-fuzz if missing, build the targets)
#
# .ci/run builds with --build-only in the background while the tests run, then calls
# `fuzz/ci.sh 10`, whose build then finds everything fresh.
#
# libFuzzer's random seed is fixed (FUZZ_SEED, default 20261126), so a run explores the same
# inputs in the same order every time and CI does not fail on the luck of the draw: a slower
# machine only stops earlier in the same sequence. FUZZ_SEED=0 draws a new seed (exploration).
#
# Stable Rust is enough: without a sanitizer (`-s none`) cargo-fuzz passes rustc no unstable
# flag, and the code under test forbids `unsafe`, so AddressSanitizer would find nothing the
# Rust checks do not. cargo-fuzz comes from crates.io when missing. Should it not install, the
# same checks run over the seeds as `cargo test` (src/lib.rs) instead of being skipped.
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_INCREMENTAL=0
BUILD_ONLY=false
if [ "${1:-}" = "--build-only" ]; then
  BUILD_ONLY=true
  shift
fi
SECONDS_PER_TARGET=${1:-${FUZZ_SECONDS:-20}}
# Longer than any input takes on the seeds (milliseconds): a hang, not a slow input.
TIMEOUT_SECONDS=10
SEED=${FUZZ_SEED:-20261126}
TARGETS=(selector json_patch merge_patch strategic_patch apply protobuf decode)
step() { echo "== fuzz: $1 (${SECONDS}s)"; }

if ! cargo fuzz --version >/dev/null 2>&1; then
  step "installing cargo-fuzz"
  if ! cargo install --locked cargo-fuzz; then
    if $BUILD_ONLY; then
      step "cargo-fuzz did not install: the seeds' checks instead (cargo test), built"
      cargo test --release --lib --no-run
      exit 0
    fi
    step "seeding corpus/"
    python3 seed.py
    step "cargo-fuzz did not install: the targets' checks over the seeds (cargo test)"
    cargo test --release --lib
    step "done (seeds only)"
    exit 0
  fi
fi

step "building the targets"
cargo fuzz build -s none
if $BUILD_ONLY; then
  step "built"
  exit 0
fi

step "seeding corpus/"
python3 seed.py
mkdir -p artifacts
for target in "${TARGETS[@]}"; do
  step "$target for ${SECONDS_PER_TARGET}s"
  log="artifacts/$target.log"
  if ! cargo fuzz run -s none "$target" "corpus/$target" -- \
    -max_total_time="$SECONDS_PER_TARGET" -timeout="$TIMEOUT_SECONDS" -seed="$SEED" \
    -print_final_stats=1 \
    >"$log" 2>&1; then
    grep -E -A3 'panicked at|==[0-9]+== ERROR' "$log" | head -40 >&2 || tail -40 "$log" >&2
    echo "fuzz target $target failed; the input is in fuzz/artifacts/$target/, the log in $log" >&2
    exit 1
  fi
  grep -E 'DONE|stat::(number_of_executed_units|average_exec_per_sec)' "$log" || true
done
step "done"
