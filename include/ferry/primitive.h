// The primitive operations of ferry's IR. Each has one registry entry (shape rule, cost, VJP rule)
// and one kernel per backend. `ferry::prim::dot_general` names one in user code (custom policies).
#pragma once

#include <cstdint>
#include <string_view>

namespace ferry {

enum class Primitive : uint8_t {
  // elementwise unary
  neg, exp, log, sin, cos, tanh, logistic, sqrt, rsqrt, abs, sign,
  // elementwise binary
  add, sub, mul, div, max, min, pow,
  // comparisons (result dtype bool)
  eq, ne, lt, le, gt, ge,
  // select(pred, on_true, on_false)
  select,
  convert_element_type,
  // values without inputs
  iota, constant,
  // shape
  broadcast_in_dim, reshape, transpose,
  // reductions
  reduce_sum, reduce_max,
  dot_general,
  // indexing
  slice, dynamic_slice, dynamic_update_slice, concatenate,
  // a change of memory kind
  device_put,
  // identity that tags a value with a name for checkpoint policies (the name is the equation's)
  checkpoint_name,
  // an asynchronous change of memory kind, as the compiler lowers device_put between kinds:
  // copy_start[dst](x) -> the destination (in flight); copy_done(dest, x) -> the destination, ready
  copy_start, copy_done,
  // control flow (equations with a body sub-program)
  scan, checkpoint,
};

inline constexpr int kNumPrimitives = static_cast<int>(Primitive::checkpoint) + 1;

std::string_view primitive_name(Primitive p);

namespace prim {
using enum Primitive;
}

}  // namespace ferry
