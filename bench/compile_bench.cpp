// Compile time against program size: an unrolled MLP training step (loss and gradients of every
// layer) of 10 to 1,000 layers, traced, lowered and compiled (passes, scheduling, buffer
// assignment), and long chains of elementwise operations (10,000 and 100,000, forward and with
// their gradient, with fusion and without). Counters: equations (after the passes for the MLP; of
// the lowered program, before the passes, for the chains, which fuse into a few), and seconds per
// equation (shown with SI prefixes: "5u" is 5 microseconds).
#include <benchmark/benchmark.h>

#include <algorithm>

#include "ferry/ferry.h"
#include "driver/lowered.h"

namespace fy = ferry;

namespace {

void BM_CompileUnrolledTrainingStep(benchmark::State& state) {
  const int layers = static_cast<int>(state.range(0));
  auto step = fy::jit([](fy::Tensor x, std::vector<fy::Tensor> ws) {
    return fy::value_and_grad([&](std::vector<fy::Tensor> w) {
      fy::Tensor h = x;
      for (auto& wl : w) h = fy::tanh(fy::matmul(h, wl));
      return fy::sum(h);
    })(ws);
  });
  std::vector<fy::ShapeDtype> ws(static_cast<size_t>(layers), fy::ShapeDtype{{16, 16}});
  size_t equations = 0;
  for (auto _ : state) {
    fy::Compiled c = step.lower(fy::ShapeDtype{{8, 16}}, ws).compile();
    benchmark::DoNotOptimize(c);
  }
  fy::Compiled c = step.lower(fy::ShapeDtype{{8, 16}}, ws).compile();
  std::string text = c.as_text();
  equations = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) - 2;
  state.counters["equations"] = static_cast<double>(equations);
  // Microseconds per equation, from the time per iteration.
  state.counters["us_per_equation"] = benchmark::Counter(static_cast<double>(equations),
                                                         benchmark::Counter::kIsIterationInvariantRate |
                                                             benchmark::Counter::kInvert,
                                                         benchmark::Counter::kIs1000);
}

BENCHMARK(BM_CompileUnrolledTrainingStep)->Arg(10)->Arg(100)->Arg(300)->Arg(1000)->Unit(benchmark::kMillisecond);

// A chain of `ops` elementwise operations on a [64] vector (sin and a scale, alternately), summed;
// with `grad`, its value and gradient. Traced and lowered once; each iteration compiles (with or
// without fusion). Without fusion every value is a buffer of its own, so this row times the
// memory planner on a program with ops buffers live at once in the gradient.
void BM_CompileChain(benchmark::State& state) {
  const int ops = static_cast<int>(state.range(0));
  const bool grad = state.range(1) != 0, fuse = state.range(2) != 0;
  auto chain = [ops](fy::Tensor x) {
    fy::Tensor h = x;
    for (int i = 0; i < ops; ++i) h = i % 2 == 0 ? fy::sin(h) : h * 1.0001;
    return fy::sum(h);
  };
  auto step = fy::jit([&](fy::Tensor x) {
    if (!grad) return std::vector<fy::Tensor>{chain(x)};
    auto [value, g] = fy::value_and_grad(chain)(x);
    return std::vector<fy::Tensor>{value, g};
  });
  const fy::Lowered lowered = step.lower(fy::ShapeDtype{{64}});
  const std::string text = lowered.as_text();
  const auto equations = static_cast<double>(std::count(text.begin(), text.end(), '\n') - 2);
  for (auto _ : state) {
    fy::Compiled c = lowered.compile({.fuse = fuse});
    benchmark::DoNotOptimize(c);
  }
  state.counters["equations"] = equations;
  state.counters["us_per_equation"] = benchmark::Counter(
      equations, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
}

// Args: ops, gradient, fusion.
BENCHMARK(BM_CompileChain)
    ->ArgNames({"ops", "grad", "fuse"})
    ->Args({2000, 1, 1})  // 2k and 20k with the gradient: the growth from one to the other (10x the ops)
    ->Args({20000, 1, 1})
    ->Args({10000, 0, 1})
    ->Args({10000, 1, 1})
    ->Args({100000, 0, 1})
    ->Args({100000, 1, 1})
    ->Args({10000, 1, 0})
    ->Args({100000, 1, 0})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// The same step with the whole model in one checkpoint(automatic), compiled under a device limit
// of 60% of its all-saved peak: the automatic planner's choices included (the compile driver
// plans the all-saved program, poses the choice, plans the chosen one). Counter: the peak's share
// of the limit.
void BM_CompileAutomaticUnderLimit(benchmark::State& state) {
  const int layers = static_cast<int>(state.range(0));
  auto model = [](std::vector<fy::Tensor> in) {
    fy::Tensor h = in[0];
    for (size_t l = 1; l < in.size(); ++l) h = fy::tanh(fy::matmul(h, in[l]));
    return std::vector<fy::Tensor>{h};
  };
  auto step = fy::jit([&](fy::Tensor x, std::vector<fy::Tensor> ws) {
    return fy::value_and_grad([&](std::vector<fy::Tensor> w) {
      std::vector<fy::Tensor> in{x};
      in.insert(in.end(), w.begin(), w.end());
      return fy::sum(fy::checkpoint(model, fy::policies::automatic)(in)[0]);
    })(ws);
  });
  std::vector<fy::ShapeDtype> ws(static_cast<size_t>(layers), fy::ShapeDtype{{16, 16}});
  fy::Lowered lowered = step.lower(fy::ShapeDtype{{256, 16}}, ws);
  const int64_t saved = lowered.compile().memory_analysis().peak_memory_in_bytes;
  const int64_t limit = saved * 6 / 10;
  int64_t peak = 0;
  for (auto _ : state) {
    fy::Compiled c = step.lower(fy::ShapeDtype{{256, 16}}, ws).compile({.device_memory_limit = limit});
    peak = c.memory_analysis().peak_memory_in_bytes;
    benchmark::DoNotOptimize(c);
  }
  state.counters["peak_over_limit"] = static_cast<double>(peak) / static_cast<double>(limit);
}

BENCHMARK(BM_CompileAutomaticUnderLimit)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
