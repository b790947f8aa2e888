// The CUDA backend's kernel table: each kernel reads its equation on the host, checks the buffers
// against it (as the CPU kernels do: a mismatch is INTERNAL, never an out-of-bounds access), and
// enqueues one or a few launches (runtime/cuda/launch.h) or copies on the compute stream. Nothing
// here waits for the device.
#include "runtime/cuda/kernels.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <variant>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "ferry/error.h"
#include "ir/ops.h"
#include "ir/type.h"
#include "runtime/axis_view.h"
#include "runtime/collective_layout.h"
#include "runtime/cuda/launch.h"

namespace ferry::runtime::cuda {

static_assert(kMaxDims == ir::kMaxRank, "the launches' dimension arrays hold every rank ferry allows");

[[noreturn]] void kernel_bug(const ir::Equation& eq, std::string_view what) {
  throw Error(ErrorCode::internal, fmt::format("{} (CUDA kernel): {}", primitive_name(eq.prim), what));
}

void check_launch(const ir::Equation& eq) {
  const char* error = last_launch_error();
  if (*error) throw Error(ErrorCode::internal, fmt::format("{} (CUDA kernel): launch failed: {}", primitive_name(eq.prim), error));
}

void check_cuda(int status, const char* what) {
  if (status != cudaSuccess)
    throw Error(ErrorCode::internal,
                fmt::format("CUDA: {} failed: {}", what, cudaGetErrorString(static_cast<cudaError_t>(status))));
}

namespace {

Dt dt(DType t) { return static_cast<Dt>(static_cast<int>(t)); }

template <class P> const P& params_of(const ir::Equation& eq) {
  if (const P* p = std::get_if<P>(&eq.params)) return *p;
  kernel_bug(eq, "equation carries parameters of the wrong kind");
}

void expect_arity(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                  size_t num_inputs, size_t num_outputs = 1) {
  if (inputs.size() != num_inputs || outputs.size() != num_outputs)
    kernel_bug(eq, fmt::format("expected {} input(s) and {} output(s), got {} and {}", num_inputs, num_outputs,
                               inputs.size(), outputs.size()));
}

void copy_bytes(void* dst, const void* src, int64_t bytes, Stream stream) {
  if (bytes > 0 && dst != src)
    check_cuda(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault,
                               static_cast<cudaStream_t>(stream.handle)),
               "cudaMemcpyAsync");
}

void strided(const ir::Equation& eq, const StridedCopy& c, const void* src, void* dst, Stream stream) {
  launch_strided_copy(c, src, dst, stream.handle);
  check_launch(eq);
}

// Operands of an elementwise equation: the result's size, or one element (read at stride 0).
void expect_same_count_or_scalar(const ir::Equation& eq, std::span<const ConstView> inputs, const MutView& out,
                                 bool allow_scalar) {
  const int64_t n = out.type->num_elements();
  for (const ConstView& in : inputs)
    if (in.type->num_elements() != n && !(allow_scalar && in.type->rank() == 0))
      kernel_bug(eq, fmt::format("operand {} does not match the result {}", ir::to_string(*in.type),
                                 ir::to_string(*out.type)));
}

// The device code's op: the same id (launch.h's Op is the op table's), for the elementwise ones.
Op op_of(const ir::Equation& eq) {
  if (!ir::has(eq.prim, ir::kElementwise) || eq.prim == Primitive::convert_element_type ||
      eq.prim == Primitive::bitcast_convert_type)
    kernel_bug(eq, "not an elementwise primitive");
  return static_cast<Op>(eq.prim);
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16; }

// Which operations each dtype has (the CPU kernels' set): a dtype the operation lacks is INTERNAL.
bool has_op(Op op, DType t) {
  if (op >= Op::eq && op <= Op::ge) return true;
  if (op == Op::select) return true;
  if (op == Op::clamp) return t != DType::boolean;
  if (is_float(t)) return op < Op::logical_not || (op >= Op::add && op <= Op::rem);
  if (t == DType::i32) {
    if (op < Op::add) return op == Op::neg || op == Op::abs || op == Op::sign || op == Op::logical_not;
    return true;
  }
  // bool
  return op == Op::logical_not || op == Op::add || op == Op::max || op == Op::mul || op == Op::min ||
         op == Op::logical_and || op == Op::logical_or || op == Op::logical_xor;
}

void elementwise_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                        Workspace&, Stream stream) {
  const Op op = op_of(eq);
  const bool unary = op < Op::add, three = op == Op::select || op == Op::clamp;
  expect_arity(eq, inputs, outputs, unary ? 1 : three ? 3 : 2);
  expect_same_count_or_scalar(eq, inputs, outputs[0], !unary);
  if (op == Op::clamp && inputs[1].type->num_elements() != outputs[0].type->num_elements())
    kernel_bug(eq, "operand and result differ");
  const DType t = op == Op::select ? outputs[0].type->dtype : inputs[0].type->dtype;
  if (op == Op::select) {
    if (inputs[0].type->dtype != DType::boolean) kernel_bug(eq, "predicate is not bool");
    if (inputs[1].type->dtype != t || inputs[2].type->dtype != t) kernel_bug(eq, "branch dtypes differ");
  } else {
    for (const ConstView& in : inputs)
      if (in.type->dtype != t) kernel_bug(eq, "operand dtypes differ");
    const DType want = op >= Op::eq && op <= Op::ge ? DType::boolean : t;
    if (outputs[0].type->dtype != want) kernel_bug(eq, "result dtype does not match");
  }
  if (!has_op(op, t))
    throw Error(ErrorCode::internal,
                fmt::format("{}: the CUDA backend has no kernel for dtype {}", primitive_name(eq.prim), dtype_name(t)));
  ElementwiseArgs a{};
  a.op = op;
  a.dtype = dt(t);
  a.n = outputs[0].type->num_elements();
  a.a = inputs[0].data;
  a.a_scalar = inputs[0].type->num_elements() == 1;
  if (inputs.size() > 1) a.b = inputs[1].data, a.b_scalar = inputs[1].type->num_elements() == 1;
  if (inputs.size() > 2) a.c = inputs[2].data, a.c_scalar = inputs[2].type->num_elements() == 1;
  a.y = outputs[0].data;
  launch_elementwise(a, stream.handle);
  check_launch(eq);
}

