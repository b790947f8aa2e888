#include "compiler/place_collectives.h"

#include <algorithm>
#include <vector>

#include "compiler/memory_plan.h"
#include "compiler/pass_util.h"
#include "compiler/schedule_model.h"
#include "ir/ops.h"

namespace ferry::compiler {
namespace {

size_t idx(ir::ValueId v) { return static_cast<size_t>(v); }

bool is_start(const ir::Equation& e) { return ir::has(e.prim, ir::kCollective) && ir::has(e.prim, ir::kAsyncStart); }
bool is_done(const ir::Equation& e) { return e.prim == ir::op::collective_done; }

// The order with the collectives' halves placed. The equations that need no collective's result
// ("the others") keep their order, and slot k is just before the k-th of them. A start goes to the
// slot where its operand exists (early_starts) or stays in its own. A done, and every equation that
// needs its result (directly or through others that do), sinks to the slot of the first of the
// others that needs what it makes (or the end), those sunk into one slot in their own order.
std::vector<size_t> placed(const ir::Program& p, bool early_starts) {
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
  std::vector<size_t> others, own_slot(n, 0), slot_of(n, 0);
  for (size_t e = 0; e < n; ++e) {
    own_slot[e] = others.size();
    if (!downstream[e] && !is_start(p.equations[e])) {
      slot_of[e] = others.size();
      others.push_back(e);
    }
  }
  const size_t m = others.size();
  // The latest slot of each downstream equation: before its first reader among the others, or
  // before a downstream reader's own latest slot.
  std::vector<std::vector<int>> readers(nv);
  for (size_t e = 0; e < n; ++e)
    for (ir::ValueId v : p.equations[e].inputs) readers[idx(v)].push_back(static_cast<int>(e));
  for (size_t e = n; e-- > 0;) {
    if (!downstream[e]) continue;
    size_t latest = m;
    for (ir::ValueId v : p.equations[e].outputs)
      for (int r : readers[idx(v)]) latest = std::min(latest, slot_of[static_cast<size_t>(r)]);
    slot_of[e] = latest;
  }
  // Starts: as early as their operands exist, in a slot where starts go before the sunk work.
  std::vector<size_t> ready(nv, 0);
  for (size_t k = 0; k < m; ++k)
    for (ir::ValueId v : p.equations[others[k]].outputs) ready[idx(v)] = k + 1;
  std::vector<std::vector<size_t>> starts(m + 1), sunk(m + 1);
  for (size_t e = 0; e < n; ++e) {
    const ir::Equation& eq = p.equations[e];
    if (is_start(eq) && !downstream[e]) {
      size_t slot = early_starts ? 0 : own_slot[e];
      for (ir::ValueId v : eq.inputs) slot = std::max(slot, ready[idx(v)]);
      starts[slot].push_back(e);
    } else if (downstream[e]) {
      sunk[slot_of[e]].push_back(e);
    }
  }
  std::vector<size_t> order;
  order.reserve(n);
  for (size_t k = 0; k <= m; ++k) {
    for (size_t e : starts[k]) order.push_back(e);
    for (size_t e : sunk[k]) order.push_back(e);
    if (k < m) order.push_back(others[k]);
  }
  return order;
}

bool place_region(ir::Program& program, const ir::Equation* parent, const Target& target) {
  bool changed = run_on_bodies_with_parent(
      program, [&](ir::Program& body, const ir::Equation& eq) { return place_region(body, &eq, target); });
  if (std::none_of(program.equations.begin(), program.equations.end(), is_done)) return changed;
  if (target.device_memory_limit <= 0) return reorder(program, placed(program, true)) || changed;
  ScheduleModel model = build_schedule_model(program, *plan_region(program, parent));
  std::vector<size_t> as_scheduled(program.equations.size());
  for (size_t e = 0; e < as_scheduled.size(); ++e) as_scheduled[e] = e;
  const int64_t peak = peak_of_order(model, as_scheduled);
  for (bool early_starts : {true, false}) {
    std::vector<size_t> order = placed(program, early_starts);
    if (peak_of_order(model, order) <= peak) return reorder(program, order) || changed;
  }
  return changed;
}

}  // namespace

bool place_collectives(ir::Program& program, const Target& target) { return place_region(program, nullptr, target); }

}  // namespace ferry::compiler
