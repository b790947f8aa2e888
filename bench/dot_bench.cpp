// 256x1024 @ 1024x1024 matrix products side by side, in GFLOP/s and as a share of this machine's
// peak: ferry's CPU dot_general kernel called directly (f32 and bf16), OpenBLAS's sgemm as ferry
// loads it (its core type set from cpuid, openblas.h), and the public API (a jitted matmul, lowered
// and compiled once, then only the compiled call timed; f32 and bf16). Rates are per wall-clock
// second over all of ferry's threads. Each row warms up first (thread pool, caches, clock).
//
// The peak is computed before the rows run, and printed with how it was found:
//   peak = threads x clock x lanes x 2 x FMA pipes
// - clock: measured on every thread at once, from a chain of dependent integer adds (one cycle
//   each on every x86 core since the Pentium 4) interleaved with independent FMAs at the path's
//   width (half the FMA rate, on other ports than the adds'). Cores lower their clock while wide
//   vector units are busy (Intel's AVX-512 licence levels), so a chain of adds alone reads a clock
//   that a matrix product never runs at: on an Emerald Rapids VM it read 2.78 GHz while the FMA
//   loop then ran at 1.57-1.90 FMAs per such cycle on two pipes. The header prints both clocks;
// - lanes: the f32 lanes of the chosen path's vectors (dot_path.h: 16 for AVX-512, 8 for AVX2);
// - 2: an FMA is a multiply and an add;
// - FMA pipes: the FMAs a core starts per cycle at that width, measured with 12 independent FMA
//   chains in registers (enough to cover latency x pipes) and rounded to a whole number.
// Both are measured in 7 alternating rounds and the fastest of each is taken: on a shared VM
// another tenant or a clock change only ever slows a round, and one round each, taken at
// different moments, gave 1 to 3 "pipes" on the same machine within minutes.
// The bf16 rows are shown against the same f32 peak (the bf16 instructions do twice the work per
// lane, so they may exceed it), and, on the avx512_bf16 path, against the bf16 instructions' own
// peak (of_bf16_peak): threads x clock x 16 lanes x 4 (each lane adds two products) x the
// vdpbf16ps a core starts per cycle, measured as the FMAs are. A core that starts half as many
// vdpbf16ps as FMAs has a bf16 peak equal to the f32 one, and there bf16 rows can pass f32 ones
// only by moving fewer bytes.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "ferry/ferry.h"
#include "ir/program.h"
#include "runtime/cpu/dot_path.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/openblas.h"
#include "runtime/cpu/parallel.h"

