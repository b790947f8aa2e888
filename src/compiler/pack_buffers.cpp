#include "compiler/pack_buffers.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <queue>
#include <set>

namespace ferry::compiler {
namespace {

// The placed buffers live at one moment (disjoint in the arena) and the gaps between them,
// including empty ones between neighbours and the one from 0 to the lowest, but not the space
// above the highest (the frontier).
class LiveSet {
 public:
  // The offset best fit gives a buffer of `size`: the smallest gap that holds it (the lowest of
  // equal ones), else the frontier.
  int64_t best_fit(int64_t size) const {
    auto g = gaps_.lower_bound({size, std::numeric_limits<int64_t>::min()});
    return g != gaps_.end() ? g->second : frontier();
  }
  int64_t frontier() const { return live_.empty() ? 0 : std::prev(live_.end())->second; }

  void insert(int64_t lo, int64_t hi) {
    auto next = live_.lower_bound(lo);
    const int64_t before = next == live_.begin() ? 0 : std::prev(next)->second;
    if (next != live_.end()) gaps_.erase({next->first - before, before});  // the gap it lands in
    gaps_.insert({lo - before, before});
    if (next != live_.end()) gaps_.insert({next->first - hi, hi});
    live_.emplace(lo, hi);
  }

  void erase(int64_t lo) {
    auto it = live_.find(lo);
    const int64_t hi = it->second;
    const int64_t before = it == live_.begin() ? 0 : std::prev(it)->second;
    auto next = std::next(it);
    gaps_.erase({lo - before, before});
    if (next != live_.end()) {
      gaps_.erase({next->first - hi, hi});
      gaps_.insert({next->first - before, before});
    }
    live_.erase(it);
  }

 private:
  std::map<int64_t, int64_t> live_;               // lo -> hi
  std::set<std::pair<int64_t, int64_t>> gaps_;    // (size, lo)
};

}  // namespace

int64_t pack_by_start(std::vector<PackItem>& items, const std::vector<size_t>& order) {
  LiveSet live;
  // Placed buffers by the end of their range, to leave the set when a later one starts after it.
  using Ending = std::pair<int, int64_t>;  // (end, offset)
  std::priority_queue<Ending, std::vector<Ending>, std::greater<>> ending;
  int64_t arena = 0;
  for (size_t i : order) {
    PackItem& b = items[i];
    while (!ending.empty() && ending.top().first < b.start) {
      live.erase(ending.top().second);
      ending.pop();
    }
    b.offset = live.best_fit(b.size);
    arena = std::max(arena, b.offset + b.size);
    if (b.size > 0) {
      live.insert(b.offset, b.offset + b.size);
      ending.emplace(b.end, b.offset);
    }
  }
  return arena;
}

namespace {

// The items of a set whose ranges meet a query range: those starting inside it (a range of the
// start-sorted list), and those starting before it that are still live at its start (a max-end
// segment tree over the start-sorted list, searched for ends at or after the query's start).
class IntervalIndex {
 public:
  IntervalIndex(const std::vector<PackItem>& items, const std::vector<size_t>& subset) : items_(items), by_start_(subset) {
    std::sort(by_start_.begin(), by_start_.end(), [&](size_t a, size_t b) { return items[a].start < items[b].start; });
    size_ = 1;
    while (size_ < by_start_.size()) size_ *= 2;
    max_end_.assign(2 * size_, std::numeric_limits<int>::min());
    for (size_t k = 0; k < by_start_.size(); ++k) max_end_[size_ + k] = items[by_start_[k]].end;
    for (size_t n = size_; n-- > 1;) max_end_[n] = std::max(max_end_[2 * n], max_end_[2 * n + 1]);
  }

  template <class F> void meeting(int start, int end, F f) const {
    auto first_at = std::lower_bound(by_start_.begin(), by_start_.end(), start,
                                     [&](size_t i, int s) { return items_[i].start < s; });
    const size_t split = static_cast<size_t>(first_at - by_start_.begin());
    for (auto it = first_at; it != by_start_.end() && items_[*it].start <= end; ++it) f(*it);
    if (split > 0) earlier(1, 0, size_, split, start, f);
  }

 private:
  // Items at sorted positions [0, limit) under node n (covering [lo, hi)) with end >= start.
  template <class F> void earlier(size_t n, size_t lo, size_t hi, size_t limit, int start, F& f) const {
    if (lo >= limit || max_end_[n] < start) return;
    if (hi - lo == 1) {
      f(by_start_[lo]);
      return;
    }
    const size_t mid = (lo + hi) / 2;
    earlier(2 * n, lo, mid, limit, start, f);
    earlier(2 * n + 1, mid, hi, limit, start, f);
  }

  const std::vector<PackItem>& items_;
  std::vector<size_t> by_start_;
  size_t size_ = 1;
  std::vector<int> max_end_;
};

}  // namespace

int64_t pack_in_any_order(std::vector<PackItem>& items, const std::vector<size_t>& order) {
  const IntervalIndex index(items, order);
  std::vector<char> placed(items.size(), 0);
  std::vector<std::pair<int64_t, int64_t>> busy;
  int64_t arena = 0;
  for (size_t i : order) {
    PackItem& b = items[i];
    busy.clear();
    index.meeting(b.start, b.end, [&](size_t j) {
      const PackItem& p = items[j];
      if (placed[j] && p.size > 0) busy.emplace_back(p.offset, p.offset + p.size);
    });
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
    placed[i] = 1;
  }
  return arena;
}

int64_t overlapping_pairs(const std::vector<PackItem>& items, const std::vector<size_t>& subset) {
  // Pairs that meet = all pairs - pairs where one ends before the other starts.
  std::vector<int> starts, ends;
  for (size_t i : subset) {
    starts.push_back(items[i].start);
    ends.push_back(items[i].end);
  }
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  const auto n = static_cast<int64_t>(subset.size());
  int64_t apart = 0;  // pairs (a, b) with a.end < b.start
  for (int s : starts) apart += std::lower_bound(ends.begin(), ends.end(), s) - ends.begin();
  return n * (n - 1) / 2 - apart;
}

}  // namespace ferry::compiler
