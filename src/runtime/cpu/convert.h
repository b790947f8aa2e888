// Private to the CPU kernels: one value converted between element types with XLA's rules, shared by
// convert_element_type, constant and iota.
#pragma once

#include <climits>
#include <cstdint>
#include <type_traits>

#include "runtime/cpu/dtype_dispatch.h"

namespace ferry::runtime::cpu {

// Float to i32 truncates toward zero, saturates out of range, and maps NaN to 0 (as XLA does).
template <class F> inline int32_t float_to_i32(F v) {
  if (v != v) return 0;
  if (v >= F(2147483648.0)) return INT32_MAX;
  if (v <= F(-2147483648.0)) return INT32_MIN;
  return static_cast<int32_t>(v);
}

// `From` is the arithmetic value (float, double, int32_t or bool); the result is To's storage.
// Anything to bool is x != 0 (NaN is true). Half results round from float, so a double or a large
// i32 rounds twice (to float, then to the half type); the difference is at most one half-ulp tie.
template <class To, class From> inline To convert_value(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return store<To>(v ? 1.0f : 0.0f);
  } else if constexpr (std::is_same_v<To, int32_t>) {
    if constexpr (std::is_same_v<From, int32_t>) return v;
    else return float_to_i32(v);
  } else if constexpr (is_half_v<To>) {
    return store<To>(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace ferry::runtime::cpu
