#!/usr/bin/env bash
# The layers of src/ and what each may include (DESIGN.md, "Layers"): a layer includes its own
# headers, the public API (include/ferry) and the layers below it, never one beside or above it.
# Prints every include that breaks that and exits 1; exits 0 when there is none. CTest runs it
# (tests/CMakeLists.txt: tools.check_layers); the build enforces the same (each layer's objects see
# only the headers of the layers below, CMakeLists.txt).
#   ir          the op table, types, Program, printer, parser, verifier, DCE
#   prims       shape rules and costs (and the verifier with them)
#   plan        the memory plan's data, the format compiler and runtime share
#   trace       Tensor and tracing
#   transforms  VJP rules, vjp, checkpoint, scan, control flow
#   compiler    passes, the pipeline, the planner
#   runtime     executable, arenas, backends and their kernels
#   io          safetensors
#   driver      the compile driver and the API entry points that compile (jit, explain, calibrate)
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
declare -A allowed=(
  [ir]=""
  [prims]="ir"
  [plan]="ir"
  [trace]="ir prims"
  [transforms]="ir prims trace"
  [compiler]="ir prims plan"
  [runtime]="ir prims plan"
  [io]="ir"
  [driver]="ir prims plan trace transforms compiler runtime io"
)
bad=0
for dir in "$root"/src/*/; do
  layer=$(basename "$dir")
  if [[ -z "${allowed[$layer]+x}" ]]; then
    echo "src/$layer: not a known layer (add it to tools/check_layers.sh and DESIGN.md)"
    bad=1
    continue
  fi
  while IFS= read -r hit; do
    file=${hit%%:*}
    target=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$hit")
    [[ "$target" == "$layer" || "$target" == ferry ]] && continue
    if [[ " ${allowed[$layer]} " != *" $target "* ]]; then
      echo "${file#"$root"/}: includes $target/ (layer $layer may include: ${allowed[$layer]:-none})"
      bad=1
    fi
  done < <(grep -rnE '^\s*#\s*include "[a-z_]+/' "$dir" --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' --include='*.inc' --include='*.def' || true)
done
if ((bad)); then
  echo "check_layers: upward includes found"
  exit 1
fi
echo "check_layers: every layer includes only the layers below it"
