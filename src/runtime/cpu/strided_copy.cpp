#include "runtime/cpu/strided_copy.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/cpu/dims.h"
#include "runtime/cpu/odometer.h"
#include "runtime/cpu/parallel.h"

namespace ferry::runtime::cpu {
namespace {

using Dim = LoopDim;

// Drops size-1 dimensions and merges a dimension into its inner neighbour when both sides are
// contiguous across them. Returns false when the shape has no elements.
bool simplify(std::span<const int64_t> shape, std::span<const int64_t> dst_strides,
              std::span<const int64_t> src_strides, DimVec<Dim>& dims) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return false;
    if (shape[d] == 1) continue;
    Dim cur{shape[d], dst_strides[d], src_strides[d]};
    if (!dims.empty()) {
      Dim& prev = dims.back();
      if (prev.dst == cur.dst * cur.size && prev.src == cur.src * cur.size) {
        prev = Dim{prev.size * cur.size, cur.dst, cur.src};
        continue;
      }
    }
    dims.push_back(cur);
  }
  return true;
}

// Elements one task of a copy moves at least: below this a thread's start-up costs more than the
// copy (64 KiB of f32).
constexpr int64_t kGrainElements = 16384;

// Runs body(dst_offset, src_offset) for every index of `outer`, split across the pool; each index
// moves `per_index` elements. Every index writes its own elements, so any split gives the same bits.
template <class Body> void parallel_odometer(const DimVec<Dim>& outer, int64_t per_index, Body&& body) {
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, per_index));
  parallel_for(loop_count(outer), grain, [&](int64_t begin, int64_t end) { odometer(outer, begin, end, body); });
}

constexpr int64_t kTile = 32;

template <class E> void copy_typed(DimVec<Dim> dims, E* dst, const E* src) {
  if (dims.empty()) {
    *dst = *src;
    return;
  }
  const Dim inner = dims.back();
  dims.pop_back();

  if (inner.dst == 1 && inner.src == 1) {
    const size_t bytes = static_cast<size_t>(inner.size) * sizeof(E);
    parallel_odometer(dims, inner.size, [&](int64_t d, int64_t s) { std::memcpy(dst + d, src + s, bytes); });
    return;
  }
  if (inner.src == 0) {
    parallel_odometer(dims, inner.size, [&](int64_t d, int64_t s) {
      const E v = src[s];
      E* out = dst + d;
      if (inner.dst == 1) {
        std::fill_n(out, inner.size, v);
      } else {
        for (int64_t j = 0; j < inner.size; ++j) out[j * inner.dst] = v;
      }
    });
    return;
  }
  // A transpose: the output row is contiguous, but the source is contiguous along another
  // dimension. Copy 32x32 tiles so both sides stay in cache.
  if (inner.dst == 1) {
    auto t = std::find_if(dims.begin(), dims.end(), [](const Dim& d) { return d.src == 1; });
    if (t != dims.end()) {
      const Dim tile = *t;
      dims.erase(t);
      // Tasks are (outer index, block of kTile rows of the tile dimension): a 2-D transpose has
      // no outer index, and its blocks are what spreads it across the pool.
      const int64_t blocks = (tile.size + kTile - 1) / kTile;
      const int64_t grain = std::max<int64_t>(1, kGrainElements / (kTile * inner.size));
      parallel_for(loop_count(dims) * blocks, grain, [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          const int64_t o = task / blocks, i0 = task % blocks * kTile, i1 = std::min(i0 + kTile, tile.size);
          odometer(dims, o, o + 1, [&](int64_t d, int64_t s) {
            E* out = dst + d;
            const E* in = src + s;
            for (int64_t j0 = 0; j0 < inner.size; j0 += kTile) {
              const int64_t j1 = std::min(j0 + kTile, inner.size);
              for (int64_t i = i0; i < i1; ++i) {
                E* orow = out + i * tile.dst;
                const E* icol = in + i;
                for (int64_t j = j0; j < j1; ++j) orow[j] = icol[j * inner.src];
              }
            }
          });
        }
      });
      return;
    }
  }
  parallel_odometer(dims, inner.size, [&](int64_t d, int64_t s) {
    E* out = dst + d;
    const E* in = src + s;
    for (int64_t j = 0; j < inner.size; ++j) out[j * inner.dst] = in[j * inner.src];
  });
}

}  // namespace

void strided_copy(size_t elem_size, std::span<const int64_t> shape, void* dst, std::span<const int64_t> dst_strides,
                  const void* src, std::span<const int64_t> src_strides) {
  DimVec<Dim> dims;
  if (!simplify(shape, dst_strides, src_strides, dims)) return;
  switch (elem_size) {
    case 1: return copy_typed(std::move(dims), static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src));
    case 2: return copy_typed(std::move(dims), static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src));
    case 4: return copy_typed(std::move(dims), static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src));
    case 8: return copy_typed(std::move(dims), static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src));
  }
  throw Error(ErrorCode::internal, fmt::format("strided_copy: unsupported element size {}", elem_size));
}

void dense_strides(std::span<const int64_t> shape, std::span<int64_t> strides) {
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
}

}  // namespace ferry::runtime::cpu
