#!/usr/bin/env bash
# Issue 23's controller benchmarks: builds release binaries of kubemock and the load generator,
# then runs `kubemock-loadgen controllers-scale`: one `kubemock serve` process (API server,
# controllers and simulated nodes) per shape, Deployments created at once, timed until every pod
# is Ready, with the server's RSS per pod. Prints each shape and the goals (docs/benchmarks.md).
#
#   bench/controllers-scale.sh                                   # 10k and 100k pods, and the goals
#   bench/controllers-scale.sh --nodes 10 --replicas 1000        # one shape
#   bench/controllers-scale.sh --kubemock /tmp/old/kubemock --json /tmp/scale.json
#
# Arguments are passed to the subcommand (see `kubemock-loadgen controllers-scale --help`);
# without a shape (`--nodes/--deployments/--replicas`) it runs issue 23's two shapes.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}/release"
kubemock=() shape=(--issue23)
case " $* " in
  *" --kubemock "* | *" --kubemock="*)
    cargo build --release --quiet -p kubemock-loadgen
    ;;
  *)
    cargo build --release --quiet -p kubemock -p kubemock-loadgen
    kubemock=(--kubemock "$target/kubemock")
    ;;
esac
case " $* " in
  *" --nodes"* | *" --deployments"* | *" --replicas"*) shape=() ;;
esac
exec "$target/kubemock-loadgen" controllers-scale "${kubemock[@]}" "${shape[@]}" "$@"
