#!/usr/bin/env bash
# safetensors files both ways between ferry and Python's safetensors package: Python writes a fresh
# file that ferry must read to the same values, and checks the file ferry writes. Needs a Python with
# safetensors, numpy and ml_dtypes ($FERRY_PYTHON, python/.venv from tools/bootstrap.sh,
# bench/peers/.venv, or python3); without one the
# test is skipped (exit 77) and says so. Usage: interop.sh IO_TEST_BINARY SOURCE_DIR
set -euo pipefail
tests=$1
src=$2
python=""
for candidate in "${FERRY_PYTHON:-}" "$src/python/.venv/bin/python" "$src/bench/peers/.venv/bin/python" python3; do
  [ -n "$candidate" ] || continue
  if "$candidate" -c "import safetensors, numpy, ml_dtypes" 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "skipped: no Python with safetensors, numpy and ml_dtypes (set FERRY_PYTHON, or pip install -r bench/peers/requirements.txt)"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
script=$src/bench/peers/safetensors_interop.py
"$python" "$script" write "$dir/python_written.safetensors" "$dir/python_written.json"
FERRY_INTEROP_DIR=$dir "$tests" --gtest_filter='SafetensorsInterop.*' --gtest_brief=1
test -f "$dir/ferry_written.safetensors"
"$python" "$script" check "$dir/ferry_written.safetensors" "$dir/ferry_written.json"
