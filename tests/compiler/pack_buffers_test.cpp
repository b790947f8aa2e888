// Buffer packing: the sweep (order of start) and the indexed search (any order) place every
// buffer where the plain loop over all placed buffers does (the loop the planner used before,
// kept here as the reference), on random live ranges and sizes, zero sizes and equal ranges
// included; and what counts the pairs that meet counts them.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "compiler/pack_buffers.h"

namespace ferry::compiler {
namespace {

int64_t reference_pack(std::vector<PackItem>& items, const std::vector<size_t>& order) {
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;
  int64_t arena = 0;
  for (size_t i : order) {
    PackItem& b = items[i];
    busy.clear();
    for (size_t j : placed) {
      const PackItem& p = items[j];
      if (p.start <= b.end && b.start <= p.end && p.size > 0) busy.emplace_back(p.offset, p.offset + p.size);
    }
    std::sort(busy.begin(), busy.end());
    int64_t best = -1, best_gap = std::numeric_limits<int64_t>::max(), frontier = 0;
    for (auto [lo, hi] : busy) {
      const int64_t gap = lo - frontier;
      if (gap >= b.size && gap < best_gap) {
        best = frontier;
        best_gap = gap;
      }
      frontier = std::max(frontier, hi);
    }
    b.offset = best >= 0 ? best : frontier;
    arena = std::max(arena, b.offset + b.size);
    placed.push_back(i);
  }
  return arena;
}

std::vector<PackItem> random_items(std::mt19937& g, int n, int horizon) {
  std::uniform_int_distribution<int> pos(0, horizon), len(0, horizon / 4), size(0, 8);
  std::vector<PackItem> items(static_cast<size_t>(n));
  for (PackItem& it : items) {
    it.start = pos(g);
    it.end = std::min(horizon, it.start + len(g));
    it.size = int64_t{64} * size(g);  // zero sizes too
  }
  return items;
}

TEST(PackBuffers, BothOrdersPlaceAsThePlainLoopDoes) {
  std::mt19937 g(11);
  for (int round = 0; round < 300; ++round) {
    const int n = 1 + round % 60, horizon = 4 + round % 50;
    std::vector<PackItem> items = random_items(g, n, horizon);
    std::vector<size_t> by_start(items.size()), by_size;
    for (size_t i = 0; i < items.size(); ++i) by_start[i] = i;
    std::stable_sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) {
      if (items[a].start != items[b].start) return items[a].start < items[b].start;
      return items[a].size > items[b].size;
    });
    by_size = by_start;
    std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) { return items[a].size > items[b].size; });
    for (const auto* order : {&by_start, &by_size}) {
      std::vector<PackItem> want = items, got = items;
      const int64_t want_arena = reference_pack(want, *order);
      const int64_t got_arena = order == &by_start ? pack_by_start(got, *order) : pack_in_any_order(got, *order);
      ASSERT_EQ(got_arena, want_arena) << "round " << round;
      for (size_t i = 0; i < items.size(); ++i) ASSERT_EQ(got[i].offset, want[i].offset) << "round " << round << " item " << i;
    }
  }
}

TEST(PackBuffers, OverlappingPairsCountsThePairsThatMeet) {
  std::mt19937 g(5);
  for (int round = 0; round < 100; ++round) {
    std::vector<PackItem> items = random_items(g, 1 + round % 40, 30);
    std::vector<size_t> all(items.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    int64_t want = 0;
    for (size_t a = 0; a < items.size(); ++a)
      for (size_t b = a + 1; b < items.size(); ++b)
        want += items[a].start <= items[b].end && items[b].start <= items[a].end;
    EXPECT_EQ(overlapping_pairs(items, all), want);
  }
}

}  // namespace
}  // namespace ferry::compiler
