// Reductions and per-line kernels on the GPU: reduce_sum/max/min (a block per output element, a
// tree in shared memory; half types and f32 accumulate in float, f64 in double, i32 wraps),
// argmax/argmin, cumsum/cummax/cummin and argsort (a thread per line, the CPU kernels' NaN rules
// and order),
// threefry2x32, and the integer matmul cuBLAS does not have.
#include <cfloat>

#include "runtime/cuda/device.cuh"
#include "runtime/sort_order.h"

namespace ferry::runtime::cuda {
namespace {

// The accumulator of a storage type: floats of 32 bits or fewer in float.
template <class T> struct Acc {
  using type = typename Compute<T>::type;
};
template <> struct Acc<uint8_t> {
  using type = int;
};

template <class A> __device__ inline A identity(ReduceOp op, bool is_bool) {
  if (is_bool) return op == ReduceOp::min ? 1 : 0;  // "and" starts true, "or" false (before the i32 case: A is int)
  if (op == ReduceOp::sum) return A(0);
  if constexpr (std::is_same_v<A, float>) return op == ReduceOp::max ? -INFINITY : INFINITY;
  else if constexpr (std::is_same_v<A, double>) return op == ReduceOp::max ? -HUGE_VAL : HUGE_VAL;
  else if constexpr (std::is_same_v<A, int32_t>) return op == ReduceOp::max ? INT32_MIN : INT32_MAX;
  else return op == ReduceOp::max ? 0 : 1;  // bool: or / and
}

template <class A> __device__ inline A combine(ReduceOp op, A a, A b, bool is_bool) {
  if (is_bool) return op == ReduceOp::min ? (a && b) : (a || b);  // bool sum and max are "or"
  switch (op) {
    case ReduceOp::sum:
      if constexpr (std::is_same_v<A, int32_t>) return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
      else return a + b;
    case ReduceOp::max: return ((a > b) | (a != a)) ? a : b;
    default: return ((a < b) | (a != a)) ? a : b;
  }
}

template <class T> __global__ void reduce_kernel(ReduceArgs r, const T* x, T* y) {
  using A = typename Acc<T>::type;
  constexpr bool kBool = std::is_same_v<T, uint8_t>;
  __shared__ A partial[kThreads];
  for (int64_t o = blockIdx.x; o < r.out_count; o += gridDim.x) {
    int64_t base = 0, rest = o;
    for (int d = r.kept_rank - 1; d >= 0; --d) {
      base += (rest % r.kept_shape[d]) * r.kept_stride[d];
      rest /= r.kept_shape[d];
    }
    A acc = identity<A>(r.op, kBool);
    for (int64_t j = threadIdx.x; j < r.reduced_count; j += blockDim.x) {
      int64_t off = base, q = j;
      for (int d = r.reduced_rank - 1; d >= 0; --d) {
        off += (q % r.reduced_shape[d]) * r.reduced_stride[d];
        q /= r.reduced_shape[d];
      }
      acc = combine<A>(r.op, acc, static_cast<A>(load(x, off)), kBool);
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (static_cast<int>(threadIdx.x) < s) partial[threadIdx.x] = combine<A>(r.op, partial[threadIdx.x], partial[threadIdx.x + s], kBool);
      __syncthreads();
    }
    if (threadIdx.x == 0) store(y, o, partial[0]);
    __syncthreads();
  }
}

template <class T> __global__ void arg_kernel(bool is_max, const T* x, int32_t* y, int64_t outer, int64_t n, int64_t inner) {
  using C = typename Compute<T>::type;
  constexpr bool kFloat = !std::is_same_v<T, int32_t>;
  FERRY_GRID_LOOP(line, outer * inner) {
    const int64_t o = line / inner, i = line % inner;
    const int64_t base = o * n * inner + i;
    C best = load(x, base);
    int32_t at = 0;
    for (int64_t k = 1; k < n; ++k) {
      const C c = load(x, base + k * inner);
      const bool better = is_max ? c > best : c < best;
      if constexpr (kFloat) {
        if (best != best) break;  // the first NaN wins
        if (better || c != c) best = c, at = static_cast<int32_t>(k);
      } else if (better) {
        best = c, at = static_cast<int32_t>(k);
      }
    }
    y[line] = at;
  }
}

template <class T> __global__ void cumulative_kernel(CumulativeOp op, const T* x, T* y, int64_t outer, int64_t n,
                                                     int64_t inner, bool reverse) {
  using C = typename Compute<T>::type;
  FERRY_GRID_LOOP(line, outer * inner) {
    const int64_t o = line / inner, i = line % inner;
    const int64_t base = o * n * inner + i;
    C acc = C(0);
    for (int64_t s = 0; s < n; ++s) {
      const int64_t at = base + (reverse ? n - 1 - s : s) * inner;
      const C v = load(x, at);
      if (s == 0) acc = v;
      else if (op == CumulativeOp::sum) {
        if constexpr (std::is_same_v<C, int32_t>) acc = static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(v));
        else acc = acc + v;
      } else if (op == CumulativeOp::max) acc = ((acc > v) | (acc != acc)) ? acc : v;
      else acc = ((acc < v) | (acc != acc)) ? acc : v;
      store(y, at, acc);
    }
  }
}

// An element's place in argsort's order (sort_order.h, as the CPU kernel's order_key).
template <class T> __device__ inline int64_t order_key(const T* x, int64_t i, bool total_order) {
  if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, uint8_t>) {
    return static_cast<int64_t>(x[i]);  // i32, bool
  } else {
    const auto c = load(x, i);
    if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)
      return float_sort_key(reinterpret_cast<const int16_t*>(x)[i], c != c, c == 0, total_order);
    else if constexpr (std::is_same_v<T, float>) return float_sort_key(__float_as_int(x[i]), c != c, c == 0, total_order);
    else return float_sort_key(static_cast<int64_t>(__double_as_longlong(x[i])), c != c, c == 0, total_order);
  }
}

