// VJP rules of the primitives models are made of: erf, erf_inv, log1p, expm1, tan, rem, clamp, the
// rounding and bit-level ones (zero), reduce_min, argmax/argmin, the cumulative reductions, and
// gather/scatter_add (each other's transpose). Written with traced operations, so they can be
// differentiated again.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "ferry/gather.h"
#include "ferry/tensor.h"
#include "transforms/vjp_rules.h"

namespace ferry::transforms {
namespace {

using Ts = std::span<const Tensor>;
using Out = std::vector<Tensor>;

Out zero_vjp(const ir::Equation& eq, Ts, Ts, Ts) { return Out(eq.inputs.size()); }

// d erf(x) = 2/sqrt(pi) exp(-x^2); d erf_inv(x) = sqrt(pi)/2 exp(erf_inv(x)^2).
Out erf_vjp(const ir::Equation&, Ts x, Ts, Ts g) {
  return {g[0] * (exp(-(x[0] * x[0])) * (2.0 / std::sqrt(std::numbers::pi)))};
}
Out erf_inv_vjp(const ir::Equation&, Ts, Ts y, Ts g) {
  return {g[0] * (exp(y[0] * y[0]) * (std::sqrt(std::numbers::pi) / 2.0))};
}
Out log1p_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {g[0] / (x[0] + 1.0)}; }
Out expm1_vjp(const ir::Equation&, Ts, Ts y, Ts g) { return {g[0] * (y[0] + 1.0)}; }
Out tan_vjp(const ir::Equation&, Ts, Ts y, Ts g) { return {g[0] * (y[0] * y[0] + 1.0)}; }  // 1 + tan^2, as JAX
// The inverse trigonometric and hyperbolic functions and cbrt, by JAX's formulas.
Out atan_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {g[0] / (x[0] * x[0] + 1.0)}; }
Out asin_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {g[0] * rsqrt(1.0 - x[0] * x[0])}; }
Out acos_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {-(g[0] * rsqrt(1.0 - x[0] * x[0]))}; }
Out sinh_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {g[0] * cosh(x[0])}; }
Out cosh_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {g[0] * sinh(x[0])}; }
Out asinh_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {g[0] * rsqrt(x[0] * x[0] + 1.0)}; }
Out acosh_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {g[0] * rsqrt((x[0] - 1.0) * (x[0] + 1.0))}; }
Out atanh_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {g[0] / ((1.0 - x[0]) * (x[0] + 1.0))}; }
Out cbrt_vjp(const ir::Equation&, Ts, Ts y, Ts g) { return {g[0] / (y[0] * y[0] * 3.0)}; }  // (1/3) y^-2

// rem(a, b) = a - b trunc(a / b): d/da = 1, d/db = -trunc(a / b) (as JAX).
Out rem_vjp(const ir::Equation&, Ts x, Ts, Ts g) {
  Tensor q = x[0] / x[1];
  return {g[0], -(g[0] * (sign(q) * floor(abs(q))))};
}

// atan2(x, y): (y, -x) / (x^2 + y^2), as JAX.
Out atan2_vjp(const ir::Equation&, Ts x, Ts, Ts g) {
  Tensor r = g[0] / (x[0] * x[0] + x[1] * x[1]);
  return {r * x[1], -(r * x[0])};
}

// As JAX: x takes the cotangent strictly inside (lo, hi); lo where it is above x (and below hi);
// hi where it is below x.
Out clamp_vjp(const ir::Equation&, Ts x, Ts, Ts g) {
  const Tensor &lo = x[0], &v = x[1], &hi = x[2];
  Tensor zero = zeros_like(g[0]);
  return {where(logical_and(lo > v, lo < hi), g[0], zero), where(logical_and(v > lo, v < hi), g[0], zero),
          where(hi < v, g[0], zero)};
}

Axes kept_dims(int64_t rank, const Axes& axes) {
  Axes kept;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(d);
  return kept;
}