void convert_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                    Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 1);
  if (inputs[0].type->num_elements() != outputs[0].type->num_elements()) kernel_bug(eq, "operand and result differ in size");
  if (outputs[0].type->dtype != params_of<ir::ConvertParams>(eq).new_dtype) kernel_bug(eq, "result dtype does not match");
  launch_convert(dt(inputs[0].type->dtype), dt(outputs[0].type->dtype), inputs[0].data, outputs[0].data,
                 outputs[0].type->num_elements(), stream.handle);
  check_launch(eq);
}

void iota_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                 Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 0);
  const auto& p = params_of<ir::IotaParams>(eq);
  const ir::Type& out = *outputs[0].type;
  if (out.shape != p.shape || out.dtype != p.dtype || p.dimension < 0 ||
      p.dimension >= static_cast<int64_t>(p.shape.size()))
    kernel_bug(eq, "result does not match the parameters");
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(p.dimension) + 1; d < p.shape.size(); ++d) inner *= p.shape[d];
  launch_iota(dt(out.dtype), outputs[0].data, out.num_elements(), inner, p.shape[static_cast<size_t>(p.dimension)],
              stream.handle);
  check_launch(eq);
}

void constant_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                     Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 0);
  const auto& p = params_of<ir::ConstantParams>(eq);
  const ir::Type& out = *outputs[0].type;
  if (out.shape != p.shape || out.dtype != p.dtype) kernel_bug(eq, "result does not match the parameters");
  launch_fill(dt(out.dtype), p.value, outputs[0].data, out.num_elements(), stream.handle);
  check_launch(eq);
}

