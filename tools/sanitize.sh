#!/usr/bin/env bash
# The reliability stage of CI, each part in its own build directory:
#   asan  the whole test suite built with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)
#   tsan  the copy queue's and the thread pool's tests and the offloading programs under
#         ThreadSanitizer (build-tsan/)
#   fuzz  the libFuzzer targets (clang, ASan + UBSan), corpus-driven, FERRY_FUZZ_SECONDS each
#         (default 60) (build-fuzz/); a crash leaves its input in build-fuzz/artifacts/.
#         FERRY_FUZZ_TARGETS="safetensors_fuzzer" (say) runs only those targets.
#   valgrind  the cases that once read memory they should not (issue 32: Array::to_string with room
#         for one element or none read one past the end; Equations a policy kept read a freed
#         program), under valgrind's memcheck without instrumentation (build-valgrind/). The asan
#         stage runs them too, as part of the suite.
# Usage: tools/sanitize.sh [asan] [tsan] [fuzz] [valgrind]   (no argument: all four). Any report fails it.
set -euo pipefail
cd "$(dirname "$0")/.."
stages=("$@")
((${#stages[@]})) || stages=(asan tsan fuzz valgrind)
jobs=2
fuzz_seconds=${FERRY_FUZZ_SECONDS:-60}

# Optimised a little (-O1) so the suite runs in minutes, with debug info for reports.
# The CUDA backend is left out: the sanitizers instrument host code only, and nvcc would add
# minutes to each build.
# MPI is left out of these builds: Open MPI's own start-up allocations read as leaks to LSan and
# valgrind, and its threads are not instrumented for TSan; the release suite runs its tests.
common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" -DFERRY_BUILD_BENCH=OFF
        -DFERRY_CUDA=OFF -DFERRY_MPI=OFF)
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:allocator_may_return_null=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
# OpenBLAS is not instrumented; its own threads would only be noise for ThreadSanitizer.
export OPENBLAS_NUM_THREADS=1

for stage in "${stages[@]}"; do
  case "$stage" in
    asan)
      echo "== ASan + UBSan: the whole suite"
      cmake -S . -B build-asan "${common[@]}" -DFERRY_SANITIZE=address,undefined >/dev/null
      cmake --build build-asan -j "$jobs"
      # The install check links a consumer without the sanitizer runtime, which ASan refuses. The
      # random-program tests run fewer programs here (ASan is several times slower; the release
      # suite and the soak cover the breadth, this stage the memory errors).
      FERRY_PROPERTY_SEEDS=200 FERRY_QUALITY_PROGRAMS=200 FERRY_AUTO_PROGRAMS=100 FERRY_AUTO_EXACT_PROGRAMS=40 \
        ctest --test-dir build-asan --output-on-failure -j "$jobs" -E '^install\.'
      ;;
    tsan)
      echo "== TSan: the copy queue, the kernels' thread pool and offloading programs"
      cmake -S . -B build-tsan "${common[@]}" -DFERRY_SANITIZE=thread >/dev/null
      cmake --build build-tsan -j "$jobs" --target ferry_runtime_tests ferry_e2e_tests
      # setarch -R: older TSan runtimes reject the kernel's high-entropy address layout.
      # The pool's own tests set their thread counts; the programs run on the machine's default.
      setarch "$(uname -m)" -R build-tsan/tests/ferry_runtime_tests --gtest_filter='CopyQueue.*:ParallelFor.*:ParallelKernels.*'
      setarch "$(uname -m)" -R build-tsan/tests/ferry_e2e_tests --gtest_filter='Offload.*:Memory.*'
      ;;
    fuzz)
      echo "== libFuzzer: the parser, parse + compile + run, and safetensors files (${fuzz_seconds}s each)"
      missing=()
      for p in clang-14 libclang-rt-14-dev; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
      done
      if ((${#missing[@]})); then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
      fi
      cmake -S . -B build-fuzz "${common[@]}" -DCMAKE_CXX_COMPILER=clang++-14 -DFERRY_FUZZ=ON \
        -DFERRY_SANITIZE=address,undefined -DFERRY_BUILD_TESTS=OFF >/dev/null
      targets=(${FERRY_FUZZ_TARGETS:-parse_fuzzer compile_run_fuzzer safetensors_fuzzer})
      cmake --build build-fuzz -j "$jobs" --target "${targets[@]}"
      mkdir -p build-fuzz/artifacts
      for target in "${targets[@]}"; do
        # A working corpus seeded from the target's seeds and regressions; what it learns stays here.
        corpus=build-fuzz/corpus-$target
        mkdir -p "$corpus"
        if [ "$target" = safetensors_fuzzer ]; then
          seeds=(fuzz/safetensors_corpus/*)
          dict=fuzz/safetensors.dict
        else
          seeds=(fuzz/corpus/* fuzz/regressions/*)
          dict=fuzz/ir.dict
        fi
        cp -n "${seeds[@]}" "$corpus"/ 2>/dev/null || true
        rc=0
        build-fuzz/fuzz/$target "$corpus" -dict="$dict" -max_total_time="$fuzz_seconds" -timeout=10 \
          -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/$target- \
          >build-fuzz/$target.log 2>&1 || rc=$?
        grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::(number_of_executed_units|peak_rss)' build-fuzz/$target.log || true
        if ((rc)); then
          tail -n 60 build-fuzz/$target.log
          echo "sanitize: $target failed (exit $rc); its input is in build-fuzz/artifacts/"
          exit 1
        fi
      done
      ;;
    valgrind)
      echo "== valgrind memcheck: Array::to_string and the Equations a policy keeps"
      cmake -S . -B build-valgrind "${common[@]}" >/dev/null
      cmake --build build-valgrind -j "$jobs" --target ferry_runtime_tests ferry_transforms_tests
      memcheck=(valgrind --error-exitcode=1 --errors-for-leak-kinds=definite --leak-check=full --quiet)
      "${memcheck[@]}" build-valgrind/tests/ferry_runtime_tests --gtest_filter='Array.*'
      "${memcheck[@]}" build-valgrind/tests/ferry_transforms_tests \
        --gtest_filter='Checkpoint.EquationsAPolicyKeepsStayValidAfterLowering:Checkpoint.ErrorsAreInvalidArgument'
      ;;
    *) echo "usage: $0 [asan] [tsan] [fuzz] [valgrind]" >&2; exit 2 ;;
  esac
done
echo "sanitize: all clean"
