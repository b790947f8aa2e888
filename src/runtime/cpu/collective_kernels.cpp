// The collectives' kernels on the CPU: exchanges between the processes (runtime/process_group.h)
// into the buffers the plan gave the result, rearranged where the exchanged dimension is not the
// outermost one (runtime/collective_layout.h).
#include <cstring>

#include "ir/type.h"
#include "runtime/collective_layout.h"
#include "runtime/cpu/check.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/process_group.h"

namespace ferry::runtime::cpu {
#define FERRY_CPU_KERNEL(name) \
  void name(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs, \
            Workspace& workspace)

FERRY_CPU_KERNEL(psum_kernel) {
  const ir::Type& x = *inputs[0].type;
  processes::all_reduce_sum(inputs[0].data, outputs[0].data, x.num_elements(), x.dtype, "psum");
}

FERRY_CPU_KERNEL(axis_index_kernel) { *outputs[0].as<int32_t>() = processes::index(); }

FERRY_CPU_KERNEL(all_gather_kernel) {
  const auto& p = std::get<ir::CollectiveDimParams>(eq.params);
  const ir::Type& x = *inputs[0].type;
  const int64_t outer = outer_of(x, p.dimension), block = x.size_bytes(), n = p.axis_size;
  if (outer == 1) return processes::all_gather(inputs[0].data, outputs[0].data, block, "all_gather");
  char* gathered = workspace.take<char>(block * n);
  processes::all_gather(inputs[0].data, gathered, block, "all_gather");
  const int64_t rest = block / outer;
  char* y = outputs[0].as<char>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < n; ++r) std::memcpy(y + (o * n + r) * rest, gathered + (r * outer + o) * rest, static_cast<size_t>(rest));
}

FERRY_CPU_KERNEL(psum_scatter_kernel) {
  const auto& p = std::get<ir::CollectiveDimParams>(eq.params);
  const ir::Type& x = *inputs[0].type;
  const ir::Type& y = *outputs[0].type;
  const int64_t outer = outer_of(x, p.dimension), n = p.axis_size;
  if (outer == 1)
    return processes::reduce_scatter_sum(inputs[0].data, outputs[0].data, y.num_elements(), x.dtype, "psum_scatter");
  const int64_t part = x.size_bytes() / outer / n;  // bytes of one process's part of one outer row
  char* send = workspace.take<char>(x.size_bytes());
  const char* in = inputs[0].as<char>();
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < outer; ++o) std::memcpy(send + (r * outer + o) * part, in + (o * n + r) * part, static_cast<size_t>(part));
  processes::reduce_scatter_sum(send, outputs[0].data, y.num_elements(), x.dtype, "psum_scatter");
}

#undef FERRY_CPU_KERNEL

}  // namespace ferry::runtime::cpu
