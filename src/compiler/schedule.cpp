#include "compiler/schedule.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "compiler/beam_order.h"
#include "compiler/memory_plan.h"
#include "compiler/schedule_model.h"
#include "compiler/pass_util.h"

namespace ferry::compiler {
namespace {

// Who produces and who reads each value (each reader once).
struct Dependences {
  explicit Dependences(const ir::Program& p) : producer(p.values.size(), -1), readers(p.values.size()), inputs(p.equations.size()) {
    for (size_t e = 0; e < p.equations.size(); ++e)
      for (ir::ValueId v : p.equations[e].outputs) producer[static_cast<size_t>(v)] = static_cast<int>(e);
    for (size_t e = 0; e < p.equations.size(); ++e) {
      inputs[e] = p.equations[e].inputs;
      std::sort(inputs[e].begin(), inputs[e].end());
      inputs[e].erase(std::unique(inputs[e].begin(), inputs[e].end()), inputs[e].end());
      for (ir::ValueId v : inputs[e]) readers[static_cast<size_t>(v)].push_back(static_cast<int>(e));
    }
  }
  std::vector<int> producer;
  std::vector<std::vector<int>> readers;
  std::vector<std::vector<ir::ValueId>> inputs;  // per equation, without repeats
};

// A copy that takes a device value to a host kind: it lets the device buffer go.
bool is_offload(const ir::Program& p, const ir::Equation& eq) {
  if (eq.prim != ir::op::copy_start && eq.prim != ir::op::copy_done && eq.prim != Primitive::device_put) return false;
  return p.type(eq.outputs[0]).kind != MemoryKind::device;
}

// A copy that brings a value from a host kind to the device: it exists only for its readers.
bool is_fetch(const ir::Program& p, const ir::Equation& eq) {
  if (eq.prim != ir::op::copy_start && eq.prim != ir::op::copy_done && eq.prim != Primitive::device_put) return false;
  // copy_done reads (its copy_start's result, the source): the source is last.
  return p.type(eq.outputs[0]).kind == MemoryKind::device && p.type(eq.inputs.back()).kind != MemoryKind::device;
}

// Non-rematerialized equations in program order, each after the rematerialized work it needs
// (depth first, in input order; fetches count as rematerialized); offloads as soon as their inputs
// exist.
std::vector<size_t> just_in_time_order(const ir::Program& p, const Dependences& d) {
  const size_t n = p.equations.size();
  std::vector<char> done(n, 0);
  std::vector<size_t> order;
  order.reserve(n);
  std::vector<int> missing(n, 0);  // inputs not yet computed
  for (size_t e = 0; e < n; ++e)
    for (ir::ValueId v : d.inputs[e]) missing[e] += d.producer[static_cast<size_t>(v)] >= 0;
  std::vector<size_t> offloads_ready;
  auto emit = [&](size_t e) {
    done[e] = 1;
    order.push_back(e);
    for (ir::ValueId v : p.equations[e].outputs)
      for (int r : d.readers[static_cast<size_t>(v)])
        if (--missing[static_cast<size_t>(r)] == 0 && !done[static_cast<size_t>(r)] && is_offload(p, p.equations[static_cast<size_t>(r)]))
          offloads_ready.push_back(static_cast<size_t>(r));
  };
  // Iterative depth-first: an equation is emitted once every producer it reads has been.
  std::vector<std::pair<size_t, size_t>> stack;  // (equation, next input to look at)
  auto visit = [&](size_t root) {
    if (done[root]) return;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [e, next] = stack.back();
      if (done[e]) {
        stack.pop_back();
        continue;
      }
      if (next < d.inputs[e].size()) {
        int producer = d.producer[static_cast<size_t>(d.inputs[e][next++])];
        if (producer >= 0 && !done[static_cast<size_t>(producer)]) stack.emplace_back(static_cast<size_t>(producer), 0);
        continue;
      }
      size_t ready = e;
      stack.pop_back();
      emit(ready);
      while (!offloads_ready.empty()) {  // offloads (and their dones) right after their sources
        size_t o = offloads_ready.back();
        offloads_ready.pop_back();
        if (!done[o]) emit(o);
      }
    }
  };
  for (size_t e = 0; e < n; ++e)
    if (!p.equations[e].rematerialized && !is_fetch(p, p.equations[e])) visit(e);
  for (size_t e = 0; e < n; ++e) visit(e);  // rematerialized work only the outputs read
  return order;
}

// The list schedule described in schedule.h ("memory first").
std::vector<size_t> memory_first_order(const ir::Program& program, const Dependences& d) {
  const size_t n = program.equations.size(), nv = program.values.size();
  std::vector<int> waiting(n, 0);
  for (size_t e = 0; e < n; ++e)
    for (ir::ValueId v : d.inputs[e]) waiting[e] += d.producer[static_cast<size_t>(v)] >= 0;
  std::vector<int> unread(nv);
  std::vector<char> pinned(nv, 0);  // inputs and outputs stay live regardless of the order
  for (size_t v = 0; v < nv; ++v) unread[v] = static_cast<int>(d.readers[v].size());
  for (ir::ValueId v : program.inputs) pinned[static_cast<size_t>(v)] = 1;
  for (ir::ValueId v : program.outputs) pinned[static_cast<size_t>(v)] = 1;
  auto device_bytes = [&](ir::ValueId v) {
    const ir::Type& t = program.type(v);
    return t.kind == MemoryKind::device ? t.size_bytes() : 0;
  };
  auto score = [&](size_t e) {
    int64_t s = 0;
    for (ir::ValueId v : program.equations[e].outputs) s += device_bytes(v);
    for (ir::ValueId v : d.inputs[e])
      if (!pinned[static_cast<size_t>(v)] && unread[static_cast<size_t>(v)] == 1) s -= device_bytes(v);
    return s;
  };
  // Where each equation's results are first read in program order: among equal scores, work whose
  // results are needed soonest goes first.
  std::vector<size_t> first_need(n, n);
  for (size_t e = 0; e < n; ++e)
    for (ir::ValueId v : program.equations[e].outputs)
      for (int r : d.readers[static_cast<size_t>(v)]) first_need[e] = std::min(first_need[e], static_cast<size_t>(r));
  // Ready equations ordered by: rematerialized last; then those that free device memory (most
  // first); then those that add some, in the order their results are needed. A score changes only
  // when one of the equation's inputs gets down to its last reader, so keys are updated then.
  using Key = std::tuple<bool, bool, int64_t, size_t>;
  std::set<Key> ready;
  std::vector<Key> key_of(n);
  std::vector<char> is_ready(n, 0);
  auto make_ready = [&](size_t e) {
    int64_t s = score(e);
    key_of[e] = Key{program.equations[e].rematerialized, s > 0, s > 0 ? static_cast<int64_t>(first_need[e]) : s, e};
    ready.insert(key_of[e]);
    is_ready[e] = 1;
  };
  for (size_t e = 0; e < n; ++e)
    if (waiting[e] == 0) make_ready(e);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t best = std::get<3>(*ready.begin());
    ready.erase(ready.begin());
    is_ready[best] = 0;
    order.push_back(best);
    for (ir::ValueId v : d.inputs[best]) {
      if (--unread[static_cast<size_t>(v)] != 1) continue;
      for (int r : d.readers[static_cast<size_t>(v)]) {  // the one reader left may now free v
        size_t re = static_cast<size_t>(r);
        if (!is_ready[re]) continue;
        ready.erase(key_of[re]);
        make_ready(re);
      }
    }
    for (ir::ValueId v : program.equations[best].outputs)
      for (int r : d.readers[static_cast<size_t>(v)])
        if (--waiting[static_cast<size_t>(r)] == 0) make_ready(static_cast<size_t>(r));
  }
  return order;
}

