// Element types, shapes and memory kinds: the vocabulary shared by arrays, traced tensors and the IR.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferry {

enum class DType : uint8_t { f32, f64, f16, bf16, i32, boolean };

// Where a buffer lives. On the CPU backend every kind is host RAM, but the compiler accounts for
// each kind separately, exactly as it would on an accelerator.
enum class MemoryKind : uint8_t { device, pinned_host, unpinned_host };

using Shape = std::vector<int64_t>;

std::string_view dtype_name(DType t);         // "f32", "bool", ...
std::string_view memory_kind_name(MemoryKind k);  // "device", "pinned_host", ...
size_t dtype_size(DType t);                   // bytes per element
bool is_floating(DType t);
int64_t num_elements(const Shape& s);
std::string shape_string(const Shape& s);     // "[2,3]"
// "f32[2,3]"
std::string type_string(DType t, const Shape& s);

// IEEE half and bfloat16 as storage types; arithmetic happens in float.
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float f);
  explicit operator float() const;
};
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f);
  explicit operator float() const;
};

// The DType that stores C++ type T; bool maps to DType::boolean (stored one byte per element).
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<float16>() { return DType::f16; }
template <> constexpr DType dtype_of<bfloat16>() { return DType::bf16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<bool>() { return DType::boolean; }

}  // namespace ferry
