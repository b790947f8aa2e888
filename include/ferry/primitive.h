// The primitive operations of ferry's IR. Each has one registry entry (shape rule, cost, VJP rule)
// and one kernel per backend. `ferry::prim::dot_general` names one in user code (custom policies).
#pragma once

#include <cstdint>
#include <string_view>

namespace ferry {

enum class Primitive : uint8_t {
  // elementwise unary
  neg, exp, log, sin, cos, tanh, logistic, sqrt, rsqrt, abs, sign,
  erf, erf_inv, log1p, expm1, floor, ceil, round,
  // logical on bool, bitwise on i32 (as jax.lax.not_/and_/or_/xor)
  logical_not,
  // elementwise binary
  add, sub, mul, div, max, min, pow,
  rem,                                        // sign of the dividend, as C fmod and lax.rem
  logical_and, logical_or, logical_xor,       // logical on bool, bitwise on i32
  shift_left, shift_right_logical,            // i32 bits (random numbers)
  // comparisons (result dtype bool)
  eq, ne, lt, le, gt, ge,
  // select(pred, on_true, on_false)
  select,
  // clamp(lo, x, hi) = min(max(x, lo), hi), as lax.clamp
  clamp,
  convert_element_type,
  // the same bits read as another dtype of the same width (i32 <-> f32)
  bitcast_convert_type,
  // values without inputs
  iota, constant,
  // shape
  broadcast_in_dim, reshape, transpose,
  // reductions
  reduce_sum, reduce_max, reduce_min,
  // index (i32) of the first maximum / minimum along one axis
  argmax, argmin,
  // inclusive running sum / max / min along one axis
  cumsum, cummax, cummin,
  dot_general,
  // indexing
  slice, dynamic_slice, dynamic_update_slice, concatenate,
  // XLA's gather and scatter (with add as the combiner)
  gather, scatter_add,
  // the Threefry-2x32 block cipher: (k0, k1, x0, x1) -> (y0, y1) on i32 bit patterns
  threefry2x32,
  // identity whose cotangent is zero
  stop_gradient,
  // a change of memory kind
  device_put,
  // identity that tags a value with a name for checkpoint policies (the name is the equation's)
  checkpoint_name,
  // an asynchronous change of memory kind, as the compiler lowers device_put between kinds:
  // copy_start[dst](x) -> the destination (in flight); copy_done(dest, x) -> the destination, ready
  copy_start, copy_done,
  // control flow (equations with a body sub-program)
  scan, checkpoint,
  // custom_vjp(inputs...) with bodies (f, fwd, bwd): computes f; differentiating it runs fwd and bwd
  custom_vjp,
  // cond(pred, operands...) with bodies (false branch, true branch)
  cond,
  // while_loop(carry...) with bodies (cond_fun, body_fun)
  while_loop,
  // fused(operands...) with one body of elementwise work, broadcasts and row reductions that runs
  // as one loop (made by the compiler after differentiation; never traced)
  fused,
};

inline constexpr int kNumPrimitives = static_cast<int>(Primitive::fused) + 1;

std::string_view primitive_name(Primitive p);

namespace prim {
using enum Primitive;
}

}  // namespace ferry
