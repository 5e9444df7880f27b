#!/usr/bin/env bash
# Builds etcd 3.6 into .tools/etcd-<version>/etcd (gitignored) from the Go module proxy, for a
# second run of the etcd backend's tests (docs/etcd.md#tests): scripts/install-etcd.sh's Debian
# etcd is 3.4.23, from before the fix of etcd-io/etcd#15220, and most clusters run a fixed one,
# whose progress answers differ (it drops a request it cannot answer yet; storage-etcd/src/
# watch.rs). etcd's own modules carry replace directives, so `go install` refuses them: a
# module of two files here requires go.etcd.io/etcd/server/v3 and calls its etcdmain.Main
# (what etcd's own main does). `go get` verifies the modules against the checksum database.
# Idempotent: when the binary is there and reports the version, it only prints its path.
# Prints the binary's path on its last line. About 30 s of build on 2 cores.
#
#   KUBEMOCK_ETCD_BIN=$(scripts/install-etcd-3.6.sh | tail -1) cargo test -p kubemock-storage-etcd
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=3.6.16
DIR=.tools/etcd-$VERSION
BIN=$DIR/etcd
if [ -x "$BIN" ] && "$BIN" --version 2>/dev/null | grep -q "etcd Version: $VERSION"; then
  echo "$PWD/$BIN"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/go.mod" <<'MOD'
module kubemock.dev/etcd-build

go 1.23
MOD
cat >"$work/main.go" <<'MAIN'
// etcd's own main: go.etcd.io/etcd/server/v3's etcdmain with the process's arguments.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
MAIN
(cd "$work" && go get "go.etcd.io/etcd/server/v3@v$VERSION" >&2 && go build -o etcd . >&2)
mkdir -p "$DIR"
install -m 0755 "$work/etcd" "$BIN.partial"
mv "$BIN.partial" "$BIN"
"$BIN" --version >&2
echo "$PWD/$BIN"
