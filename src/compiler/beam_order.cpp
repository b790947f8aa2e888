#include "compiler/beam_order.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <unordered_map>

namespace ferry::compiler {
namespace {

// A candidate extension of a kept partial order by one equation.
struct Child {
  int64_t peak, live;
  uint64_t set_hash;
  uint32_t parent, eq;
  bool operator<(const Child& o) const {
    return std::tie(peak, live, set_hash, parent, eq) < std::tie(o.peak, o.live, o.set_hash, o.parent, o.eq);
  }
};

uint64_t mix(uint64_t x) {  // splitmix64: a random-looking key per equation for the set hash
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The kept partial orders of one length, in flat arrays (entry i's state at [i * n, (i + 1) * n)
// and [i * nv, (i + 1) * nv)), and how each extends its parent in the previous layer.
struct Layer {
  std::vector<int32_t> missing;  // per equation: producers not yet run (-1: already run)
  std::vector<int32_t> unread;   // per value: readers not yet run
  std::vector<int64_t> live, peak;
  std::vector<uint64_t> set_hash;
  std::vector<uint32_t> parent, eq;
  size_t size() const { return live.size(); }
};

}  // namespace

std::vector<size_t> beam_order(const ScheduleModel& m, int width, int64_t below) {
  const size_t n = m.eqs.size(), nv = m.values.size();
  std::vector<std::vector<int>> readers_of_eq(n);  // equations that read an output of e
  Layer layer;
  layer.missing.resize(n);
  for (size_t e = 0; e < n; ++e) {
    layer.missing[e] = static_cast<int32_t>(m.eqs[e].preds.size());
    for (int p : m.eqs[e].preds) readers_of_eq[static_cast<size_t>(p)].push_back(static_cast<int>(e));
  }
  layer.unread.resize(nv);
  for (size_t v = 0; v < nv; ++v) layer.unread[v] = static_cast<int32_t>(m.values[v].readers.size());
  layer.live = {0};
  layer.peak = {0};
  layer.set_hash = {0};
  layer.parent = {0};
  layer.eq = {0};
  std::vector<Layer> history;  // parent links only, to rebuild the order
  std::vector<Child> children;
  std::unordered_map<uint64_t, size_t> best_of_set;  // set hash -> its child
  for (size_t k = 0; k < n; ++k) {
    children.clear();
    for (size_t i = 0; i < layer.size(); ++i) {
      const int32_t* missing = &layer.missing[i * n];
      const int32_t* unread = &layer.unread[i * nv];
      auto dies = [&](int u) { return !m.values[static_cast<size_t>(u)].to_end && unread[u] == 1; };
      for (size_t e = 0; e < n; ++e) {
        if (missing[e] != 0) continue;
        auto [during, after] = schedule_step(m, static_cast<int>(e), layer.live[i], dies);
        if (std::max(layer.peak[i], during) >= below) continue;  // cannot end below `below`
        children.push_back({std::max(layer.peak[i], during), after, layer.set_hash[i] ^ mix(e), static_cast<uint32_t>(i),
                            static_cast<uint32_t>(e)});
      }
    }
    if (children.empty()) return {};
    // One child per set of equations (the best way found to reach it), then the best `width`.
    best_of_set.clear();
    size_t kept = 0;
    for (size_t c = 0; c < children.size(); ++c) {
      auto [it, fresh] = best_of_set.try_emplace(children[c].set_hash, kept);
      if (fresh) {
        children[kept++] = children[c];
      } else if (children[c] < children[it->second]) {
        children[it->second] = children[c];
      }
    }
    children.resize(kept);
    size_t take = std::min(children.size(), static_cast<size_t>(width));
    std::nth_element(children.begin(), children.begin() + static_cast<std::ptrdiff_t>(take - 1), children.end());
    std::sort(children.begin(), children.begin() + static_cast<std::ptrdiff_t>(take));
    Layer next;
    for (size_t c_at = 0; c_at < take; ++c_at) {
      const Child& c = children[c_at];
      size_t from = next.missing.size();
      next.missing.insert(next.missing.end(), layer.missing.begin() + static_cast<std::ptrdiff_t>(c.parent * n),
                          layer.missing.begin() + static_cast<std::ptrdiff_t>((c.parent + 1) * n));
      next.missing[from + c.eq] = -1;
      for (int r : readers_of_eq[c.eq]) --next.missing[from + static_cast<size_t>(r)];
      size_t vfrom = next.unread.size();
      next.unread.insert(next.unread.end(), layer.unread.begin() + static_cast<std::ptrdiff_t>(c.parent * nv),
                         layer.unread.begin() + static_cast<std::ptrdiff_t>((c.parent + 1) * nv));
      for (int u : m.eqs[c.eq].reads) --next.unread[vfrom + static_cast<size_t>(u)];
      next.live.push_back(c.live);
      next.peak.push_back(c.peak);
      next.set_hash.push_back(c.set_hash);
      next.parent.push_back(c.parent);
      next.eq.push_back(c.eq);
    }
    std::vector<int32_t>().swap(layer.missing);  // the history keeps only the parent links
    std::vector<int32_t>().swap(layer.unread);
    history.push_back(std::move(layer));
    layer = std::move(next);
  }
  // Walk back from the best complete order (entry 0 of the last layer: children were sorted).
  std::vector<size_t> order(n);
  uint32_t at = 0;
  for (size_t k = n; k-- > 0;) {
    const Layer& l = k + 1 == n ? layer : history[k + 1];
    order[k] = l.eq[at];
    at = l.parent[at];
  }
  return order;
}

}  // namespace ferry::compiler
