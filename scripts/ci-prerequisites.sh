#!/usr/bin/env bash
# Debian packages the tests use (installed only when missing; needs root or sudo).
set -euo pipefail
packages=(curl git ca-certificates util-linux procps)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
((${#missing[@]} == 0)) && exit 0
sudo_cmd=(); [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
