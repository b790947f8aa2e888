// The 8-lane bodies of vector_math.h, compiled with -mavx2 -mfma (CMakeLists.txt sets it for this
// file alone) and called only after the processor was checked for both.
#include <immintrin.h>
#include <sleef.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cpu/vector_math.h"

namespace ferry::runtime::cpu::vmath::avx2 {
namespace {

__m256 logistic8(__m256 v) {
  const __m256 one = _mm256_set1_ps(1.0f);
  __m256 e = Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_setzero_ps(), v));
  return _mm256_div_ps(one, _mm256_add_ps(one, e));
}

template <class F> void map(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {  // the tail through a padded vector: each lane's result depends on its input alone
    alignas(32) float buf[8] = {};
    std::copy(x + i, x + n, buf);
    _mm256_store_ps(buf, f(_mm256_load_ps(buf)));
    std::copy(buf, buf + (n - i), y + i);
  }
}

}  // namespace

void apply(Fn fn, const float* x, float* y, int64_t n) {
  switch (fn) {
#define FERRY_CPU_UNARY(id, scalar)
#define FERRY_CPU_UNARY_SLEEF(id, scalar, fn, accuracy) \
  case Fn::id: return map(x, y, n, [](__m256 v) { return Sleef_##fn##f8_##accuracy##avx2(v); });
#define FERRY_CPU_UNARY_VECTOR(id, scalar, helper) \
  case Fn::id: return map(x, y, n, helper##8);
#include "runtime/cpu/unary_math.def"
  }
}

void pow(const float* x, bool xs, const float* z, bool zs, float* out, int64_t n) {
  alignas(32) float a[8], b[8];
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t m = std::min<int64_t>(8, n - i);
    for (int64_t j = 0; j < 8; ++j) {
      a[j] = j < m ? x[xs ? 0 : i + j] : 1.0f;
      b[j] = j < m ? z[zs ? 0 : i + j] : 1.0f;
    }
    _mm256_store_ps(a, Sleef_powf8_u10avx2(_mm256_load_ps(a), _mm256_load_ps(b)));
    std::copy(a, a + m, out + i);
  }
}

}  // namespace ferry::runtime::cpu::vmath::avx2
