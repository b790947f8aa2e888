#include "compiler/place_collectives.h"

#include <algorithm>
#include <vector>

#include "compiler/memory_plan.h"
#include "compiler/pass_util.h"
#include "compiler/schedule_model.h"
#include "compiler/step_time.h"
#include "prims/registry.h"
#include "ir/ops.h"

namespace ferry::compiler {
namespace {

size_t idx(ir::ValueId v) { return static_cast<size_t>(v); }

bool is_start(const ir::Equation& e) { return ir::has(e.prim, ir::kCollective) && ir::has(e.prim, ir::kAsyncStart); }
bool is_done(const ir::Equation& e) { return e.prim == ir::op::collective_done; }

// The order with the collectives' halves placed. First every equation but the starts: those that
// need no collective's result ("the others") keep their order, and slot k is just before the k-th
// of them; a done, and every equation that needs its result (directly or through others that do),
// sinks to the slot of the first of the others that needs what it makes (or the end), those sunk
// into one slot in their own order. Then each start goes (early_starts) to the latest place in
// that order from which the modelled compute up to its done hides the exchange (its ring bytes at
// the interconnect's rate), but not before its operand exists: an all-gather of a parameter
// recomputed for the backward pass starts there, not at the start of the step. Otherwise a start
// keeps its place among the equations that preceded it.
std::vector<size_t> placed(const ir::Program& p, const Target& target, bool early_starts) {
  const size_t n = p.equations.size(), nv = p.values.size();
  std::vector<int> producer(nv, -1);
  for (size_t e = 0; e < n; ++e)
    for (ir::ValueId v : p.equations[e].outputs) producer[idx(v)] = static_cast<int>(e);
  // Downstream: a done, or an equation (a start too) reading a downstream one's result.
  std::vector<char> downstream(n, 0);
  for (size_t e = 0; e < n; ++e) {
    const ir::Equation& eq = p.equations[e];
    downstream[e] = is_done(eq);
    for (ir::ValueId v : eq.inputs)
      if (int q = producer[idx(v)]; q >= 0 && downstream[static_cast<size_t>(q)]) downstream[e] = 1;
  }
  std::vector<size_t> others, slot_of(n, 0);
  for (size_t e = 0; e < n; ++e)
    if (!downstream[e] && !is_start(p.equations[e])) {
      slot_of[e] = others.size();
      others.push_back(e);
    }
  const size_t m = others.size();
  std::vector<std::vector<int>> readers(nv);
  for (size_t e = 0; e < n; ++e)
    for (ir::ValueId v : p.equations[e].inputs) readers[idx(v)].push_back(static_cast<int>(e));
  // Each downstream equation's latest slot: before its first reader among the others, or before a
  // downstream reader's own latest slot (a start's reader is its done: the start is placed later).
  std::vector<std::vector<size_t>> sunk(m + 1);
  for (size_t e = n; e-- > 0;) {
    if (!downstream[e] || is_start(p.equations[e])) continue;
    size_t latest = m;
    for (ir::ValueId v : p.equations[e].outputs)
      for (int r : readers[idx(v)])
        if (!is_start(p.equations[static_cast<size_t>(r)])) latest = std::min(latest, slot_of[static_cast<size_t>(r)]);
      else
        for (ir::ValueId w : p.equations[static_cast<size_t>(r)].outputs)
          for (int d : readers[idx(w)]) latest = std::min(latest, slot_of[static_cast<size_t>(d)]);
    slot_of[e] = latest;
  }
  for (size_t e = 0; e < n; ++e)
    if (downstream[e] && !is_start(p.equations[e])) sunk[slot_of[e]].push_back(e);
  std::vector<size_t> base;  // every equation but the starts, in their new order
  base.reserve(n);
  for (size_t k = 0; k <= m; ++k) {
    for (size_t e : sunk[k]) base.push_back(e);
    if (k < m) base.push_back(others[k]);
  }
  std::vector<size_t> pos(n, 0);
  for (size_t i = 0; i < base.size(); ++i) pos[base[i]] = i;
  std::vector<double> elapsed(base.size() + 1, 0);  // modelled compute before base[i]
  for (size_t i = 0; i < base.size(); ++i)
    elapsed[i + 1] = elapsed[i] + equation_seconds(prims::cost(p.equations[base[i]], p), target);
  // Each start's place: an index into base (it goes just before base[place], or at the end).
  std::vector<std::vector<size_t>> starts(base.size() + 1);
  size_t preceding = 0;  // equations of base before the current one in the original order
  for (size_t e = 0; e < n; ++e) {
    const ir::Equation& eq = p.equations[e];
    if (!is_start(eq)) {
      ++preceding;
      continue;
    }
    size_t floor = 0;
    for (ir::ValueId v : eq.inputs)
      if (int q = producer[idx(v)]; q >= 0) floor = std::max(floor, pos[static_cast<size_t>(q)] + 1);
    size_t done = base.size();
    for (int r : readers[idx(eq.outputs[0])]) done = std::min(done, pos[static_cast<size_t>(r)]);
    size_t place;
    if (early_starts) {
      const double exchange = static_cast<double>(exchanged_bytes(p, eq)) / target.rates.interconnect_bytes_per_s;
      place = done;
      while (place > floor && elapsed[done] - elapsed[place] < exchange) --place;
    } else {
      place = std::min(std::max(floor, preceding), done);
    }
    starts[place].push_back(e);
  }
  std::vector<size_t> order;
  order.reserve(n);
  for (size_t i = 0; i <= base.size(); ++i) {
    for (size_t e : starts[i]) order.push_back(e);
    if (i < base.size()) order.push_back(base[i]);
  }
  return order;
}

bool place_region(ir::Program& program, const ir::Equation* parent, const Target& target) {
  bool changed = run_on_bodies_with_parent(
      program, [&](ir::Program& body, const ir::Equation& eq) { return place_region(body, &eq, target); });
  if (std::none_of(program.equations.begin(), program.equations.end(), is_done)) return changed;
  if (target.device_memory_limit <= 0) return reorder(program, placed(program, target, true)) || changed;
  ScheduleModel model = build_schedule_model(program, *plan_region(program, parent));
  std::vector<size_t> as_scheduled(program.equations.size());
  for (size_t e = 0; e < as_scheduled.size(); ++e) as_scheduled[e] = e;
  const int64_t peak = peak_of_order(model, as_scheduled);
  for (bool early_starts : {true, false}) {
    std::vector<size_t> order = placed(program, target, early_starts);
    if (peak_of_order(model, order) <= peak) return reorder(program, order) || changed;
  }
  return changed;
}

}  // namespace

bool place_collectives(ir::Program& program, const Target& target) { return place_region(program, nullptr, target); }

}  // namespace ferry::compiler
