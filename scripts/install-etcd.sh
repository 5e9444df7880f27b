#!/usr/bin/env bash
# Installs etcd into .tools/etcd-<version>/etcd (gitignored) for the etcd backend's tests
# (docs/etcd.md), from Debian's etcd-server package: `apt-get download` and `dpkg-deb -x`, no
# root needed, nothing installed system-wide. Idempotent: when the binary is there and reports
# the version, it only prints its path. Prints the binary's path on its last line.
#
#   scripts/install-etcd.sh            # install if missing, print the path
#   KUBEMOCK_ETCD_BIN=$(scripts/install-etcd.sh | tail -1) cargo test -p kubemock-storage-etcd
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian bookworm's etcd-server (3.4.23-4+b4); tests skip nothing when it changes, they only
# need an etcd v3 API.
VERSION=3.4.23
DIR=.tools/etcd-$VERSION
BIN=$DIR/etcd
if [ -x "$BIN" ] && "$BIN" --version 2>/dev/null | grep -q "etcd Version: $VERSION"; then
  echo "$PWD/$BIN"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "etcd-server=$VERSION*" >&2)
dpkg-deb -x "$tmp"/etcd-server_*.deb "$tmp/root"
mkdir -p "$DIR"
install -m 0755 "$tmp/root/usr/bin/etcd" "$BIN.partial"
mv "$BIN.partial" "$BIN"
"$BIN" --version >&2
echo "$PWD/$BIN"
