// The CPU backend's kernel table: every primitive has a kernel except those the executable runs
// itself (bodies, and the asynchronous copies of its copy queue).
#include "runtime/cpu/kernels.h"

#include "runtime/cpu/kernel_groups.h"

namespace ferry::runtime::cpu {

KernelFn kernel(Primitive p) {
  using enum Primitive;
  switch (p) {
    case neg: case exp: case log: case sin: case cos: case tanh: case logistic: case sqrt: case rsqrt:
    case abs: case sign: case erf: case erf_inv: case log1p: case expm1: case floor: case ceil: case round:
    case logical_not:
      return unary_kernel;
    case add: case sub: case mul: case div: case max: case min: case pow: case rem: case logical_and:
    case logical_or: case logical_xor: case shift_left: case shift_right_logical:
      return binary_kernel;
    case eq: case ne: case lt: case le: case gt: case ge:
      return compare_kernel;
    case select: return select_kernel;
    case clamp: return clamp_kernel;
    case bitcast_convert_type: return bitcast_kernel;
    case convert_element_type: return convert_kernel;
    case iota: return iota_kernel;
    case constant: return constant_kernel;
    case broadcast_in_dim: return broadcast_in_dim_kernel;
    case reshape: return reshape_kernel;
    case transpose: return transpose_kernel;
    case reduce_sum: case reduce_max: case reduce_min:
      return reduce_kernel;
    case argmax: case argmin: return arg_reduce_kernel;
    case cumsum: case cummax: case cummin: return cumulative_kernel;
    case gather: return gather_kernel;
    case scatter_add: return scatter_add_kernel;
    case threefry2x32: return threefry_kernel;
    case dot_general: return dot_general_kernel;
    case slice: return slice_kernel;
    case dynamic_slice: return dynamic_slice_kernel;
    case dynamic_update_slice: return dynamic_update_slice_kernel;
    case concatenate: return concatenate_kernel;
    case device_put: case checkpoint_name: case stop_gradient:
      return device_put_kernel;
    case fused: return fused_kernel;  // runs its body as one loop: a kernel, not a nested program
    case scan: case checkpoint: case custom_vjp: case cond: case while_loop:  // bodies: run by the executable
    case copy_start: case copy_done:  // asynchronous copies: run by the executable's copy queue
      return nullptr;
  }
  return nullptr;
}

WorkspaceSizeFn workspace_size(Primitive p) {
  switch (p) {
    case Primitive::dot_general: return dot_general_workspace;  // widening (f16, bf16), packing
    case Primitive::reduce_sum: case Primitive::reduce_max: case Primitive::reduce_min:
      return reduce_workspace;  // f16 and bf16 accumulators
    case Primitive::fused: return fused_workspace;  // each thread's block of every value
    default:
      return nullptr;
  }
}

}  // namespace ferry::runtime::cpu
