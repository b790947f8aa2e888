// Private to the CPU kernels: the outer loops of a two-sided strided walk (strided_copy and the
// reductions), as an odometer: offsets advance by a stride add per index, no division per element.
// A range [begin, end) of the row-major index lets parallel_for hand each thread its own part.
#pragma once

#include <cstdint>
#include <utility>

#include "runtime/cpu/dims.h"

namespace ferry::runtime::cpu {

// One loop dimension: its size and its strides (in elements) on the written and the read side.
struct LoopDim {
  int64_t size, dst, src;
};

inline int64_t loop_count(const DimVec<LoopDim>& dims) {
  int64_t count = 1;
  for (const LoopDim& d : dims) count *= d.size;
  return count;
}

// Calls body(dst_offset, src_offset) for the row-major indices begin..end-1 of `outer`, in order.
template <class Body> void odometer(const DimVec<LoopDim>& outer, int64_t begin, int64_t end, Body&& body) {
  if (begin >= end) return;
  // The starting index, by division once per range.
  Dims64 idx(outer.size(), 0);
  int64_t dst = 0, src = 0;
  for (size_t k = outer.size(), rest = static_cast<size_t>(begin); k-- > 0;) {
    const auto size = static_cast<size_t>(outer[k].size);
    idx[k] = static_cast<int64_t>(rest % size);
    rest /= size;
    dst += idx[k] * outer[k].dst;
    src += idx[k] * outer[k].src;
  }
  for (int64_t it = begin; it < end; ++it) {
    body(dst, src);
    for (size_t k = outer.size(); k-- > 0;) {
      if (++idx[k] < outer[k].size) {
        dst += outer[k].dst;
        src += outer[k].src;
        break;
      }
      idx[k] = 0;
      dst -= outer[k].dst * (outer[k].size - 1);
      src -= outer[k].src * (outer[k].size - 1);
    }
  }
}

template <class Body> void odometer(const DimVec<LoopDim>& outer, Body&& body) {
  odometer(outer, 0, loop_count(outer), std::forward<Body>(body));
}

}  // namespace ferry::runtime::cpu