// reshape, bitcast_convert_type, device_put (and checkpoint_name, stop_gradient): the bytes as they
// are, on the stream (cudaMemcpyDefault finds the direction from the addresses).
void copy_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                 Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 1);
  if (inputs[0].type->size_bytes() != outputs[0].type->size_bytes()) kernel_bug(eq, "operand and result differ in bytes");
  copy_bytes(outputs[0].data, inputs[0].data, outputs[0].type->size_bytes(), stream);
}

void broadcast_in_dim_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                             std::span<const MutView> outputs, Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 1);
  const auto& p = params_of<ir::BroadcastInDimParams>(eq);
  const ir::Type &in = *inputs[0].type, &out = *outputs[0].type;
  if (out.shape != p.shape || p.broadcast_dimensions.size() != in.shape.size() || in.dtype != out.dtype)
    kernel_bug(eq, "operands do not match the parameters");
  StridedCopy c;
  c.rank = static_cast<int>(out.shape.size());
  c.elem_bytes = static_cast<int>(dtype_size(out.dtype));
  const auto in_strides = dense_strides(in.shape), out_strides = dense_strides(out.shape);
  for (size_t d = 0; d < out.shape.size(); ++d) {
    c.shape[d] = out.shape[d];
    c.dst_stride[d] = out_strides[d];
  }
  for (size_t i = 0; i < in.shape.size(); ++i) {
    const auto d = static_cast<size_t>(p.broadcast_dimensions[i]);
    if (d >= out.shape.size() || (in.shape[i] != out.shape[d] && in.shape[i] != 1)) kernel_bug(eq, "bad broadcast");
    c.src_stride[d] = in.shape[i] == 1 ? 0 : in_strides[i];
  }
  strided(eq, c, inputs[0].data, outputs[0].data, stream);
}

void transpose_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                      Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 1);
  const auto& perm = params_of<ir::TransposeParams>(eq).permutation;
  const ir::Type &in = *inputs[0].type, &out = *outputs[0].type;
  if (perm.size() != in.shape.size() || out.shape.size() != in.shape.size() || in.dtype != out.dtype)
    kernel_bug(eq, "permutation does not match the operand");
  StridedCopy c;
  c.rank = static_cast<int>(out.shape.size());
  c.elem_bytes = static_cast<int>(dtype_size(out.dtype));
  const auto in_strides = dense_strides(in.shape), out_strides = dense_strides(out.shape);
  for (size_t d = 0; d < perm.size(); ++d) {
    const auto from = static_cast<size_t>(perm[d]);
    if (from >= in.shape.size() || in.shape[from] != out.shape[d]) kernel_bug(eq, "result shape does not match");
    c.shape[d] = out.shape[d];
    c.src_stride[d] = in_strides[from];
    c.dst_stride[d] = out_strides[d];
  }
  strided(eq, c, inputs[0].data, outputs[0].data, stream);
}

void slice_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                  Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 1);
  const auto& p = params_of<ir::SliceParams>(eq);
  const ir::Type &in = *inputs[0].type, &out = *outputs[0].type;
  const size_t r = in.shape.size();
  if (p.start_indices.size() != r || out.shape.size() != r || (!p.strides.empty() && p.strides.size() != r))
    kernel_bug(eq, "one start, limit and stride per dimension");
  StridedCopy c;
  c.rank = static_cast<int>(r);
  c.elem_bytes = static_cast<int>(dtype_size(out.dtype));
  const auto in_strides = dense_strides(in.shape), out_strides = dense_strides(out.shape);
  for (size_t d = 0; d < r; ++d) {
    const int64_t start = p.start_indices[d], step = p.strides.empty() ? 1 : p.strides[d];
    if (out.shape[d] > 0 && (start < 0 || step < 1 || start + (out.shape[d] - 1) * step >= in.shape[d]))
      kernel_bug(eq, "slice leaves the operand");
    c.shape[d] = out.shape[d];
    c.src_offset += start * in_strides[d];
    c.src_stride[d] = in_strides[d] * step;
    c.dst_stride[d] = out_strides[d];
  }
  strided(eq, c, inputs[0].data, outputs[0].data, stream);
}

