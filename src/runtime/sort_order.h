// The order argsort sorts in, and the sort itself, shared by the CPU and CUDA kernels (plain
// C++17, compiled by nvcc for the device too): one place says what "before" means.
#pragma once

#include <cstdint>
#include <limits>

#if defined(__CUDACC__)
#define FERRY_HOST_DEVICE __host__ __device__
#else
#define FERRY_HOST_DEVICE
#endif

namespace ferry::runtime {

// A float's place in the order as a signed integer, from its bits read as a signed integer of its
// width. IEEE's total order (total_order: top_k's) is those bits with every bit but the sign
// flipped where the sign is set: -NaN < -inf < ... < -0 < +0 < ... < inf < NaN. jax.lax.sort
// compares in it after making -0 into +0 and every NaN into one NaN (its
// _canonicalize_float_for_sort): -inf < ... < -0 = +0 < ... < inf < NaN, all NaNs equal.
template <class Bits>
FERRY_HOST_DEVICE inline int64_t float_sort_key(Bits bits, bool is_nan, bool is_zero, bool total_order) {
  if (!total_order && is_nan) return std::numeric_limits<int64_t>::max();
  if (!total_order && is_zero) return 0;
  return bits < 0 ? static_cast<int64_t>(bits ^ std::numeric_limits<Bits>::max()) : static_cast<int64_t>(bits);
}

// Whether position a (key ka) sorts before position b (key kb): by key, ties to the lower
// position, so that any sorting algorithm gives the stable order.
FERRY_HOST_DEVICE inline bool sorts_before(int64_t ka, int64_t kb, int32_t a, int32_t b, bool descending) {
  return ka != kb ? (descending ? ka > kb : ka < kb) : a < b;
}

// Sorts the positions at(0) .. at(n - 1) (an int32_t& each) by before(a, b), in place and without
// allocating: a heap sort, for lines whose elements are strided.
template <class At, class Before> FERRY_HOST_DEVICE void heap_sort_positions(int64_t n, At at, Before before) {
  auto swap = [&](int64_t i, int64_t j) {
    const int32_t t = at(i);
    at(i) = at(j);
    at(j) = t;
  };
  auto sift_down = [&](int64_t root, int64_t end) {
    for (int64_t child = 2 * root + 1; child < end; root = child, child = 2 * root + 1) {
      if (child + 1 < end && before(at(child), at(child + 1))) ++child;
      if (!before(at(root), at(child))) return;
      swap(root, child);
    }
  };
  for (int64_t k = n / 2 - 1; k >= 0; --k) sift_down(k, n);
  for (int64_t end = n - 1; end > 0; --end) {
    swap(0, end);
    sift_down(0, end);
  }
}

}  // namespace ferry::runtime
