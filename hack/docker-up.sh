#!/usr/bin/env bash
# Installs Debian's Docker engine on a bare machine and starts it, so that
# privileged containers (kind nodes) run. Safe to run again: it installs
# and configures only what is missing and starts dockerd only when no
# daemon answers. Needs root, apt-get and Go (for the runc wrapper).
#
# The daemon also listens on tcp://0.0.0.0:2376 with mutual TLS (material
# from hack/dockertls in $DOCKER_TLS_DIR), so that a VirtualMachine
# controller deployed on a kind cluster can drive it over the network;
# clients present a certificate signed by that CA, so nothing else can.
#
# Where the host's capability bounding set lacks CAP_SYS_RESOURCE,
# `docker run --privileged` fails (runc cannot grant a capability the host
# does not have); the script then builds hack/runcwrapper, which drops that
# one capability, and makes it the daemon's default runtime.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'docker-up: %s\n' "$*"; }
WRAPPER=/usr/local/libexec/kubeharness/runc
DAEMON_JSON=/etc/docker/daemon.json
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/kubeharness-dockerd.log}
DOCKER_TLS_DIR=${DOCKER_TLS_DIR:-/etc/kubeharness/docker-tls}

if [ "$(id -u)" != 0 ]; then
  echo "docker-up: run as root (it installs packages and starts dockerd)" >&2
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  log "installing docker.io from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io >/dev/null
fi

go run ./hack/dockertls --dir "$DOCKER_TLS_DIR"
tls_json="\"hosts\": [\"unix:///var/run/docker.sock\", \"tcp://0.0.0.0:2376\"], \"tlsverify\": true, \"tlscacert\": \"$DOCKER_TLS_DIR/ca.pem\", \"tlscert\": \"$DOCKER_TLS_DIR/server-cert.pem\", \"tlskey\": \"$DOCKER_TLS_DIR/server-key.pem\""

bounding=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
cap_sys_resource=24
if (( (16#$bounding >> cap_sys_resource) & 1 )); then
  log "CAP_SYS_RESOURCE is in the bounding set: stock runc"
  want_json="{$tls_json}"
else
  log "CAP_SYS_RESOURCE is missing from the bounding set: installing the runc wrapper"
  mkdir -p "$(dirname "$WRAPPER")"
  CGO_ENABLED=0 go build -trimpath -o "$WRAPPER.tmp" ./hack/runcwrapper
  mv "$WRAPPER.tmp" "$WRAPPER"
  want_json="{\"runtimes\": {\"kubeharness-runc\": {\"path\": \"$WRAPPER\"}}, \"default-runtime\": \"kubeharness-runc\", $tls_json}"
fi

mkdir -p "$(dirname "$DAEMON_JSON")"
restart=false
if [ ! -f "$DAEMON_JSON" ] || [ "$(cat "$DAEMON_JSON")" != "$want_json" ]; then
  echo "$want_json" > "$DAEMON_JSON"
  restart=true
fi

if docker info >/dev/null 2>&1; then
  if ! $restart; then
    log "dockerd is already running and configured"
    exit 0
  fi
  log "restarting dockerd for the new runtime configuration"
  pkill -TERM -x dockerd || true
  for _ in $(seq 1 100); do pgrep -x dockerd >/dev/null || break; sleep 0.2; done
fi

log "starting dockerd (log: $DOCKERD_LOG)"
setsid /usr/sbin/dockerd >>"$DOCKERD_LOG" 2>&1 < /dev/null &
for i in $(seq 1 150); do
  if docker info >/dev/null 2>&1; then
    log "dockerd is ready after $((i / 5))s: $(docker version --format '{{.Server.Version}}'), runtime $(docker info --format '{{.DefaultRuntime}}')"
    exit 0
  fi
  sleep 0.2
done
echo "docker-up: dockerd did not answer within 30s; last lines of $DOCKERD_LOG:" >&2
tail -20 "$DOCKERD_LOG" >&2
exit 1
