#!/usr/bin/env bash
# Soaks the random-program property test (tests/property) over a range of seeds, in parallel
# chunks, and reports every failing seed with the line that reruns it.
#
# Usage: tools/soak.sh FIRST COUNT [JOBS]    e.g. tools/soak.sh 400000 100000
#   FIRST  the first seed; COUNT  how many seeds; JOBS  parallel chunks (default: nproc)
# Needs a built build/tests/ferry_property_tests (tools/bootstrap.sh builds it); FERRY_BUILD_DIR
# names another build directory. Exits 1 if any seed fails, 0 if none does.
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# < 2)); then
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
first=$1
count=$2
jobs=${3:-$(nproc)}
build=${FERRY_BUILD_DIR:-build}
binary=$build/tests/ferry_property_tests
[ -x "$binary" ] || { echo "soak: $binary is not built (run tools/bootstrap.sh)" >&2; exit 2; }
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# More chunks than jobs, so one slow chunk does not hold the rest back, and none over 1,000 seeds,
# so an interrupted soak has finished most of what it started (each chunk reports when it ends).
chunks=$((jobs * 4))
((chunks * 1000 >= count)) || chunks=$(((count + 999) / 1000))
((chunks <= count)) || chunks=$count
per=$(((count + chunks - 1) / chunks))
start_time=$(date +%s)
run_chunk() {  # first count log
  FERRY_PROPERTY_FIRST_SEED=$1 FERRY_PROPERTY_SEEDS=$2 FERRY_PROPERTY_MAX_FAILURES=1000000 \
    "$binary" --gtest_filter='RandomPrograms.EveryPropertyHoldsUnderRandomPolicies' >"$3" 2>&1 || true
}
export -f run_chunk
export binary
for ((c = 0; c < chunks; ++c)); do
  s=$((first + c * per))
  n=$per
  ((s + n <= first + count)) || n=$((first + count - s))
  ((n > 0)) || continue
  printf '%s %s %s/chunk_%05d.log\n' "$s" "$n" "$logs" "$c"
done | xargs -P "$jobs" -L 1 bash -c 'run_chunk "$0" "$1" "$2"'

failing=0
checked=0
for log in "$logs"/chunk_*.log; do
  if ! grep -q '^\[  PASSED  \] 1 test' "$log" && ! grep -q '^\[  FAILED  \]' "$log"; then
    echo "soak: a chunk did not finish (crash or hang):"
    tail -20 "$log"
    failing=$((failing + 1))
  fi
  n=$(sed -n 's/^\([0-9]*\) random programs from seed.*/\1/p' "$log")
  checked=$((checked + ${n:-0}))
  while IFS= read -r line; do
    echo "FAIL $line"
    failing=$((failing + 1))
  done < <(grep -E '^seed [0-9]+ \(size [0-9]+\):' "$log" || true)
  grep -E '^rerun: ' "$log" || true
done
elapsed=$(($(date +%s) - start_time))
echo "soak: seeds $first to $((first + count - 1)): $checked checked, $failing failing, ${elapsed}s on $jobs jobs"
((failing == 0))