// The dynamic starts (scalar i32 values on the device): clamped by the copy kernel so the window
// stays inside (XLA's rule).
void set_starts(const ir::Equation& eq, StridedCopy& c, std::span<const ConstView> starts, const Shape& operand,
                const Shape& window) {
  if (starts.size() != operand.size() || window.size() != operand.size())
    kernel_bug(eq, "needs one start index per operand dimension");
  const auto strides = dense_strides(operand);
  c.num_starts = static_cast<int>(operand.size());
  for (size_t d = 0; d < operand.size(); ++d) {
    const ir::Type& t = *starts[d].type;
    if (t.dtype != DType::i32 || t.num_elements() != 1) kernel_bug(eq, "start indices must be scalar i32");
    if (window[d] > operand[d]) kernel_bug(eq, "window larger than the operand");
    c.starts[d] = starts[d].as<int32_t>();
    c.start_max[d] = operand[d] - window[d];
    c.start_stride[d] = strides[d];
  }
}

void dynamic_slice_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                          Workspace&, Stream stream) {
  if (inputs.empty() || outputs.size() != 1) kernel_bug(eq, "expects an operand, its starts and one result");
  const ir::Type &in = *inputs[0].type, &out = *outputs[0].type;
  if (params_of<ir::DynamicSliceParams>(eq).slice_sizes != out.shape || in.dtype != out.dtype)
    kernel_bug(eq, "result does not match the slice sizes");
  StridedCopy c;
  set_starts(eq, c, inputs.subspan(1), in.shape, out.shape);
  c.rank = static_cast<int>(out.shape.size());
  c.elem_bytes = static_cast<int>(dtype_size(out.dtype));
  c.dynamic_on_src = true;
  const auto in_strides = dense_strides(in.shape), out_strides = dense_strides(out.shape);
  for (size_t d = 0; d < out.shape.size(); ++d) {
    c.shape[d] = out.shape[d];
    c.src_stride[d] = in_strides[d];
    c.dst_stride[d] = out_strides[d];
  }
  strided(eq, c, inputs[0].data, outputs[0].data, stream);
}

void dynamic_update_slice_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                                 std::span<const MutView> outputs, Workspace&, Stream stream) {
  if (inputs.size() < 2 || outputs.size() != 1) kernel_bug(eq, "expects an operand, an update, its starts and one result");
  const ir::Type &in = *inputs[0].type, &upd = *inputs[1].type, &out = *outputs[0].type;
  if (in != out || upd.dtype != in.dtype || upd.shape.size() != in.shape.size())
    kernel_bug(eq, "operand, update and result do not match");
  StridedCopy c;
  set_starts(eq, c, inputs.subspan(2), in.shape, upd.shape);
  copy_bytes(outputs[0].data, inputs[0].data, out.size_bytes(), stream);  // nothing when in place
  c.rank = static_cast<int>(upd.shape.size());
  c.elem_bytes = static_cast<int>(dtype_size(out.dtype));
  c.dynamic_on_src = false;
  const auto upd_strides = dense_strides(upd.shape), out_strides = dense_strides(out.shape);
  for (size_t d = 0; d < upd.shape.size(); ++d) {
    c.shape[d] = upd.shape[d];
    c.src_stride[d] = upd_strides[d];
    c.dst_stride[d] = out_strides[d];
  }
  strided(eq, c, inputs[1].data, outputs[0].data, stream);
}

