#include "compiler/optimal_schedule.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "ferry/error.h"

namespace ferry::compiler {
namespace {

int64_t aligned(int64_t bytes) { return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

// The region as the memory model sees it: device arena values with their sizes and readers, and per
// equation what it reads, makes, may write in place, and holds while it runs.
struct Model {
  struct Value {
    int64_t bytes = 0;          // 0: not a device arena value (argument, external, host)
    bool to_end = false;        // a program output: live until the end
    std::vector<int> readers;   // distinct equations that read it
  };
  struct Eq {
    std::vector<int> preds;     // distinct equations whose outputs it reads
    std::vector<int> reads;     // distinct device arena values it reads
    std::vector<int> makes;     // device arena values it defines
    std::vector<int> in_place;  // device arena inputs whose buffer its one output may take
    int64_t held = 0;           // device bytes held at its own position only (bodies, scratch, streams)
  };
  std::vector<Value> values;
  std::vector<Eq> eqs;
};

Model build_model(const ir::Program& p, const MemoryPlan& plan) {
  const size_t n = p.equations.size(), nv = p.values.size();
  if (plan.slots.size() != nv || plan.bodies.size() != n)
    throw Error(ErrorCode::invalid_argument, "optimal_schedule: the plan is not a plan of this region");
  Model m;
  m.values.resize(nv);
  m.eqs.resize(n);
  std::vector<int> producer(nv, -1);
  for (size_t v = 0; v < nv; ++v) {
    const Slot& s = plan.slots[v];
    if (s.where == Slot::Where::arena && s.buffer >= 0 && p.values[v].kind == MemoryKind::device)
      m.values[v].bytes = aligned(p.values[v].size_bytes());
  }
  for (ir::ValueId v : p.outputs) m.values[static_cast<size_t>(v)].to_end = m.values[static_cast<size_t>(v)].bytes > 0;
  for (size_t e = 0; e < n; ++e)
    for (ir::ValueId v : p.equations[e].outputs) producer[static_cast<size_t>(v)] = static_cast<int>(e);
  for (size_t e = 0; e < n; ++e) {
    const ir::Equation& eq = p.equations[e];
    Model::Eq& me = m.eqs[e];
    for (ir::ValueId v : eq.inputs) {
      auto u = static_cast<size_t>(v);
      int pe = producer[u];
      if (pe >= 0 && std::find(me.preds.begin(), me.preds.end(), pe) == me.preds.end()) me.preds.push_back(pe);
      std::vector<int>& readers = m.values[u].readers;
      if (std::find(readers.begin(), readers.end(), static_cast<int>(e)) == readers.end()) {
        readers.push_back(static_cast<int>(e));
        if (m.values[u].bytes > 0) me.reads.push_back(v);
      }
    }
    for (ir::ValueId v : eq.outputs)
      if (m.values[static_cast<size_t>(v)].bytes > 0) me.makes.push_back(v);
    // The plan writes in place only for single-output elementwise primitives (in_place_candidates).
    if (eq.outputs.size() == 1 && me.makes.size() == 1) {
      const ir::Type& out = p.type(eq.outputs[0]);
      for (size_t c : in_place_candidates(eq)) {
        ir::ValueId u = eq.inputs.at(c);
        if (m.values[static_cast<size_t>(u)].bytes > 0 && p.type(u).size_bytes() == out.size_bytes())
          me.in_place.push_back(u);
      }
    }
  }
  for (const Buffer& b : plan.buffers) {
    int at = b.body_of >= 0     ? b.body_of
             : b.scratch_of >= 0 ? b.scratch_of
             : b.stream_of >= 0  ? b.stream_of
                                 : b.workspace_of;
    if (at >= 0 && b.kind == MemoryKind::device) m.eqs.at(static_cast<size_t>(at)).held += b.size;
  }
  return m;
}

// The bytes live while equation e runs and after it, given `live` bytes before it and `dies(u)`:
// whether e is the last reader of device arena value u.
template <class Dies> std::pair<int64_t, int64_t> step(const Model& m, int e, int64_t live, const Dies& dies) {
  const Model::Eq& eq = m.eqs[static_cast<size_t>(e)];
  int64_t made = 0, kept = 0, freed = 0;
  for (int v : eq.makes) {
    const Model::Value& mv = m.values[static_cast<size_t>(v)];
    made += mv.bytes;
    if (mv.to_end || !mv.readers.empty()) kept += mv.bytes;
  }
  for (int u : eq.in_place)
    if (dies(u)) {
      made = 0;  // the one output takes the dying input's buffer, which is live already
      break;
    }
  for (int u : eq.reads)
    if (dies(u)) freed += m.values[static_cast<size_t>(u)].bytes;
  return {live + made + eq.held, live + kept - freed};
}

// Sets of equations to their index in a layer: open addressing on the bitmask (never 0 past the
// first layer, so 0 marks an empty slot).
class SetIndex {
 public:
  void clear(size_t expected) {
    size_t cap = 16;
    while (cap < 2 * expected) cap *= 2;
    keys_.assign(cap, 0);
    values_.resize(cap);
    size_ = 0;
  }
  // The index stored for `mask`, or `fresh` stored as its index if it has none.
  int32_t find_or_add(uint64_t mask, int32_t fresh) {
    if (2 * (size_ + 1) > keys_.size()) grow();
    size_t i = slot(mask);
    if (keys_[i] == mask) return values_[i];
    keys_[i] = mask;
    values_[i] = fresh;
    ++size_;
    return fresh;
  }

 private:
  size_t slot(uint64_t mask) const {
    size_t i = static_cast<size_t>((mask * 0x9E3779B97F4A7C15ull) >> 20) & (keys_.size() - 1);
    while (keys_[i] != 0 && keys_[i] != mask) i = (i + 1) & (keys_.size() - 1);
    return i;
  }
  void grow() {
    std::vector<uint64_t> keys = std::move(keys_);
    std::vector<int32_t> values = std::move(values_);
    keys_.assign(keys.size() * 2, 0);
    values_.resize(keys_.size());
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != 0) {
        size_t j = slot(keys[i]);
        keys_[j] = keys[i];
        values_[j] = values[i];
      }
  }
  std::vector<uint64_t> keys_;
  std::vector<int32_t> values_;
  size_t size_ = 0;
};

struct State {
  uint64_t mask = 0;
  int64_t peak = 0, live = 0;
  int32_t parent = -1;  // index in the previous layer
  int32_t last = -1;    // the equation added to the parent's set
};

// The dynamic program for one region with every set reached above `bound` dropped. It applies
// step()'s rule with bitmasks: the bytes an equation makes and keeps do not depend on the set, and
// an input dies when every reader is in the set (never, for a program output).
class Search {
 public:
  Search(const ir::Program& region, const MemoryPlan& plan) : n_(static_cast<int>(region.equations.size())) {
    Model m = build_model(region, plan);
    std::vector<uint64_t> readers(m.values.size(), ~uint64_t{0});
    for (size_t v = 0; v < m.values.size(); ++v)
      if (!m.values[v].to_end) {
        readers[v] = 0;
        for (int r : m.values[v].readers) readers[v] |= uint64_t{1} << r;
      }
    eqs_.resize(static_cast<size_t>(n_));
    for (int e = 0; e < n_; ++e) {
      const Model::Eq& me = m.eqs[static_cast<size_t>(e)];
      Eq& q = eqs_[static_cast<size_t>(e)];
      for (int pe : me.preds) q.preds |= uint64_t{1} << pe;
      q.held = me.held;
      for (int v : me.makes) {
        const Model::Value& mv = m.values[static_cast<size_t>(v)];
        q.made += mv.bytes;
        q.kept += mv.to_end || !mv.readers.empty() ? mv.bytes : 0;
      }
      for (int u : me.reads) q.reads.push_back({readers[static_cast<size_t>(u)], m.values[static_cast<size_t>(u)].bytes});
      for (int u : me.in_place) q.in_place.push_back(readers[static_cast<size_t>(u)]);
    }
  }

