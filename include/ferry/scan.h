// scan: a loop whose body is traced once and recorded as one equation.
//
//   auto [carry, ys] = ferry::scan(f, init, xs);   // f(carry, x) -> std::pair{carry, y}
//
// Semantics follow jax.lax.scan: xs are sliced along axis 0 (one slice per step), ys are stacked
// along a new axis 0; with reverse=true the steps run from the last slice to the first (ys[i] still
// pairs with xs[i]). carry, x and y may each be a Tensor, a std::vector<Tensor>, a pair or tuple of
// those, or an undefined Tensor for "none" (then give `length`). The carry f returns must have the
// types of `init`. Tensors of the enclosing function used in f are captured as loop constants.
// scan is differentiable: its VJP runs a forward scan that stacks the residuals each step needs, then
// a reverse scan that consumes them one slice per step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/tensor.h"
#include "ferry/tree.h"

namespace ferry {

template <class C, class Y> struct ScanResult {
  C carry;
  Y ys;
};

namespace detail {

using ScanBodyFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& carry, const std::vector<Tensor>& x)>;

// Records the scan; returns carry leaves then ys leaves (undefined where the body's y leaf is).
std::vector<Tensor> scan_impl(const ScanBodyFn& body, const std::vector<Tensor>& init, const std::vector<Tensor>& xs,
                              int64_t length, bool reverse);

template <class T> struct result_parts;
template <class A, class B> struct result_parts<std::pair<A, B>> {
  using carry = A;
  using y = B;
  static const A& get_carry(const std::pair<A, B>& p) { return p.first; }
  static const B& get_y(const std::pair<A, B>& p) { return p.second; }
};
template <class A, class B> struct result_parts<std::tuple<A, B>> {
  using carry = A;
  using y = B;
  static const A& get_carry(const std::tuple<A, B>& p) { return std::get<0>(p); }
  static const B& get_y(const std::tuple<A, B>& p) { return std::get<1>(p); }
};

}  // namespace detail

// length: the number of steps; -1 takes it from xs (required when xs is none; any other negative
// length is INVALID_ARGUMENT).
template <class F, class C, class X>
auto scan(F f, const C& init, const X& xs, int64_t length = -1, bool reverse = false) {
  using R = std::decay_t<std::invoke_result_t<F, const C&, const X&>>;
  using Parts = detail::result_parts<R>;
  using Y = std::decay_t<typename Parts::y>;
  static_assert(std::is_convertible_v<typename Parts::carry, C>, "scan: the body must return the carry's type");
  auto y_like = std::make_shared<std::optional<Y>>();
  detail::ScanBodyFn body = [&](const std::vector<Tensor>& carry, const std::vector<Tensor>& x) {
    R r = f(detail::unflatten_all(init, carry), detail::unflatten_all(xs, x));
    *y_like = Parts::get_y(r);
    std::vector<Tensor> out = detail::flat(C(Parts::get_carry(r)));
    if (out.size() != carry.size())
      throw Error(ErrorCode::invalid_argument, "scan: the body returned a carry of another structure than init");
    detail::flatten(Parts::get_y(r), out);
    return out;
  };
  std::vector<Tensor> out = detail::scan_impl(body, detail::flat(init), detail::flat(xs), length, reverse);
  std::vector<Tensor> carry_leaves(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(detail::flat(init).size()));
  std::vector<Tensor> y_leaves(out.begin() + static_cast<std::ptrdiff_t>(carry_leaves.size()), out.end());
  return ScanResult<C, Y>{detail::unflatten_all(init, carry_leaves), detail::unflatten_all(**y_like, y_leaves)};
}

}  // namespace ferry
