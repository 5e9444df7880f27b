#!/usr/bin/env bash
# etcd versus kubemock, side by side (issue 23's scale acceptance): builds release binaries of
# kubemock and the load generator, installs etcd from Debian's package if missing
# (scripts/install-etcd.sh), then runs `kubemock-loadgen etcd-vs-kubemock`: etcd's HTTP/JSON
# gateway and kubemock in turn, with the same load generator and concurrency per pair, for
# create at c=1/64/256 (durable and no-fsync/ephemeral), GET, a page of 500 and a full LIST of
# 100k objects. Prints each pair, the ratio kubemock/etcd and the goals (docs/benchmarks.md).
#
#   bench/etcd-side-by-side.sh --duration 5
#   bench/etcd-side-by-side.sh --duration 1 --skip-100k        # a quick run
#   bench/etcd-side-by-side.sh --etcd /usr/bin/etcd --kubemock /tmp/old/kubemock --json /tmp/s.json
#
# Arguments are passed to the subcommand (see `kubemock-loadgen etcd-vs-kubemock --help`);
# `--etcd BIN` or `--kubemock BIN` replace the installed etcd or this checkout's build.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}/release"
etcd=() kubemock=()
case " $* " in
  *" --etcd "* | *" --etcd="*) ;;
  *) etcd=(--etcd "$(scripts/install-etcd.sh | tail -n 1)") ;;
esac
case " $* " in
  *" --kubemock "* | *" --kubemock="*)
    cargo build --release --quiet -p kubemock-loadgen
    ;;
  *)
    cargo build --release --quiet -p kubemock -p kubemock-loadgen
    kubemock=(--kubemock "$target/kubemock")
    ;;
esac
exec "$target/kubemock-loadgen" etcd-vs-kubemock "${etcd[@]}" "${kubemock[@]}" "$@"
