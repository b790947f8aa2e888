// erf_inv on the CPU: for f32 the polynomial of M. Giles ("Approximating the erfinv function", GPU
// Gems), the one XLA uses, so results match JAX's closely; f64 refines it with two Newton steps on
// erf. Out of line, so that code built for another instruction set (fused_math_avx2.cpp) calls the
// baseline build's copy rather than lending its own to the linker.
#pragma once

namespace ferry::runtime::cpu {

float erf_inv_of(float x);
double erf_inv_of(double x);

}  // namespace ferry::runtime::cpu
