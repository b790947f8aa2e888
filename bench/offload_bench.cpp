// Step time with per-layer residuals offloaded against everything saved, on the same scanned model,
// side by side in one run. Counters: planned device peak and host temporaries (bytes), bytes copied.
//   EverythingSaved   every residual stays on the device
//   OffloadEverything every residual is offloaded and fetched back, nothing is recomputed: the
//                     difference from EverythingSaved is the copies that were not hidden
//   OffloadX          x offloaded, the rest (the matmul) recomputed: measures recomputation too
//   NothingSaved      everything recomputed
#include <benchmark/benchmark.h>

#include "ferry/ferry.h"

namespace fy = ferry;

namespace {

constexpr int kLayers = 16, kBatch = 4096, kWidth = 128;

fy::Compiled scanned_step(const fy::Policy& policy) {
  auto layer = fy::checkpoint(
      [](fy::Tensor x, fy::Tensor w) {
        x = fy::checkpoint_name(x, "x");
        fy::Tensor h = fy::matmul(x, w);
        return std::pair{fy::tanh(h) + x, fy::Tensor{}};
      },
      policy);
  auto step = fy::jit([layer](fy::Tensor x, fy::Tensor ws) {
    return fy::value_and_grad([&](fy::Tensor w) { return fy::sum(fy::scan(layer, x, w).carry); })(ws);
  });
  return step.lower(fy::ShapeDtype{{kBatch, kWidth}}, fy::ShapeDtype{{kLayers, kWidth, kWidth}}).compile();
}

void run(benchmark::State& state, const fy::Policy& policy) {
  fy::Compiled c = scanned_step(policy);
  std::vector<fy::Array> args{fy::full({kBatch, kWidth}, 0.1), fy::full({kLayers, kWidth, kWidth}, 0.01)};
  for (auto _ : state) benchmark::DoNotOptimize(c.run(args));
  fy::MemoryStats m = c.memory_analysis();
  fy::ExecutionStats e = c.execution_stats();
  state.counters["device_peak"] = static_cast<double>(m.peak_memory_in_bytes);
  state.counters["host_temp"] = static_cast<double>(m.host_temp_size_in_bytes);
  state.counters["copied"] = static_cast<double>(e.bytes_to_host + e.bytes_to_device);
}

void BM_EverythingSaved(benchmark::State& s) { run(s, fy::policies::everything_saveable); }
void BM_OffloadEverything(benchmark::State& s) {
  run(s, fy::Policy([](const fy::Equation&) -> fy::Decision { return fy::Offloadable{}; }, "offload_everything"));
}
void BM_OffloadX(benchmark::State& s) {
  run(s, fy::policies::save_and_offload_only_these_names({}, {"x"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host));
}
void BM_NothingSaved(benchmark::State& s) { run(s, fy::policies::nothing_saveable); }

BENCHMARK(BM_EverythingSaved)->Unit(benchmark::kMillisecond)->MinWarmUpTime(0.2)->UseRealTime();
BENCHMARK(BM_OffloadEverything)->Unit(benchmark::kMillisecond)->MinWarmUpTime(0.2)->UseRealTime();
BENCHMARK(BM_OffloadX)->Unit(benchmark::kMillisecond)->MinWarmUpTime(0.2)->UseRealTime();
BENCHMARK(BM_NothingSaved)->Unit(benchmark::kMillisecond)->MinWarmUpTime(0.2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
