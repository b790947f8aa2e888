#!/usr/bin/env bash
# Runs ferry's benchmark suite and the same models under JAX and PyTorch (CPU), side by side from
# one run, and regenerates docs/BENCHMARKS.md and docs/benchmarks.csv. Needs build/ (made by
# tools/bootstrap.sh; FERRY_BUILD_DIR names another). The tests never need this.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=bench/peers/.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r bench/peers/requirements.txt
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/dump" docs
"${FERRY_BUILD_DIR:-build}"/bench/suite_bench --out docs --json "$work/ferry.json" --dump "$work/dump" "$@"
"$venv/bin/python" bench/peers/peers.py --ferry "$work/ferry.json" --dump "$work/dump" --markdown docs/BENCHMARKS.md \
  --suite-bench "${FERRY_BUILD_DIR:-build}"/bench/suite_bench \
  ${FERRY_JAX_PYTHON:+--ferry-jax-python "$FERRY_JAX_PYTHON"} \
  $( [ -z "${FERRY_JAX_PYTHON:-}" ] && [ -x python/.venv/bin/python ] && echo --ferry-jax-python python/.venv/bin/python )
