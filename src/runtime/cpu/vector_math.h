// Vectorized f32 transcendentals for the CPU kernels, from SLEEF (Debian's libsleef-dev): arrays
// in, arrays out, 16 lanes with AVX-512 or 8 with AVX2+FMA where the processor has them (checked
// once at run time; both give the same bits), else 4 lanes with SSE2. Every function is within 1.0
// ulp of the correctly rounded result (SLEEF's u10 variants) except logistic, computed as
// 1 / (1 + exp(-x)) (within 3 ulp), and tanh, SLEEF's u35 variant (within 3.5 ulp): GELU's tanh is
// the costliest elementwise function of a transformer step, and u10 took 2.7x as long (1.44 against
// 0.53 ns per element with AVX-512 on this project's machines; the gpt step's GELU groups 23 ->
// 14 ms). tests/runtime/vector_math_test.cpp states and checks each bound against a
// double-precision reference. The result of an element never depends on its position in the array
// or on n (the tail is padded to a whole vector), so a kernel that splits its work differently
// gets the same bits.
#pragma once

#include <cstdint>

#include "ferry/primitive.h"

namespace ferry::runtime::cpu::vmath {

// The functions with a vector form: the SLEEF and VECTOR lines of unary_math.def, named as their
// primitives.
enum class Fn : uint8_t {
#define FERRY_CPU_UNARY(id, scalar)
#define FERRY_CPU_UNARY_SLEEF(id, scalar, fn, accuracy) id,
#define FERRY_CPU_UNARY_VECTOR(id, scalar, helper) id,
#include "runtime/cpu/unary_math.def"
};
inline constexpr int kNumFns = 0
#define FERRY_CPU_UNARY(id, scalar)
#define FERRY_CPU_UNARY_SLEEF(id, scalar, fn, accuracy) +1
#define FERRY_CPU_UNARY_VECTOR(id, scalar, helper) +1
#include "runtime/cpu/unary_math.def"
    ;

// The vector form of primitive p, if it has one. Out of line (vector_math.cpp): the fused kernels
// built for other instruction sets call it, and must not lend their copy of an inline one to the
// baseline build.
bool vector_fn(Primitive p, Fn& fn);

// y[i] = fn(x[i]) for i in [0, n); y may be x.
void apply(Fn fn, const float* x, float* y, int64_t n);

// out[i] = pow(x[i], z[i]); a `scalar` operand is read at index 0 for every i. out may alias x or z.
void pow(const float* x, bool x_scalar, const float* z, bool z_scalar, float* out, int64_t n);

// Whether the 8-lane AVX2 path is in use (for reports and tests).
bool uses_avx2();

// The widest paths by name, for tests that compare them: apply() through the 16-lane AVX-512 or the
// 8-lane AVX2 bodies. Each returns false, doing nothing, where the processor lacks them.
bool apply_avx512(Fn fn, const float* x, float* y, int64_t n);
bool apply_avx2(Fn fn, const float* x, float* y, int64_t n);

}  // namespace ferry::runtime::cpu::vmath
