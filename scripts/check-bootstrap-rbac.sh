#!/usr/bin/env bash
# Checks apiserver/data/bootstrap-rbac-1.32/ against upstream's own golden files: the testdata of
# plugin/pkg/auth/authorizer/rbac/bootstrappolicy in the k8s.io/kubernetes module at the version
# the data names, downloaded from the Go module proxy (a registry; `go mod download` verifies it
# against the checksum database). Our files are upstream's with a header of comments: any other
# difference fails. Needs Go; CI runs it (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=v1.32.10
DATA=apiserver/data/bootstrap-rbac-1.32
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && echo 'module check' >go.mod && go mod download k8s.io/kubernetes@"$VERSION")
dir=$(cd "$work" && go mod download -json k8s.io/kubernetes@"$VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
golden="$dir/plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata"
status=0
for upstream in "$golden"/*.yaml; do
  name=$(basename "$upstream")
  if [ ! -f "$DATA/$name" ]; then
    echo "missing: $DATA/$name" >&2
    status=1
  elif ! diff <(grep -v '^#' "$DATA/$name") "$upstream" >/dev/null; then
    echo "differs from k8s.io/kubernetes@$VERSION: $DATA/$name" >&2
    status=1
  fi
done
[ "$status" = 0 ] && echo "bootstrap RBAC data equals k8s.io/kubernetes@$VERSION's golden files"
exit "$status"