void concatenate_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                        Workspace&, Stream stream) {
  if (inputs.empty() || outputs.size() != 1) kernel_bug(eq, "expects operands and one result");
  const auto axis = static_cast<size_t>(params_of<ir::ConcatenateParams>(eq).dimension);
  const ir::Type& out = *outputs[0].type;
  if (axis >= out.shape.size()) kernel_bug(eq, "dimension out of range");
  const auto out_strides = dense_strides(out.shape);
  int64_t at = 0;
  for (const ConstView& in : inputs) {
    const ir::Type& t = *in.type;
    if (t.dtype != out.dtype || t.shape.size() != out.shape.size()) kernel_bug(eq, "operands do not match the result");
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (d != axis && t.shape[d] != out.shape[d]) kernel_bug(eq, "operands do not match the result");
    if (at + t.shape[axis] > out.shape[axis]) kernel_bug(eq, "operands overflow the result");
    StridedCopy c;
    c.rank = static_cast<int>(t.shape.size());
    c.elem_bytes = static_cast<int>(dtype_size(out.dtype));
    const auto in_strides = dense_strides(t.shape);
    for (size_t d = 0; d < t.shape.size(); ++d) {
      c.shape[d] = t.shape[d];
      c.src_stride[d] = in_strides[d];
      c.dst_stride[d] = out_strides[d];
    }
    c.dst_offset = at * out_strides[axis];
    strided(eq, c, in.data, outputs[0].data, stream);
    at += t.shape[axis];
  }
  if (at != out.shape[axis]) kernel_bug(eq, "operands do not fill the result");
}

void reduce_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                   Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 1);
  const auto& axes = params_of<ir::ReduceParams>(eq).axes;
  const ir::Type &in = *inputs[0].type, &out = *outputs[0].type;
  if (in.dtype != out.dtype) kernel_bug(eq, "result dtype differs from the operand's");
  ReduceArgs r;
  r.op = eq.prim == Primitive::reduce_sum ? ReduceOp::sum : eq.prim == Primitive::reduce_max ? ReduceOp::max : ReduceOp::min;
  r.dtype = dt(in.dtype);
  const auto strides = dense_strides(in.shape);
  r.out_count = 1;
  r.reduced_count = 1;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end()) {
      r.reduced_shape[r.reduced_rank] = in.shape[d];
      r.reduced_stride[r.reduced_rank++] = strides[d];
      r.reduced_count *= in.shape[d];
    } else {
      r.kept_shape[r.kept_rank] = in.shape[d];
      r.kept_stride[r.kept_rank++] = strides[d];
      r.out_count *= in.shape[d];
    }
  }
  if (r.out_count != out.num_elements()) kernel_bug(eq, "result shape does not match the axes");
  launch_reduce(r, inputs[0].data, outputs[0].data, stream.handle);
  check_launch(eq);
}

AxisView around(const ir::Equation& eq, const Shape& shape, int64_t axis) {
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) kernel_bug(eq, "axis out of range");
  return axis_view(shape, axis);
}

void arg_reduce_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                       Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 1);
  const ir::Type& in = *inputs[0].type;
  if (outputs[0].type->dtype != DType::i32 || in.dtype == DType::boolean) kernel_bug(eq, "operand or result dtype");
  const AxisView v = around(eq, in.shape, params_of<ir::ArgReduceParams>(eq).axis);
  if (v.n == 0 || outputs[0].type->num_elements() != v.outer * v.inner) kernel_bug(eq, "result shape mismatch");
  launch_arg_reduce(eq.prim == Primitive::argmax, dt(in.dtype), inputs[0].data, outputs[0].as<int32_t>(), v.outer, v.n,
                    v.inner, stream.handle);
  check_launch(eq);
}

void cumulative_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                       Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 1);
  const ir::Type& in = *inputs[0].type;
  if (*outputs[0].type != in || in.dtype == DType::boolean) kernel_bug(eq, "result type differs from the operand's");
  const auto& p = params_of<ir::CumulativeParams>(eq);
  const AxisView v = around(eq, in.shape, p.axis);
  const CumulativeOp op = eq.prim == Primitive::cumsum   ? CumulativeOp::sum
                          : eq.prim == Primitive::cummax ? CumulativeOp::max
                                                         : CumulativeOp::min;
  launch_cumulative(op, dt(in.dtype), inputs[0].data, outputs[0].data, v.outer, v.n, v.inner, p.reverse, stream.handle);
  check_launch(eq);
}

