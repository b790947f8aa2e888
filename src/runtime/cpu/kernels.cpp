// The CPU backend's kernel table: every primitive has a kernel except those the executable runs
// itself (bodies, and the asynchronous copies of its copy queue).
#include "runtime/cpu/kernels.h"

#include "runtime/collective_layout.h"
#include "runtime/cpu/kernel_groups.h"

namespace ferry::runtime::cpu {
namespace {

// A CPU kernel as the backend's KernelFn: the CPU has no stream to enqueue on (a kernel's work is
// done when it returns), so the stream is dropped here and kernel bodies never see it.
template <CpuKernelFn F>
void on_stream(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
               Workspace& workspace, Stream) {
  F(eq, inputs, outputs, workspace);
}

}  // namespace

KernelFn kernel(Primitive p) {
  // The elementwise families by the op table's traits (their kernels switch on eq.prim inside).
  if (ir::has(p, ir::kUnary)) return on_stream<unary_kernel>;
  if (ir::has(p, ir::kBinary)) return on_stream<binary_kernel>;
  if (ir::has(p, ir::kComparison)) return on_stream<compare_kernel>;
  // Bodies and copies: run by the executable and its copy queue, never a kernel.
  if (ir::has(p, ir::kHostOnly)) return nullptr;
  using enum Primitive;
  switch (p) {
    case select: return on_stream<select_kernel>;
    case clamp: return on_stream<clamp_kernel>;
    case bitcast_convert_type: return on_stream<bitcast_kernel>;
    case convert_element_type: return on_stream<convert_kernel>;
    case iota: return on_stream<iota_kernel>;
    case constant: return on_stream<constant_kernel>;
    case broadcast_in_dim: return on_stream<broadcast_in_dim_kernel>;
    case reshape: return on_stream<reshape_kernel>;
    case transpose: return on_stream<transpose_kernel>;
    case reduce_sum: case reduce_max: case reduce_min:
      return on_stream<reduce_kernel>;
    case argmax: case argmin: return on_stream<arg_reduce_kernel>;
    case cumsum: case cummax: case cummin: return on_stream<cumulative_kernel>;
    case argsort: return on_stream<argsort_kernel>;
    case gather: return on_stream<gather_kernel>;
    case scatter_add: return on_stream<scatter_add_kernel>;
    case scatter: return on_stream<scatter_kernel>;
    case threefry2x32: return on_stream<threefry_kernel>;
    case dot_general: return on_stream<dot_general_kernel>;
    case slice: return on_stream<slice_kernel>;
    case dynamic_slice: return on_stream<dynamic_slice_kernel>;
    case dynamic_update_slice: return on_stream<dynamic_update_slice_kernel>;
    case concatenate: return on_stream<concatenate_kernel>;
    case device_put: case checkpoint_name: case stop_gradient:
      return on_stream<device_put_kernel>;
    case psum: return on_stream<psum_kernel>;
    case all_gather: return on_stream<all_gather_kernel>;
    case psum_scatter: return on_stream<psum_scatter_kernel>;
    case axis_index: return on_stream<axis_index_kernel>;
    case ir::op::fused: return on_stream<fused_kernel>;  // runs its body as one loop: a kernel, not a nested program
    default:
      return nullptr;
  }
}

WorkspaceSizeFn workspace_size(Primitive p) {
  switch (p) {
    case Primitive::dot_general: return dot_general_workspace;  // widening (f16, bf16), packing
    case Primitive::reduce_sum: case Primitive::reduce_max: case Primitive::reduce_min:
      return reduce_workspace;  // f16 and bf16 accumulators
    case ir::op::fused: return fused_workspace;  // each thread's block of every value
    case Primitive::all_gather: case Primitive::psum_scatter:
      return collective_workspace;  // each process's part made contiguous
    default:
      return nullptr;
  }
}

}  // namespace ferry::runtime::cpu