// The minima share the cotangent evenly (as reduce_max's maxima, and JAX).
Out reduce_min_vjp(const ir::Equation& e, Ts x, Ts y, Ts g) {
  const auto& axes = std::get<ir::ReduceParams>(e.params).axes;
  Axes kept = kept_dims(x[0].rank(), axes);
  Tensor at_min = convert(eq(x[0], broadcast_in_dim(y[0], x[0].shape(), kept)), x[0].dtype());
  Tensor count = sum(at_min, axes);
  return {at_min * broadcast_in_dim(g[0] / count, x[0].shape(), kept)};
}

// A running sum's transpose is the running sum in the other direction.
Out cumsum_vjp(const ir::Equation& eq, Ts, Ts, Ts g) {
  const auto& p = std::get<ir::CumulativeParams>(eq.params);
  return {cumsum(g[0], p.axis, !p.reverse)};
}

// Index vectors for every element of `along` (i32, x's rank): `along` on `axis`, the element's
// own position on the other dimensions.
Tensor full_indices(const Tensor& along, int64_t axis) {
  Shape col = along.shape();
  col.push_back(1);
  std::vector<Tensor> parts;
  for (int64_t d = 0; d < along.rank(); ++d)
    parts.push_back(d == axis ? reshape(along, col) : iota(DType::i32, col, d));
  return along.rank() == 1 ? parts[0] : concatenate(parts, along.rank());
}

Axes all_dims(int64_t rank) {
  Axes a;
  for (int64_t d = 0; d < rank; ++d) a.push_back(d);
  return a;
}

// cummax/cummin: each result element's cotangent goes to the element where its running value was
// first reached (a new running value starts a segment; ties keep the earlier element).
Out cumulative_extreme_vjp(const ir::Equation& e, Ts x, Ts y, Ts g) {
  const auto& p = std::get<ir::CumulativeParams>(e.params);
  const Shape s = x[0].shape();
  const int64_t a = p.axis, n = s[static_cast<size_t>(a)], r = x[0].rank();
  if (num_elements(s) == 0) return {g[0]};
  auto part = [&](int64_t from, int64_t to) {
    Axes start(static_cast<size_t>(r), 0), limit = s;
    start[static_cast<size_t>(a)] = from;
    limit[static_cast<size_t>(a)] = to;
    return slice(y[0], start, limit);
  };
  // The running value one step earlier in the scan's order (the first element compares to itself).
  Tensor prev = n == 1 ? y[0]
                : p.reverse ? concatenate({part(1, n), part(n - 1, n)}, a)
                            : concatenate({part(0, 1), part(0, n - 1)}, a);
  Tensor pos = iota(DType::i32, s, a);
  Tensor first = p.reverse ? eq(pos, constant(static_cast<double>(n - 1), s, DType::i32))
                           : eq(pos, constant(0.0, s, DType::i32));
  Tensor starts = logical_or(first, ne(prev, y[0]));
  Tensor source = p.reverse ? cummin(where(starts, pos, constant(static_cast<double>(n - 1), s, DType::i32)), a, true)
                            : cummax(where(starts, pos, constant(0.0, s, DType::i32)), a);
  Axes all = all_dims(r);
  return {scatter_add(zeros_like(x[0]), full_indices(source, a), g[0], {{}, all, all}, GatherScatterMode::clip)};
}

GatherScatterMode mode_of(int64_t code, bool for_scatter) {
  if (code == ir::kGatherClip) return GatherScatterMode::clip;
  return for_scatter ? GatherScatterMode::fill_or_drop : GatherScatterMode::fill_zero_or_drop;
}

// gather's transpose: the cotangent added back at the gathered windows (dropped where the gather
// filled).
Out gather_vjp(const ir::Equation& eq, Ts x, Ts, Ts g) {
  const auto& p = std::get<ir::GatherParams>(eq.params);
  return {scatter_add(zeros_like(x[0]), x[1], g[0], {p.offset_dims, p.collapsed_slice_dims, p.start_index_map},
                      mode_of(p.mode, true)),
          Tensor()};
}

bool has(const ir::Dims& dims, int64_t d) { return std::find(dims.begin(), dims.end(), d) != dims.end(); }