void argsort_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                    Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 1);
  const ir::Type& in = *inputs[0].type;
  if (outputs[0].type->dtype != DType::i32 || outputs[0].type->shape != in.shape) kernel_bug(eq, "result must be i32 of the operand's shape");
  const auto& p = params_of<ir::SortParams>(eq);
  const AxisView v = around(eq, in.shape, p.axis);
  launch_argsort(dt(in.dtype), inputs[0].data, outputs[0].as<int32_t>(), v.outer, v.n, v.inner, p.descending, p.total_order,
                 stream.handle);
  check_launch(eq);
}

bool contains(const ir::Dims& d, int64_t v) { return std::find(d.begin(), d.end(), v) != d.end(); }

void gather_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                   Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 2);
  const auto& p = params_of<ir::GatherParams>(eq);
  const ir::Type &x = *inputs[0].type, &ix = *inputs[1].type, &out = *outputs[0].type;
  const size_t r = x.shape.size();
  if (ix.dtype != DType::i32 || ix.rank() < 1 || p.slice_sizes.size() != r || out.dtype != x.dtype ||
      ix.shape.back() != static_cast<int64_t>(p.start_index_map.size()))
    kernel_bug(eq, "operands do not match the dimension numbers");
  GatherArgs g;
  g.out_rank = static_cast<int>(out.shape.size());
  g.operand_rank = static_cast<int>(r);
  g.elem_bytes = static_cast<int>(dtype_size(x.dtype));
  int64_t batches = 1;
  for (size_t d = 0; d < out.shape.size(); ++d) {
    g.out_shape[d] = out.shape[d];
    g.out_is_offset[d] = contains(p.offset_dims, static_cast<int64_t>(d));
    if (!g.out_is_offset[d]) batches *= out.shape[d];
  }
  size_t k = 0;
  for (size_t d = 0; d < r; ++d) {
    g.operand_shape[d] = x.shape[d];
    g.slice_sizes[d] = p.slice_sizes[d];
    if (p.slice_sizes[d] > x.shape[d] || p.slice_sizes[d] < 0) kernel_bug(eq, "slice larger than the operand");
    if (contains(p.collapsed_slice_dims, static_cast<int64_t>(d))) {
      g.window_out_dim[d] = -1;
      continue;
    }
    if (k >= p.offset_dims.size()) kernel_bug(eq, "offset_dims do not match");
    const auto od = static_cast<size_t>(p.offset_dims[k++]);
    if (od >= out.shape.size() || out.shape[od] != p.slice_sizes[d]) kernel_bug(eq, "result shape does not match");
    g.window_out_dim[d] = static_cast<int>(od);
  }
  g.num_index = static_cast<int>(p.start_index_map.size());
  for (size_t j = 0; j < p.start_index_map.size(); ++j) {
    if (p.start_index_map[j] < 0 || p.start_index_map[j] >= static_cast<int64_t>(r)) kernel_bug(eq, "bad start_index_map");
    g.start_index_map[j] = static_cast<int>(p.start_index_map[j]);
  }
  if (out.num_elements() > 0 && ix.num_elements() != batches * g.num_index) kernel_bug(eq, "indices do not match the result");
  g.clip = p.mode == ir::kGatherClip;
  // The fill value of an out-of-bounds window (jax.lax's defaults), as the dtype's bytes.
  if (p.mode != ir::kGatherFillZero) {
    switch (x.dtype) {
      case DType::f32: {
        const float v = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(g.fill, &v, sizeof v);
        break;
      }
      case DType::f64: {
        const double v = std::numeric_limits<double>::quiet_NaN();
        std::memcpy(g.fill, &v, sizeof v);
        break;
      }
      case DType::f16: g.fill[0] = 0x00, g.fill[1] = 0x7e; break;
      case DType::bf16: g.fill[0] = 0xc0, g.fill[1] = 0x7f; break;
      case DType::i32: {
        const int32_t v = std::numeric_limits<int32_t>::min();
        std::memcpy(g.fill, &v, sizeof v);
        break;
      }
      case DType::boolean: g.fill[0] = 1; break;
    }
  }
  launch_gather(g, inputs[0].data, inputs[1].as<int32_t>(), outputs[0].data, stream.handle);
  check_launch(eq);
}

