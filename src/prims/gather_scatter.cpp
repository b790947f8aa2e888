// gather and scatter_add as XLA defines them, with the index vector in the last dimension of the
// indices (as jax.lax does): shape rules and costs. Both move data; scatter_add adds one element
// per update element.
#include <algorithm>

#include <fmt/format.h>

#include "prims/families.h"
#include "prims/rule_helpers.h"

namespace ferry::prims {
namespace {

using detail::dims_string;
using detail::invalid;
using detail::params_as;

// `dims` strictly increasing, each in [0, bound).
void check_sorted_dims(const ir::Dims& dims, int64_t bound, std::string_view what) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= bound)
      invalid(fmt::format("{} {} has an entry outside [0, {})", what, dims_string(dims), bound));
    if (i > 0 && dims[i] <= dims[i - 1]) invalid(fmt::format("{} {} must be sorted and distinct", what, dims_string(dims)));
  }
}

// Indices are i32 with rank >= 1; the last dimension holds one start per entry of `index_map`,
// which names distinct operand dimensions.
void check_indices(const ir::Type& indices, const ir::Dims& index_map, int64_t operand_rank, std::string_view what) {
  if (indices.dtype != DType::i32) invalid(fmt::format("indices must be i32, got {}", dtype_name(indices.dtype)));
  if (indices.rank() == 0) invalid("indices must have rank >= 1 (the last dimension is the index vector)");
  if (indices.shape.back() != static_cast<int64_t>(index_map.size()))
    invalid(fmt::format("the index vector has {} entries but {} {} has {}", indices.shape.back(), what,
                        dims_string(index_map), index_map.size()));
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(operand_rank, 0)), false);
  for (int64_t d : index_map) {
    detail::check_axis(d, operand_rank, what);
    if (seen[static_cast<size_t>(d)]) invalid(fmt::format("{} {} repeats dimension {}", what, dims_string(index_map), d));
    seen[static_cast<size_t>(d)] = true;
  }
}

std::vector<ir::Type> gather_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = detail::check_operands(in);
  const auto& p = params_as<ir::GatherParams>(params);
  const ir::Type &x = in[0], &idx = in[1];
  const int64_t r = x.rank();
  if (p.mode < ir::kGatherClip || p.mode > ir::kGatherFillZero) invalid(fmt::format("unknown mode {}", p.mode));
  check_indices(idx, p.start_index_map, r, "start_index_map");
  if (static_cast<int64_t>(p.slice_sizes.size()) != r)
    invalid(fmt::format("slice_sizes {} must have one entry per operand dimension ({})", shape_string(p.slice_sizes), r));
  for (int64_t d = 0; d < r; ++d)
    if (p.slice_sizes[static_cast<size_t>(d)] < 0 || p.slice_sizes[static_cast<size_t>(d)] > x.shape[static_cast<size_t>(d)])
      invalid(fmt::format("slice size {} of dimension {} must be in [0, {}]", p.slice_sizes[static_cast<size_t>(d)], d,
                          x.shape[static_cast<size_t>(d)]));
  check_sorted_dims(p.collapsed_slice_dims, r, "collapsed_slice_dims");
  for (int64_t d : p.collapsed_slice_dims)
    if (p.slice_sizes[static_cast<size_t>(d)] != 1)
      invalid(fmt::format("collapsed dimension {} must have slice size 1, got {}", d, p.slice_sizes[static_cast<size_t>(d)]));
  const int64_t batch_rank = idx.rank() - 1;
  const int64_t window_rank = r - static_cast<int64_t>(p.collapsed_slice_dims.size());
  if (static_cast<int64_t>(p.offset_dims.size()) != window_rank)
    invalid(fmt::format("offset_dims {} must have one entry per operand dimension not collapsed ({})",
                        dims_string(p.offset_dims), window_rank));
  const int64_t out_rank = batch_rank + window_rank;
  check_sorted_dims(p.offset_dims, out_rank, "offset_dims");
  Shape out(static_cast<size_t>(out_rank));
  size_t next_batch = 0, next_window = 0;
  for (int64_t o = 0; o < out_rank; ++o) {
    if (std::binary_search(p.offset_dims.begin(), p.offset_dims.end(), o)) {
      while (std::binary_search(p.collapsed_slice_dims.begin(), p.collapsed_slice_dims.end(),
                                static_cast<int64_t>(next_window)))
        ++next_window;
      out[static_cast<size_t>(o)] = p.slice_sizes[next_window++];
    } else {
      out[static_cast<size_t>(o)] = idx.shape[next_batch++];
    }
  }
  detail::checked_elements(out, "output shape", x.dtype);
  return {ir::Type{x.dtype, out, kind}};
}

