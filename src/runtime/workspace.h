// Kernel workspaces as the memory planner sees them: the bytes each equation's kernel on a backend
// declares for its types (runtime/kernel.h's WorkspaceSizeFn), so scratch memory is planned, counted
// in temp_size_in_bytes and the peak, and held to the device limit like any buffer.
#pragma once

#include <string>

#include "plan/memory_plan.h"

namespace ferry::runtime {

// The workspace sizes of `backend`'s kernels (UNIMPLEMENTED for a backend this build or machine lacks).
plan::WorkspaceFn workspace_sizes(const std::string& backend);

}  // namespace ferry::runtime
