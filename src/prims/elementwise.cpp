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

void put(Table& t, Primitive p, std::string_view name, int num_inputs, ShapeRule rule, int32_t in_place,
         ir::Params params = ir::NoParams{}) {
  t[static_cast<size_t>(p)] = PrimitiveInfo{.prim = p, .name = name, .num_inputs = num_inputs,
                                            .params = std::move(params), .shape_rule = rule,
                                            .cost_rule = detail::per_output_element_cost, .in_place = in_place};
}

// A transcendental function of its operand(s).
void put_transcendental(Table& t, Primitive p, std::string_view name, int num_inputs, ShapeRule rule) {
  put(t, p, name, num_inputs, rule, num_inputs == 1 ? in_place_over({0}) : in_place_over({0, 1}));
  t[static_cast<size_t>(p)].cost_rule = transcendental_cost;
}

}  // namespace

void register_elementwise(Table& t) {
  using P = Primitive;
  put(t, P::neg, "neg", 1, unary_signed_rule, in_place_over({0}));
  put_transcendental(t, P::exp, "exp", 1, unary_floating_rule);
  put_transcendental(t, P::log, "log", 1, unary_floating_rule);
  put_transcendental(t, P::sin, "sin", 1, unary_floating_rule);
  put_transcendental(t, P::cos, "cos", 1, unary_floating_rule);
  put_transcendental(t, P::tanh, "tanh", 1, unary_floating_rule);
  put_transcendental(t, P::logistic, "logistic", 1, unary_floating_rule);
  put(t, P::sqrt, "sqrt", 1, unary_floating_rule, in_place_over({0}));
  put(t, P::rsqrt, "rsqrt", 1, unary_floating_rule, in_place_over({0}));
  put(t, P::abs, "abs", 1, unary_signed_rule, in_place_over({0}));
  put(t, P::sign, "sign", 1, unary_signed_rule, in_place_over({0}));
  put_transcendental(t, P::erf, "erf", 1, unary_floating_rule);
  put_transcendental(t, P::erf_inv, "erf_inv", 1, unary_floating_rule);
  put_transcendental(t, P::log1p, "log1p", 1, unary_floating_rule);
  put_transcendental(t, P::expm1, "expm1", 1, unary_floating_rule);
  put(t, P::floor, "floor", 1, unary_floating_rule, in_place_over({0}));
  put(t, P::ceil, "ceil", 1, unary_floating_rule, in_place_over({0}));
  put(t, P::round, "round", 1, unary_floating_rule, in_place_over({0}));
  put(t, P::logical_not, "not", 1, logical_not_rule, in_place_over({0}));

  put(t, P::add, "add", 2, binary_rule, in_place_over({0, 1}));
  put(t, P::sub, "sub", 2, binary_rule, in_place_over({0, 1}));
  put(t, P::mul, "mul", 2, binary_rule, in_place_over({0, 1}));
  put(t, P::div, "div", 2, binary_rule, in_place_over({0, 1}));
  put(t, P::max, "max", 2, binary_rule, in_place_over({0, 1}));
  put(t, P::min, "min", 2, binary_rule, in_place_over({0, 1}));
  put_transcendental(t, P::pow, "pow", 2, binary_rule);
  put(t, P::rem, "rem", 2, binary_rule, in_place_over({0, 1}));
  put(t, P::logical_and, "and", 2, logical_binary_rule, in_place_over({0, 1}));
  put(t, P::logical_or, "or", 2, logical_binary_rule, in_place_over({0, 1}));
  put(t, P::logical_xor, "xor", 2, logical_binary_rule, in_place_over({0, 1}));
  put(t, P::shift_left, "shift_left", 2, shift_rule, in_place_over({0, 1}));
  put(t, P::shift_right_logical, "shift_right_logical", 2, shift_rule, in_place_over({0, 1}));

  put(t, P::eq, "eq", 2, equality_rule, kNoInPlace);  // bool out
  put(t, P::ne, "ne", 2, equality_rule, kNoInPlace);  // bool out
  put(t, P::lt, "lt", 2, ordering_rule, kNoInPlace);  // bool out
  put(t, P::le, "le", 2, ordering_rule, kNoInPlace);  // bool out
  put(t, P::gt, "gt", 2, ordering_rule, kNoInPlace);  // bool out
  put(t, P::ge, "ge", 2, ordering_rule, kNoInPlace);  // bool out

  put(t, P::select, "select", 3, select_rule, in_place_over({1, 2}));
  put(t, P::clamp, "clamp", 3, clamp_rule, in_place_over({1}));
  put(t, P::bitcast_convert_type, "bitcast_convert_type", 1, bitcast_rule, in_place_over({0}), ir::ConvertParams{});
  put(t, P::convert_element_type, "convert_element_type", 1, convert_rule, kNoInPlace, ir::ConvertParams{});
}

}  // namespace ferry::prims