// scatter_add and scatter; only scatter writes bools (there is no sum of them).
std::vector<ir::Type> scatter_rule_of(std::span<const ir::Type> in, const ir::Params& params, bool sums) {
  MemoryKind kind = detail::check_operands(in);
  const auto& p = params_as<ir::ScatterParams>(params);
  const ir::Type &x = in[0], &idx = in[1], &upd = in[2];
  const int64_t r = x.rank();
  if (p.mode < ir::kGatherClip || p.mode > ir::kGatherFillZero) invalid(fmt::format("unknown mode {}", p.mode));
  if (sums && x.dtype == DType::boolean) invalid("not defined for bool operands");
  if (upd.dtype != x.dtype)
    invalid(fmt::format("updates dtype {} differs from the operand's {}", dtype_name(upd.dtype), dtype_name(x.dtype)));
  check_indices(idx, p.scatter_dims_to_operand_dims, r, "scatter_dims_to_operand_dims");
  check_sorted_dims(p.inserted_window_dims, r, "inserted_window_dims");
  check_sorted_dims(p.update_window_dims, upd.rank(), "update_window_dims");
  if (static_cast<int64_t>(p.update_window_dims.size() + p.inserted_window_dims.size()) != r)
    invalid(fmt::format("update_window_dims {} and inserted_window_dims {} must together count the operand's rank {}",
                        dims_string(p.update_window_dims), dims_string(p.inserted_window_dims), r));
  // The update's scatter dimensions are the indices' batch dimensions, in order.
  const int64_t batch_rank = idx.rank() - 1;
  if (upd.rank() - static_cast<int64_t>(p.update_window_dims.size()) != batch_rank)
    invalid(fmt::format("updates have {} scatter dimensions but the indices have {} batch dimensions",
                        upd.rank() - static_cast<int64_t>(p.update_window_dims.size()), batch_rank));
  size_t next_batch = 0, next_window = 0;
  for (int64_t u = 0; u < upd.rank(); ++u) {
    const int64_t size = upd.shape[static_cast<size_t>(u)];
    if (std::binary_search(p.update_window_dims.begin(), p.update_window_dims.end(), u)) {
      while (std::binary_search(p.inserted_window_dims.begin(), p.inserted_window_dims.end(),
                                static_cast<int64_t>(next_window)))
        ++next_window;
      if (size > x.shape[next_window])
        invalid(fmt::format("update window dimension {} has size {}, larger than operand dimension {} ({})", u, size,
                            next_window, x.shape[next_window]));
      ++next_window;
    } else if (size != idx.shape[next_batch++]) {
      invalid(fmt::format("update scatter dimension {} has size {} but the indices' batch dimension {} has {}", u, size,
                          next_batch - 1, idx.shape[next_batch - 1]));
    }
  }
  ir::Type out = x;
  out.kind = kind;
  return {out};
}
std::vector<ir::Type> scatter_add_rule(std::span<const ir::Type> in, const ir::Params& params) {
  return scatter_rule_of(in, params, /*sums=*/true);
}
std::vector<ir::Type> scatter_rule(std::span<const ir::Type> in, const ir::Params& params) {
  return scatter_rule_of(in, params, /*sums=*/false);
}

// Reads the indices and the gathered elements, writes the result.
Cost gather_cost(std::span<const ir::Type> in, std::span<const ir::Type> out, const ir::Params&) {
  int64_t written = detail::bytes_of(out);
  return Cost{.flops = 0, .bytes_read = written + in[1].size_bytes(), .bytes_written = written};
}

// One add per update element; the operand is updated in place when it dies here.
Cost scatter_add_cost(std::span<const ir::Type> in, std::span<const ir::Type>, const ir::Params&) {
  return Cost{.flops = static_cast<double>(in[2].num_elements()),
              .bytes_read = in[1].size_bytes() + 2 * in[2].size_bytes(), .bytes_written = in[2].size_bytes()};
}
// A write per update element, nothing added.
Cost scatter_cost(std::span<const ir::Type> in, std::span<const ir::Type>, const ir::Params&) {
  return Cost{.flops = 0, .bytes_read = in[1].size_bytes() + in[2].size_bytes(), .bytes_written = in[2].size_bytes()};
}

}  // namespace

void register_gather_scatter(Table& t) {
  t[static_cast<size_t>(Primitive::gather)] =
      PrimitiveInfo{.shape_rule = gather_rule, .cost_rule = gather_cost};
  t[static_cast<size_t>(Primitive::scatter_add)] =
      PrimitiveInfo{.shape_rule = scatter_add_rule, .cost_rule = scatter_add_cost};
  t[static_cast<size_t>(Primitive::scatter)] = PrimitiveInfo{.shape_rule = scatter_rule, .cost_rule = scatter_cost};
}

}  // namespace ferry::prims
