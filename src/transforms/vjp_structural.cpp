// VJP rules of the shape, reduction, dot, indexing and memory primitives, the identities and random bits.
#include <algorithm>
#include <numeric>

#include "ferry/tensor.h"
#include "transforms/vjp_rules.h"

namespace ferry::transforms {
namespace {

using Ts = std::span<const Tensor>;
using Out = std::vector<Tensor>;

Out no_inputs_vjp(const ir::Equation&, Ts, Ts, Ts) { return {}; }

// Sum g over the broadcast dimensions, and over dimensions that were stretched from size 1.
Out broadcast_in_dim_vjp(const ir::Equation& eq, Ts x, Ts, Ts g) {
  const auto& p = std::get<ir::BroadcastInDimParams>(eq.params);
  Shape in = x[0].shape();
  Axes axes;
  for (int64_t d = 0; d < static_cast<int64_t>(p.shape.size()); ++d) {
    auto it = std::find(p.broadcast_dimensions.begin(), p.broadcast_dimensions.end(), d);
    if (it == p.broadcast_dimensions.end()) {
      axes.push_back(d);
    } else {
      size_t i = static_cast<size_t>(it - p.broadcast_dimensions.begin());
      if (in[i] == 1 && p.shape[static_cast<size_t>(d)] != 1) axes.push_back(d);
    }
  }
  Tensor s = axes.empty() ? g[0] : sum(g[0], axes);
  return {s.shape() == in ? s : reshape(s, in)};
}

Out reshape_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {reshape(g[0], x[0].shape())}; }

Out transpose_vjp(const ir::Equation& eq, Ts, Ts, Ts g) {
  const auto& perm = std::get<ir::TransposeParams>(eq.params).permutation;
  Axes inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {transpose(g[0], inverse)};
}

// The dimensions of x that survive reducing over `axes`, in order.
Axes kept_dims(int64_t rank, const Axes& axes) {
  Axes kept;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(d);
  return kept;
}

Out reduce_sum_vjp(const ir::Equation& eq, Ts x, Ts, Ts g) {
  const auto& axes = std::get<ir::ReduceParams>(eq.params).axes;
  return {broadcast_in_dim(g[0], x[0].shape(), kept_dims(x[0].rank(), axes))};
}

// The maxima share the cotangent evenly (as in JAX).
Out reduce_max_vjp(const ir::Equation& e, Ts x, Ts y, Ts g) {
  const auto& axes = std::get<ir::ReduceParams>(e.params).axes;
  Axes kept = kept_dims(x[0].rank(), axes);
  Tensor at_max = convert(eq(x[0], broadcast_in_dim(y[0], x[0].shape(), kept)), x[0].dtype());
  Tensor count = sum(at_max, axes);
  return {at_max * broadcast_in_dim(g[0] / count, x[0].shape(), kept)};
}

// Dimensions 0..rank-1 not in `a` or `b`, ascending.
Axes free_dims(int64_t rank, const Axes& a, const Axes& b) {
  Axes f;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end()) f.push_back(d);
  return f;
}

// The cotangent of one dot_general operand ("mine") from g and the other operand. g's dims are
// [batch, lhs free, rhs free]; contracting g's dims of the other operand's free dims with the other
// operand gives [batch, my free, my contracting (in the other's contracting order, sorted)], which a
// transpose puts back into my layout.
Tensor dot_operand_ct(const Tensor& g, const Tensor& other, int64_t my_rank, const Axes& my_batch,
                      const Axes& my_contract, const Axes& other_batch, const Axes& other_contract,
                      int64_t g_other_free_start) {
  int64_t nb = static_cast<int64_t>(my_batch.size());
  Axes my_free = free_dims(my_rank, my_batch, my_contract);
  Axes other_free = free_dims(other.rank(), other_batch, other_contract);
  Axes g_batch(static_cast<size_t>(nb));
  std::iota(g_batch.begin(), g_batch.end(), 0);
  Axes g_other_free(other_free.size());
  std::iota(g_other_free.begin(), g_other_free.end(), g_other_free_start);
  // With g first, the result's dims stand for: my batch, my free, then my contracting dims paired
  // with the other's remaining (contracting) dims in ascending order. With the other first: my
  // batch, those contracting dims, then my free. Take the order that needs no transpose, if any.
  Axes sorted_other = other_contract;
  std::sort(sorted_other.begin(), sorted_other.end());
  Axes paired;
  for (int64_t oc : sorted_other) {
    size_t pos = static_cast<size_t>(std::find(other_contract.begin(), other_contract.end(), oc) - other_contract.begin());
    paired.push_back(my_contract[pos]);
  }
  auto permutation = [&](bool g_first) {
    Axes res_to_mine = my_batch;
    const Axes& second = g_first ? paired : my_free;
    const Axes& first = g_first ? my_free : paired;
    res_to_mine.insert(res_to_mine.end(), first.begin(), first.end());
    res_to_mine.insert(res_to_mine.end(), second.begin(), second.end());
    Axes perm(static_cast<size_t>(my_rank));
    for (size_t i = 0; i < res_to_mine.size(); ++i) perm[static_cast<size_t>(res_to_mine[i])] = static_cast<int64_t>(i);
    return perm;
  };
  auto is_identity = [](const Axes& perm) {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return false;
    return true;
  };
  Axes g_first = permutation(true);
  if (!is_identity(g_first) && is_identity(permutation(false)))
    return dot_general(other, g, {other_free, g_other_free, other_batch, g_batch});
  Tensor r = dot_general(g, other, {g_other_free, other_free, g_batch, other_batch});
  return is_identity(g_first) ? r : transpose(r, g_first);
}

