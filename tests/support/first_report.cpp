#include "support/first_report.h"

namespace ferry::testing {

namespace {
constexpr int kBatch = 512, kWidth = 64;
}  // namespace

Decision dot_with_no_batch_dims_offload(const Equation& e) {
  if (e.primitive() == prim::dot_general && e.dot_dims().lhs_batch.empty() && e.dot_dims().rhs_batch.empty())
    return Offloadable{MemoryKind::device, MemoryKind::pinned_host};
  return Recompute{};
}

Compiled first_report(const Policy& policy, int64_t limit, int layers) {
  auto layer = [](Tensor x, Tensor w) {
    Tensor h = tanh(matmul(x, w));
    return sin(h) * h;
  };
  auto step = jit([&](Tensor x, std::vector<Tensor> ws) {
    return value_and_grad([&](std::vector<Tensor> w) {
      Tensor h = x;
      for (auto& wl : w) h = checkpoint(layer, policy)(h, wl);
      return sum(h);
    })(ws);
  });
  return step.lower(ShapeDtype{{kBatch, kWidth}}, std::vector<ShapeDtype>(static_cast<size_t>(layers), ShapeDtype{{kWidth, kWidth}}))
      .compile({.device_memory_limit = limit});
}

std::vector<Array> first_report_args(int layers) {
  std::vector<Array> args{full({kBatch, kWidth}, 0.5)};
  for (int l = 0; l < layers; ++l) args.push_back(full({kWidth, kWidth}, 0.1));
  return args;
}

}  // namespace ferry::testing
