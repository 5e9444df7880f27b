#!/usr/bin/env bash
# The Go compatibility suite (docs/clients.md#from-go): client-go and controller-runtime, at the
# versions go.mod pins, against a kubemock that the tests start themselves. Builds no Rust:
# takes the kubemock binary as $1 or KUBEMOCK_BIN (default: the workspace's
# target/debug/kubemock, which `cargo test --workspace` builds). Modules come from the Go
# module proxy (`go mod download`); go.sum pins them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# A relative path is the caller's (resolved before leaving the caller's directory).
KUBEMOCK_BIN=${1:-${KUBEMOCK_BIN:-$here/../../target/debug/kubemock}}
if [ -d "$(dirname "$KUBEMOCK_BIN")" ]; then
  KUBEMOCK_BIN=$(cd "$(dirname "$KUBEMOCK_BIN")" && pwd)/$(basename "$KUBEMOCK_BIN")
fi
cd "$here"
if [ ! -x "$KUBEMOCK_BIN" ]; then
  echo "test.sh: no kubemock binary at $KUBEMOCK_BIN (cargo build first)" >&2
  exit 1
fi
export KUBEMOCK_BIN
# Streaming lists in every typed List and informer (main_test.go sets it too).
export KUBE_FEATURE_WatchListClient=true
# go.mod and go.sum as committed: a missing or changed entry is an error, not a download.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly"
go mod download
go vet ./...
go test -count=1 -timeout "${COMPAT_GO_TIMEOUT:-300s}" ./...
