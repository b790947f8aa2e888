// The type of an IR value: element type, shape and the memory kind it lives in.
#pragma once

#include <string>
#include <string_view>

#include "ferry/types.h"

namespace ferry::ir {

// The most dimensions a value may have (NumPy's NPY_MAXDIMS before 2.0): kernels keep their
// per-dimension bookkeeping on the stack, so a run never allocates for it. The verifier and Array
// construction refuse more (INVALID_ARGUMENT).
inline constexpr int64_t kMaxRank = 32;

struct Type {
  DType dtype = DType::f32;
  Shape shape;
  MemoryKind kind = MemoryKind::device;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t num_elements() const { return ferry::num_elements(shape); }
  int64_t size_bytes() const { return num_elements() * static_cast<int64_t>(dtype_size(dtype)); }
  bool operator==(const Type&) const = default;
};

// "f32[2,3]" for device values, "f32[2,3]{pinned_host}" for others.
std::string to_string(const Type& t);

// INVALID_ARGUMENT naming `what` unless the value is one of the enumerators: a DType or MemoryKind
// cast from a number reaches ferry through every public entry point that takes one.
void check_dtype(DType t, std::string_view what);
void check_memory_kind(MemoryKind k, std::string_view what);

// Whether an element of `dtype` holds `value` as given, and if not why ("an i32 value must be an
// integer in [...], got nan"; empty when it does): an i32 must be a whole number in its range, a bool
// 0 or 1 (a cast would be undefined, or silently change the value). Floating dtypes hold any
// value, rounded. Every fill (the traced constant, full, ones) applies this.
std::string value_problem(double value, DType dtype);
void check_value(double value, DType dtype, std::string_view what);  // INVALID_ARGUMENT "<what>: <problem>"

// The index of the first of `n` bytes that is not a bool (0 or 1), or -1: a bool is stored as one
// byte, and kernels disagree on what any other byte means.
int64_t first_non_bool(const void* bytes, int64_t n);

}  // namespace ferry::ir
