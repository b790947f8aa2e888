// DType, MemoryKind and the half-precision storage types.
#include <bit>
#include <cmath>
#include <limits>
#include <cstring>

#include <fmt/format.h>

#include "ferry/error.h"
#include "ferry/types.h"
#include "ir/type.h"

namespace ferry {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::boolean: return "bool";
  }
  return "?";
}

std::string_view memory_kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::device: return "device";
    case MemoryKind::pinned_host: return "pinned_host";
    case MemoryKind::unpinned_host: return "unpinned_host";
  }
  return "?";
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::boolean: return 1;
  }
  return 0;
}

namespace ir {

void check_dtype(DType t, std::string_view what) {
  if (dtype_size(t) == 0)
    throw Error(ErrorCode::invalid_argument, fmt::format("{}: unknown dtype (value {})", what, static_cast<int>(t)));
}

void check_memory_kind(MemoryKind k, std::string_view what) {
  if (memory_kind_name(k) == "?")
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: unknown memory kind (value {}); the kinds are device, pinned_host and unpinned_host",
                            what, static_cast<int>(k)));
}

std::string value_problem(double value, DType dtype) {
  if (dtype == DType::boolean && !(value == 0 || value == 1)) return fmt::format("a bool value must be 0 or 1, got {}", value);
  constexpr double lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  if (dtype == DType::i32 && !(std::isfinite(value) && value == std::trunc(value) && value >= lo && value <= hi))
    return fmt::format("an i32 value must be an integer in [{}, {}], got {}", lo, hi, value);
  return {};
}

void check_value(double value, DType dtype, std::string_view what) {
  if (std::string problem = value_problem(value, dtype); !problem.empty())
    throw Error(ErrorCode::invalid_argument, fmt::format("{}: {}", what, problem));
}

int64_t first_non_bool(const void* bytes, int64_t n) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (int64_t i = 0; i < n; ++i)
    if (p[i] > 1) return i;
  return -1;
}

}  // namespace ir

bool is_floating(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16; }

int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_string(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

std::string type_string(DType t, const Shape& s) { return fmt::format("{}{}", dtype_name(t), shape_string(s)); }

// Round to nearest even, as hardware conversions do; NaN stays NaN.
float16::float16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) {  // NaN
    bits = static_cast<uint16_t>(sign | 0x7e00u);
    return;
  }
  if (mag >= 0x477ff000u) {  // rounds to >= 65520: infinity
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (mag < 0x38800000u) {  // subnormal half (or zero): scale by 2^24 and round
    float af = std::bit_cast<float>(mag);
    float scaled = af * 16777216.0f;  // exact
    uint32_t q = static_cast<uint32_t>(scaled);
    float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    bits = static_cast<uint16_t>(sign | q);
    return;
  }
  uint32_t exp = ((mag >> 23) - 127 + 15) << 10;
  uint32_t mant = mag & 0x7fffffu;
  uint32_t h = exp | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  bits = static_cast<uint16_t>(sign | h);
}

float16::operator float() const {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    float v = static_cast<float>(mant) / 16777216.0f;
    return sign ? -v : v;
  } else if (exp == 31) {
    out = sign | 0x7f800000u | (mant << 13);
  } else {
    out = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(out);
}

bfloat16::bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    bits = static_cast<uint16_t>((x >> 16) | 0x40u);
    return;
  }
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  bits = static_cast<uint16_t>(x >> 16);
}

bfloat16::operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

namespace ir {
std::string to_string(const Type& t) {
  if (t.kind == MemoryKind::device) return type_string(t.dtype, t.shape);
  return fmt::format("{}{{{}}}", type_string(t.dtype, t.shape), memory_kind_name(t.kind));
}
}  // namespace ir

}  // namespace ferry
