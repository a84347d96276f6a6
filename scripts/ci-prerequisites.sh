#!/usr/bin/env bash
# Debian packages the tests use (installed only when missing; needs root or sudo).
set -euo pipefail
# skopeo and docker-registry (the distribution registry, run on 127.0.0.1): test/images/mirror.test.ts
# mirrors hand-built OCI images between local registries with scripts/mirror-images.sh.
# iptables and iproute2: e2e/air-gap.test.ts seals a network namespace (scripts/lib/air-gap-netns.sh).
# A real node and daemonless images (scripts/dev-cluster.sh up --real-node, scripts/build-image.sh,
# e2e/real-node.test.ts): runc and the CNI plugins for containerd; gcc and libc6-dev for the static pause
# binary; openssl for the node's PKI; buildah (images from a Dockerfile), podman (running an image
# by hand), mmdebstrap (Debian base images where public bases cannot be pulled), umoci; conntrack
# for kube-proxy. Note: Debian's podman package installs /etc/cni/net.d/87-podman-bridge.conflist;
# the real node never reads /etc/cni (its containerd has its own CNI config folder).
packages=(curl git ca-certificates util-linux procps skopeo docker-registry iptables iproute2
  runc containernetworking-plugins gcc libc6-dev openssl buildah podman mmdebstrap umoci conntrack
  ipset gettext-base)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
((${#missing[@]} == 0)) && exit 0
sudo_cmd=(); [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
