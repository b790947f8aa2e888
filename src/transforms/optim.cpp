#include "ferry/optim.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ferry/error.h"

namespace ferry::optim {
namespace {
void check_sizes(const char* what, size_t params, size_t grads, size_t state) {
  if (grads != params || state != params)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: {} parameters, {} gradients and {} state tensors; they must match", what, params, grads, state));
}
}  // namespace

SgdMomentumResult sgd_momentum(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                               const std::vector<Tensor>& velocity, double lr, double momentum) {
  check_sizes("sgd_momentum", params.size(), grads.size(), velocity.size());
  SgdMomentumResult r;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor v = velocity[i] * momentum + grads[i];
    r.velocity.push_back(v);
    r.params.push_back(params[i] - v * lr);
  }
  return r;
}

AdamResult adam(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                const std::vector<Tensor>& v, const Tensor& step, double lr, double b1, double b2, double eps) {
  check_sizes("adam", params.size(), grads.size(), m.size());
  check_sizes("adam", params.size(), grads.size(), v.size());
  AdamResult r;
  r.step = step + 1.0;
  // Bias corrections 1 - b^t, as scalars of the step's dtype.
  Tensor c1 = 1.0 - pow(b1, r.step), c2 = 1.0 - pow(b2, r.step);
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor mi = m[i] * b1 + grads[i] * (1.0 - b1);
    Tensor vi = v[i] * b2 + grads[i] * grads[i] * (1.0 - b2);
    r.m.push_back(mi);
    r.v.push_back(vi);
    Tensor m_hat = mi / broadcast_to(convert(c1, mi.dtype()), mi.shape());
    Tensor v_hat = vi / broadcast_to(convert(c2, vi.dtype()), vi.shape());
    r.params.push_back(params[i] - m_hat / (sqrt(v_hat) + eps) * lr);
  }
  return r;
}

}  // namespace ferry::optim

// AdamW, clipping and schedules: the traced halves of the templates in optim.h.
namespace ferry::optim {
namespace {

constexpr double kPi = 3.14159265358979323846;

// A scalar converted to x's dtype (it broadcasts in the arithmetic).
Tensor as_dtype_of(const Tensor& scalar, const Tensor& x) {
  return scalar.dtype() == x.dtype() ? scalar : convert(scalar, x.dtype());
}

Tensor as_f32(const Tensor& t) { return t.dtype() == DType::f32 ? t : convert(t, DType::f32); }

void check_scalar(const Tensor& t, const char* what, const char* name) {
  if (!t.defined() || t.rank() != 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: {} must be a scalar, got {}", what, name, t.defined() ? t.type_string() : "none"));
}

}  // namespace

namespace detail {

AdamWFlat adamw_flat(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& mu,
                     const std::vector<Tensor>& nu, const Tensor& count, const Tensor& lr, const AdamWOptions& o,
                     const std::vector<std::string>& paths) {
  check_sizes("adamw", params.size(), grads.size(), mu.size());
  check_sizes("adamw", params.size(), grads.size(), nu.size());
  check_scalar(count, "adamw", "the state's count");
  check_scalar(lr, "adamw", "the learning rate");
  if (!is_floating(lr.dtype()))
    throw Error(ErrorCode::invalid_argument, fmt::format("adamw: the learning rate must be a float, got {}", lr.type_string()));
  AdamWFlat r;
  r.count = count + 1.0;
  // Bias corrections 1 - b^t at the incremented count: in f32, as optax computes them, except for
  // f64 parameters, whose update f32 would round.
  Tensor c1[2], c2[2];
  auto corrections = [&](DType d) {
    const int k = d == DType::f64 ? 1 : 0;
    if (!c1[k].defined()) {
      Tensor t = convert(r.count, k ? DType::f64 : DType::f32);
      c1[k] = 1.0 - pow(o.b1, t);
      c2[k] = 1.0 - pow(o.b2, t);
    }
    return std::pair{c1[k], c2[k]};
  };
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const Tensor& g = grads[i];
    if (g.shape() != p.shape() || g.dtype() != p.dtype() || mu[i].shape() != p.shape() || nu[i].shape() != p.shape())
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("adamw: parameter {} is {} but its gradient is {} and its moments {} and {}", i,
                              p.type_string(), g.type_string(), mu[i].type_string(), nu[i].type_string()));
    Tensor m = g * (1.0 - o.b1) + mu[i] * o.b1;
    Tensor v = g * g * (1.0 - o.b2) + nu[i] * o.b2;
    r.mu.push_back(m);
    r.nu.push_back(v);
    auto [b1_correction, b2_correction] = corrections(p.dtype());
    Tensor update = (m / as_dtype_of(b1_correction, m)) / (sqrt(v / as_dtype_of(b2_correction, v)) + o.eps);
    const bool decays = o.weight_decay != 0 && (!o.decay || o.decay(paths.at(i)));
    if (decays) update = update + p * o.weight_decay;
    r.params.push_back(p - as_dtype_of(lr, p) * update);
  }
  return r;
}

Tensor global_norm_flat(const std::vector<Tensor>& leaves) {
  DType acc = DType::f32;
  for (const Tensor& x : leaves)
    if (x.defined() && x.dtype() == DType::f64) acc = DType::f64;
  Tensor total = constant(0.0, {}, acc);
  for (const Tensor& x : leaves) {
    if (!x.defined()) continue;
    if (!is_floating(x.dtype()))
      throw Error(ErrorCode::invalid_argument, fmt::format("global_norm: {} is not a float", x.type_string()));
    Tensor sq = sum(x * x);
    total = total + (sq.dtype() == acc ? sq : convert(sq, acc));
  }
  return sqrt(total);
}

std::vector<Tensor> clip_flat(const std::vector<Tensor>& leaves, const Tensor& norm, double max_norm) {
  if (!(max_norm > 0))
    throw Error(ErrorCode::invalid_argument, fmt::format("clip_by_global_norm: max_norm must be positive, got {}", max_norm));
  Tensor keep = norm < max_norm;
  std::vector<Tensor> out;
  for (const Tensor& x : leaves) {
    if (!x.defined()) {
      out.push_back(x);
      continue;
    }
    out.push_back(where(keep, x, (x / as_dtype_of(norm, x)) * max_norm));
  }
  return out;
}

Tensor scalar_like_lr(double lr) { return constant(lr, {}, DType::f32); }
Tensor zero_count() { return constant(0.0, {}, DType::i32); }

}  // namespace detail

