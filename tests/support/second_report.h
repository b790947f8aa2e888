// The second report's program, shared by the tests that hold ferry to it:
// grad(scan(remat(step, save_and_offload_only_these_names({}, {"save_remat"})))) over two steps.
#pragma once

#include <vector>

#include "ferry/ferry.h"

namespace ferry::testing {

// Lowered on second_report_args(); checkpointed = false is the same program without the remat.
Lowered second_report(bool checkpointed);
std::vector<Array> second_report_args();  // ones(3), ones(2, 3)

}  // namespace ferry::testing
