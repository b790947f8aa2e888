// Values without inputs (iota, constant) and the shape kernels (broadcast_in_dim, reshape,
// transpose). Data movement goes through strided_copy, which is exact for every dtype.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/check.h"
#include "runtime/cpu/convert.h"
#include "runtime/cpu/dims.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/strided_copy.h"

namespace ferry::runtime::cpu {
namespace {

// Elements one task of a fill or copy writes at least (64 KiB of f32).
constexpr int64_t kGrainElements = 16384;

}  // namespace

void iota_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                 std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 0);
  const auto& p = params_of<ir::IotaParams>(eq);
  const ir::Type& out = *outputs[0].type;
  if (out.num_elements() == 0) return;
  if (p.dimension < 0 || p.dimension >= out.rank()) kernel_bug(eq, "dimension out of range");
  const auto d = static_cast<size_t>(p.dimension);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < d; ++i) outer *= out.shape[i];
  for (size_t i = d + 1; i < out.shape.size(); ++i) inner *= out.shape[i];
  const int64_t n = out.shape[d];
  visit_dtype(out.dtype, [&]<class T>(TypeTag<T>) {
    T* y = outputs[0].as<T>();
    // The first block of n * inner values, each value converted once, then copies of it.
    parallel_for(n, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, inner)), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) std::fill_n(y + i * inner, inner, convert_value<T>(static_cast<int32_t>(i)));
    });
    parallel_for(outer - 1, std::max<int64_t>(1, kGrainElements / (n * inner)), [&](int64_t b, int64_t e) {
      for (int64_t o = b + 1; o < e + 1; ++o) std::copy_n(y, n * inner, y + o * n * inner);
    });
  });
}

void constant_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                     std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 0);
  const auto& p = params_of<ir::ConstantParams>(eq);
  const ir::Type& out = *outputs[0].type;
  visit_dtype(out.dtype, [&]<class T>(TypeTag<T>) {
    T* y = outputs[0].as<T>();
    const T v = convert_value<T>(p.value);
    parallel_for(out.num_elements(), kGrainElements, [&](int64_t b, int64_t e) { std::fill(y + b, y + e, v); });
  });
}

// Operand dimension i is output dimension broadcast_dimensions[i]; size-1 operand dimensions and
// output dimensions without an operand dimension read with stride 0.
void broadcast_in_dim_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                             std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 1);
  const auto& p = params_of<ir::BroadcastInDimParams>(eq);
  const ir::Type& in = *inputs[0].type;
  const ir::Type& out = *outputs[0].type;
  if (static_cast<int64_t>(p.broadcast_dimensions.size()) != in.rank()) kernel_bug(eq, "one dimension per operand axis");
  Dims64 in_strides(in.shape.size()), out_strides(out.shape.size()), src_strides(out.shape.size(), 0);
  dense_strides(in.shape, in_strides);
  dense_strides(out.shape, out_strides);
  for (size_t i = 0; i < in.shape.size(); ++i) {
    const int64_t d = p.broadcast_dimensions[i];
    if (d < 0 || d >= out.rank()) kernel_bug(eq, "broadcast dimension out of range");
    const int64_t size = in.shape[i];
    if (size != 1 && size != out.shape[static_cast<size_t>(d)]) kernel_bug(eq, "operand size does not fit");
    if (size != 1) src_strides[static_cast<size_t>(d)] = in_strides[i];
  }
  if (out.num_elements() > 0 && in.num_elements() == 0) kernel_bug(eq, "empty operand, nonempty result");
  strided_copy(dtype_size(out.dtype), out.shape, outputs[0].data, out_strides, inputs[0].data, src_strides);
}

void reshape_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                    std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 1);
  if (inputs[0].type->size_bytes() != outputs[0].type->size_bytes()) kernel_bug(eq, "sizes differ");
  if (outputs[0].type->size_bytes() > 0 && outputs[0].data != inputs[0].data)  // in place: nothing to move
    parallel_memcpy(outputs[0].data, inputs[0].data, outputs[0].type->size_bytes());
}

// Output dimension i is operand dimension permutation[i].
void transpose_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                      std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 1);
  const auto& perm = params_of<ir::TransposeParams>(eq).permutation;
  const ir::Type& in = *inputs[0].type;
  const ir::Type& out = *outputs[0].type;
  const size_t r = in.shape.size();
  if (perm.size() != r || out.shape.size() != r) kernel_bug(eq, "permutation rank mismatch");
  Dims64 in_strides(r), out_strides(r), src_strides(r);
  DimVec<bool> seen(r, false);
  dense_strides(in.shape, in_strides);
  dense_strides(out.shape, out_strides);
  for (size_t i = 0; i < r; ++i) {
    const int64_t d = perm[i];
    if (d < 0 || d >= static_cast<int64_t>(r) || seen[static_cast<size_t>(d)]) kernel_bug(eq, "not a permutation");
    seen[static_cast<size_t>(d)] = true;
    if (out.shape[i] != in.shape[static_cast<size_t>(d)]) kernel_bug(eq, "result shape does not match");
    src_strides[i] = in_strides[static_cast<size_t>(d)];
  }
  strided_copy(dtype_size(out.dtype), out.shape, outputs[0].data, out_strides, inputs[0].data, src_strides);
}

}  // namespace ferry::runtime::cpu
