// Best-fit packing of buffers with live ranges into one arena (buffer assignment's last step):
// buffers are placed one at a time, in a given order, each at the smallest gap that fits among the
// buffers already placed whose live ranges meet its own (the lowest such gap where several are as
// small), else above them all.
//
// The same placement as the plain loop over every placed buffer (kept in the test as the
// reference), in near-linear time where it matters: placed in order of start, the buffers that
// meet the next one are exactly those still live when it starts, so a sweep keeps them and the
// gaps between them in ordered sets (O(n log n)). Any other order asks an interval index for the
// buffers that meet each one, which costs the number of pairs that meet; pack_buffers tries that
// order only while those pairs are few (kMaxOverlapPairs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ferry::compiler {

struct PackItem {
  int64_t size = 0;        // bytes
  int start = 0, end = 0;  // live over [start, end]
  int64_t offset = 0;      // set by packing
};

// Places items in `order` (indices into items); returns the arena size. `order` must list items in
// nondecreasing start for pack_by_start.
int64_t pack_by_start(std::vector<PackItem>& items, const std::vector<size_t>& order);
int64_t pack_in_any_order(std::vector<PackItem>& items, const std::vector<size_t>& order);

// The pairs of items (of `subset`) whose live ranges meet: what pack_in_any_order costs.
int64_t overlapping_pairs(const std::vector<PackItem>& items, const std::vector<size_t>& subset);

// Above this many meeting pairs, only the order of start is tried (see memory_plan.cpp's pack).
inline constexpr int64_t kMaxOverlapPairs = int64_t{4} << 20;

}  // namespace ferry::compiler