Schedule constant_schedule(double value) {
  return Schedule([value](const Tensor&) { return constant(value, {}, DType::f32); }, [value](int64_t) { return value; });
}

Schedule linear_schedule(double init_value, double end_value, int64_t transition_steps) {
  if (transition_steps <= 0) return constant_schedule(init_value);
  const double steps = static_cast<double>(transition_steps);
  return Schedule(
      [=](const Tensor& count) {
        Tensor c = minimum(maximum(as_f32(count), 0.0), steps);
        return (1.0 - c / steps) * (init_value - end_value) + end_value;
      },
      [=](int64_t count) {
        double c = std::clamp(static_cast<double>(count), 0.0, steps);
        return (init_value - end_value) * (1.0 - c / steps) + end_value;
      });
}

Schedule cosine_decay_schedule(double init_value, int64_t decay_steps, double alpha, double exponent) {
  if (decay_steps <= 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("cosine_decay_schedule: decay_steps must be positive, got {}", decay_steps));
  const double steps = static_cast<double>(decay_steps);
  return Schedule(
      [=](const Tensor& count) {
        Tensor c = minimum(as_f32(count), steps);
        Tensor cosine = (cos(c * (kPi / steps)) + 1.0) * 0.5;
        if (exponent != 1.0) cosine = pow(cosine, exponent);
        return (cosine * (1.0 - alpha) + alpha) * init_value;
      },
      [=](int64_t count) {
        double c = std::min(static_cast<double>(count), steps);
        double cosine = std::pow(0.5 * (1 + std::cos(kPi * c / steps)), exponent);
        return init_value * ((1 - alpha) * cosine + alpha);
      });
}

Schedule warmup_cosine_decay_schedule(double init_value, double peak_value, int64_t warmup_steps, int64_t decay_steps,
                                      double end_value, double exponent) {
  if (decay_steps <= warmup_steps)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("warmup_cosine_decay_schedule: decay_steps ({}) counts the warmup and must exceed "
                            "warmup_steps ({})",
                            decay_steps, warmup_steps));
  const double alpha = peak_value == 0.0 ? 0.0 : end_value / peak_value;
  Schedule warmup = linear_schedule(init_value, peak_value, warmup_steps);
  Schedule decay = cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent);
  const double boundary = static_cast<double>(warmup_steps);
  return Schedule(
      [=](const Tensor& count) {
        Tensor c = as_f32(count);
        return where(c < boundary, warmup(c), decay(c - boundary));
      },
      [=](int64_t count) { return count < warmup_steps ? warmup(count) : decay(count - warmup_steps); });
}

}  // namespace ferry::optim
