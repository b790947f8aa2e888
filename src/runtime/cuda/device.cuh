// Private to the CUDA device code: element access by dtype (half types compute in float, as on the
// CPU), grid-stride loops and launch sizes.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "runtime/cuda/launch.h"

namespace ferry::runtime::cuda {

inline constexpr int kThreads = 256;

// Blocks for n elements with a grid-stride loop behind them (bounded: the loop does the rest).
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

#define FERRY_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{blockDim.x} * gridDim.x)

template <class T> struct Compute {
  using type = T;
};
template <> struct Compute<__half> {
  using type = float;
};
template <> struct Compute<__nv_bfloat16> {
  using type = float;
};

template <class T> __device__ inline typename Compute<T>::type load(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(p[i]);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(p[i]);
  else return p[i];
}
template <class T, class C> __device__ inline void store(T* p, int64_t i, C v) {
  if constexpr (std::is_same_v<T, __half>) p[i] = __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) p[i] = __float2bfloat16_rn(static_cast<float>(v));
  else p[i] = static_cast<T>(v);
}

// Any dtype as double (exact for every dtype ferry has) and back with XLA's conversion rules:
// float to i32 truncates, saturates and maps NaN to 0; anything to bool is x != 0; half types
// round from float (as the CPU kernels do).
__device__ inline double load_any(Dt t, const void* p, int64_t i) {
  switch (t) {
    case Dt::f32: return static_cast<const float*>(p)[i];
    case Dt::f64: return static_cast<const double*>(p)[i];
    case Dt::f16: return __half2float(static_cast<const __half*>(p)[i]);
    case Dt::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case Dt::i32: return static_cast<const int32_t*>(p)[i];
    case Dt::boolean: return static_cast<const uint8_t*>(p)[i] != 0 ? 1.0 : 0.0;
  }
  return 0;
}
__device__ inline void store_any(Dt t, void* p, int64_t i, double v, bool from_float) {
  switch (t) {
    case Dt::f32: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case Dt::f64: static_cast<double*>(p)[i] = v; return;
    case Dt::f16: static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v)); return;
    case Dt::bf16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v)); return;
    case Dt::i32: {
      int32_t r;
      if (!from_float) r = static_cast<int32_t>(v);
      else if (v != v) r = 0;
      else if (v >= 2147483648.0) r = INT32_MAX;
      else if (v <= -2147483648.0) r = INT32_MIN;
      else r = static_cast<int32_t>(v);
      static_cast<int32_t*>(p)[i] = r;
      return;
    }
    case Dt::boolean: static_cast<uint8_t*>(p)[i] = v != 0.0 ? 1 : 0; return;  // NaN != 0: true
  }
}

// Calls f(T{}) -- a null pointer of T -- with the storage type of dtype t.
template <class F> void visit(Dt t, F&& f) {
  switch (t) {
    case Dt::f32: return f(static_cast<float*>(nullptr));
    case Dt::f64: return f(static_cast<double*>(nullptr));
    case Dt::f16: return f(static_cast<__half*>(nullptr));
    case Dt::bf16: return f(static_cast<__nv_bfloat16*>(nullptr));
    case Dt::i32: return f(static_cast<int32_t*>(nullptr));
    case Dt::boolean: return f(static_cast<uint8_t*>(nullptr));
  }
}

}  // namespace ferry::runtime::cuda
