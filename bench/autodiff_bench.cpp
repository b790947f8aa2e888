// Program size and compile time of differentiated programs: a 64-step scan against a 64-layer
// unrolled MLP, forward only and forward+backward. Counters: `equations` (every equation, bodies
// included, as traced) and `compiled_ir_bytes` (the size of the compiled program's text, after the
// clean-up passes); the time is trace + lower + compile.
#include <benchmark/benchmark.h>

#include "ferry/autodiff.h"
#include "ferry/ferry.h"
#include "ferry/scan.h"
#include "ir/program.h"
#include "driver/lowered.h"

namespace fy = ferry;

namespace {

constexpr int kLayers = 64, kWidth = 64, kBatch = 16;

int64_t count_equations(const ferry::ir::Program& p) {
  int64_t n = 0;
  for (const auto& eq : p.equations) {
    ++n;
    for (const auto& body : eq.subprograms) n += count_equations(*body);
  }
  return n;
}

fy::Tensor scanned(fy::Tensor x, fy::Tensor ws) {
  auto r = fy::scan([](fy::Tensor h, fy::Tensor w) { return std::pair{fy::tanh(fy::matmul(h, w)), fy::Tensor{}}; }, x, ws);
  return fy::sum(r.carry);
}

fy::Tensor unrolled(fy::Tensor x, std::vector<fy::Tensor> ws) {
  for (auto& w : ws) x = fy::tanh(fy::matmul(x, w));
  return fy::sum(x);
}

template <class F, class... Args> void measure(benchmark::State& state, F f, const Args&... args) {
  int64_t eqs = 0, compiled = 0;
  for (auto _ : state) {
    fy::Lowered lowered = fy::jit(f).lower(args...);
    fy::Compiled c = lowered.compile();
    benchmark::DoNotOptimize(c);
    eqs = count_equations(*lowered.impl().program);
    compiled = static_cast<int64_t>(c.as_text().size());
  }
  state.counters["equations"] = static_cast<double>(eqs);
  state.counters["compiled_ir_bytes"] = static_cast<double>(compiled);
}

fy::ShapeDtype x_spec{{kBatch, kWidth}};
fy::ShapeDtype stacked_spec{{kLayers, kWidth, kWidth}};
std::vector<fy::ShapeDtype> layer_specs(kLayers, fy::ShapeDtype{{kWidth, kWidth}});

void BM_Scan64_Forward(benchmark::State& s) { measure(s, scanned, x_spec, stacked_spec); }
void BM_Scan64_ForwardBackward(benchmark::State& s) {
  measure(s, [](fy::Tensor x, fy::Tensor ws) { return fy::grad(scanned, fy::argnums<1>)(x, ws); }, x_spec, stacked_spec);
}
void BM_Unrolled64_Forward(benchmark::State& s) { measure(s, unrolled, x_spec, layer_specs); }
void BM_Unrolled64_ForwardBackward(benchmark::State& s) {
  measure(s, [](fy::Tensor x, std::vector<fy::Tensor> ws) { return fy::grad(unrolled, fy::argnums<1>)(x, ws); }, x_spec,
          layer_specs);
}

BENCHMARK(BM_Scan64_Forward)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Scan64_ForwardBackward)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Unrolled64_Forward)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Unrolled64_ForwardBackward)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
