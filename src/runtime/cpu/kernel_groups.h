// Private to the CPU kernels: the kernel of each primitive group, as listed in kernels.cpp. A group
// kernel reads eq.prim where it serves several primitives.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace ferry::runtime::cpu {

// A CPU kernel finishes its work before it returns, so it takes no stream; the kernel table
// (kernels.cpp) adapts each to the backend's KernelFn, which does.
using CpuKernelFn = void (*)(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                             Workspace& workspace);

#define FERRY_CPU_KERNEL(name) \
  void name(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs, \
            Workspace& workspace)

// elementwise_kernels.cpp
FERRY_CPU_KERNEL(unary_kernel);    // neg exp log sin cos tanh logistic sqrt rsqrt abs sign erf ... not
FERRY_CPU_KERNEL(binary_kernel);   // add sub mul div max min pow
FERRY_CPU_KERNEL(compare_kernel);  // eq ne lt le gt ge
FERRY_CPU_KERNEL(select_kernel);
FERRY_CPU_KERNEL(clamp_kernel);
// convert_kernels.cpp
FERRY_CPU_KERNEL(convert_kernel);
// shape_kernels.cpp
FERRY_CPU_KERNEL(iota_kernel);
FERRY_CPU_KERNEL(constant_kernel);
FERRY_CPU_KERNEL(broadcast_in_dim_kernel);
FERRY_CPU_KERNEL(reshape_kernel);
FERRY_CPU_KERNEL(transpose_kernel);
// reduce_kernels.cpp
FERRY_CPU_KERNEL(reduce_kernel);  // reduce_sum reduce_max reduce_min
// axis_kernels.cpp
FERRY_CPU_KERNEL(arg_reduce_kernel);  // argmax argmin
FERRY_CPU_KERNEL(cumulative_kernel);  // cumsum cummax cummin
FERRY_CPU_KERNEL(argsort_kernel);
// gather_kernels.cpp
FERRY_CPU_KERNEL(gather_kernel);
FERRY_CPU_KERNEL(scatter_add_kernel);
FERRY_CPU_KERNEL(scatter_kernel);
// random_kernels.cpp
FERRY_CPU_KERNEL(threefry_kernel);
// dot_kernel.cpp
FERRY_CPU_KERNEL(dot_general_kernel);
// index_kernels.cpp
FERRY_CPU_KERNEL(slice_kernel);
FERRY_CPU_KERNEL(dynamic_slice_kernel);
FERRY_CPU_KERNEL(dynamic_update_slice_kernel);
FERRY_CPU_KERNEL(concatenate_kernel);
// memory_kernels.cpp
FERRY_CPU_KERNEL(device_put_kernel);  // device_put checkpoint_name stop_gradient
FERRY_CPU_KERNEL(bitcast_kernel);
// fused_kernel.cpp
FERRY_CPU_KERNEL(fused_kernel);
// collective_kernels.cpp
FERRY_CPU_KERNEL(psum_kernel);
FERRY_CPU_KERNEL(all_gather_kernel);
FERRY_CPU_KERNEL(psum_scatter_kernel);
FERRY_CPU_KERNEL(axis_index_kernel);

#undef FERRY_CPU_KERNEL

// Workspace declarations (kernels.cpp's workspace_size), beside their kernels.
int64_t dot_general_workspace(const ir::Equation& eq, std::span<const ir::Type* const> inputs,
                              std::span<const ir::Type* const> outputs);
// The fused kernel's recipe of eq's body (what it runs per block), made when an executable is.
std::shared_ptr<const void> prepare_fused(const ir::Equation& eq);
int64_t fused_workspace(const ir::Equation& eq, std::span<const ir::Type* const> inputs,
                        std::span<const ir::Type* const> outputs);
int64_t reduce_workspace(const ir::Equation& eq, std::span<const ir::Type* const> inputs,
                         std::span<const ir::Type* const> outputs);

}  // namespace ferry::runtime::cpu
