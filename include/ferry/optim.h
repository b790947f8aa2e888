// Optimizer steps written with traced operations, so that a training step (loss, gradients and
// the update) is one compiled program.
//
// AdamW (decoupled weight decay, as optax.adamw and torch.optim.AdamW), gradient clipping by global
// norm, and learning-rate schedules work on any tree of parameters (ferry/tree.h: a struct
// registered with FERRY_FIELDS, a map by name, a vector...). The learning rate and the step count are
// traced values, inputs of the compiled step, so a schedule changes the rate every step without
// recompiling:
//
//   template <class T> struct Mlp { T w, b; FERRY_FIELDS(w, b) };
//   auto step = fy::jit([](Mlp<fy::Tensor> p, fy::optim::AdamWState<Mlp<fy::Tensor>> s, fy::Tensor x) {
//     auto [loss, g] = fy::value_and_grad(loss_fn)(p, x);
//     auto [clipped, norm] = fy::optim::clip_by_global_norm(g, 1.0);
//     fy::Tensor lr = schedule(s.count);                       // warmup, then cosine decay
//     auto [p2, s2] = fy::optim::adamw(p, clipped, s, lr, {.weight_decay = 0.01});
//     return std::tuple{loss, p2, s2};
//   });
//   Mlp<fy::Array> params = ...;
//   auto state = fy::optim::adamw_init(params);               // zero moments, count 0
//   auto [loss, p2, s2] = step(params, state, x);             // typed results, compiled once
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ferry/array.h"
#include "ferry/tensor.h"
#include "ferry/tree.h"