// A thread per line: the shared heap sort of its positions in place in y (stable by sorts_before).
template <class T> __global__ void argsort_kernel(const T* x, int32_t* y, int64_t outer, int64_t n, int64_t inner,
                                                  bool descending, bool total_order) {
  FERRY_GRID_LOOP(line, outer * inner) {
    const int64_t base = (line / inner) * n * inner + line % inner;
    auto at = [&](int64_t k) -> int32_t& { return y[base + k * inner]; };
    for (int64_t k = 0; k < n; ++k) at(k) = static_cast<int32_t>(k);
    heap_sort_positions(n, at, [&](int32_t a, int32_t b) {
      return sorts_before(order_key(x, base + a * inner, total_order), order_key(x, base + b * inner, total_order), a, b,
                          descending);
    });
  }
}

__device__ inline uint32_t rotl(uint32_t x, int d) { return (x << d) | (x >> (32 - d)); }

__global__ void threefry_kernel(const uint32_t* k0, int64_t s0, const uint32_t* k1, int64_t s1, const uint32_t* x0,
                                const uint32_t* x1, uint32_t* y0, uint32_t* y1, int64_t n) {
  const int rot0[4] = {13, 15, 26, 6}, rot1[4] = {17, 29, 16, 24};
  FERRY_GRID_LOOP(i, n) {
    const uint32_t ks0 = k0[i * s0], ks1 = k1[i * s1], ks2 = ks0 ^ ks1 ^ 0x1BD11BDAu;
    uint32_t a = x0[i] + ks0, b = x1[i] + ks1;
    auto rounds = [&](const int* rot) {
      for (int r = 0; r < 4; ++r) {
        a += b;
        b = rotl(b, rot[r]);
        b ^= a;
      }
    };
    rounds(rot0);
    a += ks1, b += ks2 + 1u;
    rounds(rot1);
    a += ks2, b += ks0 + 2u;
    rounds(rot0);
    a += ks0, b += ks1 + 3u;
    rounds(rot1);
    a += ks1, b += ks2 + 4u;
    rounds(rot0);
    a += ks2, b += ks0 + 5u;
    y0[i] = a;
    y1[i] = b;
  }
}

__global__ void int_matmul_kernel(const int32_t* lhs, const int32_t* rhs, int32_t* out, int64_t batch, int64_t m,
                                  int64_t n, int64_t k) {
  FERRY_GRID_LOOP(i, batch * m * n) {
    const int64_t b = i / (m * n), row = (i / n) % m, col = i % n;
    uint32_t acc = 0;
    for (int64_t j = 0; j < k; ++j)
      acc += static_cast<uint32_t>(lhs[(b * m + row) * k + j]) * static_cast<uint32_t>(rhs[(b * k + j) * n + col]);
    out[i] = static_cast<int32_t>(acc);
  }
}

}  // namespace

void launch_reduce(const ReduceArgs& r, const void* x, void* y, void* stream) {
  if (r.out_count == 0) return;
  const unsigned grid = static_cast<unsigned>(r.out_count < 65535 * 4 ? r.out_count : 65535 * 4);
  auto s = static_cast<cudaStream_t>(stream);
  visit(r.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    reduce_kernel<T><<<grid, kThreads, 0, s>>>(r, static_cast<const T*>(x), static_cast<T*>(y));
  });
}

void launch_arg_reduce(bool is_max, Dt dtype, const void* x, int32_t* y, int64_t outer, int64_t n, int64_t inner,
                       void* stream) {
  if (outer * inner == 0 || n == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  visit(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if constexpr (!std::is_same_v<T, uint8_t>)
      arg_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(is_max, static_cast<const T*>(x), y, outer, n, inner);
  });
}

void launch_argsort(Dt dtype, const void* x, int32_t* y, int64_t outer, int64_t n, int64_t inner, bool descending,
                    bool total_order, void* stream) {
  if (outer * inner == 0 || n == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  visit(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    argsort_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(static_cast<const T*>(x), y, outer, n, inner, descending,
                                                                      total_order);
  });
}

void launch_cumulative(CumulativeOp op, Dt dtype, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                       bool reverse, void* stream) {
  if (outer * inner * n == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  visit(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if constexpr (!std::is_same_v<T, uint8_t>)
      cumulative_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(op, static_cast<const T*>(x), static_cast<T*>(y),
                                                                          outer, n, inner, reverse);
  });
}

void launch_threefry(const uint32_t* k0, bool k0_scalar, const uint32_t* k1, bool k1_scalar, const uint32_t* x0,
                     const uint32_t* x1, uint32_t* y0, uint32_t* y1, int64_t n, void* stream) {
  if (n == 0) return;
  threefry_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      k0, k0_scalar ? 0 : 1, k1, k1_scalar ? 0 : 1, x0, x1, y0, y1, n);
}

void launch_int_matmul(const int32_t* lhs, const int32_t* rhs, int32_t* out, int64_t batch, int64_t m, int64_t n,
                       int64_t k, void* stream) {
  if (batch * m * n == 0) return;
  int_matmul_kernel<<<blocks_for(batch * m * n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(lhs, rhs, out, batch,
                                                                                                    m, n, k);
}

}  // namespace ferry::runtime::cuda
