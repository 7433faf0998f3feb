#!/usr/bin/env bash
# Builds a kind node image from the Go module proxy and a Debian mirror alone,
# for networks where kindest/node (Docker Hub) cannot be pulled:
#
#   1. the Kubernetes binaries, built by `kubeharness bins --node`
#   2. a Debian rootfs with systemd, containerd and runc (debootstrap)
#   3. CNI plugins, CoreDNS (only the plugins kubeadm's Corefile uses), the
#      nodenet pod network, a crictl and rancher/local-path-provisioner (the
#      default StorageClass's volumes), built with Go from hack/kind-node
#   4. pause, compiled statically from the k8s.io/kubernetes module
#   5. the images kubeadm asks for and the storage images, built FROM scratch
#      or from Debian's files (nothing is pulled)
#   6. the node: kind's images/base files on the rootfs (docker build)
#   7. those images imported into the node's containerd, as kind does, with
#      their layers compressed
#
# Usage: hack/kind-node-image.sh   (or `make kind-node-image`)
# Environment:
#   K8S_VERSION   Kubernetes version (default: versions.yaml's default)
#   NODE_IMAGE    the tag to build (default: kubeharness/kind-node:v<version>)
#   DEBIAN_MIRROR the mirror debootstrap uses (default: the lockfile's)
#
# Every step is cached: the rootfs as a docker image keyed on its package
# list, Go builds in Go's build cache, images in docker's layer cache, and
# the node image itself is skipped when its inputs are unchanged. Needs root
# (debootstrap), a running docker (hack/docker-up.sh), Go, and gcc with a
# static libc (both installed from Debian when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
START=$SECONDS

step() { printf '\n[%s %3ds] %s\n' "kind-node-image" "$((SECONDS - START))" "$*"; }
log() { printf '  %s\n' "$*"; }
die() { printf 'kind-node-image: %s\n' "$*" >&2; exit 1; }

# quiet LABEL LOGFILE CMD...: runs CMD with its output in LOGFILE, saying
# every 15 s that it is still at work; on failure shows the log's tail.
quiet() {
  local label=$1 logfile=$2; shift 2
  "$@" >"$logfile" 2>&1 &
  quiet_wait "$label" "$logfile" $!
}

# quiet_wait LABEL LOGFILE PID: waits for PID, started with its output in
# LOGFILE, as quiet does.
quiet_wait() {
  local label=$1 logfile=$2 pid=$3
  local t0=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    for _ in $(seq 1 15); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -0 "$pid" 2>/dev/null && log "... still $label ($((SECONDS - t0))s)"
  done
  if ! wait "$pid"; then
    printf 'kind-node-image: %s failed; last lines of %s:\n' "$label" "$logfile" >&2
    tail -25 "$logfile" >&2
    exit 1
  fi
}

