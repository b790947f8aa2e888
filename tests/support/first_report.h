// The first report's program, as examples/first_report.cpp writes it: eight dense tanh layers of a
// 512x64 batch, each checkpointed, whose saved dot outputs exceed a 2 MiB device limit and whose
// offloaded ones fit it. Shared by the tests that draw and check its plan.
#pragma once

#include <cstdint>
#include <vector>

#include "ferry/ferry.h"

namespace ferry::testing {

inline constexpr int64_t kFirstReportLimit = int64_t{2} << 20;

// The report's custom policy: dot outputs without batch dimensions go to pinned host memory.
Decision dot_with_no_batch_dims_offload(const Equation& e);

// One training step (loss and gradients) under `policy`, compiled with `limit` (0: none); `layers`
// other than the report's 8 for tests of larger plans.
Compiled first_report(const Policy& policy, int64_t limit = 0, int layers = 8);
std::vector<Array> first_report_args(int layers = 8);

}  // namespace ferry::testing
