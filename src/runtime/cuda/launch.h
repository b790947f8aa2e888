// Private to the CUDA backend: the device code's interface. The .cu files (compiled by nvcc) see
// only these plain structs and enums, never ferry's IR, so nvcc compiles little: the equation is
// read on the host (kernels.cpp, compiled by the C++ compiler) and turned into one of these
// launches on the compute stream. Element types are ferry's DType numbers; a stream is the
// cudaStream_t as a pointer. Every launch returns at once; errors surface at the next check.
#pragma once

#include <cstdint>

namespace ferry::runtime::cuda {

// Dimensions a launch walks. Equal to ir::kMaxRank (checked in kernels.cpp).
inline constexpr int kMaxDims = 32;

enum class Dt : int { f32 = 0, f64 = 1, f16 = 2, bf16 = 3, i32 = 4, boolean = 5 };

// Elementwise operations, one enum for unary, binary, comparison, select and clamp (the kernel
// switches on it per element: one instantiation per dtype, not per operation).
// The op table's ids (ir/ops.def, read here without the rest of the IR: nvcc compiles the device
// code as C++17), so an equation's primitive is its Op as it is.
enum class Op : int {
#define FERRY_OP(id, ...) id,
#define FERRY_COMPILER_OP(id, ...) id,
#include "ir/ops.def"
#undef FERRY_OP
#undef FERRY_COMPILER_OP
};

// y[i] = op(a[i], b[i], c[i]) for i < n; an operand flagged scalar is read at index 0. `dtype` is
// the operands' (for select: the branches'; the predicate is bool), the result is bool for
// comparisons and `dtype` otherwise.
struct ElementwiseArgs {
  Op op;
  Dt dtype;
  int64_t n;
  const void* a;
  const void* b;
  const void* c;
  bool a_scalar, b_scalar, c_scalar;
  void* y;
};
void launch_elementwise(const ElementwiseArgs& args, void* stream);

// y[i] = convert(x[i]) from one dtype to another with XLA's rules (the CPU kernel's).
void launch_convert(Dt from, Dt to, const void* x, void* y, int64_t n, void* stream);

// y = `value` everywhere (constant), or the index along `dimension` of `shape` (iota; `inner` is
// the product of the dimensions after it, `size` the dimension's size).
void launch_fill(Dt dtype, double value, void* y, int64_t n, void* stream);
void launch_iota(Dt dtype, void* y, int64_t n, int64_t inner, int64_t size, void* stream);

// The one data-movement kernel: for every index of `shape`, copies the element at
// src + src_offset + sum idx_d * src_stride[d] to dst + dst_offset + sum idx_d * dst_stride[d]
// (offsets and strides in elements of `elem_bytes`). It serves broadcast (stride 0), transpose,
// slice, concatenate and, with `dynamic` starts, dynamic_slice (read side) and
// dynamic_update_slice (write side): the start of dimension d is the i32 at starts[d], clamped to
// [0, start_max[d]], times start_stride[d], added to the dynamic side's offset.
struct StridedCopy {
  int rank = 0;
  int elem_bytes = 4;
  int64_t shape[kMaxDims] = {};
  int64_t src_stride[kMaxDims] = {};
  int64_t dst_stride[kMaxDims] = {};
  int64_t src_offset = 0, dst_offset = 0;
  // Dynamic starts (dynamic_slice / dynamic_update_slice); null pointers are none.
  bool dynamic_on_src = true;
  int num_starts = 0;
  const int32_t* starts[kMaxDims] = {};
  int64_t start_max[kMaxDims] = {};
  int64_t start_stride[kMaxDims] = {};
};
void launch_strided_copy(const StridedCopy& copy, const void* src, void* dst, void* stream);

// gather (XLA's, index vector in the last dimension of the indices), one thread per output element.
struct GatherArgs {
  int out_rank = 0, operand_rank = 0, elem_bytes = 4;
  int64_t out_shape[kMaxDims] = {};
  bool out_is_offset[kMaxDims] = {};        // output dimension d indexes the window
  int window_out_dim[kMaxDims] = {};        // per operand dimension: its output offset dimension, -1 collapsed
  int64_t operand_shape[kMaxDims] = {};
  int64_t slice_sizes[kMaxDims] = {};
  int num_index = 0;                        // K: the index vector's length
  int start_index_map[kMaxDims] = {};
  bool clip = false;
  unsigned char fill[8] = {};               // the element out-of-bounds windows hold
};
void launch_gather(const GatherArgs& args, const void* operand, const int32_t* indices, void* out, void* stream);

// scatter_add: out (already holding the operand) += each update window, one thread per update
// element, with atomic adds (float sums may round in a different order than the CPU's).
struct ScatterArgs {
  Dt dtype = Dt::f32;
  int update_rank = 0, operand_rank = 0;
  int64_t update_shape[kMaxDims] = {};
  bool update_is_window[kMaxDims] = {};
  int window_update_dim[kMaxDims] = {};     // per operand dimension: its update window dimension, -1 inserted
  int64_t operand_shape[kMaxDims] = {};
  int64_t window[kMaxDims] = {};            // the window's size per operand dimension
  int num_index = 0;
  int scatter_dims_to_operand_dims[kMaxDims] = {};
  bool clip = false;
  int elem_bytes = 4;  // scatter: the element size it copies
};
void launch_scatter_add(const ScatterArgs& args, const void* updates, const int32_t* indices, void* out, void* stream);
// scatter (overwrite): of overlapping windows the last index vector's update stays; `last` is
// workspace of one i32 per operand element.
void launch_scatter(const ScatterArgs& args, const void* updates, const int32_t* indices, void* out, int32_t* last,
                    int64_t operand_elements, void* stream);

// reduce_sum / reduce_max / reduce_min: each output element (kept dimensions, row-major) combines
// the elements of the reduced dimensions. One block per output element.
enum class ReduceOp : int { sum, max, min };
struct ReduceArgs {
  ReduceOp op = ReduceOp::sum;
  Dt dtype = Dt::f32;
  int kept_rank = 0, reduced_rank = 0;
  int64_t kept_shape[kMaxDims] = {}, kept_stride[kMaxDims] = {};
  int64_t reduced_shape[kMaxDims] = {}, reduced_stride[kMaxDims] = {};
  int64_t out_count = 0, reduced_count = 0;
};
void launch_reduce(const ReduceArgs& args, const void* x, void* y, void* stream);

// argmax/argmin (i32 result) and cumsum/cummax/cummin along an axis of an [outer, n, inner] view,
// one thread per line.
void launch_arg_reduce(bool is_max, Dt dtype, const void* x, int32_t* y, int64_t outer, int64_t n, int64_t inner,
                       void* stream);
// argsort along the n axis: each line's positions in jax.lax.sort's order, stable.
void launch_argsort(Dt dtype, const void* x, int32_t* y, int64_t outer, int64_t n, int64_t inner, bool descending,
                    bool total_order, void* stream);
enum class CumulativeOp : int { sum, max, min };
void launch_cumulative(CumulativeOp op, Dt dtype, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                       bool reverse, void* stream);

// threefry2x32 (jax.random's), keys at stride 0 or 1.
void launch_threefry(const uint32_t* k0, bool k0_scalar, const uint32_t* k1, bool k1_scalar, const uint32_t* x0,
                     const uint32_t* x1, uint32_t* y0, uint32_t* y1, int64_t n, void* stream);

// A dot_general of integer operands (cuBLAS has no i32 GEMM with wrap-around): out[b, m, n] =
// sum_k lhs[b, m, k] * rhs[b, k, n] over dense [batch, M, K] and [batch, K, N] operands.
void launch_int_matmul(const int32_t* lhs, const int32_t* rhs, int32_t* out, int64_t batch, int64_t m, int64_t n,
                       int64_t k, void* stream);

// The last launch's error, as text (empty when none): kernels.cpp turns it into an ferry Error.
const char* last_launch_error();

}  // namespace ferry::runtime::cuda
