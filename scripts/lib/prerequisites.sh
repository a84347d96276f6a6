#!/usr/bin/env bash
# Installs the Debian packages of scripts/lib/prerequisites.txt that are missing (root, or sudo
# without a password). Without either, or without apt-get, it names the missing packages and fails.
set -euo pipefail
list="$(dirname "${BASH_SOURCE[0]}")/prerequisites.txt"
mapfile -t packages < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list" | awk '{print $1}')
missing=()
for p in "${packages[@]}"; do
  [[ "$(dpkg-query -W -f '${Status}' "$p" 2>/dev/null)" == "install ok installed" ]] || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

cannot() {
  echo "prerequisites: $1" >&2
  echo "prerequisites: these Debian packages are missing: ${missing[*]}" >&2
  echo "prerequisites: install them (apt-get install ${missing[*]}) and run this again" >&2
  exit 1
}
command -v apt-get >/dev/null 2>&1 || cannot "apt-get not found (a Debian or Ubuntu machine is needed)"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null || cannot "not root, and sudo cannot run without a password"
  sudo_cmd=(sudo -n)
fi
echo "prerequisites: installing ${missing[*]}" >&2
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
