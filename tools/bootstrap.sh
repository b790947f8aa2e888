#!/usr/bin/env bash
# Sets up a fresh Debian machine for ferry: installs the Debian packages it needs (only those
# missing), then configures and builds everything into build/. Safe to run again. Where the CUDA
# toolkit is installed (nvcc on the PATH or in /usr/local/cuda; NVIDIA's packages, not Debian's),
# the build includes the CUDA backend; elsewhere it is left out and everything else works.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake ninja-build libopenblas-dev libfmt-dev libcli11-dev nlohmann-json3-dev
          libgtest-dev libgmock-dev libbenchmark-dev coinor-libcbc-dev pkg-config
          libsleef-dev libdnnl-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
