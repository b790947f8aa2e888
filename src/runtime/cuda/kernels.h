// Private to the CUDA backend: its kernel table, and what the kernels share.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ferry/primitive.h"
#include "runtime/kernel.h"

namespace ferry::runtime::cuda {

// The kernel for p; nullptr where the CUDA backend has none (compile reports UNIMPLEMENTED).
KernelFn kernel(Primitive p);
WorkspaceSizeFn workspace_size(Primitive p);

// dot.cpp: dot_general through cuBLAS.
void dot_general_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                        Workspace& workspace, Stream stream);
int64_t dot_general_workspace(const ir::Equation& eq, std::span<const ir::Type* const> inputs,
                              std::span<const ir::Type* const> outputs);

// collective_kernels.cpp: psum, all_gather and psum_scatter over NCCL (nullptr where this build
// has no NCCL), and axis_index.
KernelFn collective_kernel(Primitive p);

// Row-major strides (in elements) of a dense array of this shape.
std::vector<int64_t> dense_strides(const Shape& shape);

// INTERNAL errors: buffers that contradict the equation, a launch the driver refused, a CUDA call
// that failed (`status` is a cudaError_t).
[[noreturn]] void kernel_bug(const ir::Equation& eq, std::string_view what);
void check_launch(const ir::Equation& eq);
void check_cuda(int status, const char* what);

}  // namespace ferry::runtime::cuda
