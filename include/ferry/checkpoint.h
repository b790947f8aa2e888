// Rematerialization: checkpoint (alias remat), its policies, checkpoint_name, and residual reports.
//
//   auto layer = ferry::checkpoint(f, ferry::policies::dots_saveable);
//   auto policy = ferry::policies::save_and_offload_only_these_names(
//       {}, {"x"}, ferry::MemoryKind::device, ferry::MemoryKind::pinned_host);
//
// A checkpointed function is one equation whose body records, for every equation in it, what the
// policy decided for its outputs. When the checkpoint is differentiated, the values its backward
// pass needs are saved (Saveable), recomputed in the backward pass from saved values and the
// checkpoint's inputs (Recompute), or copied to another memory kind in the forward pass and back
// just before their first use in the backward pass (Offloadable). Inputs of the checkpoint are
// always available. Semantics follow jax.checkpoint and jax.checkpoint_policies.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ferry/jit.h"
#include "ferry/tensor.h"
#include "ferry/tree.h"

namespace ferry {

struct Saveable {};
struct Recompute {};
struct Offloadable {
  MemoryKind src = MemoryKind::device;
  MemoryKind dst = MemoryKind::pinned_host;
};
// The compiler chooses (save, recompute or offload) for the program's device_memory_limit, at the
// lowest estimated step time (see policies::automatic).
struct Automatic {};
using Decision = std::variant<Saveable, Recompute, Offloadable, Automatic>;

namespace detail {
struct EquationData;  // the primitive, parameters, name and types of one equation (checkpoint.cpp)
}

// What a policy sees: one equation of the checkpointed function (scan bodies included). An Equation
// is a value that owns what it exposes (a copy of the equation's primitive, parameters, name and
// types), so a policy may keep the Equations it is given and read them after lowering; copies
// share the data. (A value rather than a view that is valid only during the call: a policy is user
// code, and a kept view would read freed memory in every build, not only where a check catches it.)
class Equation {
 public:
  explicit Equation(std::shared_ptr<const detail::EquationData> data) : data_(std::move(data)) {}
  Primitive primitive() const;
  // dot_general's dimension numbers; INVALID_ARGUMENT for any other primitive.
  DotDims dot_dims() const;
  std::vector<ShapeDtype> input_types() const;
  std::vector<ShapeDtype> output_types() const;
  // The name given by checkpoint_name (empty for other equations).
  const std::string& name() const;
  // The typed parameters as the IR text prints them, e.g. "[axes=[0]]".
  std::string params_text() const;

 private:
  std::shared_ptr<const detail::EquationData> data_;
};

// A policy: any callable Decision(const Equation&), with a name for printed programs.
class Policy {
 public:
  template <class F, class = std::enable_if_t<std::is_invocable_r_v<Decision, F, const Equation&>>>
  Policy(F f, std::string name = "custom") : fn_(std::move(f)), name_(std::move(name)) {}
  Decision operator()(const Equation& e) const { return fn_(e); }
  const std::string& name() const { return name_; }

