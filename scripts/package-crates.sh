#!/usr/bin/env bash
# `cargo package` for every crate kubemock publishes (docs/crates.md#publishing): the two forks
# of third_party/, then the workspace's libraries and the `kubemock` package together, each
# built from its .crate as crates.io would have it (the verification build). Nothing is
# uploaded. conformance, loadgen and httpfuzz are `publish = false`, and left out.
#
#   scripts/package-crates.sh            # package and verify; .crate files in target/package/
#   scripts/package-crates.sh --list     # only the files each .crate would hold
#
# The forks (kubemock-sled, kubemock-serde-yaml-ng) come first: they have no path dependency.
# The workspace's crates depend on each other and on the forks by path and version. `cargo
# package --workspace` packages members in dependency order against a local registry of the
# ones it has just packaged, but the forks are not members (their code stays as upstream wrote
# it), so until they are on crates.io a `[patch]` given on the command line points their
# versions at their directories for the verification build only.
set -euo pipefail
cd "$(dirname "$0")/.."
# A clean build gains nothing from incremental caches.
export CARGO_INCREMENTAL=0
# Packaging checks what is committed builds; CI's earlier steps may have touched Cargo.lock.
ARGS=(--allow-dirty "$@")
step() { echo "== package: $1 (${SECONDS}s)"; }

for fork in third_party/sled third_party/serde_yaml_ng; do
  step "$fork"
  # Their own workspaces: into this one's target/ (target/package/), not third_party/*/target.
  cargo package --manifest-path "$fork/Cargo.toml" --target-dir target "${ARGS[@]}"
done

step "the workspace's published crates"
# The same [patch] for the cargo that apimachinery's build script runs (`cargo metadata`, to find
# the k8s-rs-pb sources) inside target/package/<crate>/, which reads config files upward from
# there but not this command line.
mkdir -p target/package/.cargo
cat > target/package/.cargo/config.toml <<TOML
[patch.crates-io]
kubemock-sled = { path = "$PWD/third_party/sled" }
kubemock-serde-yaml-ng = { path = "$PWD/third_party/serde_yaml_ng" }
TOML
cargo package --workspace \
  --exclude kubemock-conformance --exclude kubemock-loadgen --exclude kubemock-httpfuzz \
  --config 'patch.crates-io.kubemock-sled.path="third_party/sled"' \
  --config 'patch.crates-io.kubemock-serde-yaml-ng.path="third_party/serde_yaml_ng"' \
  "${ARGS[@]}"
step "done"
