// Private to the CPU kernels: the one data-movement loop behind transpose, broadcast_in_dim, slice,
// dynamic_slice, dynamic_update_slice and the packing in dot_general.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ferry::runtime::cpu {

// For every index i of `shape`: dst[sum_d i_d * dst_strides[d]] = src[sum_d i_d * src_strides[d]],
// strides counted in elements of `elem_size` bytes (1, 2, 4 or 8). A source stride of 0 repeats
// (broadcasts) a value. Dimensions are dropped when of size 1 and merged when contiguous on both
// sides; the innermost loop is then a memcpy, a fill, a 2-D tiled transpose, or a strided loop, and
// the outer dimensions advance as an odometer (no division per element). Zero-size shapes copy
// nothing; rank 0 copies one element.
void strided_copy(size_t elem_size, std::span<const int64_t> shape, void* dst, std::span<const int64_t> dst_strides,
                  const void* src, std::span<const int64_t> src_strides);

// Row-major strides of a dense array of this shape, in elements.
void dense_strides(std::span<const int64_t> shape, std::span<int64_t> strides);

}  // namespace ferry::runtime::cpu
