// jax.nn's functions from ferry's primitives; see include/ferry/nn.h for the formulas.
#include "ferry/nn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

#include <fmt/format.h>

#include "ferry/error.h"
#include "ferry/gather.h"
#include "ferry/random.h"

namespace ferry::nn {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

void check(const Tensor& x, std::string_view op) {
  if (!x.defined()) invalid(fmt::format("nn.{}: the operand is an undefined Tensor", op));
  if (!is_floating(x.dtype())) invalid(fmt::format("nn.{}: needs a floating dtype, got {}", op, x.type_string()));
}

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view op) {
  if (axis < -rank || axis >= rank) invalid(fmt::format("nn.{}: axis {} is out of range for rank {}", op, axis, rank));
  return axis < 0 ? axis + rank : axis;
}

Axes kept(int64_t rank, const Axes& reduced) {
  Axes k;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) k.push_back(d);
  return k;
}

// r (x with `axes` reduced away) broadcast back to x's shape.
Tensor back(const Tensor& r, const Tensor& x, const Axes& axes) { return broadcast_in_dim(r, x.shape(), kept(x.rank(), axes)); }

// The max over `axes`, 0 where it is not finite, held constant: subtracting it keeps exp in range
// and changes neither the value nor (being constant) the gradient.
Tensor stable_shift(const Tensor& x, const Axes& axes) {
  Tensor m = max(x, axes);
  return stop_gradient(where(abs(m) < std::numeric_limits<double>::infinity(), m, 0.0));
}

void check_vector(const Tensor& v, const Tensor& x, std::string_view op, std::string_view what) {
  if (!v.defined()) return;
  const int64_t n = x.shape().back();
  if (v.shape() != Shape{n} || v.dtype() != x.dtype())
    invalid(fmt::format("nn.{}: {} must be {}[{}] (the last axis of {}), got {}", op, what, dtype_name(x.dtype()), n,
                        x.type_string(), v.type_string()));
}

}  // namespace

Tensor relu(const Tensor& x) {
  check(x, "relu");
  // As JAX's relu: max(x, 0) in value (NaN stays NaN), and the gradient 1 where x > 0, else 0 (at 0
  // and at NaN too). Only the x > 0 branch passes the cotangent; NaN reaches the output through
  // stop_gradient, which passes none.
  return where(x > 0.0, x, where(x <= 0.0, 0.0, stop_gradient(x)));
}

Tensor gelu(const Tensor& x, bool approximate) {
  check(x, "gelu");
  if (approximate) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    Tensor cdf = 0.5 * (1.0 + tanh(k * (x + 0.044715 * (x * x * x))));
    return x * cdf;
  }
  return x * (erf(x / std::numbers::sqrt2) + 1.0) / 2.0;
}

Tensor silu(const Tensor& x) {
  check(x, "silu");
  return x * logistic(x);
}

Tensor softmax(const Tensor& x, int64_t axis) {
  check(x, "softmax");
  Axes a{normalize_axis(axis, x.rank(), "softmax")};
  Tensor e = exp(x - back(stable_shift(x, a), x, a));
  return e / back(sum(e, a), x, a);
}

Tensor log_softmax(const Tensor& x, int64_t axis) {
  check(x, "log_softmax");
  Axes a{normalize_axis(axis, x.rank(), "log_softmax")};
  Tensor shifted = x - back(stable_shift(x, a), x, a);
  return shifted - back(log(sum(exp(shifted), a)), x, a);
}

Tensor logsumexp(const Tensor& x, const Axes& axes) {
  check(x, "logsumexp");
  Axes a;
  if (axes.empty()) {
    a.resize(static_cast<size_t>(x.rank()));
    std::iota(a.begin(), a.end(), 0);
  } else {
    for (int64_t d : axes) a.push_back(normalize_axis(d, x.rank(), "logsumexp"));
  }
  Tensor m = stable_shift(x, a);
  return log(sum(exp(x - back(m, x, a)), a)) + m;
}

Tensor layer_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double eps) {
  check(x, "layer_norm");
  if (x.rank() == 0) invalid(fmt::format("nn.layer_norm: needs rank >= 1, got {}", x.type_string()));
  check_vector(scale, x, "layer_norm", "scale");
  check_vector(bias, x, "layer_norm", "bias");
  Axes last{x.rank() - 1};
  Tensor centered = x - back(mean(x, last), x, last);
  Tensor var = mean(centered * centered, last);
  Tensor y = centered * back(rsqrt(var + eps), x, last);
  if (scale.defined()) y = y * scale;
  if (bias.defined()) y = y + bias;
  return y;
}

Tensor rms_norm(const Tensor& x, const Tensor& scale, double eps) {
  check(x, "rms_norm");
  if (x.rank() == 0) invalid(fmt::format("nn.rms_norm: needs rank >= 1, got {}", x.type_string()));
  check_vector(scale, x, "rms_norm", "scale");
  Axes last{x.rank() - 1};
  Tensor y = x * back(rsqrt(mean(x * x, last) + eps), x, last);
  return scale.defined() ? y * scale : y;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& labels) {
  check(logits, "cross_entropy");
  if (!labels.defined()) invalid("nn.cross_entropy: labels are an undefined Tensor");
  if (logits.rank() == 0) invalid(fmt::format("nn.cross_entropy: logits need rank >= 1, got {}", logits.type_string()));
  Shape want = logits.shape();
  want.pop_back();
  if (labels.dtype() != DType::i32 || labels.shape() != want)
    invalid(fmt::format("nn.cross_entropy: labels must be i32{} for logits {}, got {}", shape_string(want),
                        logits.type_string(), labels.type_string()));
  const int64_t last = logits.rank() - 1;
  Shape col = want;
  col.push_back(1);
  Tensor picked = reshape(take_along_axis(logits, reshape(labels, col), last), want);
  return logsumexp(logits, {last}) - picked;
}

Tensor dropout(const Tensor& key, double rate, const Tensor& x) {
  check(x, "dropout");
  if (!(rate >= 0.0 && rate <= 1.0)) invalid(fmt::format("nn.dropout: rate must be in [0, 1], got {}", rate));
  if (rate == 0.0) return x;
  if (rate == 1.0) return zeros_like(x);
  Tensor keep = random::bernoulli(key, 1.0 - rate, x.shape());
  return where(keep, x / (1.0 - rate), 0.0);
}

}  // namespace ferry::nn
