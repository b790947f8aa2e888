// The second report, line for line: per-step offload inside a differentiated scan
// (grad(scan(remat(step, save_and_offload_only_these_names)))). It compiles, runs, gives the same
// gradient as without checkpointing, and its memory analysis shows the host side.
#include <cstdio>

#include <ferry/ferry.h>

namespace fy = ferry;

int main() {
  auto step = [](fy::Tensor y, fy::Tensor /*x_i*/) {
    y = fy::sin(y);
    y = fy::checkpoint_name(y, "save_remat");
    y = fy::sin(y);
    return std::pair{y, fy::Tensor{}};  // (carry, no per-step output)
  };
  auto policy = fy::policies::save_and_offload_only_these_names(
      /*saved=*/{}, /*offloaded=*/{"save_remat"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host);
  auto remat_step = fy::checkpoint(step, policy);  // fy::remat is the same thing

  auto apply = fy::jit([&](fy::Tensor params, fy::Tensor xs) {
    return fy::grad([&](fy::Tensor p) { return fy::sum(fy::scan(remat_step, p, xs).carry); })(params);
  });

  fy::Compiled c = apply.lower(fy::ones({3}), fy::ones({2, 3})).compile();
  fy::MemoryStats m = c.memory_analysis();
  fy::Array g = c(fy::ones({3}), fy::ones({2, 3}))[0];
  fy::ExecutionStats e = c.execution_stats();

  std::printf("gradient: %s\n", g.to_string().c_str());
  std::printf("memory_analysis: peak_memory_in_bytes %lld, temp_size_in_bytes %lld, host_temp_size_in_bytes %lld\n",
              static_cast<long long>(m.peak_memory_in_bytes), static_cast<long long>(m.temp_size_in_bytes),
              static_cast<long long>(m.host_temp_size_in_bytes));
  std::printf("measured: device high-water %lld bytes, %lld bytes to host, %lld bytes back\n",
              static_cast<long long>(e.device_high_water_bytes), static_cast<long long>(e.bytes_to_host),
              static_cast<long long>(e.bytes_to_device));
  std::printf("what the backward pass keeps:\n");
  fy::print_saved_residuals([&](fy::Tensor p, fy::Tensor xs) { return fy::sum(fy::scan(remat_step, p, xs).carry); },
                            fy::ones({3}), fy::ones({2, 3}));
  return m.host_temp_size_in_bytes > 0 && e.device_high_water_bytes == m.peak_memory_in_bytes ? 0 : 1;
}
