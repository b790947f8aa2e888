#include "support/second_report.h"

namespace ferry::testing {

Lowered second_report(bool checkpointed) {
  auto step = [](Tensor y, Tensor /*x_i*/) {
    y = sin(y);
    y = checkpoint_name(y, "save_remat");
    y = sin(y);
    return std::pair{y, Tensor{}};
  };
  auto policy =
      policies::save_and_offload_only_these_names({}, {"save_remat"}, MemoryKind::device, MemoryKind::pinned_host);
  auto remat_step = checkpoint(step, policy);
  auto apply = jit([&](Tensor params, Tensor xs) {
    return grad([&](Tensor p) {
      return checkpointed ? sum(scan(remat_step, p, xs).carry) : sum(scan(step, p, xs).carry);
    })(params);
  });
  std::vector<Array> args = second_report_args();
  return apply.lower(args[0], args[1]);
}

std::vector<Array> second_report_args() { return {ones({3}), ones({2, 3})}; }

}  // namespace ferry::testing
