#!/usr/bin/env bash
# Smoke test of docker-compose.yml's two services (docs/operations.md#docker-compose): the API
# server, and the controller manager running against it.
#
#   scripts/compose-smoke.sh [KUBEMOCK_BINARY]
#       Without Docker: starts the same two processes from the binary (default
#       target/debug/kubemock) as compose does, runs the checks, then also stops the API server
#       and checks that the controller manager's /readyz turns 503 while /healthz stays 200,
#       and 200 again once the API server is back.
#   KUBEMOCK_URL=http://apiserver:6443 CONTROLLER_MANAGER_URL=http://controller-manager:10257 \
#     scripts/compose-smoke.sh
#       Against running services (compose's `smoke` service does this): the checks only.
#
# The checks: the controller manager's /readyz is 200 once it reaches the API server; a
# Deployment created over HTTP gets its pods from the controllers (ReplicaSet, scheduler,
# simulated kubelet) and they turn Running. Needs bash and curl. Takes a few seconds.
set -euo pipefail

DEADLINE_SECONDS=${SMOKE_DEADLINE_SECONDS:-60}
NAMESPACE=default
NAME=smoke-$$

say() { echo "compose-smoke: $*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

# until DESCRIPTION COMMAND...: runs COMMAND every 100 ms until it succeeds, or fails the
# smoke test after DEADLINE_SECONDS.
until_ok() {
  local what=$1; shift
  local end=$((SECONDS + DEADLINE_SECONDS))
  until "$@"; do
    [ "$SECONDS" -lt "$end" ] || fail "$what (after ${DEADLINE_SECONDS}s)"
    sleep 0.1
  done
}

http_code() { curl -s -o /dev/null -m 3 -w '%{http_code}' "$1" || true; }
is_code() { [ "$(http_code "$2")" = "$1" ]; }

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ -z "${work:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

local_mode=false
if [ -z "${KUBEMOCK_URL:-}" ]; then
  local_mode=true
  binary=${1:-target/debug/kubemock}
  [ -x "$binary" ] || fail "no kubemock binary at $binary (cargo build first)"
  work=$(mktemp -d)
  # The apiserver service: durable store, no in-process controllers.
  "$binary" serve --port 0 --no-controllers --no-kubeconfig --data-dir "$work/data" \
    >"$work/apiserver.out" 2>"$work/apiserver.log" &
  apiserver=$!
  pids+=("$apiserver")
  until_ok "the API server's ready line" grep -qs '^kubemock: serving on ' "$work/apiserver.out"
  KUBEMOCK_URL=$(sed -n 's/^kubemock: serving on //p' "$work/apiserver.out")
  # The controller-manager service, its health endpoints on a free port.
  health_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$binary" controller-manager --master "$KUBEMOCK_URL" --leader-elect \
    --health-port "$health_port" 2>"$work/controller-manager.log" &
  manager=$!
  pids+=("$manager")
  CONTROLLER_MANAGER_URL=http://127.0.0.1:$health_port
fi
CONTROLLER_MANAGER_URL=${CONTROLLER_MANAGER_URL:?set CONTROLLER_MANAGER_URL with KUBEMOCK_URL}
say "API server $KUBEMOCK_URL, controller manager $CONTROLLER_MANAGER_URL"

until_ok "the API server's /readyz" is_code 200 "$KUBEMOCK_URL/readyz"
until_ok "the controller manager's /readyz (it reaches the API server)" \
  is_code 200 "$CONTROLLER_MANAGER_URL/readyz"

deployments=$KUBEMOCK_URL/apis/apps/v1/namespaces/$NAMESPACE/deployments
code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' -X POST "$deployments" \
  -H 'Content-Type: application/json' -d @- <<EOF
{"metadata":{"name":"$NAME"},"spec":{"replicas":2,
 "selector":{"matchLabels":{"app":"$NAME"}},
 "template":{"metadata":{"labels":{"app":"$NAME"}},
  "spec":{"containers":[{"name":"main","image":"nginx"}]}}}}
EOF
)
[ "$code" = 201 ] || fail "creating Deployment $NAME answered $code"

running_pods() {
  local pods
  pods=$(curl -s -m 3 "$KUBEMOCK_URL/api/v1/namespaces/$NAMESPACE/pods?labelSelector=app%3D$NAME") || return 1
  [ "$(grep -Eo '"phase": ?"Running"' <<<"$pods" | wc -l)" -ge 2 ]
}
until_ok "two Running pods of Deployment $NAME (the controllers work)" running_pods
say "ok: the controllers made Deployment $NAME's pods Running"
curl -s -o /dev/null -m 5 -X DELETE "$deployments/$NAME" || true

if $local_mode; then
  kill -TERM "$apiserver"
  wait "$apiserver" || fail "the API server did not exit 0 on SIGTERM"
  until_ok "the controller manager's /readyz turning 503 without its API server" \
    is_code 503 "$CONTROLLER_MANAGER_URL/readyz"
  is_code 200 "$CONTROLLER_MANAGER_URL/healthz" || fail "/healthz is not 200 (the process is up)"
  say "ok: without the API server, /readyz is 503 and /healthz 200"
  # The API server back on its port and store: the manager is ready again, and stops
  # cleanly (it releases its Lease, which it cannot do while the server is away).
  "$binary" serve --port "${KUBEMOCK_URL##*:}" --no-controllers --no-kubeconfig \
    --data-dir "$work/data" >"$work/apiserver2.out" 2>"$work/apiserver2.log" &
  pids+=("$!")
  until_ok "the controller manager's /readyz back to 200 with the API server" \
    is_code 200 "$CONTROLLER_MANAGER_URL/readyz"
  kill -TERM "$manager"
  wait "$manager" || fail "the controller manager did not exit 0 on SIGTERM"
  say "ok: the API server back, /readyz is 200 again; the manager stopped cleanly"
fi
say "passed"
