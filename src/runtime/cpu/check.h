// Private to the CPU kernels: cheap O(rank) checks that make a kernel refuse, rather than read or
// write outside its buffers, when handed buffers that contradict the equation. The shape rules
// reject such programs first, so a failure here is INTERNAL.
#pragma once

#include <span>
#include <string_view>

#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/kernel.h"

namespace ferry::runtime::cpu {

[[noreturn]] inline void kernel_bug(const ir::Equation& eq, std::string_view what) {
  throw Error(ErrorCode::internal, fmt::format("{} (CPU kernel): {}", primitive_name(eq.prim), what));
}

inline void expect_arity(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                         size_t num_inputs, size_t num_outputs = 1) {
  if (inputs.size() != num_inputs || outputs.size() != num_outputs)
    kernel_bug(eq, fmt::format("expected {} input(s) and {} output(s), got {} and {}", num_inputs, num_outputs,
                               inputs.size(), outputs.size()));
}

}  // namespace ferry::runtime::cpu