// What a scatter with parameters p put at each update's place, read back from `written` (an array
// of the operand's shape): the gather with the scatter's dimensions, 0 where it dropped the window.
Tensor gather_at_updates(const Tensor& written, const Tensor& indices, const ir::ScatterParams& p, const Shape& us) {
  Shape sizes;
  size_t next = 0;
  for (int64_t d = 0; d < written.rank(); ++d)
    sizes.push_back(has(p.inserted_window_dims, d) ? 1 : us[static_cast<size_t>(p.update_window_dims[next++])]);
  return gather(written, indices, {p.update_window_dims, p.inserted_window_dims, p.scatter_dims_to_operand_dims}, sizes,
                mode_of(p.mode, false));
}

// scatter_add's transpose: the operand's cotangent passes through; each update's is the cotangent
// gathered at its window (zero where the scatter dropped it).
Out scatter_add_vjp(const ir::Equation& eq, Ts x, Ts, Ts g) {
  const auto& p = std::get<ir::ScatterParams>(eq.params);
  return {g[0], Tensor(), gather_at_updates(g[0], x[1], p, x[2].shape())};
}

// scatter (overwrite), as JAX differentiates it: the operand's cotangent where no update was
// written; each update's where it is the one that stayed. Which stayed: every update element gets
// the id of its index vector (position + 1), the ids are scattered as the updates were, over zeros,
// and read back at each update's place.
Out scatter_vjp(const ir::Equation& eq, Ts x, Ts, Ts g) {
  const auto& p = std::get<ir::ScatterParams>(eq.params);
  const Shape us = x[2].shape();
  Tensor ids = constant(1.0, us, DType::i32);
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(us.size()) - 1; d >= 0; --d) {
    if (has(p.update_window_dims, d)) continue;
    ids = add(ids, mul(iota(DType::i32, us, d), constant(static_cast<double>(stride), {}, DType::i32)));
    stride *= us[static_cast<size_t>(d)];
  }
  const Tensor written = scatter(constant(0.0, x[0].shape(), DType::i32), x[1], ids,
                                 {p.update_window_dims, p.inserted_window_dims, p.scatter_dims_to_operand_dims},
                                 mode_of(p.mode, true));
  const Tensor stayed = ferry::eq(gather_at_updates(written, x[1], p, us), ids);
  return {where(ferry::eq(written, constant(0.0, {}, DType::i32)), g[0], 0.0), Tensor(),
          where(stayed, gather_at_updates(g[0], x[1], p, us), 0.0)};
}

}  // namespace

void register_model_vjps(VjpTable& t) {
  using P = Primitive;
  set_vjp(t, P::erf, erf_vjp);
  set_vjp(t, P::erf_inv, erf_inv_vjp);
  set_vjp(t, P::log1p, log1p_vjp);
  set_vjp(t, P::expm1, expm1_vjp);
  set_vjp(t, P::tan, tan_vjp);
  set_vjp(t, P::atan, atan_vjp);
  set_vjp(t, P::asin, asin_vjp);
  set_vjp(t, P::acos, acos_vjp);
  set_vjp(t, P::sinh, sinh_vjp);
  set_vjp(t, P::cosh, cosh_vjp);
  set_vjp(t, P::asinh, asinh_vjp);
  set_vjp(t, P::acosh, acosh_vjp);
  set_vjp(t, P::atanh, atanh_vjp);
  set_vjp(t, P::cbrt, cbrt_vjp);
  set_vjp(t, P::rem, rem_vjp);
  set_vjp(t, P::atan2, atan2_vjp);
  set_vjp(t, P::clamp, clamp_vjp);
  // Piecewise constant, or not on floats at all: zero, as in JAX.
  for (P p : {P::floor, P::ceil, P::round, P::logical_not, P::logical_and, P::logical_or, P::logical_xor,
              P::shift_left, P::shift_right_logical, P::bitcast_convert_type, P::argmax, P::argmin, P::argsort})
    set_vjp(t, p, zero_vjp);
  set_vjp(t, P::reduce_min, reduce_min_vjp);
  set_vjp(t, P::cumsum, cumsum_vjp);
  set_vjp(t, P::cummax, cumulative_extreme_vjp);
  set_vjp(t, P::cummin, cumulative_extreme_vjp);
  set_vjp(t, P::gather, gather_vjp);
  set_vjp(t, P::scatter_add, scatter_add_vjp);
  set_vjp(t, P::scatter, scatter_vjp);
}

}  // namespace ferry::transforms
