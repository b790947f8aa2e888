// Dispatch of vector_math.h: the AVX-512 bodies (vector_math_avx512.cpp) where the processor has
// AVX-512F, else the AVX2 bodies (vector_math_avx2.cpp) where it has AVX2 and FMA, else SSE2
// (x86-64's baseline, so always there) with SLEEF's 4-lane functions.
#include "runtime/cpu/vector_math.h"

#include <emmintrin.h>
#include <sleef.h>

#include <algorithm>

namespace ferry::runtime::cpu::vmath {

namespace avx2 {
void apply(Fn fn, const float* x, float* y, int64_t n);
void pow(const float* x, bool xs, const float* z, bool zs, float* out, int64_t n);
}  // namespace avx2
namespace avx512 {
void apply(Fn fn, const float* x, float* y, int64_t n);
void pow(const float* x, bool xs, const float* z, bool zs, float* out, int64_t n);
}  // namespace avx512

namespace {

const bool kAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
const bool kAvx512 = kAvx2 && __builtin_cpu_supports("avx512f");

__m128 logistic4(__m128 v) {
  const __m128 one = _mm_set1_ps(1.0f);
  __m128 e = Sleef_expf4_u10sse2(_mm_sub_ps(_mm_setzero_ps(), v));
  return _mm_div_ps(one, _mm_add_ps(one, e));
}

template <class F> void map(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, f(_mm_loadu_ps(x + i)));
  if (i < n) {
    alignas(16) float buf[4] = {};
    std::copy(x + i, x + n, buf);
    _mm_store_ps(buf, f(_mm_load_ps(buf)));
    std::copy(buf, buf + (n - i), y + i);
  }
}

void apply_sse2(Fn fn, const float* x, float* y, int64_t n) {
  switch (fn) {
#define FERRY_CPU_UNARY(id, scalar)
#define FERRY_CPU_UNARY_SLEEF(id, scalar, fn, accuracy) \
  case Fn::id: return map(x, y, n, [](__m128 v) { return Sleef_##fn##f4_##accuracy##sse2(v); });
#define FERRY_CPU_UNARY_VECTOR(id, scalar, helper) \
  case Fn::id: return map(x, y, n, helper##4);
#include "runtime/cpu/unary_math.def"
  }
}

}  // namespace

bool vector_fn(Primitive p, Fn& fn) {
  switch (p) {
#define FERRY_CPU_UNARY(id, scalar)
#define FERRY_CPU_UNARY_SLEEF(id, scalar, sleef, accuracy) \
  case Primitive::id: fn = Fn::id; return true;
#define FERRY_CPU_UNARY_VECTOR(id, scalar, helper) \
  case Primitive::id: fn = Fn::id; return true;
#include "runtime/cpu/unary_math.def"
    default: return false;
  }
}

bool uses_avx2() { return kAvx2; }

bool apply_avx512(Fn fn, const float* x, float* y, int64_t n) {
  if (!kAvx512) return false;
  if (n > 0) avx512::apply(fn, x, y, n);
  return true;
}

bool apply_avx2(Fn fn, const float* x, float* y, int64_t n) {
  if (!kAvx2) return false;
  if (n > 0) avx2::apply(fn, x, y, n);
  return true;
}

void apply(Fn fn, const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  if (kAvx512) return avx512::apply(fn, x, y, n);
  if (kAvx2) return avx2::apply(fn, x, y, n);
  apply_sse2(fn, x, y, n);
}

void pow(const float* x, bool xs, const float* z, bool zs, float* out, int64_t n) {
  if (n <= 0) return;
  if (kAvx512) return avx512::pow(x, xs, z, zs, out, n);
  if (kAvx2) return avx2::pow(x, xs, z, zs, out, n);
  alignas(16) float a[4], b[4];
  for (int64_t i = 0; i < n; i += 4) {
    const int64_t m = std::min<int64_t>(4, n - i);
    for (int64_t j = 0; j < 4; ++j) {
      a[j] = j < m ? x[xs ? 0 : i + j] : 1.0f;
      b[j] = j < m ? z[zs ? 0 : i + j] : 1.0f;
    }
    _mm_store_ps(a, Sleef_powf4_u10sse2(_mm_load_ps(a), _mm_load_ps(b)));
    std::copy(a, a + m, out + i);
  }
}

}  // namespace ferry::runtime::cpu::vmath