Out dot_general_vjp(const ir::Equation& eq, Ts x, Ts, Ts g) {
  const auto& d = std::get<ir::DotGeneralParams>(eq.params).dims;
  int64_t nb = static_cast<int64_t>(d.lhs_batch.size());
  int64_t n_lhs_free = static_cast<int64_t>(free_dims(x[0].rank(), d.lhs_batch, d.lhs_contracting).size());
  Tensor ct_lhs = dot_operand_ct(g[0], x[1], x[0].rank(), d.lhs_batch, d.lhs_contracting, d.rhs_batch,
                                 d.rhs_contracting, nb + n_lhs_free);
  Tensor ct_rhs = dot_operand_ct(g[0], x[0], x[1].rank(), d.rhs_batch, d.rhs_contracting, d.lhs_batch,
                                 d.lhs_contracting, nb);
  return {ct_lhs, ct_rhs};
}

Tensor index_constant(int64_t v) { return constant(static_cast<double>(v), {}, DType::i32); }

// Slicing's transpose: g placed back at the sliced positions of a zero array of x's shape. A stride
// s spreads g's entries s apart: interleave s-1 zero slices along a new axis, merge, trim.
Out slice_vjp(const ir::Equation& eq, Ts x, Ts, Ts g) {
  const auto& p = std::get<ir::SliceParams>(eq.params);
  Tensor ct = g[0];
  for (size_t d = 0; d < p.strides.size(); ++d) {
    int64_t s = p.strides[d];
    Shape sh = ct.shape();
    if (s == 1 || sh[d] == 0) continue;
    Shape with_axis = sh;
    with_axis.insert(with_axis.begin() + static_cast<std::ptrdiff_t>(d) + 1, 1);
    Tensor e = reshape(ct, with_axis);
    Shape zshape = with_axis;
    zshape[d + 1] = s - 1;
    Tensor spread = concatenate({e, constant(0.0, zshape, ct.dtype())}, static_cast<int64_t>(d) + 1);
    Shape merged = sh;
    merged[d] = sh[d] * s;
    Tensor flat = reshape(spread, merged);
    Axes start(sh.size(), 0), limit = merged;
    limit[d] = (sh[d] - 1) * s + 1;
    ct = slice(flat, start, limit);
  }
  std::vector<Tensor> starts;
  for (int64_t v : p.start_indices) starts.push_back(index_constant(v));
  return {dynamic_update_slice(zeros_like(x[0]), ct, starts)};
}

Out dynamic_slice_vjp(const ir::Equation&, Ts x, Ts, Ts g) {
  Out out(x.size());
  std::vector<Tensor> starts(x.begin() + 1, x.end());
  out[0] = dynamic_update_slice(zeros_like(x[0]), g[0], starts);
  return out;
}

Out dynamic_update_slice_vjp(const ir::Equation&, Ts x, Ts, Ts g) {
  Out out(x.size());
  std::vector<Tensor> starts(x.begin() + 2, x.end());
  out[0] = dynamic_update_slice(g[0], zeros_like(x[1]), starts);
  out[1] = dynamic_slice(g[0], starts, x[1].shape());
  return out;
}

Out concatenate_vjp(const ir::Equation& eq, Ts x, Ts, Ts g) {
  int64_t dim = std::get<ir::ConcatenateParams>(eq.params).dimension;
  Shape gs = g[0].shape();
  Out out;
  int64_t offset = 0;
  for (const Tensor& xi : x) {
    Axes start(gs.size(), 0), limit = gs;
    start[static_cast<size_t>(dim)] = offset;
    offset += xi.shape()[static_cast<size_t>(dim)];
    limit[static_cast<size_t>(dim)] = offset;
    out.push_back(slice(g[0], start, limit));
  }
  return out;
}

// The cotangent goes back to the memory kind the value came from.
Out device_put_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {device_put(g[0], x[0].memory_kind())}; }

// checkpoint_name is an identity; stop_gradient is one whose cotangent is zero
// (jax.lax.stop_gradient); random bits carry no gradient.
Out identity_vjp(const ir::Equation&, Ts, Ts, Ts g) { return {g[0]}; }
Out stop_gradient_vjp(const ir::Equation&, Ts, Ts, Ts) { return {Tensor()}; }
Out threefry_vjp(const ir::Equation&, Ts, Ts, Ts) { return Out(4); }

}  // namespace

void register_structural_vjps(VjpTable& t) {
  using P = Primitive;
  set_vjp(t, P::iota, no_inputs_vjp);
  set_vjp(t, P::constant, no_inputs_vjp);
  set_vjp(t, P::broadcast_in_dim, broadcast_in_dim_vjp);
  set_vjp(t, P::reshape, reshape_vjp);
  set_vjp(t, P::transpose, transpose_vjp);
  set_vjp(t, P::reduce_sum, reduce_sum_vjp);
  set_vjp(t, P::reduce_max, reduce_max_vjp);
  set_vjp(t, P::dot_general, dot_general_vjp);
  set_vjp(t, P::slice, slice_vjp);
  set_vjp(t, P::dynamic_slice, dynamic_slice_vjp);
  set_vjp(t, P::dynamic_update_slice, dynamic_update_slice_vjp);
  set_vjp(t, P::concatenate, concatenate_vjp);
  set_vjp(t, P::device_put, device_put_vjp);
  set_vjp(t, P::checkpoint_name, identity_vjp);
  set_vjp(t, P::stop_gradient, stop_gradient_vjp);
  set_vjp(t, P::threefry2x32, threefry_vjp);
}

}  // namespace ferry::transforms
