// Private to the CPU kernels: calling a template with the C++ type of a DType, the arithmetic type
// of each storage type, and typed access to equation parameters.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

#include "ferry/error.h"
#include "ferry/primitive.h"
#include "ferry/types.h"
#include "ir/program.h"
#include "runtime/cpu/half_convert.h"

namespace ferry::runtime::cpu {

template <class T> struct TypeTag {
  using type = T;
};

// bool is stored as one byte holding 0 or 1; kernels use `bool` for it (sizeof(bool) == 1 here).
static_assert(sizeof(bool) == 1);

// The arithmetic type of a storage type: half types compute in float, and round once per result.
template <class T> struct ComputeOf {
  using type = T;
};
template <> struct ComputeOf<float16> {
  using type = float;
};
template <> struct ComputeOf<bfloat16> {
  using type = float;
};
template <class T> using compute_t = typename ComputeOf<T>::type;

template <class T> constexpr bool is_half_v = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
template <class T> constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

// A kernel was handed a dtype it has no code for. The shape rules should have rejected it first, so
// this is INTERNAL; it is an error rather than a crash so no input can corrupt memory.
[[noreturn]] inline void unsupported_dtype(const ir::Equation& eq, DType t) {
  throw Error(ErrorCode::internal,
              fmt::format("{}: the CPU backend has no kernel for dtype {}", primitive_name(eq.prim), dtype_name(t)));
}

// Calls f(TypeTag<T>{}) with the C++ storage type T of `t`.
template <class F> decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(TypeTag<float>{});
    case DType::f64: return f(TypeTag<double>{});
    case DType::f16: return f(TypeTag<float16>{});
    case DType::bf16: return f(TypeTag<bfloat16>{});
    case DType::i32: return f(TypeTag<int32_t>{});
    case DType::boolean: return f(TypeTag<bool>{});
  }
  throw Error(ErrorCode::internal, fmt::format("unknown dtype #{}", static_cast<int>(t)));
}

// The equation's parameters as struct P; a mismatch is a bug in whoever built the equation.
template <class P> const P& params_of(const ir::Equation& eq) {
  if (const P* p = std::get_if<P>(&eq.params)) return *p;
  throw Error(ErrorCode::internal,
              fmt::format("{}: equation carries parameters of the wrong kind", primitive_name(eq.prim)));
}

// Storage <-> arithmetic value. Half types go through float (rounding to nearest even, exactly as
// their own conversions do); everything else is a plain cast.
inline float load(float16 x) { return half_to_float(x); }
inline float load(bfloat16 x) { return bf16_to_float(x); }
template <class T> inline compute_t<T> load(T x) { return static_cast<compute_t<T>>(x); }
template <class T, class C> inline T store(C x) {
  if constexpr (std::is_same_v<T, float16>) return float_to_half(static_cast<float>(x));
  else if constexpr (std::is_same_v<T, bfloat16>) return float_to_bf16(static_cast<float>(x));
  else return static_cast<T>(x);
}

}  // namespace ferry::runtime::cpu
