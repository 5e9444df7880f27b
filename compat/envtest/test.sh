#!/usr/bin/env bash
# The envtest drop-in's check (docs/clients.md#from-go): this kubebuilder-shaped suite (the
# controller's in internal/controller, the webhooks' in internal/webhook/v1), unchanged, run
# three ways against the kubemock binary given as $1:
#   1. KUBEBUILDER_ASSETS from `kubemock envtest-assets`, no in-tree controllers (envtest's way);
#   2. the same with KUBEMOCK_CONTROLLERS=garbagecollector,namespace;
#   3. USE_EXISTING_CLUSTER=true with the kubeconfig of a `kubemock serve --secure`.
# Go modules come from the Go module proxy (go.sum is committed).
set -euo pipefail
kubemock=$(realpath "${1:?usage: compat/envtest/test.sh PATH/TO/kubemock}")
cd "$(dirname "$0")"
command -v go >/dev/null || { echo "compat/envtest: go is not installed" >&2; exit 1; }

work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

go vet ./...
assets=$("$kubemock" envtest-assets "$work/assets")

echo "-- envtest with KUBEBUILDER_ASSETS=$assets (no in-tree controllers)"
env -u KUBEMOCK_CONTROLLERS -u USE_EXISTING_CLUSTER KUBEBUILDER_ASSETS="$assets" go test -count=1 ./...

echo "-- envtest with KUBEMOCK_CONTROLLERS=garbagecollector,namespace"
env -u USE_EXISTING_CLUSTER KUBEMOCK_CONTROLLERS=garbagecollector,namespace \
  KUBEBUILDER_ASSETS="$assets" go test -count=1 ./...

echo "-- envtest with USE_EXISTING_CLUSTER=true against kubemock serve --secure"
: >"$work/serve.out"
"$kubemock" serve --secure --port 0 --controllers garbagecollector,namespace \
  --kubeconfig-out "$work/kubeconfig" >"$work/serve.out" 2>"$work/serve.log" &
server=$!
for _ in $(seq 600); do # 60 s at most
  grep -q '^kubemock: serving on https://' "$work/serve.out" && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q '^kubemock: serving on https://' "$work/serve.out"; then
  echo "kubemock serve did not start:" >&2; cat "$work/serve.log" >&2; exit 1
fi
# One package at a time (-p 1): envtest installs the webhook suite's configurations into the
# shared server, where they would send the controller suite's Guestbooks to a webhook server
# that is not up yet (or no longer: the webhook suite removes them in its AfterSuite).
env -u KUBEBUILDER_ASSETS USE_EXISTING_CLUSTER=true KUBECONFIG="$work/kubeconfig" \
  KUBEMOCK_CONTROLLERS=garbagecollector,namespace go test -count=1 -p 1 ./...