namespace {

namespace cpu = ferry::runtime::cpu;

constexpr int64_t kM = 256, kK = 1024, kN = 1024;
constexpr double kFlops = 2.0 * kM * kN * kK;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Cycles of a chain of dependent register-to-register adds: one cycle each (an add of an immediate
// could be folded away by the renamer on recent cores; one of a register cannot). With `lanes` of
// 8 or 16, every 8 adds run beside 4 independent FMAs at that width, so the core runs at the clock
// its vector units allow (see the header); with 4, the adds run alone.
double clock_hz_on_this_thread(int lanes) {
  constexpr int64_t kAdds = 80'000'000;
  uint64_t x = 0, one = 1;
  const auto t0 = std::chrono::steady_clock::now();
#define FERRY_ADDS8 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
#define FERRY_FMA4(R)                                                                               \
  "vfmadd231ps %%" R "5, %%" R "6, %%" R "1\n\tvfmadd231ps %%" R "5, %%" R "6, %%" R "2\n\t"     \
  "vfmadd231ps %%" R "5, %%" R "6, %%" R "3\n\tvfmadd231ps %%" R "5, %%" R "6, %%" R "4\n\t"
#define FERRY_ZERO6(R, X)                                                                           \
  X " %%" R "1, %%" R "1, %%" R "1\n\tvmovaps %%" R "1, %%" R "2\n\tvmovaps %%" R "1, %%" R "3\n\t" \
  "vmovaps %%" R "1, %%" R "4\n\tvmovaps %%" R "1, %%" R "5\n\tvmovaps %%" R "1, %%" R "6\n\t"
  if (lanes == 16) {
    for (int64_t i = 0; i < kAdds / 8 / 64; ++i)
      asm volatile(FERRY_ZERO6("zmm", "vpxord") ".rept 64\n\t" FERRY_ADDS8 FERRY_FMA4("zmm") ".endr\n\tvzeroupper"
                   : "+r"(x) : "r"(one) : "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6");
  } else if (lanes == 8) {
    for (int64_t i = 0; i < kAdds / 8 / 64; ++i)
      asm volatile(FERRY_ZERO6("ymm", "vxorps") ".rept 64\n\t" FERRY_ADDS8 FERRY_FMA4("ymm") ".endr\n\tvzeroupper"
                   : "+r"(x) : "r"(one) : "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6");
  } else {
    for (int64_t i = 0; i < kAdds / 8; ++i) asm volatile(FERRY_ADDS8 : "+r"(x) : "r"(one));
  }
#undef FERRY_ADDS8
#undef FERRY_FMA4
#undef FERRY_ZERO6
  // The loop's own increment and branch run beside the chain on other ports.
  return static_cast<double>(kAdds) / seconds_since(t0);
}

// FMAs per second on this thread at the path's width: 12 independent chains in registers (more
// than latency x pipes on any x86 core), on zeros (no denormals).
double fmas_per_second(int lanes) {
  constexpr int64_t kIters = 10'000'000;
  int64_t n = kIters;
  const auto t0 = std::chrono::steady_clock::now();
#define FERRY_FMA12(R)                                                                                 \
  "vfmadd231ps %%" R "13, %%" R "14, %%" R "0\n\tvfmadd231ps %%" R "13, %%" R "14, %%" R "1\n\t"     \
  "vfmadd231ps %%" R "13, %%" R "14, %%" R "2\n\tvfmadd231ps %%" R "13, %%" R "14, %%" R "3\n\t"      \
  "vfmadd231ps %%" R "13, %%" R "14, %%" R "4\n\tvfmadd231ps %%" R "13, %%" R "14, %%" R "5\n\t"      \
  "vfmadd231ps %%" R "13, %%" R "14, %%" R "6\n\tvfmadd231ps %%" R "13, %%" R "14, %%" R "7\n\t"      \
  "vfmadd231ps %%" R "13, %%" R "14, %%" R "8\n\tvfmadd231ps %%" R "13, %%" R "14, %%" R "9\n\t"      \
  "vfmadd231ps %%" R "13, %%" R "14, %%" R "10\n\tvfmadd231ps %%" R "13, %%" R "14, %%" R "11\n\t"
#define FERRY_ZERO(R)                                                                                  \
  "vpxord %%" R "0, %%" R "0, %%" R "0\n\t"
  if (lanes == 16) {
    asm volatile(
        "vpxord %%zmm0, %%zmm0, %%zmm0\n\tvmovaps %%zmm0, %%zmm1\n\tvmovaps %%zmm0, %%zmm2\n\t"
        "vmovaps %%zmm0, %%zmm3\n\tvmovaps %%zmm0, %%zmm4\n\tvmovaps %%zmm0, %%zmm5\n\tvmovaps %%zmm0, %%zmm6\n\t"
        "vmovaps %%zmm0, %%zmm7\n\tvmovaps %%zmm0, %%zmm8\n\tvmovaps %%zmm0, %%zmm9\n\tvmovaps %%zmm0, %%zmm10\n\t"
        "vmovaps %%zmm0, %%zmm11\n\tvmovaps %%zmm0, %%zmm13\n\tvmovaps %%zmm0, %%zmm14\n\t"
        "1:\n\t" FERRY_FMA12("zmm") "dec %0\n\tjnz 1b\n\tvzeroupper"
        : "+r"(n)::"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
          "xmm13", "xmm14", "cc");
  } else if (lanes == 8) {
    asm volatile(
        "vxorps %%ymm0, %%ymm0, %%ymm0\n\tvmovaps %%ymm0, %%ymm1\n\tvmovaps %%ymm0, %%ymm2\n\t"
        "vmovaps %%ymm0, %%ymm3\n\tvmovaps %%ymm0, %%ymm4\n\tvmovaps %%ymm0, %%ymm5\n\tvmovaps %%ymm0, %%ymm6\n\t"
        "vmovaps %%ymm0, %%ymm7\n\tvmovaps %%ymm0, %%ymm8\n\tvmovaps %%ymm0, %%ymm9\n\tvmovaps %%ymm0, %%ymm10\n\t"
        "vmovaps %%ymm0, %%ymm11\n\tvmovaps %%ymm0, %%ymm13\n\tvmovaps %%ymm0, %%ymm14\n\t"
        "1:\n\t" FERRY_FMA12("ymm") "dec %0\n\tjnz 1b\n\tvzeroupper"
        : "+r"(n)::"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
          "xmm13", "xmm14", "cc");
  } else {
    return 0;  // no FMA at 4 lanes: counted as one pipe
  }
#undef FERRY_FMA12
#undef FERRY_ZERO
  return 12.0 * static_cast<double>(kIters) / seconds_since(t0);
}

// bf16 pair products per second on this thread: 12 independent chains of vdpbf16ps on zmm
// registers (16 f32 lanes, each adding two bf16 products), on zeros. Only where the processor has
// AVX-512 BF16.
double bf16_dots_per_second() {
  constexpr int64_t kIters = 10'000'000;
  int64_t n = kIters;
  const auto t0 = std::chrono::steady_clock::now();
#define FERRY_DOT2(A, B) "vdpbf16ps %%zmm13, %%zmm14, %%zmm" #A "\n\tvdpbf16ps %%zmm13, %%zmm14, %%zmm" #B "\n\t"
  asm volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n\tvmovaps %%zmm0, %%zmm1\n\tvmovaps %%zmm0, %%zmm2\n\t"
      "vmovaps %%zmm0, %%zmm3\n\tvmovaps %%zmm0, %%zmm4\n\tvmovaps %%zmm0, %%zmm5\n\tvmovaps %%zmm0, %%zmm6\n\t"
      "vmovaps %%zmm0, %%zmm7\n\tvmovaps %%zmm0, %%zmm8\n\tvmovaps %%zmm0, %%zmm9\n\tvmovaps %%zmm0, %%zmm10\n\t"
      "vmovaps %%zmm0, %%zmm11\n\tvmovaps %%zmm0, %%zmm13\n\tvmovaps %%zmm0, %%zmm14\n\t"
      "1:\n\t" FERRY_DOT2(0, 1) FERRY_DOT2(2, 3) FERRY_DOT2(4, 5) FERRY_DOT2(6, 7) FERRY_DOT2(8, 9) FERRY_DOT2(10, 11)
      "dec %0\n\tjnz 1b\n\tvzeroupper"
      : "+r"(n)::"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm13", "xmm14", "cc");
#undef FERRY_DOT2
  return 12.0 * static_cast<double>(kIters) / seconds_since(t0);
}

struct Peak {
  int threads = 1, lanes = 4;
  double clock_hz = 0, scalar_clock_hz = 0, fma_pipes = 1, flops = 0;
  double bf16_pipes = 0, bf16_flops = 0;  // 0: no bf16 instructions measured (none, or AMX's path)
  std::string how;
};

// Runs f on `threads` threads at once and returns the mean of their results.
template <class F> double on_every_thread(int threads, F f) {
  std::vector<double> got(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { got[static_cast<size_t>(t)] = f(); });
  for (auto& th : pool) th.join();
  double sum = 0;
  for (double g : got) sum += g;
  return sum / threads;
}

Peak measure_peak() {
  Peak p;
  p.threads = cpu::num_threads();
  const cpu::DotPath path = cpu::chosen_dot_path();
  p.lanes = cpu::dot_path_lanes(path);
  const bool bf16 = path == cpu::DotPath::avx512_bf16;
  double fmas = 0, dots = 0;
  for (int round = 0; round < 7; ++round) {
    p.clock_hz = std::max(p.clock_hz, on_every_thread(p.threads, [&] { return clock_hz_on_this_thread(p.lanes); }));
    p.scalar_clock_hz = std::max(p.scalar_clock_hz, on_every_thread(p.threads, [] { return clock_hz_on_this_thread(4); }));
    fmas = std::max(fmas, on_every_thread(p.threads, [&] { return fmas_per_second(p.lanes); }));
    if (bf16) dots = std::max(dots, on_every_thread(p.threads, bf16_dots_per_second));
  }
  p.fma_pipes = fmas > 0 ? std::max(1.0, std::round(fmas / p.clock_hz)) : 1.0;
  p.flops = p.threads * p.clock_hz * p.lanes * 2.0 * p.fma_pipes;
  p.how = fmt::format("peak {:.0f} GFLOP/s = {} threads x {:.2f} GHz (measured: dependent adds beside {}-lane FMAs, fastest of "
                      "7 rounds; {:.2f} GHz with the vector units idle) x {} f32 lanes (path {}) x 2 (FMA) x {:.0f} FMA pipes "
                      "(measured: {:.2f} FMAs per cycle at that width, fastest of 7 rounds)",
                      p.flops / 1e9, p.threads, p.clock_hz / 1e9, p.lanes, p.scalar_clock_hz / 1e9, p.lanes,
                      cpu::dot_path_name(path), p.fma_pipes, fmas / p.clock_hz);
  // bf16 rows beat f32 ones by instruction throughput only where the core starts as many vdpbf16ps
  // (two products per lane) as FMAs (one): on some it starts half as many, and then the bf16
  // peak is the f32 one.
  if (dots > 0) {
    p.bf16_pipes = std::max(1.0, std::round(dots / p.clock_hz));
    p.bf16_flops = p.threads * p.clock_hz * 16 * 4.0 * p.bf16_pipes;
    p.how += fmt::format("\nbf16 peak {:.0f} GFLOP/s = {} threads x {:.2f} GHz x 16 lanes x 4 (two products and their sums) "
                         "x {:.0f} vdpbf16ps pipes (measured: {:.2f} per cycle, fastest of 7 rounds): {:.2f}x the f32 peak",
                         p.bf16_flops / 1e9, p.threads, p.clock_hz / 1e9, p.bf16_pipes, dots / p.clock_hz,
                         p.bf16_flops / p.flops);
  } else {
    p.how += fmt::format("\nbf16 peak: not measured (path {}: {})", cpu::dot_path_name(path),
                         path == cpu::DotPath::amx ? "AMX tiles" : "no bf16 instructions");
  }
  return p;
}

const Peak& peak() {
  static const Peak p = measure_peak();
  return p;
}

std::vector<float> random_floats(int64_t n) {
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(g);
  return v;
}

template <class T> std::vector<T> as(const std::vector<float>& v) {
  std::vector<T> out;
  out.reserve(v.size());
  for (float x : v) out.push_back(T(x));
  return out;
}

const std::vector<float>& lhs() {
  static const std::vector<float> v = random_floats(kM * kK);
  return v;
}
const std::vector<float>& rhs() {
  static const std::vector<float> v = random_floats(kK * kN);
  return v;
}

void report(benchmark::State& state) {
  const double rate = kFlops * static_cast<double>(state.iterations()) / 1e9;
  state.counters["GFLOP/s"] = benchmark::Counter(rate, benchmark::Counter::kIsRate);
  state.counters["of_peak"] = benchmark::Counter(rate * 1e9 / peak().flops, benchmark::Counter::kIsRate);
}

// A row of type T: bf16 rows also give their share of the bf16 instructions' peak, where it was
// measured.
template <class T> void report_row(benchmark::State& state) {
  report(state);
  if (std::is_same_v<T, ferry::bfloat16> && peak().bf16_flops > 0)
    state.counters["of_bf16_peak"] =
        benchmark::Counter(kFlops * static_cast<double>(state.iterations()) / peak().bf16_flops, benchmark::Counter::kIsRate);
}

template <class T> void BM_FerryKernel(benchmark::State& state) {
  using namespace ferry;
  const DType dt = dtype_of<T>();
  const ir::Type lt{dt, {kM, kK}}, rt{dt, {kK, kN}}, ot{dt, {kM, kN}};
  ir::Equation eq;
  eq.prim = Primitive::dot_general;
  eq.params = ir::DotGeneralParams{ir::DotDimensionNumbers{{1}, {0}, {}, {}}};
  const std::vector<T> a = as<T>(lhs()), b = as<T>(rhs());
  std::vector<T> out(static_cast<size_t>(kM * kN));
  const runtime::ConstView in[] = {{a.data(), &lt}, {b.data(), &rt}};
  const runtime::MutView res[] = {{out.data(), &ot}};
  const ir::Type* in_types[] = {&lt, &rt};
  const ir::Type* out_types[] = {&ot};
  const runtime::WorkspaceSizeFn size = runtime::cpu::workspace_size(Primitive::dot_general);
  const int64_t bytes = size ? size(eq, std::span<const ir::Type* const>(in_types), std::span<const ir::Type* const>(out_types)) : 0;
  std::vector<char> scratch(static_cast<size_t>(bytes) + 64);
  char* aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  const runtime::KernelFn fn = runtime::cpu::kernel(Primitive::dot_general);
  for (auto _ : state) {
    runtime::Workspace workspace(aligned, bytes);
    fn(eq, std::span<const runtime::ConstView>(in), std::span<const runtime::MutView>(res), workspace, {});
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report_row<T>(state);
}

// OpenBLAS on all of ferry's threads, as the kernel runs it where it has no oneDNN kernel: one
// single-threaded sgemm per block of columns.
void BM_OpenBlasSgemm(benchmark::State& state) {
  const cpu::OpenBlas& blas = cpu::openblas();
  std::vector<float> out(static_cast<size_t>(kM * kN));
  const int64_t blocks = cpu::num_threads();
  for (auto _ : state) {
    cpu::parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t n0 = kN * blk / blocks, n1 = kN * (blk + 1) / blocks;
        blas.sgemm(cpu::kCblasRowMajor, cpu::kCblasNoTrans, cpu::kCblasNoTrans, kM, static_cast<int>(n1 - n0), kK, 1.0f,
                   lhs().data(), kK, rhs().data() + n0, kN, 0.0f, out.data() + n0, kN);
      }
    });
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state);
}