// Regions up to kBeamUpTo equations also get a beam search; time grows as width x n^2, so small
// regions (most bodies, most backward passes of one layer) get a wider beam.
constexpr size_t kBeamUpTo = 400;
int beam_width(size_t n) { return n <= 48 ? 4096 : n <= 64 ? 1024 : n <= 160 ? 48 : 12; }
// Top-level regions up to this many equations break ties between candidates by the arena buffer
// assignment packs (one order may fragment less than another with the same live bytes).
constexpr size_t kArenaTieBreakUpTo = 4000;

// Schedules one region, its bodies first. `parent`: the equation whose body it is (nullptr: the
// top-level program), which decides how the region's memory is planned.
bool schedule_region(ir::Program& program, const ir::Equation* parent) {
  bool changed = run_on_bodies_with_parent(
      program, [](ir::Program& body, const ir::Equation& eq) { return schedule_region(body, &eq); });
  const size_t n = program.equations.size();
  if (n < 2) return changed;
  std::shared_ptr<const MemoryPlan> plan = plan_region(program, parent);
  ScheduleModel model = build_schedule_model(program, *plan);
  Dependences d(program);
  std::vector<size_t> as_is(n);
  for (size_t e = 0; e < n; ++e) as_is[e] = e;
  std::vector<std::vector<size_t>> candidates{just_in_time_order(program, d), memory_first_order(program, d), as_is};
  // The beam is the costly candidate: it runs only where the others are above a bound no order
  // can beat (what one equation needs at once, and every output at the end).
  int64_t cheapest = std::numeric_limits<int64_t>::max();
  for (const std::vector<size_t>& c : candidates) cheapest = std::min(cheapest, peak_of_order(model, c));
  if (n <= kBeamUpTo && cheapest > peak_lower_bound(model)) {
    std::vector<size_t> beam = beam_order(model, beam_width(n), cheapest);
    if (!beam.empty()) candidates.push_back(std::move(beam));
  }
  auto arena_of = [&](const std::vector<size_t>& order) {
    ir::Program reordered = program;
    reorder(reordered, order);
    return plan_memory(reordered, /*outputs_external=*/false)->arena_size[kind_index(MemoryKind::device)];
  };
  bool arena_ties = parent == nullptr && n <= kArenaTieBreakUpTo;
  size_t best = 0;
  int64_t best_peak = std::numeric_limits<int64_t>::max(), best_arena = std::numeric_limits<int64_t>::max();
  for (size_t c = 0; c < candidates.size(); ++c) {
    int64_t peak = peak_of_order(model, candidates[c]);
    if (peak > best_peak) continue;
    int64_t arena = arena_ties ? arena_of(candidates[c]) : 0;
    if (peak == best_peak && arena >= best_arena) continue;
    best = c;
    best_peak = peak;
    best_arena = arena;
  }
  return reorder(program, candidates[best]) || changed;
}

}  // namespace

bool schedule_for_memory(ir::Program& program) { return schedule_region(program, nullptr); }

}  // namespace ferry::compiler
