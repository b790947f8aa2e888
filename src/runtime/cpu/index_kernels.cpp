// slice, dynamic_slice, dynamic_update_slice and concatenate: exact data movement for every dtype.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/check.h"
#include "runtime/cpu/dims.h"
#include "runtime/cpu/dtype_dispatch.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/strided_copy.h"

namespace ferry::runtime::cpu {
namespace {

// Dynamic starts are scalar i32 values; each is clamped so the window [start, start + size) lies
// inside [0, dim) (XLA's rule), so no start can move a copy out of bounds.
Dims64 clamped_starts(const ir::Equation& eq, std::span<const ConstView> starts, const Shape& operand,
                                    const Shape& window) {
  if (starts.size() != operand.size() || window.size() != operand.size())
    kernel_bug(eq, "needs one start index per operand dimension");
  Dims64 out(operand.size());
  for (size_t d = 0; d < operand.size(); ++d) {
    const ir::Type& t = *starts[d].type;
    if (t.dtype != DType::i32 || t.num_elements() != 1) kernel_bug(eq, "start indices must be scalar i32");
    if (window[d] > operand[d]) kernel_bug(eq, "window larger than the operand");
    out[d] = std::clamp<int64_t>(*starts[d].as<int32_t>(), 0, operand[d] - window[d]);
  }
  return out;
}

Dims64 strides_of(const Shape& shape) {
  Dims64 s(shape.size());
  dense_strides(shape, s);
  return s;
}

}  // namespace

void slice_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                  std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 1);
  const auto& p = params_of<ir::SliceParams>(eq);
  const ir::Type& in = *inputs[0].type;
  const ir::Type& out = *outputs[0].type;
  const size_t r = in.shape.size();
  if (p.start_indices.size() != r || out.shape.size() != r || (!p.strides.empty() && p.strides.size() != r))
    kernel_bug(eq, "one start, limit and stride per dimension");
  const Dims64 in_strides = strides_of(in.shape), out_strides = strides_of(out.shape);
  Dims64 src(r);
  int64_t offset = 0;
  for (size_t d = 0; d < r; ++d) {
    const int64_t start = p.start_indices[d], step = p.strides.empty() ? 1 : p.strides[d];
    if (out.shape[d] > 0 && (start < 0 || step < 1 || start + (out.shape[d] - 1) * step >= in.shape[d]))
      kernel_bug(eq, "slice leaves the operand");
    offset += start * in_strides[d];
    src[d] = in_strides[d] * step;
  }
  if (out.num_elements() == 0) return;
  const size_t es = dtype_size(out.dtype);
  strided_copy(es, out.shape, outputs[0].data, out_strides, inputs[0].as<char>() + offset * static_cast<int64_t>(es),
               src);
}

void dynamic_slice_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                          std::span<const MutView> outputs, Workspace& workspace) {
  if (inputs.empty() || outputs.size() != 1) kernel_bug(eq, "expects an operand, start indices and one result");
  const ir::Type& in = *inputs[0].type;
  const ir::Type& out = *outputs[0].type;
  const Dims64 starts = clamped_starts(eq, inputs.subspan(1), in.shape, out.shape);
  if (out.num_elements() == 0) return;
  const Dims64 in_strides = strides_of(in.shape), out_strides = strides_of(out.shape);
  int64_t offset = 0;
  for (size_t d = 0; d < starts.size(); ++d) offset += starts[d] * in_strides[d];
  const size_t es = dtype_size(out.dtype);
  strided_copy(es, out.shape, outputs[0].data, out_strides, inputs[0].as<char>() + offset * static_cast<int64_t>(es),
               in_strides);
}

void dynamic_update_slice_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                                 std::span<const MutView> outputs, Workspace& workspace) {
  if (inputs.size() < 2 || outputs.size() != 1) kernel_bug(eq, "expects operand, update, start indices, one result");
  const ir::Type& in = *inputs[0].type;
  const ir::Type& upd = *inputs[1].type;
  const ir::Type& out = *outputs[0].type;
  if (in.size_bytes() != out.size_bytes() || upd.dtype != out.dtype) kernel_bug(eq, "operand and result differ");
  const Dims64 starts = clamped_starts(eq, inputs.subspan(2), in.shape, upd.shape);
  if (out.num_elements() == 0) return;
  if (outputs[0].data != inputs[0].data)
    std::memcpy(outputs[0].data, inputs[0].data, static_cast<size_t>(out.size_bytes()));
  const Dims64 out_strides = strides_of(out.shape), upd_strides = strides_of(upd.shape);
  int64_t offset = 0;
  for (size_t d = 0; d < starts.size(); ++d) offset += starts[d] * out_strides[d];
  const size_t es = dtype_size(out.dtype);
  strided_copy(es, upd.shape, outputs[0].as<char>() + offset * static_cast<int64_t>(es), out_strides,
               inputs[1].data, upd_strides);
}

// Each operand contributes one contiguous block per index of the dimensions before `dimension`.
void concatenate_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                        std::span<const MutView> outputs, Workspace& workspace) {
  if (inputs.empty() || outputs.size() != 1) kernel_bug(eq, "expects operands and one result");
  const int64_t dim = params_of<ir::ConcatenateParams>(eq).dimension;
  const ir::Type& out = *outputs[0].type;
  if (dim < 0 || dim >= out.rank()) kernel_bug(eq, "dimension out of range");
  const auto d = static_cast<size_t>(dim);
  int64_t outer = 1, inner = 1, total = 0;
  for (size_t i = 0; i < d; ++i) outer *= out.shape[i];
  for (size_t i = d + 1; i < out.shape.size(); ++i) inner *= out.shape[i];
  for (const ConstView& v : inputs) {
    const ir::Type& t = *v.type;
    if (t.dtype != out.dtype || t.rank() != out.rank()) kernel_bug(eq, "operand type does not match the result");
    for (size_t i = 0; i < out.shape.size(); ++i)
      if (i != d && t.shape[i] != out.shape[i]) kernel_bug(eq, "operand shape does not match the result");
    total += t.shape[d];
  }
  if (total != out.shape[d]) kernel_bug(eq, "operand sizes do not add up to the result");
  if (out.num_elements() == 0) return;
  const auto es = static_cast<int64_t>(dtype_size(out.dtype));
  const int64_t row = out.shape[d] * inner * es;  // bytes of one outer index in the result
  char* y = outputs[0].as<char>();
  int64_t col = 0;
  for (const ConstView& v : inputs) {
    const int64_t block = v.type->shape[d] * inner * es;
    if (block > 0) {
      // Rows are disjoint: split across the pool, at least 64 KiB a task.
      const char* x = v.as<char>();
      parallel_for(outer, std::max<int64_t>(1, (int64_t{64} << 10) / block), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) std::memcpy(y + o * row + col, x + o * block, static_cast<size_t>(block));
      });
    }
    col += block;
  }
}

}  // namespace ferry::runtime::cpu
