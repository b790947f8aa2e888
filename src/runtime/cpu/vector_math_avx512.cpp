// The 16-lane bodies of vector_math.h, compiled with -mavx512f (CMakeLists.txt sets it for this file
// alone) and called only after the processor was checked for it. SLEEF's AVX-512 functions are the
// AVX2 ones' algorithms with fused multiply-adds on wider vectors: the same bits per element.
#include <immintrin.h>
#include <sleef.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cpu/vector_math.h"

namespace ferry::runtime::cpu::vmath::avx512 {
namespace {

__m512 logistic16(__m512 v) {
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 e = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), v));
  return _mm512_div_ps(one, _mm512_add_ps(one, e));
}

template <class F> void map(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(x + i)));
  if (i < n) {  // the tail through a padded vector: each lane's result depends on its input alone
    alignas(64) float buf[16] = {};
    std::copy(x + i, x + n, buf);
    _mm512_store_ps(buf, f(_mm512_load_ps(buf)));
    std::copy(buf, buf + (n - i), y + i);
  }
}

}  // namespace

void apply(Fn fn, const float* x, float* y, int64_t n) {
  switch (fn) {
#define FERRY_CPU_UNARY(id, scalar)
#define FERRY_CPU_UNARY_SLEEF(id, scalar, fn, accuracy) \
  case Fn::id: return map(x, y, n, [](__m512 v) { return Sleef_##fn##f16_##accuracy##avx512f(v); });
#define FERRY_CPU_UNARY_VECTOR(id, scalar, helper) \
  case Fn::id: return map(x, y, n, helper##16);
#include "runtime/cpu/unary_math.def"
  }
}

void pow(const float* x, bool xs, const float* z, bool zs, float* out, int64_t n) {
  alignas(64) float a[16], b[16];
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t m = std::min<int64_t>(16, n - i);
    for (int64_t j = 0; j < 16; ++j) {
      a[j] = j < m ? x[xs ? 0 : i + j] : 1.0f;
      b[j] = j < m ? z[zs ? 0 : i + j] : 1.0f;
    }
    _mm512_store_ps(a, Sleef_powf16_u10avx512f(_mm512_load_ps(a), _mm512_load_ps(b)));
    std::copy(a, a + m, out + i);
  }
}

}  // namespace ferry::runtime::cpu::vmath::avx512
