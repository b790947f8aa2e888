// State a step carries from call to call, kept in host memory between calls (ZeRO-Offload's way,
// chosen per array by the planner under a device limit: auto_plan.h). The state is a donated
// argument on the device whose new value the step returns: optimizer moments, sharded or not. Kept
// on the device, it holds its bytes over the whole step; in host memory, it costs a fetch before
// its first reader (scheduled and prefetched like any offloaded value's) and a copy of its new
// value back, and the device holds it only from the fetch on.
//
// The rewritten program takes and returns that state in pinned_host memory. Its executable still
// takes the array where the caller traced it (the device): a call moves it first (runtime/executable.h).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "ir/program.h"

namespace ferry::compiler {

struct StateCandidate {
  size_t input = 0;   // the argument
  size_t output = 0;  // the result that carries its new value (same type, computed from it)
  int64_t bytes = 0;
  size_t first_read = 0;  // the equation that reads the input first (in program order)
};

// The top level's state: device inputs that are donated and have an output of their type computed
// from them (the nearest such output; each paired once); those read last first, then the largest.
std::vector<StateCandidate> state_candidates(const ir::Program& program, std::span<const char> donated);

// Moves these candidates to pinned_host: each input's readers read a device_put of it to the device,
// and its output is a device_put of the new value to pinned_host.
void offload_state(ir::Program& program, std::span<const StateCandidate> state);

}  // namespace ferry::compiler
