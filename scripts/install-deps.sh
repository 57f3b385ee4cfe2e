#!/usr/bin/env bash
# Installs the Debian packages ninfer builds against, when any is missing (apt-get; root or sudo).
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
      libcli11-dev libgtest-dev libxxhash-dev libpcre2-dev libgloo-dev python3 python3-venv)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "installing: ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
