// Reads a memory plan: the MemoryStats users see, a report of the largest buffers live at the
// device peak, and the device-limit check (RESOURCE_EXHAUSTED naming the peak, the limit and those
// buffers).
#pragma once

#include <string>
#include <vector>

#include "compiler/memory_plan.h"
#include "ferry/options.h"
#include "ir/program.h"

namespace ferry::compiler {

MemoryStats memory_stats(const ir::Program& program, const MemoryPlan& plan);

// Several lines: the stats, then the largest buffers live at the device peak with their type,
// size, the primitive that made them and its source name.
std::string memory_report(const ir::Program& program, const MemoryPlan& plan, size_t max_buffers = 8);

// Which equation of `program` defines each value (-1: an input).
std::vector<int> producers(const ir::Program& program);

// A buffer in the report's words as it is at position t: the value it holds then (an in-place chain
// holds several), its type and size, and the equation that made it, named as as_text() prints it
// ("%17 = tanh"), with its source name; or what the buffer is for (a body, a carry, a workspace).
std::string describe(const ir::Program& program, const Buffer& buffer, const std::vector<int>& producers, int t);

// The arena buffers of `kind` live at its peak position (plan.peak_position), largest first: the
// buffers memory_report lists. Outputs' allocations and empty buffers are not among them.
std::vector<const Buffer*> live_at_peak(const MemoryPlan& plan, MemoryKind kind);

// Throws RESOURCE_EXHAUSTED when limit > 0 and the device peak exceeds it.
void check_device_limit(const ir::Program& program, const MemoryPlan& plan, int64_t limit);

// "12.0 MiB"
std::string human_bytes(int64_t bytes);

}  // namespace ferry::compiler