 private:
  std::function<Decision(const Equation&)> fn_;
  std::string name_;
};

namespace policies {
// Saves every value (no recomputation).
extern const Policy everything_saveable;
// Lets the compiler decide for every value: with CompileOptions::device_memory_limit it saves,
// recomputes (with the chain a value needs) or offloads each value the backward pass reads so that
// the plan fits the limit at the lowest estimated step time; without a limit it saves everything
// (the fastest plan). Values a nested checkpoint's own policy decides keep that decision.
extern const Policy automatic;
// Saves nothing but the checkpoint's inputs (full recomputation); the default.
extern const Policy nothing_saveable;
// Saves dot_general outputs (JAX's dots_saveable, alias checkpoint_dots).
extern const Policy dots_saveable;
extern const Policy checkpoint_dots;
// Saves outputs of dot_generals without batch dimensions (the transformer heuristic).
extern const Policy dots_with_no_batch_dims_saveable;
// Offloads outputs of dot_generals without batch dimensions from src to dst; recomputes the rest.
Policy offload_dot_with_no_batch_dims(MemoryKind src, MemoryKind dst);
// Saves the values tagged with one of these names (checkpoint_name).
Policy save_only_these_names(std::vector<std::string> names);
// Saves the named values except those with these names.
Policy save_any_names_but_these(std::vector<std::string> names);
// Saves values named in `saved`, offloads those named in `offloaded` from src to dst, recomputes
// the rest. A name in both lists is INVALID_ARGUMENT.
Policy save_and_offload_only_these_names(std::vector<std::string> saved, std::vector<std::string> offloaded,
                                         MemoryKind src, MemoryKind dst);
// Saveable where either policy saves; otherwise Offloadable where either offloads (a's first);
// otherwise Recompute. (JAX's version ignores offloading; combining offload policies is allowed here.)
Policy save_from_both_policies(Policy a, Policy b);
}  // namespace policies

// Tags x with a name for name-based policies; an identity otherwise. An empty name is an error.
Tensor checkpoint_name(const Tensor& x, const std::string& name);

// One residual the backward pass keeps: its type (memory kind included), the decision that kept it
// ("saved", "offloaded", "argument"), and where it came from. After the residuals come the names a
// checkpoint policy saves or offloads that the backward pass never reads, with decision "unused"
// and source "named 'act': not needed by the backward pass": they take no memory, and naming them
// had no effect (Lowered::warnings() reports the same).
struct Residual {
  ShapeDtype type;
  std::string decision;
  std::string source;
};

// "f32[8,16]{pinned_host}  offloaded  output of dot_general (named 'x')" lines, one per residual.
std::string format_residuals(const std::vector<Residual>& residuals);

namespace detail {

std::vector<Tensor> checkpoint_impl(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                    const std::vector<Tensor>& args, const Policy& policy, bool prevent_cse);
std::vector<Residual> residuals_impl(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                     const std::vector<Tensor>& args);

template <class F, class... Args> auto call_flat(const F& f, const std::tuple<Args...>& like,
                                                 std::shared_ptr<std::decay_t<std::invoke_result_t<F, const Args&...>>> out) {
  return [&f, like, out](const std::vector<Tensor>& leaves) {
    *out = std::apply(f, unflatten_all(like, leaves));
    return flat(*out);
  };
}

template <class T> struct is_array_like : std::bool_constant<is_tree_of<T, Array> || is_tree_of<T, ShapeDtype>> {};

}  // namespace detail

template <class F> class Checkpointed {
 public:
  Checkpointed(F f, Policy policy, bool prevent_cse)
      : f_(std::move(f)), policy_(std::move(policy)), prevent_cse_(prevent_cse) {}

  // On tensors: records one checkpoint equation and returns f's outputs. On Arrays: jitted.
  template <class... Args> auto operator()(const Args&... args) const {
    if constexpr ((detail::is_array_like<Args>::value && ...)) {
      return jit(*this)(args...);
    } else {
      using Out = std::decay_t<std::invoke_result_t<F, const Args&...>>;
      std::tuple<Args...> like{args...};
      auto out = std::make_shared<Out>();
      std::vector<Tensor> flat_in;
      (detail::flatten(args, flat_in), ...);
      std::vector<Tensor> flat_out =
          detail::checkpoint_impl(detail::call_flat(f_, like, out), flat_in, policy_, prevent_cse_);
      return detail::unflatten_all(*out, flat_out);
    }
  }

 private:
  F f_;
  Policy policy_;
  bool prevent_cse_;
};

template <class F> Checkpointed<F> checkpoint(F f, Policy policy = policies::nothing_saveable, bool prevent_cse = true) {
  return Checkpointed<F>(std::move(f), std::move(policy), prevent_cse);
}
template <class F> Checkpointed<F> remat(F f, Policy policy = policies::nothing_saveable, bool prevent_cse = true) {
  return checkpoint(std::move(f), std::move(policy), prevent_cse);
}

// The residuals the backward pass of f(args...) keeps, f being differentiated with respect to all
// its arguments. args are Arrays or ShapeDtypes (or vectors of them), as for jit's lower().
template <class F, class... Args> std::vector<Residual> saved_residuals(F f, const Args&... args) {
  std::vector<Residual> result;
  detail::TraceSession session("saved_residuals");
  std::tuple<decltype(session.input(args))...> inputs{session.input(args)...};
  std::vector<Tensor> flat_in = std::apply([](const auto&... a) {
    std::vector<Tensor> v;
    (detail::flatten(a, v), ...);
    return v;
  }, inputs);
  using Out = std::decay_t<decltype(std::apply(f, inputs))>;
  auto out = std::make_shared<Out>();
  result = detail::residuals_impl(detail::call_flat(f, inputs, out), flat_in);
  session.finish({});
  return result;
}

// Prints saved_residuals(f, args...) to stdout.
template <class F, class... Args> void print_saved_residuals(F f, const Args&... args) {
  std::fputs(format_residuals(saved_residuals(std::move(f), args...)).c_str(), stdout);
}

}  // namespace ferry