  // The best order among those that never exceed `bound`: nullopt if there is none, or if more
  // than `max_states` sets are kept.
  std::optional<OptimalSchedule> run(int64_t bound, int64_t max_states) {
    // layers[k]: the kept sets of k equations, each with the best peak that reaches it.
    std::vector<std::vector<State>> layers(1, std::vector<State>{State{}});
    int64_t states = 1;
    const uint64_t all = n_ == 64 ? ~uint64_t{0} : (uint64_t{1} << n_) - 1;
    for (int k = 0; k < n_; ++k) {
      std::vector<State> next;
      const std::vector<State>& layer = layers.back();
      index_.clear(layer.size());
      for (size_t i = 0; i < layer.size(); ++i) {
        const State& s = layer[i];
        for (uint64_t left = all & ~s.mask; left != 0; left &= left - 1) {
          int e = std::countr_zero(left);
          const Eq& q = eqs_[static_cast<size_t>(e)];
          if (q.preds & ~s.mask) continue;
          uint64_t after = s.mask | (uint64_t{1} << e);
          int64_t made = q.made, freed = 0;
          for (uint64_t readers : q.in_place)
            if ((readers & ~after) == 0) {
              made = 0;
              break;
            }
          for (const auto& [readers, bytes] : q.reads) freed += (readers & ~after) == 0 ? bytes : 0;
          State t{after, std::max(s.peak, s.live + made + q.held), s.live + q.kept - freed, static_cast<int32_t>(i), e};
          if (t.peak > bound) continue;
          int32_t at = index_.find_or_add(after, static_cast<int32_t>(next.size()));
          if (at == static_cast<int32_t>(next.size())) {
            next.push_back(t);
          } else if (t.peak < next[static_cast<size_t>(at)].peak) {
            next[static_cast<size_t>(at)] = t;
          }
        }
      }
      states += static_cast<int64_t>(next.size());
      if (states > max_states || next.empty()) return std::nullopt;
      layers.push_back(std::move(next));
    }
    OptimalSchedule best;
    best.states = states;
    best.peak = layers.back().at(0).peak;
    best.order.resize(static_cast<size_t>(n_));
    int32_t at = 0;
    for (int k = n_; k > 0; --k) {
      const State& s = layers[static_cast<size_t>(k)][static_cast<size_t>(at)];
      best.order[static_cast<size_t>(k - 1)] = static_cast<size_t>(s.last);
      at = s.parent;
    }
    return best;
  }

