// Reverse-mode autodiff: vjp, grad, value_and_grad.
//
// They work on traced functions of trees of Tensors (parameter lists, maps, registered structs, pairs, tuples)
// and compose with each other and with jit: jit(grad(f)), grad inside a traced function,
// grad(grad(f)) for scalar f. Called on Arrays instead of Tensors, grad and value_and_grad jit
// themselves and return the flattened results as std::vector<Array>.
//
//   auto [loss, pullback] = ferry::vjp(f, x, params);
//   auto [ct_x, ct_params] = pullback(ferry::ones_like(loss));
//   auto g = ferry::grad(f)(x, params);                      // shaped like x
//   auto gs = ferry::grad(f, ferry::argnums<0, 1>)(x, params); // std::tuple of both
#pragma once

#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/jit.h"
#include "ferry/tensor.h"
#include "ferry/tree.h"

namespace ferry {

namespace detail {

class Linearized;  // a function's forward, emitted into the current trace, and its pullback

using FlatFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Traces fn on tensors typed like `primals` as a child of the current trace, emits its forward on
// `primals`, and returns the emitted outputs through `outputs`.
std::shared_ptr<const Linearized> linearize(const FlatFn& fn, const std::vector<Tensor>& primals,
                                            std::vector<Tensor>& outputs);
// Cotangents of the primals (zeros where nothing flows, e.g. integer inputs) from output cotangents
// (undefined = zero).
std::vector<Tensor> pullback(const Linearized& lin, const std::vector<Tensor>& output_cotangents);
// INVALID_ARGUMENT unless t is a scalar of a floating dtype; `what` names the transformation.
void check_scalar_output(const Tensor& t, const char* what);

template <class T> struct is_array_arg : std::bool_constant<is_tree_of<T, Array>> {};

}  // namespace detail

// vjp(f, primals...) -> {f(primals...), pullback}; pullback(cotangent shaped like the output)
// returns a std::tuple of cotangents shaped like the primals.
template <class F, class... Args> auto vjp(F f, const Args&... primals) {
  using Out = std::decay_t<std::invoke_result_t<F, const Args&...>>;
  std::tuple<Args...> like{primals...};
  std::vector<Tensor> flat_in;
  (detail::flatten(primals, flat_in), ...);
  auto out_like = std::make_shared<Out>();
  detail::FlatFn fn = [&](const std::vector<Tensor>& leaves) {
    auto args = detail::unflatten_all(like, leaves);
    *out_like = std::apply(f, args);
    return detail::flat(*out_like);
  };
  std::vector<Tensor> flat_out;
  auto lin = detail::linearize(fn, flat_in, flat_out);
  Out out = detail::unflatten_all(*out_like, flat_out);
  auto pullback = [lin, like](const Out& cotangent) {
    return detail::unflatten_all(like, detail::pullback(*lin, detail::flat(cotangent)));
  };
  return std::pair{out, pullback};
}

template <int... I> struct argnums_t {};
template <int... I> inline constexpr argnums_t<I...> argnums{};

namespace detail {

// f's value and its gradient with respect to the arguments at positions I..., the others held fixed.
template <class F, int... I, class... Args> auto value_and_grad_impl(const F& f, const Args&... args) {
  static_assert(sizeof...(I) > 0, "argnums must name at least one argument");
  static_assert(((I >= 0 && I < static_cast<int>(sizeof...(Args))) && ...), "argnums out of range");
  std::tuple<const Args&...> all{args...};
  auto partial = [&](const auto&... selected) {
    std::tuple<Args...> full{args...};
    auto sel = std::forward_as_tuple(selected...);
    [&]<size_t... K>(std::index_sequence<K...>) {
      ((std::get<I>(full) = std::get<K>(sel)), ...);
    }(std::make_index_sequence<sizeof...(I)>{});
    Tensor out = std::apply(f, full);
    check_scalar_output(out, "grad");
    return out;
  };
  auto [value, pb] = vjp(partial, std::get<I>(all)...);
  return std::pair{value, pb(ones_like(value))};
}

}  // namespace detail

template <class F, int... I> class ValueAndGradFn {
 public:
  explicit ValueAndGradFn(F f) : f_(std::move(f)) {}
  // On tensors: {value, gradient}; the gradient is shaped like the argument for one argnum, a tuple
  // for several. On Arrays: jitted, returning the flattened value and gradients.
  template <class... Args> auto operator()(const Args&... args) const {
    if constexpr ((detail::is_array_arg<Args>::value && ...)) {
      return jit(*this)(args...);
    } else {
      auto [value, grads] = detail::value_and_grad_impl<F, I...>(f_, args...);
      if constexpr (sizeof...(I) == 1) return std::pair{value, std::get<0>(grads)};
      else return std::pair{value, grads};
    }
  }

 private:
  F f_;
};

// value_and_grad without the value.
template <class F, int... I> class GradFn {
 public:
  explicit GradFn(F f) : value_and_grad_(std::move(f)) {}
  template <class... Args> auto operator()(const Args&... args) const {
    if constexpr ((detail::is_array_arg<Args>::value && ...)) {
      return jit(*this)(args...);
    } else {
      return value_and_grad_(args...).second;
    }
  }

 private:
  ValueAndGradFn<F, I...> value_and_grad_;
};

// The gradient of a scalar-valued f with respect to its first argument (or those named by argnums).
template <class F> GradFn<F, 0> grad(F f) { return GradFn<F, 0>(std::move(f)); }
template <class F, int... I> GradFn<F, I...> grad(F f, argnums_t<I...>) { return GradFn<F, I...>(std::move(f)); }
template <class F> ValueAndGradFn<F, 0> value_and_grad(F f) { return ValueAndGradFn<F, 0>(std::move(f)); }
template <class F, int... I> ValueAndGradFn<F, I...> value_and_grad(F f, argnums_t<I...>) {
  return ValueAndGradFn<F, I...>(std::move(f));
}

}  // namespace ferry
