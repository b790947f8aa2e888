#!/usr/bin/env bash
# Sets up a fresh Debian machine for ferry: installs the Debian packages it needs (only those
# missing), then configures and builds everything into build/. Safe to run again. Where the CUDA
# toolkit is installed (nvcc on the PATH or in /usr/local/cuda; NVIDIA's packages, not Debian's),
# the build includes the CUDA backend; elsewhere it is left out and everything else works.
# With a Python 3.11+ it also makes python/.venv (python/requirements.txt: JAX 0.10.2, flax, optax,
# pytest, ...), builds the extension ferry._ferry in the same CMake build, and installs the package
# editable over it (pip compiles nothing), so ctest runs the Python tests too.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake ninja-build libopenblas-dev libfmt-dev libcli11-dev nlohmann-json3-dev
          libgtest-dev libgmock-dev libbenchmark-dev coinor-libcbc-dev pkg-config
          libsleef-dev libdnnl-dev libopenmpi-dev openmpi-bin python3-venv python3-dev
          chromium)  # headless, for the test that opens the memory pages in a browser
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

python_options=()
venv=python/.venv
for py in python3.13 python3.12 python3.11 python3; do
  command -v "$py" >/dev/null || continue
  "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || continue
  if ! "$venv/bin/python" -c "import jax, flax, optax, pytest, nanobind, safetensors" 2>/dev/null; then
    echo "bootstrap: making $venv (python/requirements.txt)"
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q -r python/requirements.txt
  fi
  python_options=(-DFERRY_PYTHON=ON "-DPython_EXECUTABLE=$PWD/$venv/bin/python")
  break
done
((${#python_options[@]})) || echo "bootstrap: no Python 3.11+ found: the Python package and its tests are left out"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${python_options[@]}" >/dev/null
cmake --build build -j "$(nproc)"
if ((${#python_options[@]})) && ! "$venv/bin/python" -c "import ferry.jax" 2>/dev/null; then
  # Editable, without CMake: the package's Python files from python/ferry, its extension from build/.
  "$venv/bin/pip" install -q --no-build-isolation --no-deps -e . -C wheel.cmake=false
fi
