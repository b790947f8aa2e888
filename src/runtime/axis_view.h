// An array seen around one axis as [outer, n, inner] (row-major): how the axis kernels of every
// backend (argmax/argmin, cumulative ops) walk it.
#pragma once

#include <cstdint>

#include "ferry/types.h"

namespace ferry::runtime {

struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

// `axis` must be in [0, rank): the kernels check it first, with their backend's error.
inline AxisView axis_view(const Shape& shape, int64_t axis) {
  AxisView v;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int64_t>(d) < axis) v.outer *= shape[d];
    else if (static_cast<int64_t>(d) > axis) v.inner *= shape[d];
  }
  v.n = shape[static_cast<size_t>(axis)];
  return v;
}

}  // namespace ferry::runtime