// The operand copied to the result, and the arguments of scatter_add's and scatter's launches;
// false where there is nothing to scatter.
bool prepare_scatter(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                     Stream stream, ScatterArgs& s) {
  expect_arity(eq, inputs, outputs, 3);
  const auto& p = params_of<ir::ScatterParams>(eq);
  const ir::Type &x = *inputs[0].type, &ix = *inputs[1].type, &u = *inputs[2].type, &out = *outputs[0].type;
  const size_t r = x.shape.size();
  if (ix.dtype != DType::i32 || ix.rank() < 1 || out != x || u.dtype != x.dtype ||
      (x.dtype == DType::boolean && eq.prim == Primitive::scatter_add) ||
      ix.shape.back() != static_cast<int64_t>(p.scatter_dims_to_operand_dims.size()))
    kernel_bug(eq, "operands do not match the dimension numbers");
  copy_bytes(outputs[0].data, inputs[0].data, out.size_bytes(), stream);
  s.dtype = dt(x.dtype);
  s.update_rank = static_cast<int>(u.shape.size());
  s.operand_rank = static_cast<int>(r);
  int64_t batches = 1;
  for (size_t d = 0; d < u.shape.size(); ++d) {
    s.update_shape[d] = u.shape[d];
    s.update_is_window[d] = contains(p.update_window_dims, static_cast<int64_t>(d));
    if (!s.update_is_window[d]) batches *= u.shape[d];
  }
  size_t k = 0;
  for (size_t d = 0; d < r; ++d) {
    s.operand_shape[d] = x.shape[d];
    s.window[d] = 1;
    if (contains(p.inserted_window_dims, static_cast<int64_t>(d))) {
      s.window_update_dim[d] = -1;
      continue;
    }
    if (k >= p.update_window_dims.size()) kernel_bug(eq, "update_window_dims do not match");
    const auto ud = static_cast<size_t>(p.update_window_dims[k++]);
    if (ud >= u.shape.size() || u.shape[ud] > x.shape[d]) kernel_bug(eq, "update window does not fit");
    s.window[d] = u.shape[ud];
    s.window_update_dim[d] = static_cast<int>(ud);
  }
  s.num_index = static_cast<int>(p.scatter_dims_to_operand_dims.size());
  for (size_t j = 0; j < p.scatter_dims_to_operand_dims.size(); ++j) {
    const int64_t d = p.scatter_dims_to_operand_dims[j];
    if (d < 0 || d >= static_cast<int64_t>(r)) kernel_bug(eq, "bad scatter_dims_to_operand_dims");
    s.scatter_dims_to_operand_dims[j] = static_cast<int>(d);
  }
  if (u.num_elements() == 0 || out.num_elements() == 0) return false;
  if (ix.num_elements() != batches * s.num_index) kernel_bug(eq, "indices do not match the updates");
  s.clip = p.mode == ir::kGatherClip;
  s.elem_bytes = static_cast<int>(dtype_size(x.dtype));
  return true;
}

void scatter_add_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                        Workspace&, Stream stream) {
  ScatterArgs s;
  if (!prepare_scatter(eq, inputs, outputs, stream, s)) return;
  launch_scatter_add(s, inputs[2].data, inputs[1].as<int32_t>(), outputs[0].data, stream.handle);
  check_launch(eq);
}

