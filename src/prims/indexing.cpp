// Indexing primitives: slice, dynamic_slice, dynamic_update_slice and concatenate. They move data
// and compute nothing (no flops); their bytes are what they actually touch.
#include <fmt/format.h>

#include "prims/families.h"
#include "prims/rule_helpers.h"

namespace ferry::prims {
namespace {

using detail::check_operands;
using detail::dims_string;
using detail::invalid;
using detail::params_as;

std::vector<ir::Type> slice_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = check_operands(in);
  const auto& p = params_as<ir::SliceParams>(params);
  const ir::Type& x = in[0];
  size_t rank = x.shape.size();
  if (p.start_indices.size() != rank)
    invalid(fmt::format("start_indices {} must have one entry per operand dimension ({})",
                        dims_string(p.start_indices), rank));
  if (p.limit_indices.size() != rank)
    invalid(fmt::format("limit_indices {} must have one entry per operand dimension ({})",
                        dims_string(p.limit_indices), rank));
  if (!p.strides.empty() && p.strides.size() != rank)
    invalid(fmt::format("strides {} must be empty or have one entry per operand dimension ({})",
                        dims_string(p.strides), rank));
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t start = p.start_indices[i], limit = p.limit_indices[i];
    int64_t stride = p.strides.empty() ? 1 : p.strides[i];
    if (stride < 1) invalid(fmt::format("stride {} of dimension {} must be >= 1", stride, i));
    if (start < 0 || start > limit || limit > x.shape[i])
      invalid(fmt::format("dimension {}: need 0 <= start <= limit <= {}, got start {} and limit {}", i, x.shape[i],
                          start, limit));
    // ceil((limit - start) / stride) without overflow: limit - start is in [0, dim].
    int64_t extent = limit - start;
    out[i] = extent / stride + (extent % stride != 0 ? 1 : 0);
  }
  return {ir::Type{x.dtype, out, kind}};
}

// Operands first..first+rank-1 are the start indices: scalar i32, one per operand dimension.
void check_indices(std::span<const ir::Type> in, size_t first, int64_t rank) {
  size_t got = in.size() - first;
  if (static_cast<int64_t>(got) != rank)
    invalid(fmt::format("needs one start index per operand dimension ({}), got {}", rank, got));
  for (size_t i = first; i < in.size(); ++i)
    if (in[i].dtype != DType::i32 || !in[i].shape.empty())
      invalid(fmt::format("start index {} must be a scalar i32, got {}", i - first,
                          type_string(in[i].dtype, in[i].shape)));
}

std::vector<ir::Type> dynamic_slice_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = check_operands(in);
  const auto& sizes = params_as<ir::DynamicSliceParams>(params).slice_sizes;
  const ir::Type& x = in[0];
  check_indices(in, 1, x.rank());
  if (sizes.size() != x.shape.size())
    invalid(fmt::format("slice_sizes {} must have one entry per operand dimension ({})", shape_string(sizes),
                        x.rank()));
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] < 0 || sizes[i] > x.shape[i])
      invalid(fmt::format("slice size {} of dimension {} must be in [0, {}]", sizes[i], i, x.shape[i]));
  return {ir::Type{x.dtype, sizes, kind}};
}

std::vector<ir::Type> dynamic_update_slice_rule(std::span<const ir::Type> in, const ir::Params&) {
  MemoryKind kind = check_operands(in);
  if (in.size() < 2) invalid(fmt::format("takes an operand, an update and start indices, got {} operand(s)", in.size()));
  const ir::Type &x = in[0], &update = in[1];
  if (update.dtype != x.dtype)
    invalid(fmt::format("update dtype {} differs from operand dtype {}", dtype_name(update.dtype),
                        dtype_name(x.dtype)));
  if (update.rank() != x.rank())
    invalid(fmt::format("update rank {} differs from operand rank {}", update.rank(), x.rank()));
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (update.shape[i] > x.shape[i])
      invalid(fmt::format("update dimension {} has size {}, larger than the operand's {}", i, update.shape[i],
                          x.shape[i]));
  check_indices(in, 2, x.rank());
  ir::Type out = x;
  out.kind = kind;
  return {out};
}

std::vector<ir::Type> concatenate_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = check_operands(in);
  int64_t dim = params_as<ir::ConcatenateParams>(params).dimension;
  const ir::Type& first = in[0];
  if (first.rank() == 0) invalid("operands must have rank >= 1");
  detail::check_axis(dim, first.rank(), "dimension");
  Shape out = first.shape;
  out[static_cast<size_t>(dim)] = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    const ir::Type& t = in[k];
    if (t.dtype != first.dtype)
      invalid(fmt::format("operand {} has dtype {}, operand 0 has {}", k, dtype_name(t.dtype), dtype_name(first.dtype)));
    if (t.rank() != first.rank())
      invalid(fmt::format("operand {} has rank {}, operand 0 has rank {}", k, t.rank(), first.rank()));
    for (size_t i = 0; i < t.shape.size(); ++i)
      if (static_cast<int64_t>(i) != dim && t.shape[i] != first.shape[i])
        invalid(fmt::format("operand {} has size {} in dimension {}, operand 0 has {} (only dimension {} may differ)",
                            k, t.shape[i], i, first.shape[i], dim));
    int64_t& total = out[static_cast<size_t>(dim)];
    if (__builtin_add_overflow(total, t.shape[static_cast<size_t>(dim)], &total))
      invalid("concatenated dimension size overflows int64");
  }
  detail::checked_elements(out, "output shape", first.dtype);
  return {ir::Type{first.dtype, out, kind}};
}

// A slice reads only the elements it keeps.
Cost slice_cost(std::span<const ir::Type> in, std::span<const ir::Type> out, const ir::Params&) {
  int64_t written = detail::bytes_of(out);
  return Cost{.flops = 0, .bytes_read = written, .bytes_written = written};
}

// The elements it keeps plus the start indices.
Cost dynamic_slice_cost(std::span<const ir::Type> in, std::span<const ir::Type> out, const ir::Params&) {
  int64_t written = detail::bytes_of(out);
  int64_t indices = in.size() > 1 ? detail::bytes_of(in.subspan(1)) : 0;
  return Cost{.flops = 0, .bytes_read = written + indices, .bytes_written = written};
}

// Counts the update and the indices only: the operand is updated in place (a later planner aliases
// the output with the operand's buffer), so its untouched elements are neither read nor written.
Cost dynamic_update_slice_cost(std::span<const ir::Type> in, std::span<const ir::Type>, const ir::Params&) {
  int64_t update = in.size() > 1 ? in[1].size_bytes() : 0;
  int64_t indices = in.size() > 2 ? detail::bytes_of(in.subspan(2)) : 0;
  return Cost{.flops = 0, .bytes_read = update + indices, .bytes_written = update};
}

}  // namespace

void register_indexing(Table& t) {
  using P = Primitive;
  set_rules(t, P::slice, slice_rule, slice_cost);
  set_rules(t, P::dynamic_slice, dynamic_slice_rule, dynamic_slice_cost);
  // The update writes into its operand's buffer when the operand dies there (ops.def).
  set_rules(t, P::dynamic_update_slice, dynamic_update_slice_rule, dynamic_update_slice_cost);
  set_rules(t, P::concatenate, concatenate_rule, detail::movement_cost);
}

}  // namespace ferry::prims
