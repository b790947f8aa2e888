// Control flow as in jax.lax: cond (differentiable), fori_loop (a static trip count lowers to scan
// and is differentiable) and while_loop (forward only).
//
//   fy::Tensor y = fy::cond(x.sum() > 0.0, [](fy::Tensor v) { return fy::sin(v); },
//                           [](fy::Tensor v) { return -v; }, x);
//   fy::Tensor s = fy::fori_loop(0, 10, [](fy::Tensor i, fy::Tensor acc) { return acc * 2.0; }, x);
//   auto [i, acc] = fy::while_loop([](const auto& c) { return std::get<0>(c) < 10.0; },
//                                  [](const auto& c) { ... return next; }, init);
//
// Operands, outputs and loop carries may be Tensors, vectors, pairs or tuples of them (as scan's).
// Tensors of the enclosing function used inside are captured.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/scan.h"
#include "ferry/tensor.h"
#include "ferry/tree.h"

namespace ferry {

namespace detail {
using BranchFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
// index: bool (false -> branches[0]) or i32 (clamped); records one cond equation.
std::vector<Tensor> cond_impl(const Tensor& index, const std::vector<BranchFn>& branches,
                              const std::vector<Tensor>& operands);
using WhileCondFn = std::function<Tensor(const std::vector<Tensor>&)>;
using WhileBodyFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
std::vector<Tensor> while_impl(const WhileCondFn& cond, const WhileBodyFn& body, const std::vector<Tensor>& init);
}  // namespace detail

// jax.lax.cond(pred, true_fn, false_fn, *operands): runs true_fn(operands...) when pred (a bool
// scalar) is true, else false_fn(operands...). Both branches return the same structure and types.
// Differentiable with respect to the operands: the backward pass runs the taken branch's VJP,
// recomputing that branch's forward values (only the operands are kept as residuals).
template <class T, class F, class... Ops> auto cond(const Tensor& pred, T true_fn, F false_fn, const Ops&... operands) {
  using Out = std::decay_t<std::invoke_result_t<T&, const Ops&...>>;
  static_assert(std::is_same_v<Out, std::decay_t<std::invoke_result_t<F&, const Ops&...>>>,
                "cond: both branches must return the same structure");
  const std::tuple<Ops...> like(operands...);
  auto out_like = std::make_shared<std::optional<Out>>();
  auto branch = [&](auto& fn) {
    return detail::BranchFn([&](const std::vector<Tensor>& leaves) {
      Out o = std::apply(fn, detail::unflatten_all(like, leaves));
      *out_like = o;
      return detail::flat(o);
    });
  };
  std::vector<Tensor> leaves;
  (detail::flatten(operands, leaves), ...);
  std::vector<Tensor> out = detail::cond_impl(pred, {branch(false_fn), branch(true_fn)}, leaves);
  return detail::unflatten_all(**out_like, out);
}

// jax.lax.switch(index, branches, *operands) for branches of one type: branches[index] with index
// (i32 scalar) clamped into range.
template <class Fn, class... Ops> auto switch_(const Tensor& index, const std::vector<Fn>& branches, const Ops&... operands) {
  using Out = std::decay_t<std::invoke_result_t<const Fn&, const Ops&...>>;
  const std::tuple<Ops...> like(operands...);
  auto out_like = std::make_shared<std::optional<Out>>();
  std::vector<detail::BranchFn> fns;
  for (const Fn& fn : branches)
    fns.push_back([&like, &fn, out_like](const std::vector<Tensor>& leaves) {
      Out o = std::apply(fn, detail::unflatten_all(like, leaves));
      *out_like = o;
      return detail::flat(o);
    });
  std::vector<Tensor> leaves;
  (detail::flatten(operands, leaves), ...);
  std::vector<Tensor> out = detail::cond_impl(index, fns, leaves);
  return detail::unflatten_all(**out_like, out);
}

// jax.lax.fori_loop(lower, upper, body, init) with a static trip count: body(i, carry) -> carry
// for i = lower .. upper-1 (i is an i32 scalar). It is a scan over the indices, so it is
// differentiable and checkpointable like one.
template <class B, class C> C fori_loop(int64_t lower, int64_t upper, B body, const C& init) {
  const int64_t n = upper > lower ? upper - lower : 0;
  if (n == 0) return init;
  Tensor idx = iota(DType::i32, {n}) + static_cast<double>(lower);
  auto r = scan([&](const C& carry, const Tensor& i) { return std::pair{C(body(i, carry)), Tensor()}; }, init, idx);
  return r.carry;
}

// jax.lax.while_loop(cond_fun, body_fun, init): while cond_fun(carry) (a bool scalar) holds,
// carry = body_fun(carry). Forward only: differentiating it is UNIMPLEMENTED (use fori_loop for a
// known trip count).
template <class CF, class BF, class C> C while_loop(CF cond_fun, BF body_fun, const C& init) {
  detail::WhileCondFn c = [&](const std::vector<Tensor>& leaves) { return cond_fun(detail::unflatten_all(init, leaves)); };
  detail::WhileBodyFn b = [&](const std::vector<Tensor>& leaves) {
    return detail::flat(C(body_fun(detail::unflatten_all(init, leaves))));
  };
  return detail::unflatten_all(init, detail::while_impl(c, b, detail::flat(init)));
}

}  // namespace ferry