void scatter_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                    Workspace& workspace, Stream stream) {
  ScatterArgs s;
  if (!prepare_scatter(eq, inputs, outputs, stream, s)) return;
  const int64_t n = outputs[0].type->num_elements();
  launch_scatter(s, inputs[2].data, inputs[1].as<int32_t>(), outputs[0].data, workspace.take<int32_t>(n), n,
                 stream.handle);
  check_launch(eq);
}

// scatter's claims: one i32 per operand element.
int64_t scatter_workspace(const ir::Equation&, std::span<const ir::Type* const> inputs, std::span<const ir::Type* const>) {
  WorkspaceSize size;
  if (!inputs.empty()) size.add<int32_t>(inputs[0]->num_elements());
  return size.bytes;
}

void threefry_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                     Workspace&, Stream stream) {
  expect_arity(eq, inputs, outputs, 4, 2);
  const int64_t n = inputs[2].type->num_elements();
  for (const auto& in : inputs)
    if (in.type->dtype != DType::i32 || (in.type->num_elements() != n && in.type->rank() != 0))
      kernel_bug(eq, "operands must be i32 of the counts' size or rank-0");
  for (const auto& out : outputs)
    if (out.type->dtype != DType::i32 || out.type->num_elements() != n) kernel_bug(eq, "results must match the counts");
  launch_threefry(inputs[0].as<uint32_t>(), inputs[0].type->rank() == 0, inputs[1].as<uint32_t>(),
                  inputs[1].type->rank() == 0, inputs[2].as<uint32_t>(), inputs[3].as<uint32_t>(),
                  outputs[0].as<uint32_t>(), outputs[1].as<uint32_t>(), n, stream.handle);
  check_launch(eq);
}

}  // namespace

KernelFn kernel(Primitive p) {
  // One kernel for the elementwise arithmetic (the device code switches on the op, launch.h).
  if (ir::has(p, ir::kUnary) || ir::has(p, ir::kBinary) || ir::has(p, ir::kComparison) || p == Primitive::select ||
      p == Primitive::clamp)
    return elementwise_kernel;
  // Bodies and copies: run by the executable and the copy engine, never a kernel.
  if (ir::has(p, ir::kHostOnly)) return nullptr;
  using enum Primitive;
  switch (p) {
    case convert_element_type: return convert_kernel;
    case iota: return iota_kernel;
    case constant: return constant_kernel;
    case bitcast_convert_type: case reshape: case device_put: case checkpoint_name: case stop_gradient:
      return copy_kernel;
    case broadcast_in_dim: return broadcast_in_dim_kernel;
    case transpose: return transpose_kernel;
    case reduce_sum: case reduce_max: case reduce_min: return reduce_kernel;
    case argmax: case argmin: return arg_reduce_kernel;
    case cumsum: case cummax: case cummin: return cumulative_kernel;
    case argsort: return argsort_kernel;
    case gather: return gather_kernel;
    case scatter_add: return scatter_add_kernel;
    case scatter: return scatter_kernel;
    case threefry2x32: return threefry_kernel;
    case dot_general: return dot_general_kernel;
    case slice: return slice_kernel;
    case dynamic_slice: return dynamic_slice_kernel;
    case dynamic_update_slice: return dynamic_update_slice_kernel;
    case concatenate: return concatenate_kernel;
    case psum: case all_gather: case psum_scatter: case axis_index: return collective_kernel(p);
    default:  // fused: no fused kernel yet, so compile does not fuse for this backend
      return nullptr;
  }
}

WorkspaceSizeFn workspace_size(Primitive p) {
  if (p == Primitive::all_gather || p == Primitive::psum_scatter) return collective_workspace;  // parts made contiguous
  if (p == Primitive::scatter) return scatter_workspace;
  return p == Primitive::dot_general ? dot_general_workspace : nullptr;
}

std::vector<int64_t> dense_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = stride;
    stride *= shape[d];
  }
  return s;
}

}  // namespace ferry::runtime::cuda