template <class T> void BM_FerryJit(benchmark::State& state) {
  const ferry::Array a = ferry::Array::from(as<T>(lhs()), {kM, kK});
  const ferry::Array b = ferry::Array::from(as<T>(rhs()), {kK, kN});
  auto f = ferry::jit([](ferry::Tensor x, ferry::Tensor y) { return ferry::matmul(x, y); });
  const ferry::Compiled c = f.lower(a, b).compile();
  for (auto _ : state) {
    std::vector<ferry::Array> out = c(a, b);
    benchmark::DoNotOptimize(out.data());
  }
  report_row<T>(state);
}

BENCHMARK(BM_FerryKernel<float>)->Name("BM_FerryKernel/f32")->Unit(benchmark::kMillisecond)->UseRealTime()->MinWarmUpTime(0.3);
BENCHMARK(BM_FerryKernel<ferry::bfloat16>)->Name("BM_FerryKernel/bf16")->Unit(benchmark::kMillisecond)->UseRealTime()->MinWarmUpTime(0.3);
BENCHMARK(BM_OpenBlasSgemm)->Unit(benchmark::kMillisecond)->UseRealTime()->MinWarmUpTime(0.3);
BENCHMARK(BM_FerryJit<float>)->Name("BM_FerryJit/f32")->Unit(benchmark::kMillisecond)->UseRealTime()->MinWarmUpTime(0.3);
BENCHMARK(BM_FerryJit<ferry::bfloat16>)->Name("BM_FerryJit/bf16")->Unit(benchmark::kMillisecond)->UseRealTime()->MinWarmUpTime(0.3);

}  // namespace

int main(int argc, char** argv) {
  const ferry::MachineInfo m = ferry::machine_info();
  fmt::print("processor: {}\nisa:       {}\n{}\nOpenBLAS:  core {} (ferry asked for {})\n{}\n\n", m.processor, m.isa,
             m.dot_general, cpu::openblas_core().name,
             cpu::openblas().requested_core,
             peak().how);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
