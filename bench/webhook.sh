#!/usr/bin/env bash
# The cost of a no-op validating admission webhook on a create: builds release binaries of
# kubemock, the load generator and `webhook-noop` (an HTTPS webhook that allows everything),
# starts `kubemock serve` and the webhook as separate processes, and runs the load generator's
# `create` scenario (ConfigMap POSTs) twice against the same server: without a webhook, then
# with a ValidatingWebhookConfiguration calling `webhook-noop` for every ConfigMap create.
#
#   bench/webhook.sh                          # defaults of `kubemock-loadgen load`
#   bench/webhook.sh --connections 16 --duration 10
#
# Arguments go to both `kubemock-loadgen load` runs. The three processes and the load
# generator share the machine: read the CPU columns before trusting a ratio.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}/release"
cargo build --release --quiet -p kubemock -p kubemock-loadgen
tmp="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

wait_for() { # FILE PATTERN
  for _ in $(seq 1 600); do
    grep -q "$2" "$1" && return 0
    sleep 0.05
  done
  echo "timed out waiting for $2 in $1" >&2
  exit 1
}

"$target/webhook-noop" >"$tmp/webhook.out" &
pids+=($!)
wait_for "$tmp/webhook.out" caBundle
hook_url="$(sed -n 's/^webhook-noop: serving on //p' "$tmp/webhook.out")"
bundle="$(sed -n 's/^webhook-noop: caBundle //p' "$tmp/webhook.out")"

"$target/kubemock" serve --port 0 --no-controllers >"$tmp/serve.out" 2>/dev/null &
serve_pid=$!
pids+=("$serve_pid")
wait_for "$tmp/serve.out" "serving on"
url="$(sed -n 's/^kubemock: serving on //p' "$tmp/serve.out")"

run() {
  "$target/kubemock-loadgen" load --url "$url" --scenario create --server-pid "$serve_pid" "$@"
}

echo "== create, no webhook"
run "$@"
curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' \
  "$url/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations" \
  -d "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":\"ValidatingWebhookConfiguration\",
       \"metadata\":{\"name\":\"noop\"},\"webhooks\":[{\"name\":\"noop.example.com\",
       \"clientConfig\":{\"url\":\"$hook_url/validate\",\"caBundle\":\"$bundle\"},
       \"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"configmaps\"]}],
       \"sideEffects\":\"None\",\"admissionReviewVersions\":[\"v1\"]}]}"
echo "== create, a no-op validating webhook on every create"
run "$@"
