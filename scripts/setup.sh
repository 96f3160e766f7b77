#!/usr/bin/env bash
# Installs what Ridgeline needs from Debian's packages (only what is missing)
# and builds it into build/: every target, or those RIDGELINE_TARGETS names.
# Idempotent; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake make g++ pkg-config libeigen3-dev libcli11-dev libyaml-cpp-dev libfmt-dev
          libbenchmark-dev doctest-dev nlohmann-json3-dev libtomlplusplus-dev ${RIDGELINE_EXTRA_PACKAGES:-})
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build_dir=${RIDGELINE_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release ${RIDGELINE_CMAKE_ARGS:-} >/dev/null
# RIDGELINE_TARGETS: the targets to build, space-separated (demo.sh: ridgeline); every one when unset.
targets=()
for t in ${RIDGELINE_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"${RIDGELINE_JOBS:-2}" "${targets[@]}"
