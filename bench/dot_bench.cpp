// 256x1024 @ 1024x1024 f32 matmul three ways, side by side in GFLOP/s: ferry's CPU dot_general
// kernel called directly, cblas_sgemm called directly on the same data, and the public API (a jitted
// matmul, lowered and compiled once, then only the compiled call timed). Rates are per wall-clock
// second: OpenBLAS runs its own threads. Each row warms up first (thread pool, caches, clock).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <random>
#include <span>
#include <vector>

#include "ferry/ferry.h"
#include "ir/program.h"
#include "runtime/cpu/kernels.h"

namespace {

constexpr int64_t kM = 256, kK = 1024, kN = 1024;
constexpr double kFlops = 2.0 * kM * kN * kK;

std::vector<float> random_floats(int64_t n) {
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(g);
  return v;
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
  state.counters["GFLOP/s"] =
      benchmark::Counter(kFlops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void BM_FerryKernel(benchmark::State& state) {
  using namespace ferry;
  const ir::Type lt{DType::f32, {kM, kK}}, rt{DType::f32, {kK, kN}}, ot{DType::f32, {kM, kN}};
  ir::Equation eq;
  eq.prim = Primitive::dot_general;
  eq.params = ir::DotGeneralParams{ir::DotDimensionNumbers{{1}, {0}, {}, {}}};
  std::vector<float> out(static_cast<size_t>(kM * kN));
  const runtime::ConstView in[] = {{lhs().data(), &lt}, {rhs().data(), &rt}};
  const runtime::MutView res[] = {{out.data(), &ot}};
  const runtime::KernelFn fn = runtime::cpu::kernel(Primitive::dot_general);
  runtime::Workspace none;  // dense f32 operands are read in place
  for (auto _ : state) {
    fn(eq, std::span<const ferry::runtime::ConstView>(in), std::span<const ferry::runtime::MutView>(res), none, {});
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state);
}

void BM_Cblas(benchmark::State& state) {
  std::vector<float> out(static_cast<size_t>(kM * kN));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kM, kN, kK, 1.0f, lhs().data(), kK, rhs().data(), kN,
                0.0f, out.data(), kN);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state);
}

void BM_FerryJit(benchmark::State& state) {
  const ferry::Array a = ferry::Array::from(lhs(), {kM, kK});
  const ferry::Array b = ferry::Array::from(rhs(), {kK, kN});
  auto f = ferry::jit([](ferry::Tensor x, ferry::Tensor y) { return ferry::matmul(x, y); });
  const ferry::Compiled c = f.lower(a, b).compile();
  for (auto _ : state) {
    std::vector<ferry::Array> out = c(a, b);
    benchmark::DoNotOptimize(out.data());
  }
  report(state);
}

BENCHMARK(BM_FerryKernel)->Unit(benchmark::kMillisecond)->UseRealTime()->MinWarmUpTime(0.3);
BENCHMARK(BM_Cblas)->Unit(benchmark::kMillisecond)->UseRealTime()->MinWarmUpTime(0.3);
BENCHMARK(BM_FerryJit)->Unit(benchmark::kMillisecond)->UseRealTime()->MinWarmUpTime(0.3);

}  // namespace

BENCHMARK_MAIN();
