// The first report: a model of dense layers whose saved dot outputs exceed the device limit.
// With dots_with_no_batch_dims_saveable it fails to compile with RESOURCE_EXHAUSTED (peak, limit,
// largest buffers); with the custom policy that offloads those dot outputs it compiles under the
// same limit, runs, gives the same gradients, and reports host temporaries.
#include <cstdio>
#include <vector>

#include <ferry/ferry.h>

namespace fy = ferry;

fy::Decision dot_with_no_batch_dims_offload(const fy::Equation& e) {
  if (e.primitive() == fy::prim::dot_general && e.dot_dims().lhs_batch.empty() && e.dot_dims().rhs_batch.empty())
    return fy::Offloadable{fy::MemoryKind::device, fy::MemoryKind::pinned_host};
  return fy::Recompute{};
}

constexpr int kLayers = 8, kBatch = 512, kWidth = 64;

fy::Compiled train_step(const fy::Policy& policy, int64_t limit) {
  auto layer = [](fy::Tensor x, fy::Tensor w) {
    fy::Tensor h = fy::tanh(fy::matmul(x, w));
    return fy::sin(h) * h;
  };
  auto step = fy::jit([&](fy::Tensor x, std::vector<fy::Tensor> ws) {
    return fy::value_and_grad([&](std::vector<fy::Tensor> w) {
      fy::Tensor h = x;
      for (auto& wl : w) h = fy::checkpoint(layer, policy)(h, wl);
      return fy::sum(h);
    })(ws);
  });
  return step.lower(fy::ShapeDtype{{kBatch, kWidth}}, std::vector<fy::ShapeDtype>(kLayers, fy::ShapeDtype{{kWidth, kWidth}}))
      .compile({.device_memory_limit = limit});
}

int main() {
  const int64_t limit = 2 << 20;  // 2 MiB of device memory
  std::printf("device limit: %lld bytes\n\n", static_cast<long long>(limit));
  try {
    train_step(fy::policies::dots_with_no_batch_dims_saveable, limit);
    std::printf("unexpected: the saving policy fit\n");
    return 1;
  } catch (const fy::Error& e) {
    std::printf("dots_with_no_batch_dims_saveable:\n%s\n\n", e.what());
  }
  fy::Compiled c = train_step(fy::Policy(dot_with_no_batch_dims_offload, "dot_with_no_batch_dims_offload"), limit);
  std::vector<fy::Array> args{fy::full({kBatch, kWidth}, 0.5)};
  for (int l = 0; l < kLayers; ++l) args.push_back(fy::full({kWidth, kWidth}, 0.1));
  std::vector<fy::Array> out = c.run(args);
  fy::MemoryStats m = c.memory_analysis();
  fy::ExecutionStats e = c.execution_stats();
  std::printf("dot_with_no_batch_dims_offload: compiles under the limit\n%s", c.memory_report().c_str());
  std::printf("host_temp_size_in_bytes %lld; measured device high-water %lld bytes (planned %lld); loss %s\n",
              static_cast<long long>(m.host_temp_size_in_bytes), static_cast<long long>(e.device_high_water_bytes),
              static_cast<long long>(m.peak_memory_in_bytes), out[0].to_string().c_str());
  return m.host_temp_size_in_bytes > 0 && e.device_high_water_bytes == m.peak_memory_in_bytes ? 0 : 1;
}
