#!/usr/bin/env bash
# Debian packages the tests use (installed only when missing; needs root or sudo).
set -euo pipefail
# skopeo and docker-registry (the distribution registry, run on 127.0.0.1): test/images/mirror.test.ts
# mirrors hand-built OCI images between local registries with scripts/mirror-images.sh.
# iptables and iproute2: e2e/air-gap.test.ts seals a network namespace (scripts/lib/air-gap-netns.sh).
packages=(curl git ca-certificates util-linux procps skopeo docker-registry iptables iproute2)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
((${#missing[@]} == 0)) && exit 0
sudo_cmd=(); [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
