// Step time with per-layer residuals offloaded against everything saved, on the same scanned model,
// side by side in one run. Counters: planned device peak and host temporaries (bytes), bytes copied.
//   EverythingSaved   every residual stays on the device
//   OffloadEverything every residual is offloaded and fetched back, nothing is recomputed: the
//                     difference from EverythingSaved is the copies that were not hidden
//   OffloadX          x offloaded, the rest (the matmul) recomputed: measures recomputation too
//   NothingSaved      everything recomputed
//   OffloadEverythingBesideSaved  the two steps alternately, one of each per iteration, so that
//                     their ratio comes from the same seconds of a shared machine: counters
//                     offload_ms and saved_ms (medians), ratio (the median over iterations of
//                     offload over saved) and device_cut (the saved step's planned peak less
//                     the offloading one's, bytes)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <vector>

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

const fy::Policy& offload_everything() {
  static const fy::Policy policy([](const fy::Equation&) -> fy::Decision { return fy::Offloadable{}; },
                                 "offload_everything");
  return policy;
}

void BM_EverythingSaved(benchmark::State& s) { run(s, fy::policies::everything_saveable); }
void BM_OffloadEverything(benchmark::State& s) { run(s, offload_everything()); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void BM_OffloadEverythingBesideSaved(benchmark::State& state) {
  fy::Compiled saved = scanned_step(fy::policies::everything_saveable), offload = scanned_step(offload_everything());
  std::vector<fy::Array> args{fy::full({kBatch, kWidth}, 0.1), fy::full({kLayers, kWidth, kWidth}, 0.01)};
  auto seconds = [&](fy::Compiled& c) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(c.run(args));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> t_saved, t_offload, ratios;
  bool saved_first = true;
  for (auto _ : state) {  // the order alternates, so neither step always runs on the other's caches
    if (saved_first) t_saved.push_back(seconds(saved));
    t_offload.push_back(seconds(offload));
    if (!saved_first) t_saved.push_back(seconds(saved));
    saved_first = !saved_first;
    ratios.push_back(t_offload.back() / t_saved.back());
  }
  state.counters["saved_ms"] = 1e3 * median(t_saved);
  state.counters["offload_ms"] = 1e3 * median(t_offload);
  // Each pair's ratio comes from the same fraction of a second: the machine's drift (this VM's
  // speed moves by 1.5x within minutes) cancels in it, where it would not between medians.
  state.counters["ratio"] = median(ratios);
  state.counters["device_cut"] = static_cast<double>(saved.memory_analysis().peak_memory_in_bytes -
                                                     offload.memory_analysis().peak_memory_in_bytes);
}
void BM_OffloadX(benchmark::State& s) {
  run(s, fy::policies::save_and_offload_only_these_names({}, {"x"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host));
}
void BM_NothingSaved(benchmark::State& s) { run(s, fy::policies::nothing_saveable); }

BENCHMARK(BM_EverythingSaved)->Unit(benchmark::kMillisecond)->MinWarmUpTime(0.2)->UseRealTime();
BENCHMARK(BM_OffloadEverything)->Unit(benchmark::kMillisecond)->MinWarmUpTime(0.2)->UseRealTime();
BENCHMARK(BM_OffloadX)->Unit(benchmark::kMillisecond)->MinWarmUpTime(0.2)->UseRealTime();
BENCHMARK(BM_NothingSaved)->Unit(benchmark::kMillisecond)->MinWarmUpTime(0.2)->UseRealTime();
BENCHMARK(BM_OffloadEverythingBesideSaved)
    ->Unit(benchmark::kMillisecond)
    ->MinWarmUpTime(0.4)
    ->MinTime(6)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
