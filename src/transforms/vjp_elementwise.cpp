// VJP rules of the elementwise primitives: cotangents of the inputs from the cotangent g of the
// output, written with the traced operations themselves (so they can be differentiated again).
#include "ferry/tensor.h"
#include "transforms/vjp_rules.h"

namespace ferry::transforms {
namespace {

using Ts = std::span<const Tensor>;
using Out = std::vector<Tensor>;

Out neg_vjp(const ir::Equation&, Ts, Ts, Ts g) { return {-g[0]}; }
Out exp_vjp(const ir::Equation&, Ts, Ts y, Ts g) { return {g[0] * y[0]}; }
Out log_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {g[0] / x[0]}; }
Out sin_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {g[0] * cos(x[0])}; }
Out cos_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {-(g[0] * sin(x[0]))}; }
Out tanh_vjp(const ir::Equation&, Ts, Ts y, Ts g) { return {g[0] * (1.0 - y[0] * y[0])}; }
Out logistic_vjp(const ir::Equation&, Ts, Ts y, Ts g) { return {g[0] * (y[0] * (1.0 - y[0]))}; }
Out sqrt_vjp(const ir::Equation&, Ts, Ts y, Ts g) { return {g[0] / (y[0] * 2.0)}; }
// d/dx x^-1/2 = -1/2 x^-3/2 = -y / (2x)
Out rsqrt_vjp(const ir::Equation&, Ts x, Ts y, Ts g) { return {g[0] * (y[0] / x[0]) * -0.5}; }
Out abs_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {g[0] * sign(x[0])}; }
Out zero_vjp(const ir::Equation& eq, Ts, Ts, Ts) { return Out(eq.inputs.size()); }

Out add_vjp(const ir::Equation&, Ts, Ts, Ts g) { return {g[0], g[0]}; }
Out sub_vjp(const ir::Equation&, Ts, Ts, Ts g) { return {g[0], -g[0]}; }
Out mul_vjp(const ir::Equation&, Ts x, Ts, Ts g) { return {g[0] * x[1], g[0] * x[0]}; }
// d(a/b)/db = -a/b^2 = -y/b
Out div_vjp(const ir::Equation&, Ts x, Ts y, Ts g) { return {g[0] / x[1], -(g[0] * y[0] / x[1])}; }
// The winner takes the cotangent; ties split it evenly (as in JAX).
Out max_vjp(const ir::Equation&, Ts x, Ts, Ts g) {
  Tensor half = g[0] * 0.5;
  Tensor tie = eq(x[0], x[1]);
  Tensor zero = zeros_like(g[0]);
  return {where(x[0] > x[1], g[0], where(tie, half, zero)), where(x[1] > x[0], g[0], where(tie, half, zero))};
}
Out min_vjp(const ir::Equation&, Ts x, Ts, Ts g) {
  Tensor half = g[0] * 0.5;
  Tensor tie = eq(x[0], x[1]);
  Tensor zero = zeros_like(g[0]);
  return {where(x[0] < x[1], g[0], where(tie, half, zero)), where(x[1] < x[0], g[0], where(tie, half, zero))};
}
// d(a^b)/da = b a^(b-1) (0 where b == 0, avoiding 0 * inf); d(a^b)/db = a^b log a (0 where a == 0).
Out pow_vjp(const ir::Equation&, Ts x, Ts y, Ts g) {
  const Tensor& a = x[0];
  const Tensor& b = x[1];
  Tensor da = where(eq(b, zeros_like(b)), 0.0, b * pow(a, b - 1.0));
  Tensor safe_a = where(eq(a, zeros_like(a)), 1.0, a);
  return {g[0] * da, g[0] * (y[0] * log(safe_a))};
}

Out select_vjp(const ir::Equation&, Ts x, Ts, Ts g) {
  Tensor zero = zeros_like(g[0]);
  return {Tensor(), where(x[0], g[0], zero), where(x[0], zero, g[0])};
}
Out convert_vjp(const ir::Equation&, Ts x, Ts, Ts g) {
  if (!is_floating(x[0].dtype()) || !is_floating(g[0].dtype())) return {Tensor()};
  return {convert(g[0], x[0].dtype())};
}

}  // namespace

void register_elementwise_vjps(VjpTable& t) {
  using P = Primitive;
  set_vjp(t, P::neg, neg_vjp);
  set_vjp(t, P::exp, exp_vjp);
  set_vjp(t, P::log, log_vjp);
  set_vjp(t, P::sin, sin_vjp);
  set_vjp(t, P::cos, cos_vjp);
  set_vjp(t, P::tanh, tanh_vjp);
  set_vjp(t, P::logistic, logistic_vjp);
  set_vjp(t, P::sqrt, sqrt_vjp);
  set_vjp(t, P::rsqrt, rsqrt_vjp);
  set_vjp(t, P::abs, abs_vjp);
  set_vjp(t, P::sign, zero_vjp);
  set_vjp(t, P::add, add_vjp);
  set_vjp(t, P::sub, sub_vjp);
  set_vjp(t, P::mul, mul_vjp);
  set_vjp(t, P::div, div_vjp);
  set_vjp(t, P::max, max_vjp);
  set_vjp(t, P::min, min_vjp);
  set_vjp(t, P::pow, pow_vjp);
  for (P p : {P::eq, P::ne, P::lt, P::le, P::gt, P::ge}) set_vjp(t, p, zero_vjp);
  set_vjp(t, P::select, select_vjp);
  set_vjp(t, P::convert_element_type, convert_vjp);
}

}  // namespace ferry::transforms
