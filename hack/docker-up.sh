#!/usr/bin/env bash
# Installs Debian's Docker engine on a bare machine and starts it, so that
# privileged containers (kind nodes) run. Safe to run again: it installs
# and configures only what is missing and starts dockerd only when no
# daemon answers. Needs root, apt-get and Go (for the runc wrapper).
#
# The daemon also listens on port 2376 of the kind network's gateway with
# mutual TLS (material from hack/dockertls in $DOCKER_TLS_DIR), so that a
# VirtualMachine controller deployed on a kind cluster can drive it; clients
# present a certificate signed by that CA, so nothing else can. It listens
# on that one address, not on every interface: nothing off this machine
# can even start a handshake. The script makes the `kind` network (as kind
# itself would; kind uses a network of that name when one exists) so that
# the address is known before a cluster is, and since dockerd opens its
# listeners before it brings its networks up, a daemon that starts while
# the gateway's bridge is missing (after a reboot) starts on the unix
# socket alone first and is restarted with the TCP listener.
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

bounding=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
cap_sys_resource=24
if (( (16#$bounding >> cap_sys_resource) & 1 )); then
  log "CAP_SYS_RESOURCE is in the bounding set: stock runc"
  runtime_json=""
else
  log "CAP_SYS_RESOURCE is missing from the bounding set: installing the runc wrapper"
  mkdir -p "$(dirname "$WRAPPER")"
  CGO_ENABLED=0 go build -trimpath -o "$WRAPPER.tmp" ./hack/runcwrapper
  mv "$WRAPPER.tmp" "$WRAPPER"
  runtime_json="\"runtimes\": {\"kubeharness-runc\": {\"path\": \"$WRAPPER\"}}, \"default-runtime\": \"kubeharness-runc\", "
fi

# daemon_json prints daemon.json: the runtime, the unix socket and, given
# an address, the TLS listener on it.
daemon_json() {
  local hosts="\"unix:///var/run/docker.sock\"" tls=""
  if [ -n "${1:-}" ]; then
    hosts="$hosts, \"tcp://$1:2376\""
    tls=", \"tlsverify\": true, \"tlscacert\": \"$DOCKER_TLS_DIR/ca.pem\", \"tlscert\": \"$DOCKER_TLS_DIR/server-cert.pem\", \"tlskey\": \"$DOCKER_TLS_DIR/server-key.pem\""
  fi
  printf '{%s"hosts": [%s]%s}' "$runtime_json" "$hosts" "$tls"
}

stop_dockerd() {
  pkill -TERM -x dockerd || true
  for _ in $(seq 1 100); do pgrep -x dockerd >/dev/null || return 0; sleep 0.2; done
  echo "docker-up: dockerd did not stop within 20s" >&2
  exit 1
}

# start_dockerd writes $1 to daemon.json and starts dockerd, waiting until it
# answers.
start_dockerd() {
  echo "$1" > "$DAEMON_JSON"
  log "starting dockerd (log: $DOCKERD_LOG)"
  setsid /usr/sbin/dockerd >>"$DOCKERD_LOG" 2>&1 < /dev/null &
  for i in $(seq 1 150); do
    if docker info >/dev/null 2>&1; then
      log "dockerd is ready after $((i / 5))s: $(docker version --format '{{.Server.Version}}'), runtime $(docker info --format '{{.DefaultRuntime}}')"
      return 0
    fi
    sleep 0.2
  done
  echo "docker-up: dockerd did not answer within 30s; last lines of $DOCKERD_LOG:" >&2
  tail -20 "$DOCKERD_LOG" >&2
  exit 1
}

# kind_gateway prints the IPv4 gateway of the `kind` network, made when
# missing with the options kind gives it.
kind_gateway() {
  if ! docker network inspect kind >/dev/null 2>&1; then
    local mtu
    mtu=$(docker network inspect bridge -f '{{index .Options "com.docker.network.driver.mtu"}}' 2>/dev/null || true)
    log "creating the kind network"
    docker network create -d=bridge -o com.docker.network.bridge.enable_ip_masquerade=true \
      ${mtu:+-o "com.docker.network.driver.mtu=$mtu"} kind >/dev/null
  fi
  docker network inspect kind -f '{{range .IPAM.Config}}{{.Gateway}} {{end}}' | tr ' ' '\n' | grep -m1 -E '^[0-9]+(\.[0-9]+){3}$'
}

mkdir -p "$(dirname "$DAEMON_JSON")"
if ! docker info >/dev/null 2>&1; then
  start_dockerd "$(daemon_json)"
fi
gateway=$(kind_gateway) || { echo "docker-up: the kind network has no IPv4 gateway" >&2; exit 1; }
want_json=$(daemon_json "$gateway")
if [ "$(cat "$DAEMON_JSON" 2>/dev/null)" = "$want_json" ]; then
  log "dockerd is running and configured: TLS on $gateway:2376, the kind network's gateway"
else
  log "restarting dockerd to listen with TLS on $gateway:2376, the kind network's gateway"
  stop_dockerd
  start_dockerd "$want_json"
fi

# Nothing but the gateway may listen on 2376: a listener on every interface
# (0.0.0.0, ::) or any other address fails the script, whatever configured
# it. /proc/net/tcp{,6} name listeners (state 0A) by hex address and port
# (0948 is 2376); an IPv4 address is written byte-reversed.
want_hex=$(printf '%02X' $(echo "$gateway" | tr '.' ' ' | awk '{print $4, $3, $2, $1}'))
bad=$(awk -v want="$want_hex:0948" '$4 == "0A" && $2 ~ /:0948$/ && $2 != want {print FILENAME ": " $2}' /proc/net/tcp /proc/net/tcp6)
if [ -n "$bad" ]; then
  echo "docker-up: something listens on port 2376 beyond $gateway (hex $want_hex): $bad; only the kind network's gateway may" >&2
  exit 1
fi
