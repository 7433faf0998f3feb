#!/bin/sh
# Run before containerd starts (containerd.service.d/10-kubeharness.conf).
#
# Lowering a process's oom_score_adj needs CAP_SYS_RESOURCE. Where the host
# withholds it from containers (its capability bounding set lacks it), every
# container containerd starts with a lower oom_score_adj than its own would
# fail, so containerd must keep scores at or above its own: the
# restrict_oom_score_adj setting kind also turns on for rootless nodes.
set -eu
config=/etc/containerd/config.toml
# In a user namespace (rootless nodes) kind's entrypoint has already turned
# the setting on; leave it.
if ! grep -qE '^ +0 +0 +4294967295$' /proc/self/uid_map; then
  exit 0
fi
bounding=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
# CAP_SYS_RESOURCE is capability 24.
if [ $(( (0x$bounding >> 24) & 1 )) -eq 1 ]; then
  want=false
else
  want=true
fi
if grep -q "restrict_oom_score_adj = $want" "$config"; then
  exit 0
fi
sed -i "s/restrict_oom_score_adj = .*/restrict_oom_score_adj = $want/" "$config"
echo "kubeharness: CAP_SYS_RESOURCE $( [ $want = true ] && echo missing || echo present ) in the bounding set: restrict_oom_score_adj = $want"
