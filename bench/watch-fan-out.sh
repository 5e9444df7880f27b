#!/usr/bin/env bash
# Issue 23's watch fan-out benchmark: builds release binaries of kubemock and the load
# generator, then runs `kubemock-loadgen watch-fan-out`: one `kubemock serve --no-controllers`,
# W watchers of its ConfigMaps in one namespace (raw HTTP/1.1 streams), creates paced at a
# rate; for each create, the time from its 201 to its event at the last watcher. Prints the
# percentiles, the rate achieved, the watchers cut off and the goal (docs/benchmarks.md).
#
#   bench/watch-fan-out.sh                                  # 1,000 watchers, 5,000 creates/s, 10 s
#   bench/watch-fan-out.sh --watchers 100 --rate 1000       # a shape this machine can carry
#   bench/watch-fan-out.sh --kubemock /tmp/old/kubemock --json /tmp/fan-out.json
#
# Arguments are passed to the subcommand (see `kubemock-loadgen watch-fan-out --help`).
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}/release"
kubemock=()
case " $* " in
  *" --kubemock "* | *" --kubemock="*)
    cargo build --release --quiet -p kubemock-loadgen
    ;;
  *)
    cargo build --release --quiet -p kubemock -p kubemock-loadgen
    kubemock=(--kubemock "$target/kubemock")
    ;;
esac
exec "$target/kubemock-loadgen" watch-fan-out "${kubemock[@]}" "$@"
