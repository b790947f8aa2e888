// device_put: a copy. On the CPU backend every memory kind is host RAM, so changing kind is a memcpy;
// the runtime's copy queue decides when it happens.
#include <cstring>

#include "runtime/cpu/check.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/parallel.h"

namespace ferry::runtime::cpu {

void device_put_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                       std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 1);
  const ir::Type& in = *inputs[0].type;
  const ir::Type& out = *outputs[0].type;
  if (in.dtype != out.dtype || in.shape != out.shape) kernel_bug(eq, "operand and result types differ");
  if (out.size_bytes() > 0 && outputs[0].data != inputs[0].data)
    parallel_memcpy(outputs[0].data, inputs[0].data, out.size_bytes());
}

// bitcast_convert_type: the same bytes under another dtype of the same width.
void bitcast_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                    Workspace&) {
  expect_arity(eq, inputs, outputs, 1);
  const ir::Type& in = *inputs[0].type;
  const ir::Type& out = *outputs[0].type;
  if (in.size_bytes() != out.size_bytes() || in.shape != out.shape) kernel_bug(eq, "operand and result sizes differ");
  if (out.size_bytes() > 0 && outputs[0].data != inputs[0].data)
    parallel_memcpy(outputs[0].data, inputs[0].data, out.size_bytes());
}

}  // namespace ferry::runtime::cpu