namespace ferry::optim {

// v <- momentum * v + g;  p <- p - lr * v.
struct SgdMomentumResult {
  std::vector<Tensor> params, velocity;
};
SgdMomentumResult sgd_momentum(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                               const std::vector<Tensor>& velocity, double lr, double momentum);

// Adam (Kingma & Ba) with bias correction; `step` is the scalar count of updates so far (f32),
// returned incremented.
struct AdamResult {
  std::vector<Tensor> params, m, v;
  Tensor step;
};
AdamResult adam(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                const std::vector<Tensor>& v, const Tensor& step, double lr, double b1 = 0.9, double b2 = 0.999,
                double eps = 1e-8);

// AdamW's state for parameters P: the count of updates so far (an i32 scalar) and the first and
// second moments, shaped like the parameters. A tree itself: it goes into and out of compiled steps
// and saves to disk like the parameters (AdamWState<Mlp<Array>> outside, <Mlp<Tensor>> inside).
template <class P> struct AdamWState {
  ferry::detail::leaf_t<P> count;
  P mu, nu;
  FERRY_FIELDS(count, mu, nu)
};

struct AdamWOptions {
  double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  // Decoupled: p <- p - lr * (adam_update + weight_decay * p). optax's default (PyTorch's is 1e-2).
  double weight_decay = 1e-4;
  // Which parameters decay, by their path in the tree ("w", "layers.0.b"); all when empty (optax's mask).
  std::function<bool(const std::string& path)> decay;
};

namespace detail {
struct AdamWFlat {
  std::vector<Tensor> params, mu, nu;
  Tensor count;
};
AdamWFlat adamw_flat(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& mu,
                     const std::vector<Tensor>& nu, const Tensor& count, const Tensor& lr, const AdamWOptions& options,
                     const std::vector<std::string>& paths);
Tensor global_norm_flat(const std::vector<Tensor>& leaves);
std::vector<Tensor> clip_flat(const std::vector<Tensor>& leaves, const Tensor& norm, double max_norm);
Tensor scalar_like_lr(double lr);
Tensor zero_count();
}  // namespace detail

// The state before the first update, for parameters of Arrays (outside a trace) or Tensors (inside).
template <class P> AdamWState<P> adamw_init(const P& params) {
  using L = ferry::detail::leaf_t<P>;
  auto zero = [](const L& x) -> L {
    if constexpr (std::is_same_v<L, Tensor>) return zeros_like(x);
    else return zeros(x.shape(), x.dtype(), x.memory_kind());
  };
  AdamWState<P> s;
  if constexpr (std::is_same_v<L, Tensor>) s.count = detail::zero_count();
  else s.count = Array::scalar<int32_t>(0);
  s.mu = ferry::detail::map_leaves<L>(params, zero);
  s.nu = ferry::detail::map_leaves<L>(params, zero);
  return s;
}

// One AdamW update (optax.adamw: scale_by_adam, add_decayed_weights, scale by -lr): returns the new
// parameters and state. lr is a traced scalar (e.g. an f32[] input of the step, or a schedule of
// state.count); the count it is read at is the one before this update, as optax's schedules read it.
template <class P>
std::pair<P, AdamWState<P>> adamw(const P& params, const P& grads, const AdamWState<P>& state, const Tensor& lr,
                                  const AdamWOptions& options = {}) {
  using ferry::detail::flat;
  using ferry::detail::unflatten_all;
  std::vector<std::string> paths;
  if (options.decay) paths = ferry::detail::tree_def(params).leaf_paths();
  detail::AdamWFlat r =
      detail::adamw_flat(flat(params), flat(grads), flat(state.mu), flat(state.nu), state.count, lr, options, paths);
  AdamWState<P> s{r.count, unflatten_all(params, r.mu), unflatten_all(params, r.nu)};
  return {unflatten_all(params, r.params), std::move(s)};
}
template <class P>
std::pair<P, AdamWState<P>> adamw(const P& params, const P& grads, const AdamWState<P>& state, double lr,
                                  const AdamWOptions& options = {}) {
  return adamw(params, grads, state, detail::scalar_like_lr(lr), options);
}

// sqrt of the sum of squares of every element of the tree (f32, or f64 if any leaf is f64).
template <class P> Tensor global_norm(const P& tree) { return detail::global_norm_flat(ferry::detail::flat(tree)); }

// The gradients scaled by max_norm / global_norm where that norm exceeds max_norm (unchanged
// otherwise, as optax.clip_by_global_norm), and the norm before clipping.
template <class P> std::pair<P, Tensor> clip_by_global_norm(const P& grads, double max_norm) {
  std::vector<Tensor> leaves = ferry::detail::flat(grads);
  Tensor norm = detail::global_norm_flat(leaves);
  return {ferry::detail::unflatten_all(grads, detail::clip_flat(leaves, norm, max_norm)), norm};
}

// A learning-rate schedule: a function of the step count, traced (i32 or f32 count -> f32 scalar)
// inside a compiled step or evaluated on the host. Semantics and parameters follow optax's.
class Schedule {
 public:
  Schedule(std::function<Tensor(const Tensor&)> traced, std::function<double(int64_t)> host)
      : traced_(std::move(traced)), host_(std::move(host)) {}
  Tensor operator()(const Tensor& count) const { return traced_(count); }
  double operator()(int64_t count) const { return host_(count); }

 private:
  std::function<Tensor(const Tensor&)> traced_;
  std::function<double(int64_t)> host_;
};

Schedule constant_schedule(double value);
// init_value to end_value linearly over transition_steps, then end_value (a constant init_value if
// transition_steps <= 0).
Schedule linear_schedule(double init_value, double end_value, int64_t transition_steps);
// init_value * ((1 - alpha) * (0.5 * (1 + cos(pi * min(t, T) / T)))^exponent + alpha); T = decay_steps > 0.
Schedule cosine_decay_schedule(double init_value, int64_t decay_steps, double alpha = 0.0, double exponent = 1.0);
// Linear warmup from init_value to peak_value over warmup_steps, then cosine decay to end_value at
// decay_steps (which counts the warmup; it must exceed warmup_steps).
Schedule warmup_cosine_decay_schedule(double init_value, double peak_value, int64_t warmup_steps, int64_t decay_steps,
                                      double end_value = 0.0, double exponent = 1.0);

}  // namespace ferry::optim