need_pkg() { # command-or-absolute-path package
  if [[ $1 == /* ]]; then
    [ -e "$1" ] && return 0
  else
    command -v "$1" >/dev/null 2>&1 && return 0
  fi
  [ "$(id -u)" = 0 ] || die "$1 is missing: install Debian's $2 (apt-get install $2), or run as root to have it installed"
  log "installing $2 from Debian"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; }
}

docker info >/dev/null 2>&1 || die "no docker daemon answers; start one with \`make docker-up\` (hack/docker-up.sh)"
[ "$(id -u)" = 0 ] || die "run as root: debootstrap and the rootfs need it"
export DOCKER_BUILDKIT=0 # the classic builder: FROM scratch and local bases only, nothing pulled

KUBEHARNESS=$ROOT/bin/kubeharness
go build -o "$KUBEHARNESS" ./cmd/kubeharness
# Assigned first: inside eval "$(…)" a failing lockfile would go unnoticed.
LOCK_VARS=$("$KUBEHARNESS" lockfile --shell ${K8S_VERSION:+--version "$K8S_VERSION"}) \
  || die "cannot read what versions.yaml pins for Kubernetes ${K8S_VERSION:-(default)}; see the error above"
eval "$LOCK_VARS"
NODE_IMAGE=${NODE_IMAGE:-kubeharness/kind-node:v$KUBE_VERSION}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-$LOCK_DEBIAN_MIRROR}
WORK=$ROOT/bin/kind-node/v$KUBE_VERSION
mkdir -p "$WORK"
log "building $NODE_IMAGE: Kubernetes v$KUBE_VERSION, etcd v$ETCD_VERSION, Debian $LOCK_DEBIAN_SUITE, CNI plugins v$LOCK_CNI_PLUGINS"

step "1/7 Kubernetes binaries (cold: about 2 minutes after the control plane, 15 without; cached afterwards)"
# Built, never downloaded: the node's etcd is the one versions.yaml pins
# (the image is labelled with it), where the envtest archive carries
# another; what is already built or downloaded at the right version stays.
BIN=$(KUBEHARNESS_BINARIES=build "$KUBEHARNESS" bins --version "$KUBE_VERSION" --node --print-dir)
log "in $BIN"
mapfile -t KUBEADM_IMAGES < <("$BIN/kubeadm" config images list --kubernetes-version "v$KUBE_VERSION" 2>/dev/null)
image_for() { # the kubeadm image whose name contains $1
  local i
  for i in "${KUBEADM_IMAGES[@]}"; do
    case $i in */$1:*) echo "$i"; return 0 ;; esac
  done
  die "kubeadm v$KUBE_VERSION lists no $1 image (it lists: ${KUBEADM_IMAGES[*]})"
}
PAUSE_IMAGE=$(image_for pause)
ETCD_IMAGE=$(image_for etcd)
COREDNS_IMAGE=$(image_for coredns)
COREDNS_VERSION=${COREDNS_IMAGE##*:}
log "kubeadm asks for: ${KUBEADM_IMAGES[*]}"

step "2/7 Debian rootfs, its Release file verified against debian-archive-keyring"
need_pkg debootstrap debootstrap
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
need_pkg "$KEYRING" debian-archive-keyring
[ -f "$KEYRING" ] || die "$KEYRING is missing: install Debian's debian-archive-keyring"

PACKAGES=systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,e2fsprogs,bash,ca-certificates,curl,jq,procps,containerd,runc
ROOTFS_KEY=$(printf '%s\n' "$LOCK_DEBIAN_SUITE" "$DEBIAN_MIRROR" "$PACKAGES" | sha256sum | cut -c1-12)
ROOTFS_IMAGE=kubeharness/kind-rootfs:$ROOTFS_KEY
build_rootfs() {
  local rootfs=$WORK/rootfs
  rm -rf "$rootfs"
  debootstrap --keyring="$KEYRING" --variant=minbase --include="$PACKAGES" "$LOCK_DEBIAN_SUITE" "$rootfs" "$DEBIAN_MIRROR"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
  tar -C "$rootfs" -c . | docker import - "$ROOTFS_IMAGE"
  rm -rf "$rootfs"
}
# debootstrap mostly waits on the mirror (111 s of a cold CI run): it runs
# in the background while steps 3 and 4 compile, and step 5 waits for it.
ROOTFS_PID=
if docker image inspect "$ROOTFS_IMAGE" >/dev/null 2>&1; then
  log "cached: $ROOTFS_IMAGE"
else
  log "debootstrap $LOCK_DEBIAN_SUITE from $DEBIAN_MIRROR, in the background while steps 3 and 4 build (log: $WORK/debootstrap.log)"
  # In a process group of its own (set -m), so that a failing later step
  # ends debootstrap and what it runs, not only the subshell.
  set -m
  build_rootfs >"$WORK/debootstrap.log" 2>&1 &
  ROOTFS_PID=$!
  set +m
  trap 'kill -- -"$ROOTFS_PID" 2>/dev/null || true' EXIT
fi

# debian_files_image TAG PACKAGE...: an image of the files of Debian's
# PACKAGEs and everything they depend on, taken from the rootfs; cached.
debian_files_image() {
  local tag=$1; shift
  if docker image inspect "$tag" >/dev/null 2>&1; then
    log "cached: $tag"
    return 0
  fi
  docker run --rm --entrypoint /bin/bash "$ROOTFS_IMAGE" -euc '
    seen=" "; queue=("$@")
    while ((${#queue[@]})); do
      p=${queue[0]}; queue=("${queue[@]:1}")
      if [[ $seen == *" $p "* ]]; then continue; fi
      deps=$(dpkg-query -W -f="\${Pre-Depends}, \${Depends}" "$p" 2>/dev/null) || continue
      seen+="$p "
      for d in $(echo "$deps" | tr "," "\n" | sed "s/|.*//; s/(.*)//; s/:any//"); do queue+=("$d"); done
    done
    # Debian merges /bin, /lib, ... into /usr through symlinks: keep those
    # links, and store every file under its real directory.
    {
      for d in bin sbin lib lib64; do if [[ -L /$d ]]; then echo "$d"; fi; done
      for p in $seen; do dpkg-query -L "$p"; done | while read -r f; do
        if [[ -f $f || -L $f ]] && [[ $f != /usr/share/* ]]; then
          f="$(readlink -f "$(dirname "$f")")/$(basename "$f")"; f=${f#/}; echo "${f#/}"
        fi
      done
      # What packages make with update-alternatives or in their scripts.
      ls -d /etc/alternatives/*tables* /usr/sbin/*tables* /usr/bin/sh 2>/dev/null | sed "s|^/||" || true
    } | sort -u > /tmp/files
    tar -C / --no-recursion -c -T /tmp/files 2>/dev/null
  ' files "$@" | docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$tag" >/dev/null
  log "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
}

step "3/7 CNI plugins v$LOCK_CNI_PLUGINS, CoreDNS $COREDNS_VERSION, local-path-provisioner v$LOCK_LOCAL_PATH_PROVISIONER, nodenet and crictl: one go build (cold: about 3 minutes)"
# All of them are built from one module, hack/kind-node, in one go build:
# the packages they share (client-go and the Kubernetes API types, grpc,
# protobuf, netlink, ...) are then of one version each and compile once.
# Its go.mod pins the CNI plugins, local-path-provisioner and CoreDNS; the
# first two must be what versions.yaml says.
NODE_MOD=$ROOT/hack/kind-node
mod_version() { (cd "$NODE_MOD" && go list -m -f '{{.Version}}' "$1"); }
for pin in "github.com/containernetworking/plugins v$LOCK_CNI_PLUGINS" "github.com/rancher/local-path-provisioner v$LOCK_LOCAL_PATH_PROVISIONER"; do
  read -r mod want <<<"$pin"
  have=$(mod_version "$mod")
  [ "$have" = "$want" ] || die "versions.yaml pins $mod $want, hack/kind-node/go.mod requires $have: run \`cd hack/kind-node && go get -tool $mod@$want && go mod tidy\` (or change versions.yaml)"
done
GOBIN_DIR=$WORK/go
rm -rf "$GOBIN_DIR/cni"
mkdir -p "$GOBIN_DIR/cni"
export CGO_ENABLED=0
build_pkgs=(./nodenet ./crictl tool)
# CoreDNS is the version kubeadm asks for. go.mod requires the one the
# default Kubernetes version's kubeadm asks for; another version's CoreDNS
# builds on its own, from a copy of go.mod (go build -modfile) that
# requires the version asked for, after the others.
COREDNS_MOD=$(mod_version github.com/coredns/coredns)
if [ "$COREDNS_MOD" = "$COREDNS_VERSION" ]; then
  build_pkgs+=(./coredns)
else
  log "kubeadm v$KUBE_VERSION asks for CoreDNS $COREDNS_VERSION, hack/kind-node/go.mod requires $COREDNS_MOD: CoreDNS builds on its own"
fi
quiet "building ${build_pkgs[*]}" "$WORK/go-build.log" \
  bash -c 'cd "$1" && shift && go build -trimpath -ldflags "-s -w" "$@"' build "$NODE_MOD" -o "$GOBIN_DIR/" "${build_pkgs[@]}"
if [ "$COREDNS_MOD" != "$COREDNS_VERSION" ]; then
  modfile=$WORK/coredns-$COREDNS_VERSION.mod
  cp "$NODE_MOD/go.mod" "$modfile"
  cp "$NODE_MOD/go.sum" "${modfile%.mod}.sum"
  quiet "building CoreDNS $COREDNS_VERSION" "$WORK/coredns-build.log" \
    bash -c 'cd "$1" && go get -modfile="$2" "github.com/coredns/coredns@$3" && go build -modfile="$2" -trimpath -ldflags "-s -w" -o "$4/coredns" ./coredns' \
    build "$NODE_MOD" "$modfile" "$COREDNS_VERSION" "$GOBIN_DIR"
fi
for p in ptp bridge loopback host-local portmap; do mv "$GOBIN_DIR/$p" "$GOBIN_DIR/cni/"; done
log "done: $(ls "$GOBIN_DIR/cni" | tr '\n' ' ')coredns local-path-provisioner nodenet crictl"

step "4/7 pause, from k8s.io/kubernetes v$KUBE_VERSION's build/pause"
need_pkg gcc gcc
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || need_pkg /usr/lib/x86_64-linux-gnu/libc.a libc6-dev
KUBE_SRC=$(cd "$ROOT/hack/controlplane" && go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
[ -f "$KUBE_SRC/build/pause/linux/pause.c" ] || die "no build/pause/linux/pause.c in $KUBE_SRC"
PAUSE_TAG=${PAUSE_IMAGE##*:}
gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_TAG-kubeharness" -o "$GOBIN_DIR/pause" "$KUBE_SRC/build/pause/linux/pause.c"
log "pause $PAUSE_TAG: $("$GOBIN_DIR/pause" -v)"

step "5/7 images kubeadm pulls, built FROM scratch or from Debian's files"
if [ -n "$ROOTFS_PID" ]; then
  quiet_wait "debootstrapping" "$WORK/debootstrap.log" "$ROOTFS_PID"
  trap - EXIT
  log "built $ROOTFS_IMAGE"
fi
# The smallest base the images that run iptables need (kube-proxy, nodenet).
NETBASE_IMAGE=kubeharness/kind-netbase:$ROOTFS_KEY
debian_files_image "$NETBASE_IMAGE" iptables
# The local-path helper Pods run shell scripts that mkdir and rm -rf.
HELPER_IMAGE=docker.io/kubeharness/local-path-helper:$ROOTFS_KEY
debian_files_image "$HELPER_IMAGE" dash coreutils
IMAGES_CTX=$WORK/images
rm -rf "$IMAGES_CTX"
mkdir -p "$IMAGES_CTX"
# image TAG BASE BINARY DEST [ENTRYPOINT]
image() {
  local tag=$1 base=$2 bin=$3 dest=$4 entry=${5:-} ctx
  ctx=$IMAGES_CTX/$(echo "$tag" | tr '/:' '__')
  mkdir -p "$ctx"
  cp "$bin" "$ctx/bin"
  {
    echo "FROM $base"
    echo "COPY bin $dest"
    [ "$base" = scratch ] && echo 'ENV PATH=/usr/local/bin:/usr/bin:/bin'
    [ -n "$entry" ] && echo "ENTRYPOINT [\"$entry\"]"
    echo "LABEL dev.kubeharness.built-from=\"$(basename "$bin") for kind node image v$KUBE_VERSION\""
  } > "$ctx/Dockerfile"
  docker build -q -t "$tag" "$ctx" >"$ctx/build.log" 2>&1 || { cat "$ctx/build.log" >&2; die "building $tag failed"; }
  BUILT+=("$tag")
  log "$tag"
}
BUILT=()
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  image "$(image_for "$c")" scratch "$BIN/$c" "/usr/local/bin/$c"
done
image "$(image_for kube-proxy)" "$NETBASE_IMAGE" "$BIN/kube-proxy" /usr/local/bin/kube-proxy
image "$ETCD_IMAGE" scratch "$BIN/etcd" /usr/local/bin/etcd
image "$COREDNS_IMAGE" scratch "$GOBIN_DIR/coredns" /coredns /coredns
image "$PAUSE_IMAGE" scratch "$GOBIN_DIR/pause" /pause /pause
image docker.io/kubeharness/nodenet:builtin "$NETBASE_IMAGE" "$GOBIN_DIR/nodenet" /usr/local/bin/nodenet /usr/local/bin/nodenet
PROVISIONER_IMAGE=docker.io/kubeharness/local-path-provisioner:v$LOCK_LOCAL_PATH_PROVISIONER
image "$PROVISIONER_IMAGE" scratch "$GOBIN_DIR/local-path-provisioner" /usr/local/bin/local-path-provisioner /usr/local/bin/local-path-provisioner
BUILT+=("$HELPER_IMAGE")
IMAGES_KEY=$(for t in "${BUILT[@]}"; do docker image inspect -f '{{.Id}}' "$t"; done | sha256sum | cut -c1-12)
IMAGES_TAR=$WORK/images-$IMAGES_KEY.tar
if [ ! -f "$IMAGES_TAR" ]; then
  rm -f "$WORK"/images-*.tar
  docker save -o "$IMAGES_TAR.tmp" "${BUILT[@]}"
  mv "$IMAGES_TAR.tmp" "$IMAGES_TAR"
fi
log "saved to $IMAGES_TAR ($(du -m "$IMAGES_TAR" | cut -f1) MB)"

step "6/7 node filesystem: kind's base files on the rootfs"
NODE_CTX=$WORK/node
rm -rf "$NODE_CTX"
mkdir -p "$NODE_CTX/bin" "$NODE_CTX/cni" "$NODE_CTX/base"
KIND_SRC=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kind)
cp -r "$KIND_SRC/images/base/files/." "$NODE_CTX/base/"
chmod -R u+w "$NODE_CTX/base"
cp -r hack/kind-node/files "$NODE_CTX/kubeharness"
sed -i -e "s|@PROVISIONER_IMAGE@|$PROVISIONER_IMAGE|g" -e "s|@HELPER_IMAGE@|$HELPER_IMAGE|g" "$NODE_CTX/kubeharness/kind/manifests/default-storage.yaml"
! grep -n "@[A-Z_]*@" "$NODE_CTX/kubeharness/kind/manifests/default-storage.yaml" || die "default-storage.yaml has a placeholder left"
cp hack/kind-node/Dockerfile "$NODE_CTX/Dockerfile"
for c in kubelet kubeadm kubectl; do cp "$BIN/$c" "$NODE_CTX/bin/"; done
cp "$GOBIN_DIR/crictl" "$NODE_CTX/bin/"
cp "$GOBIN_DIR"/cni/* "$NODE_CTX/cni/"
STAGE1=kubeharness/kind-node-stage1:v$KUBE_VERSION
quiet "building the node filesystem" "$WORK/node-build.log" \
  docker build -t "$STAGE1" --build-arg ROOTFS="$ROOTFS_IMAGE" \
    --build-arg SANDBOX_IMAGE="$PAUSE_IMAGE" --build-arg KUBE_VERSION="v$KUBE_VERSION" "$NODE_CTX"
log "built $STAGE1"

step "7/7 images into the node's containerd"
# How the images go into containerd is an input too: a change to the import
# below must not leave an image built the old way in place.
IMPORT_RECIPE="ctr images import --all-platforms --no-unpack --digests --compress-blobs; gc"
INPUTS=$(printf '%s\n' "$(docker image inspect -f '{{.Id}}' "$STAGE1")" "$IMAGES_KEY" "$IMPORT_RECIPE" | sha256sum | cut -c1-16)
if [ "$(docker image inspect -f '{{index .Config.Labels "dev.kubeharness.node-image.inputs"}}' "$NODE_IMAGE" 2>/dev/null || true)" = "$INPUTS" ]; then
  log "cached: $NODE_IMAGE is already built from these inputs"
else
  # containerd runs by hand in a plain container and imports the way kind's
  # node-image build does; /var/lib/containerd is in the container's own
  # layer (not a volume), so `docker commit` keeps the imported images.
  cid=$(docker run -d --entrypoint /bin/bash -v "$IMAGES_TAR:/images.tar:ro" "$STAGE1" -c 'sleep infinity')
  trap 'docker rm -f "$cid" >/dev/null 2>&1 || true' EXIT
  docker exec "$cid" bash -euc '
    containerd >/tmp/containerd.log 2>&1 &
    for _ in $(seq 1 100); do [ -S /run/containerd/containerd.sock ] && ctr version >/dev/null 2>&1 && break; sleep 0.1; done
    # --compress-blobs: docker save writes layers uncompressed; gzipped, they
    # take a third of the space in the node image.
    ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests --compress-blobs - < /images.tar >/dev/null
    # The uncompressed layers stay in the content store until containerd
    # collects garbage, which a synchronous removal runs: remove a tag made
    # for the purpose (507 MB of images take 171 MB after it).
    first=$(ctr --namespace=k8s.io images list -q | grep -v "^sha256:" | head -1)
    ctr --namespace=k8s.io images tag "$first" kubeharness.dev/gc:now >/dev/null
    ctr --namespace=k8s.io images rm --sync kubeharness.dev/gc:now >/dev/null
    ctr --namespace=k8s.io images list -q | grep -v -e "^sha256:" -e "^import-" | sed "s/^/  imported /"
    pkill containerd
    while pgrep -x containerd >/dev/null; do sleep 0.1; done
    rm -rf /tmp/* /var/log/*
  '
  docker commit \
    --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
    --change 'CMD []' \
    --change "LABEL dev.kubeharness.node-image.inputs=$INPUTS dev.kubeharness.kubernetes=v$KUBE_VERSION dev.kubeharness.etcd=v$ETCD_VERSION" \
    "$cid" "$NODE_IMAGE" >/dev/null
  docker rm -f "$cid" >/dev/null
  trap - EXIT
fi
step "done: $NODE_IMAGE ($(docker image inspect -f '{{.Size}}' "$NODE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}')); use it with: kind create cluster --image $NODE_IMAGE"
