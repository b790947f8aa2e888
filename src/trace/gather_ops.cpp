// Front ends of gather, scatter_add and scatter, and take, take_along_axis and one_hot on top of them.
#include <fmt/format.h>

#include "ferry/error.h"
#include "ferry/gather.h"
#include "trace/tracer.h"

namespace ferry {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

detail::Tracer& check(const std::vector<Tensor>& xs, std::string_view op) {
  for (const Tensor& x : xs)
    if (!x.defined()) invalid(fmt::format("{}: an operand is an undefined Tensor", op));
  return detail::current_tracer(op);
}

int64_t mode_code(GatherScatterMode m) {
  switch (m) {
    case GatherScatterMode::clip: return ir::kGatherClip;
    case GatherScatterMode::fill_or_drop: return ir::kGatherFill;
    case GatherScatterMode::fill_zero_or_drop: return ir::kGatherFillZero;
  }
  invalid(fmt::format("unknown GatherScatterMode #{}", static_cast<int>(m)));
}

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view op) {
  if (axis < -rank || axis >= rank) invalid(fmt::format("{}: axis {} is out of range for rank {}", op, axis, rank));
  return axis < 0 ? axis + rank : axis;
}

void check_indices(const Tensor& indices, std::string_view op) {
  if (indices.dtype() != DType::i32) invalid(fmt::format("{}: indices must be i32, got {}", op, indices.type_string()));
}

// As jnp.take: outside clip mode an index in [-n, 0) counts from the end.
Tensor wrap_negative(const Tensor& indices, int64_t n, GatherScatterMode mode) {
  if (mode == GatherScatterMode::clip) return indices;
  return where(indices < 0.0, indices + static_cast<double>(n), indices);
}

}  // namespace

Tensor gather(const Tensor& operand, const Tensor& indices, const GatherDimensionNumbers& dims,
              const Shape& slice_sizes, GatherScatterMode mode) {
  detail::Tracer& t = check({operand, indices}, "gather");
  ir::GatherParams p{dims.offset_dims, dims.collapsed_slice_dims, dims.start_index_map, slice_sizes, mode_code(mode)};
  return t.bind1(Primitive::gather, p, {operand, indices});
}

Tensor scatter_add(const Tensor& operand, const Tensor& indices, const Tensor& updates,
                   const ScatterDimensionNumbers& dims, GatherScatterMode mode) {
  detail::Tracer& t = check({operand, indices, updates}, "scatter_add");
  ir::ScatterParams p{dims.update_window_dims, dims.inserted_window_dims, dims.scatter_dims_to_operand_dims,
                      mode_code(mode)};
  return t.bind1(Primitive::scatter_add, p, {operand, indices, updates});
}

Tensor scatter(const Tensor& operand, const Tensor& indices, const Tensor& updates, const ScatterDimensionNumbers& dims,
               GatherScatterMode mode) {
  detail::Tracer& t = check({operand, indices, updates}, "scatter");
  ir::ScatterParams p{dims.update_window_dims, dims.inserted_window_dims, dims.scatter_dims_to_operand_dims,
                      mode_code(mode)};
  return t.bind1(Primitive::scatter, p, {operand, indices, updates});
}

Tensor take(const Tensor& x, const Tensor& indices, int64_t axis, GatherScatterMode mode) {
  check({x, indices}, "take");
  check_indices(indices, "take");
  const int64_t a = normalize_axis(axis, x.rank(), "take");
  const int64_t ni = indices.rank();
  Shape idx_shape = indices.shape();
  idx_shape.push_back(1);
  Axes offset;
  for (int64_t d = 0; d < x.rank() - 1; ++d) offset.push_back(d < a ? d : d + ni);
  Shape sizes = x.shape();
  sizes[static_cast<size_t>(a)] = 1;
  Tensor idx = wrap_negative(indices, x.shape()[static_cast<size_t>(a)], mode);
  return gather(x, reshape(idx, idx_shape), {offset, {a}, {a}}, sizes, mode);
}

Tensor take_along_axis(const Tensor& x, const Tensor& indices, int64_t axis, GatherScatterMode mode) {
  check({x, indices}, "take_along_axis");
  check_indices(indices, "take_along_axis");
  const int64_t a = normalize_axis(axis, x.rank(), "take_along_axis");
  Shape is = indices.shape(), xs = x.shape();
  if (is.size() != xs.size())
    invalid(fmt::format("take_along_axis: indices {} must have the rank of x {}", indices.type_string(), x.type_string()));
  for (size_t d = 0; d < xs.size(); ++d)
    if (static_cast<int64_t>(d) != a && is[d] != xs[d])
      invalid(fmt::format("take_along_axis: indices {} must match x {} outside axis {}", indices.type_string(),
                          x.type_string(), a));
  // One full index vector per result element: the given index along `axis`, the position elsewhere.
  Shape col = is;
  col.push_back(1);
  std::vector<Tensor> parts;
  Axes all;
  for (int64_t d = 0; d < x.rank(); ++d) {
    parts.push_back(d == a ? reshape(wrap_negative(indices, xs[static_cast<size_t>(a)], mode), col)
                           : iota(DType::i32, col, d));
    all.push_back(d);
  }
  Tensor full = x.rank() == 1 ? parts[0] : concatenate(parts, x.rank());
  return gather(x, full, {{}, all, all}, Shape(xs.size(), 1), mode);
}

Tensor sort(const Tensor& x, int64_t axis, bool descending) {
  check({x}, "sort");
  return take_along_axis(x, argsort(x, axis, descending), axis);
}

std::pair<Tensor, Tensor> top_k(const Tensor& x, int64_t k) {
  check({x}, "top_k");
  if (x.rank() == 0) invalid(fmt::format("top_k: the operand {} must have an axis", x.type_string()));
  const int64_t n = x.shape().back();
  if (k < 0 || k > n) invalid(fmt::format("top_k: k = {} must be in [0, {}] for {}", k, n, x.type_string()));
  // The first k of a stable descending order (ties keep the lower position first, as top_k's).
  Tensor order = argsort(x, -1, /*descending=*/true, /*total_order=*/true);
  Shape start(static_cast<size_t>(x.rank()), 0), limit = x.shape();
  limit.back() = k;
  Tensor positions = slice(order, start, limit);
  return {take_along_axis(x, positions, -1), positions};
}

Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype) {
  check({indices}, "one_hot");
  check_indices(indices, "one_hot");
  if (num_classes < 0) invalid(fmt::format("one_hot: num_classes must be >= 0, got {}", num_classes));
  Shape s = indices.shape();
  const int64_t r = indices.rank();
  s.push_back(num_classes);
  Axes keep(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) keep[static_cast<size_t>(d)] = d;
  Tensor hit = eq(broadcast_in_dim(indices, s, keep), iota(DType::i32, s, r));
  return convert(hit, dtype);
}

}  // namespace ferry
