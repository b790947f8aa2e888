// The arithmetic of the fused kernel (fused_kernel.cpp) on float blocks: elementwise operations,
// selects and row reductions. It is compiled twice, for x86-64's baseline (SSE2, 4 lanes) and for
// AVX2 (8 lanes), and fused_math() picks one once by what the processor has. Both builds keep
// floating-point contraction off, so they compute the same IEEE operations in the same order and
// give the same bits as each other and as the unfused kernels. An operand flagged `scalar` is read
// at index 0 for every element (stride 0).
#pragma once

#include <cstdint>

#include "ir/program.h"

namespace ferry::runtime::cpu {

struct FusedMath {
  // y[i] = p(a[i]) for a unary primitive (transcendentals through vector_math.h).
  void (*unary)(const ir::Equation& eq, Primitive p, const float* a, float* y, int64_t n);
  // y[i] = p(a[i], b[i]); `as_bool`: the logical reading of add/mul/max/min/xor on 0/1 values.
  void (*binary)(const ir::Equation& eq, Primitive p, bool as_bool, const float* a, bool sa, const float* b, bool sb,
                 float* y, int64_t n);
  // y[i] = c[i] != 0 ? t[i] : f[i], without a branch per element (a dropout mask is unpredictable).
  void (*select)(const float* c, bool sc, const float* t, bool st, const float* f, bool sf, float* y, int64_t n);
  // y[i] = min(max(x[i], lo[i]), hi[i]), NaN-propagating as the unfused clamp.
  void (*clamp)(const float* lo, bool sl, const float* x, bool sx, const float* hi, bool sh, float* y, int64_t n);
  // Integer steps. i32 values live in the same 4-byte slots as their bit patterns (read and
  // written through `word`, which may alias float), with the unfused integer kernels' semantics
  // (elementwise_kernels.cpp): wrapping arithmetic, shifts by 32 or more give 0.
  // y[i] = p(a[i]) for neg, abs, sign and logical_not (bitwise not) on i32.
  void (*int_unary)(const ir::Equation& eq, Primitive p, const float* a, float* y, int64_t n);
  // y[i] = p(a[i], b[i]) on i32: arithmetic and bitwise operations give i32, comparisons bool (0/1).
  void (*int_binary)(const ir::Equation& eq, Primitive p, const float* a, bool sa, const float* b, bool sb, float* y,
                     int64_t n);
  // convert_element_type as the unfused kernel (convert.h): i32 -> f32 rounds, f32 -> i32
  // truncates and saturates (NaN to 0), bool (0/1) -> i32, i32 -> bool.
  void (*convert)(const ir::Equation& eq, DType from, DType to, const float* a, float* y, int64_t n);
  // (y0, y1) = threefry2x32(k0, k1, x0, x1) on the words' bits, as random_kernels.cpp.
  void (*threefry)(const float* k0, bool s0, const float* k1, bool s1, const float* x0, bool sx0, const float* x1,
                   bool sx1, float* y0, float* y1, int64_t n);
  // y[r] = the reduction of row r of x (rows x cols, row-major), in the unfused reduce kernel's
  // order; `stride` 0 reduces cols copies of x[0] (a scalar spread over the row).
  void (*reduce_rows)(Primitive p, const float* x, int64_t rows, int64_t cols, int64_t stride, float* y);
};

const FusedMath& fused_math();

// Reports an operation the fused arithmetic does not have as INTERNAL (the fuse pass admits only
// fusible primitives); `kind` is "unary" or "binary".
[[noreturn]] void not_fused(const ir::Equation& eq, Primitive p, const char* kind);

}  // namespace ferry::runtime::cpu
