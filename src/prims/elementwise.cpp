// Elementwise primitives: unary math, binary arithmetic, comparisons, select and
// convert_element_type. Operands are never broadcast implicitly here: the front end inserts
// broadcast_in_dim first, so the IR states every shape. The one exception is a rank-0 operand of a
// binary op, comparison or select beside operands of a larger shape: it is read as that shape filled
// with its one element (kernels read it with stride 0). The tracer never makes such equations, so
// VJP rules always see operands of one shape; the compiler's simplify pass makes them after
// differentiation, so that a scalar broadcast to an activation's shape takes no activation buffer.
//
// Cost: one flop per output element for all of them; the transcendental functions (exp, log, sin,
// tanh, erf, pow, ...) also count one transcendental per element, which the cost model prices at its
// own calibrated rate (a scalar tanh costs tens of adds).
#include <fmt/format.h>

#include "prims/families.h"
#include "prims/rule_helpers.h"

namespace ferry::prims {
namespace {

using detail::check_operands;
using detail::invalid;

// Transcendental and root functions: floating dtypes only, as in XLA.
std::vector<ir::Type> unary_floating_rule(std::span<const ir::Type> in, const ir::Params&) {
  check_operands(in);
  if (!is_floating(in[0].dtype))
    invalid(fmt::format("requires a floating dtype (f32, f64, f16, bf16), got {}", dtype_name(in[0].dtype)));
  return {in[0]};
}

// neg, abs, sign: also defined for signed integers.
std::vector<ir::Type> unary_signed_rule(std::span<const ir::Type> in, const ir::Params&) {
  check_operands(in);
  if (!is_floating(in[0].dtype) && in[0].dtype != DType::i32)
    invalid(fmt::format("requires a floating or i32 dtype, got {}", dtype_name(in[0].dtype)));
  return {in[0]};
}

// Operands of a binary op or comparison: one dtype, and one shape apart from rank-0 operands (see
// the top of this file). Returns the result's type: the dtype and the shape of the larger operand.
ir::Type binary_result(const ir::Type& a, const ir::Type& b) {
  if (a.dtype != b.dtype)
    invalid(fmt::format("operand dtypes differ: {} and {}", dtype_name(a.dtype), dtype_name(b.dtype)));
  if (a.shape != b.shape && a.rank() != 0 && b.rank() != 0)
    invalid(fmt::format("operand shapes differ: {} and {} (broadcast explicitly with broadcast_in_dim)",
                        shape_string(a.shape), shape_string(b.shape)));
  return a.rank() != 0 ? a : b;
}

std::vector<ir::Type> binary_rule(std::span<const ir::Type> in, const ir::Params&) {
  check_operands(in);
  ir::Type out = binary_result(in[0], in[1]);
  if (out.dtype == DType::boolean) invalid("not defined for bool operands");
  return {out};
}

// atan2: floating operands only, as XLA's.
std::vector<ir::Type> binary_floating_rule(std::span<const ir::Type> in, const ir::Params&) {
  check_operands(in);
  ir::Type out = binary_result(in[0], in[1]);
  if (!is_floating(out.dtype))
    invalid(fmt::format("requires a floating dtype (f32, f64, f16, bf16), got {}", dtype_name(out.dtype)));
  return {out};
}

ir::Type bool_like(const ir::Type& t) { return ir::Type{DType::boolean, t.shape, t.kind}; }

// eq, ne: any dtype, bool included.
std::vector<ir::Type> equality_rule(std::span<const ir::Type> in, const ir::Params&) {
  check_operands(in);
  return {bool_like(binary_result(in[0], in[1]))};
}

// lt, le, gt, ge: bool has no order here.
std::vector<ir::Type> ordering_rule(std::span<const ir::Type> in, const ir::Params&) {
  check_operands(in);
  ir::Type operands = binary_result(in[0], in[1]);
  if (operands.dtype == DType::boolean) invalid("ordering comparisons are not defined for bool operands");
  return {bool_like(operands)};
}

// select(pred, on_true, on_false): the branches share a dtype; pred, on_true and on_false share a
// shape, apart from rank-0 operands (see the top of this file).
std::vector<ir::Type> select_rule(std::span<const ir::Type> in, const ir::Params&) {
  check_operands(in);
  const ir::Type &pred = in[0], &on_true = in[1], &on_false = in[2];
  if (pred.dtype != DType::boolean)
    invalid(fmt::format("predicate must be bool, got {}", dtype_name(pred.dtype)));
  if (on_true.dtype != on_false.dtype)
    invalid(fmt::format("on_true and on_false dtypes differ: {} and {}", dtype_name(on_true.dtype),
                        dtype_name(on_false.dtype)));
  if (on_true.shape != on_false.shape && on_true.rank() != 0 && on_false.rank() != 0)
    invalid(fmt::format("on_true and on_false shapes differ: {} and {}", shape_string(on_true.shape),
                        shape_string(on_false.shape)));
  ir::Type out = on_true.rank() != 0 ? on_true : on_false;
  if (pred.shape != out.shape && pred.rank() != 0 && out.rank() != 0)
    invalid(fmt::format("predicate shape {} differs from the operands' shape {}", shape_string(pred.shape),
                        shape_string(out.shape)));
  if (out.rank() == 0) out.shape = pred.shape;
  return {out};
}

// rem: numeric operands, as the other binary ops.
// logical_and/or/xor: bool (logical) or i32 (bitwise) operands of one shape.
std::vector<ir::Type> logical_binary_rule(std::span<const ir::Type> in, const ir::Params&) {
  check_operands(in);
  ir::Type out = binary_result(in[0], in[1]);
  if (out.dtype != DType::boolean && out.dtype != DType::i32)
    invalid(fmt::format("requires bool or i32 operands, got {}", dtype_name(out.dtype)));
  return {out};
}

std::vector<ir::Type> logical_not_rule(std::span<const ir::Type> in, const ir::Params&) {
  check_operands(in);
  if (in[0].dtype != DType::boolean && in[0].dtype != DType::i32)
    invalid(fmt::format("requires a bool or i32 operand, got {}", dtype_name(in[0].dtype)));
  return {in[0]};
}

// Shifts work on the bits of i32 values (shift amounts outside [0, 32) give 0, as in XLA).
std::vector<ir::Type> shift_rule(std::span<const ir::Type> in, const ir::Params&) {
  check_operands(in);
  ir::Type out = binary_result(in[0], in[1]);
  if (out.dtype != DType::i32) invalid(fmt::format("requires i32 operands, got {}", dtype_name(out.dtype)));
  return {out};
}

// clamp(lo, x, hi): lo and hi have x's dtype and x's shape or rank 0.
std::vector<ir::Type> clamp_rule(std::span<const ir::Type> in, const ir::Params&) {
  check_operands(in);
  const ir::Type &lo = in[0], &x = in[1], &hi = in[2];
  if (x.dtype == DType::boolean) invalid("not defined for bool operands");
  for (const ir::Type* b : {&lo, &hi}) {
    if (b->dtype != x.dtype)
      invalid(fmt::format("bound dtype {} differs from the operand's {}", dtype_name(b->dtype), dtype_name(x.dtype)));
    if (b->rank() != 0 && b->shape != x.shape)
      invalid(fmt::format("bound shape {} is neither rank 0 nor the operand's {}", shape_string(b->shape),
                          shape_string(x.shape)));
  }
  return {x};
}

// bitcast_convert_type: the same bytes read as a dtype of the same width.
std::vector<ir::Type> bitcast_rule(std::span<const ir::Type> in, const ir::Params& params) {
  check_operands(in);
  const auto& p = detail::params_as<ir::ConvertParams>(params);
  ir::check_dtype(p.new_dtype, "bitcast_convert_type");
  if (dtype_size(p.new_dtype) != dtype_size(in[0].dtype) || in[0].dtype == DType::boolean ||
      p.new_dtype == DType::boolean)
    invalid(fmt::format("cannot reinterpret {} as {} (needs two non-bool dtypes of the same width)",
                        dtype_name(in[0].dtype), dtype_name(p.new_dtype)));
  ir::Type out = in[0];
  out.dtype = p.new_dtype;
  return {out};
}

std::vector<ir::Type> convert_rule(std::span<const ir::Type> in, const ir::Params& params) {
  check_operands(in);
  const auto& p = detail::params_as<ir::ConvertParams>(params);
  detail::checked_elements(in[0].shape, "output shape", p.new_dtype);
  ir::Type out = in[0];
  out.dtype = p.new_dtype;
  return {out};
}

Cost transcendental_cost(std::span<const ir::Type> in, std::span<const ir::Type> out, const ir::Params& params) {
  Cost c = detail::per_output_element_cost(in, out, params);
  c.transcendentals = c.flops;
  return c;
}

}  // namespace

void register_elementwise(Table& t) {
  using P = Primitive;
  // One cost per output element; a transcendental (ops.def) counts each as one.
  auto put = [&](Primitive p, ShapeRule rule) {
    set_rules(t, p, rule, ir::has(p, ir::kTranscendental) ? transcendental_cost : detail::per_output_element_cost);
  };
  put(P::neg, unary_signed_rule);
  put(P::exp, unary_floating_rule);
  put(P::log, unary_floating_rule);
  put(P::sin, unary_floating_rule);
  put(P::cos, unary_floating_rule);
  put(P::tanh, unary_floating_rule);
  put(P::logistic, unary_floating_rule);
  put(P::sqrt, unary_floating_rule);
  put(P::rsqrt, unary_floating_rule);
  put(P::abs, unary_signed_rule);
  put(P::sign, unary_signed_rule);
  put(P::erf, unary_floating_rule);
  put(P::erf_inv, unary_floating_rule);
  put(P::log1p, unary_floating_rule);
  put(P::expm1, unary_floating_rule);
  put(P::tan, unary_floating_rule);
  put(P::atan, unary_floating_rule);
  put(P::asin, unary_floating_rule);
  put(P::acos, unary_floating_rule);
  put(P::sinh, unary_floating_rule);
  put(P::cosh, unary_floating_rule);
  put(P::asinh, unary_floating_rule);
  put(P::acosh, unary_floating_rule);
  put(P::atanh, unary_floating_rule);
  put(P::cbrt, unary_floating_rule);
  put(P::floor, unary_floating_rule);
  put(P::ceil, unary_floating_rule);
  put(P::round, unary_floating_rule);
  put(P::logical_not, logical_not_rule);
  put(P::add, binary_rule);
  put(P::sub, binary_rule);
  put(P::mul, binary_rule);
  put(P::div, binary_rule);
  put(P::max, binary_rule);
  put(P::min, binary_rule);
  put(P::pow, binary_rule);
  put(P::rem, binary_rule);
  put(P::atan2, binary_floating_rule);
  put(P::logical_and, logical_binary_rule);
  put(P::logical_or, logical_binary_rule);
  put(P::logical_xor, logical_binary_rule);
  put(P::shift_left, shift_rule);
  put(P::shift_right_logical, shift_rule);
  put(P::eq, equality_rule);
  put(P::ne, equality_rule);
  put(P::lt, ordering_rule);
  put(P::le, ordering_rule);
  put(P::gt, ordering_rule);
  put(P::ge, ordering_rule);
  put(P::select, select_rule);
  put(P::clamp, clamp_rule);
  put(P::bitcast_convert_type, bitcast_rule);
  put(P::convert_element_type, convert_rule);
}

}  // namespace ferry::prims
