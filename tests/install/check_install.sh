#!/usr/bin/env bash
# Installs ferry from a build tree into a scratch prefix, then configures, builds and runs a
# separate project that uses find_package(ferry) and links ferry::ferry.
set -euo pipefail
build_dir=$1
source_dir=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
test -x "$scratch/prefix/bin/ferry"
test -f "$scratch/prefix/include/ferry/ferry.h"
cmake -S "$source_dir/tests/install/consumer" -B "$scratch/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/consumer" >/dev/null
LD_LIBRARY_PATH="$scratch/prefix/lib:${LD_LIBRARY_PATH:-}" "$scratch/consumer/consumer"
"$scratch/prefix/bin/ferry" --help >/dev/null
