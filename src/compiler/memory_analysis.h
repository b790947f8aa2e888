// Reads a memory plan: the MemoryStats users see, a report of the largest buffers live at the
// device peak, and the device-limit check (RESOURCE_EXHAUSTED naming the peak, the limit and those
// buffers).
#pragma once

#include <string>

#include "compiler/memory_plan.h"
#include "ferry/options.h"
#include "ir/program.h"

namespace ferry::compiler {

MemoryStats memory_stats(const ir::Program& program, const MemoryPlan& plan);

// Several lines: the stats, then the largest buffers live at the device peak with their type,
// size, the primitive that made them and its source name.
std::string memory_report(const ir::Program& program, const MemoryPlan& plan, size_t max_buffers = 8);

// Throws RESOURCE_EXHAUSTED when limit > 0 and the device peak exceeds it.
void check_device_limit(const ir::Program& program, const MemoryPlan& plan, int64_t limit);

// "12.0 MiB"
std::string human_bytes(int64_t bytes);

}  // namespace ferry::compiler
