#!/usr/bin/env bash
# Version skew (docs/clients.md#from-go): the suite against the newest client-go / controller-runtime
# the Go module proxy serves, in a copy of this module in a temporary directory (go.mod here
# stays pinned to 1.32). Usage: skew.sh [KUBEMOCK_BIN] (CLIENT_GO=vX CONTROLLER_RUNTIME=vY
# pick other versions; default: latest). Not run by CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KUBEMOCK_BIN=${1:-${KUBEMOCK_BIN:-$here/../../target/debug/kubemock}}
if [ -d "$(dirname "$KUBEMOCK_BIN")" ]; then
  KUBEMOCK_BIN=$(cd "$(dirname "$KUBEMOCK_BIN")" && pwd)/$(basename "$KUBEMOCK_BIN")
fi
export KUBEMOCK_BIN KUBE_FEATURE_WatchListClient=true
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here"/go.mod "$here"/go.sum "$here"/*.go "$work"/
cd "$work"
go get "k8s.io/client-go@${CLIENT_GO:-latest}" "k8s.io/api@${CLIENT_GO:-latest}" \
  "k8s.io/apimachinery@${CLIENT_GO:-latest}" "k8s.io/apiextensions-apiserver@${CLIENT_GO:-latest}" \
  "sigs.k8s.io/controller-runtime@${CONTROLLER_RUNTIME:-latest}"
go mod tidy
grep -E '^\s*(k8s.io/(client-go|api|apimachinery)|sigs.k8s.io/controller-runtime|go) ' go.mod
go vet ./... || true
go test -count=1 -timeout "${COMPAT_GO_TIMEOUT:-300s}" -v ./... 2>&1 | grep -Ev '^(20[0-9][0-9]-|=== RUN)'
