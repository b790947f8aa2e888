// custom_vjp: a function with a backward pass of your own, as jax.custom_vjp.
//
//   auto clipped = ferry::custom_vjp(
//       [](fy::Tensor x) { return fy::sin(x); },                                   // f
//       [](fy::Tensor x) { return std::pair{fy::sin(x), fy::cos(x)}; },             // fwd: (f(x), residuals)
//       [](fy::Tensor cos_x, fy::Tensor g) { return fy::clamp(-1.0, g * cos_x, 1.0); });  // bwd(residuals, g)
//   fy::Tensor y = clipped(x);
//
// f computes the outputs. fwd returns a pair of the outputs (the same types as f's) and the
// residuals (a Tensor, a std::vector<Tensor>, a pair or tuple of those); bwd takes the residuals
// and the outputs' cotangents (structured as f's outputs) and returns one cotangent per argument
// (a Tensor for one argument, else a std::tuple or std::vector in argument order; an undefined
// Tensor means zero). Arguments and outputs may be Tensors, vectors, pairs or tuples of them.
//
// Undifferentiated, the function computes f. Differentiated (grad, vjp, inside scan or checkpoint),
// fwd runs in the forward pass and bwd in the backward pass; the residuals are ordinary values of
// the enclosing function, so an enclosing checkpoint's policy decides whether they are saved,
// recomputed or offloaded (equations inside fwd get that policy's decisions like any other).
// Differentiating twice differentiates bwd. Tensors of the enclosing function that f, fwd or bwd
// use (captured values) get no cotangent from this function: pass what needs a gradient as an
// argument.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/tensor.h"
#include "ferry/tree.h"

namespace ferry {

namespace detail {

using LeafFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
// fwd on leaves: (output leaves, residual leaves).
using FwdLeafFn = std::function<std::pair<std::vector<Tensor>, std::vector<Tensor>>(const std::vector<Tensor>&)>;
// bwd on leaves: (residual leaves, output cotangent leaves) -> argument cotangent leaves.
using BwdLeafFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&, const std::vector<Tensor>&)>;

std::vector<Tensor> custom_vjp_impl(const LeafFn& f, const FwdLeafFn& fwd, const BwdLeafFn& bwd,
                                    const std::vector<Tensor>& args);

}  // namespace detail

template <class F, class Fwd, class Bwd> class CustomVjp {
 public:
  CustomVjp(F f, Fwd fwd, Bwd bwd) : f_(std::move(f)), fwd_(std::move(fwd)), bwd_(std::move(bwd)) {}

  template <class... Args> auto operator()(const Args&... args) const {
    using Out = std::decay_t<std::invoke_result_t<const F&, const Args&...>>;
    using FwdOut = std::decay_t<std::invoke_result_t<const Fwd&, const Args&...>>;
    using Res = std::decay_t<typename FwdOut::second_type>;
    const std::tuple<Args...> like(args...);
    auto out_like = std::make_shared<std::optional<Out>>();
    auto res_like = std::make_shared<std::optional<Res>>();
    detail::LeafFn f = [&](const std::vector<Tensor>& leaves) {
      Out o = std::apply(f_, detail::unflatten_all(like, leaves));
      *out_like = o;
      return detail::flat(o);
    };
    detail::FwdLeafFn fwd = [&](const std::vector<Tensor>& leaves) {
      FwdOut r = std::apply(fwd_, detail::unflatten_all(like, leaves));
      *res_like = r.second;
      return std::pair{detail::flat(Out(r.first)), detail::flat(r.second)};
    };
    detail::BwdLeafFn bwd = [&](const std::vector<Tensor>& res, const std::vector<Tensor>& cts) {
      return detail::flat(bwd_(detail::unflatten_all(**res_like, res), detail::unflatten_all(**out_like, cts)));
    };
    std::vector<Tensor> leaves;
    (detail::flatten(args, leaves), ...);
    std::vector<Tensor> outs = detail::custom_vjp_impl(f, fwd, bwd, leaves);
    return detail::unflatten_all(**out_like, outs);
  }

 private:
  F f_;
  Fwd fwd_;
  Bwd bwd_;
};

template <class F, class Fwd, class Bwd> CustomVjp<F, Fwd, Bwd> custom_vjp(F f, Fwd fwd, Bwd bwd) {
  return CustomVjp<F, Fwd, Bwd>(std::move(f), std::move(fwd), std::move(bwd));
}

}  // namespace ferry