 private:
  struct Eq {
    uint64_t preds = 0;
    int64_t made = 0, kept = 0, held = 0;
    std::vector<std::pair<uint64_t, int64_t>> reads;  // (readers, bytes) of each device arena input
    std::vector<uint64_t> in_place;                    // readers of each input it may write in place
  };
  int n_;
  std::vector<Eq> eqs_;
  SetIndex index_;
};

}  // namespace

std::optional<OptimalSchedule> optimal_schedule(const ir::Program& region, const MemoryPlan& plan,
                                                const OptimalScheduleOptions& options) {
  const int n = static_cast<int>(region.equations.size());
  if (n > std::min(options.max_equations, 64)) return std::nullopt;
  Search search(region, plan);
  // The region's own order bounds the optimum: a set reached only above its peak leads to no
  // better order, so it is dropped (the result stays exact, and far fewer sets are kept).
  std::vector<size_t> as_given(static_cast<size_t>(n));
  for (int e = 0; e < n; ++e) as_given[static_cast<size_t>(e)] = static_cast<size_t>(e);
  return search.run(device_peak_of_order(region, plan, as_given), options.max_states);
}

int64_t device_peak_of_order(const ir::Program& region, const MemoryPlan& plan, const std::vector<size_t>& order) {
  const size_t n = region.equations.size();
  Model m = build_model(region, plan);
  std::vector<char> done(n, 0);
  std::vector<size_t> unread(m.values.size());
  for (size_t v = 0; v < m.values.size(); ++v) unread[v] = m.values[v].readers.size();
  if (order.size() != n)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("device_peak_of_order: {} positions for {} equations", order.size(), n));
  int64_t live = 0, peak = 0;
  for (size_t e : order) {
    if (e >= n || done[e])
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("device_peak_of_order: equation {} is not in the region or repeats", e));
    for (int pe : m.eqs[e].preds)
      if (!done[static_cast<size_t>(pe)])
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("device_peak_of_order: equation {} runs before equation {}, which it reads", e, pe));
    for (int u : m.eqs[e].reads) --unread[static_cast<size_t>(u)];
    auto dies = [&](int u) { return !m.values[static_cast<size_t>(u)].to_end && unread[static_cast<size_t>(u)] == 0; };
    auto [during, after] = step(m, static_cast<int>(e), live, dies);
    peak = std::max(peak, during);
    live = after;
    done[e] = 1;
  }
  return peak;
}

}  // namespace ferry::compiler
