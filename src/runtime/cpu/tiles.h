// How the elementwise and fused kernels split their work: fixed tiles of kTile elements (small
// enough for L1/L2), handed out in runs of whole tiles by parallel_for. A tile's boundaries depend
// only on n, never on the number of threads, so results do not either.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/cpu/parallel.h"

namespace ferry::runtime::cpu {

inline constexpr int64_t kTile = 4096;
// Fewest tiles one thread takes: below this, waking a thread costs more than the work.
inline constexpr int64_t kTilesPerTask = 4;

// fn(begin, end) over [0, n) in runs of whole tiles (the last one may be short), possibly on
// several threads at once.
template <class F> void for_each_tile(int64_t n, F&& fn) {
  if (n <= 0) return;
  const int64_t tiles = (n + kTile - 1) / kTile;
  parallel_for(tiles, kTilesPerTask,
               [&](int64_t t0, int64_t t1) { fn(t0 * kTile, std::min(n, t1 * kTile)); });
}

}  // namespace ferry::runtime::cpu
