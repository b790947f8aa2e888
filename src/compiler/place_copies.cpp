#include "compiler/place_copies.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "compiler/memory_plan.h"
#include "compiler/pass_util.h"
#include "compiler/schedule_model.h"
#include "compiler/step_time.h"
#include "prims/registry.h"

namespace ferry::compiler {

namespace {

bool place_region(ir::Program& program, const ir::Equation* parent, const Target& options) {
  bool changed = run_on_bodies_with_parent(
      program, [&](ir::Program& body, const ir::Equation& eq) { return place_region(body, &eq, options); });
  auto is_copy = [](const ir::Equation& e) { return e.prim == ir::op::copy_start || e.prim == ir::op::copy_done; };
  const size_t n = program.equations.size(), nv = program.values.size();
  std::vector<size_t> compute;  // positions of the other equations, in order
  for (size_t e = 0; e < n; ++e)
    if (!is_copy(program.equations[e])) compute.push_back(e);
  if (compute.size() == n) return changed;
  const size_t m = compute.size();
  // elapsed[k]: modelled time before compute equation k runs.
  std::vector<double> elapsed(m + 1, 0);
  for (size_t k = 0; k < m; ++k) {
    const ir::Equation& eq = program.equations[compute[k]];
    elapsed[k + 1] = elapsed[k] + equation_seconds(prims::cost(eq, program), options);
  }
  // ready_slot[v]: the first slot where v exists; first_reader[v]: the slot of its first compute
  // reader (through copies).
  std::vector<size_t> ready_slot(nv, 0), first_reader(nv, m);
  for (size_t k = 0; k < m; ++k) {
    const ir::Equation& eq = program.equations[compute[k]];
    for (ir::ValueId v : eq.outputs) ready_slot[static_cast<size_t>(v)] = k + 1;
    for (ir::ValueId v : eq.inputs) first_reader[static_cast<size_t>(v)] = std::min(first_reader[static_cast<size_t>(v)], k);
  }
  // A value read only by copies is needed by the slot where those copies' results are needed.
  for (size_t e = n; e-- > 0;) {
    const ir::Equation& eq = program.equations[e];
    if (!is_copy(eq)) continue;
    size_t need = m;
    for (ir::ValueId v : eq.outputs) need = std::min(need, first_reader[static_cast<size_t>(v)]);
    for (ir::ValueId v : eq.inputs) first_reader[static_cast<size_t>(v)] = std::min(first_reader[static_cast<size_t>(v)], need);
  }
  std::vector<ir::ValueId> done_of(nv, -1);  // a copy's destination -> its copy_done's result
  for (const ir::Equation& e : program.equations)
    if (e.prim == ir::op::copy_done) done_of[static_cast<size_t>(e.inputs[0])] = e.outputs[0];
  // Place each copy (in scheduled order, which respects dependences among copies).
  std::vector<std::vector<size_t>> before(m + 1);
  std::vector<size_t> start_slot(nv, 0);  // copy_start's slot, by its destination value
  for (size_t e = 0; e < n; ++e) {
    const ir::Equation& eq = program.equations[e];
    if (!is_copy(eq)) continue;
    size_t slot;
    if (eq.prim == ir::op::copy_start) {
      ir::ValueId src = eq.inputs[0], dst = eq.outputs[0];
      size_t floor = ready_slot[static_cast<size_t>(src)];
      if (program.type(dst).kind == MemoryKind::device) {
        // A fetch: as late as hides the copy before the done's reader.
        ir::ValueId result = done_of[static_cast<size_t>(dst)] >= 0 ? done_of[static_cast<size_t>(dst)] : dst;
        size_t need = std::max(floor, first_reader[static_cast<size_t>(result)]);
        double copy_time = static_cast<double>(program.type(dst).size_bytes()) / options.rates.link_bandwidth_bytes_per_s;
        slot = need;
        while (slot > floor && elapsed[need] - elapsed[slot] < copy_time) --slot;
      } else {
        slot = floor;  // an offload starts as soon as its source exists
      }
      start_slot[static_cast<size_t>(dst)] = slot;
    } else {
      ir::ValueId dst = eq.inputs[0], result = eq.outputs[0];
      size_t started = start_slot[static_cast<size_t>(dst)];
      size_t cap = std::max(started, first_reader[static_cast<size_t>(result)]);
      if (program.type(result).kind == MemoryKind::device) {
        slot = cap;  // a fetch is done right before its reader
      } else {
        double copy_time = static_cast<double>(program.type(result).size_bytes()) / options.rates.link_bandwidth_bytes_per_s;
        slot = started;
        while (slot < cap && elapsed[slot] - elapsed[started] < copy_time) ++slot;
      }
    }
    for (ir::ValueId v : eq.outputs) ready_slot[static_cast<size_t>(v)] = slot;
    before[slot].push_back(e);
  }
  std::vector<size_t> order;
  order.reserve(n);
  for (size_t k = 0; k <= m; ++k) {
    for (size_t e : before[k]) order.push_back(e);
    if (k < m) order.push_back(compute[k]);
  }
  // Hiding a transfer must not cost memory: if these places raise the region's device peak over
  // the scheduler's order, the copies stay where the scheduler put them.
  ScheduleModel model = build_schedule_model(program, *plan_region(program, parent));
  std::vector<size_t> as_scheduled(n);
  for (size_t e = 0; e < n; ++e) as_scheduled[e] = e;
  if (peak_of_order(model, order) > peak_of_order(model, as_scheduled)) return changed;
  return reorder(program, order) || changed;
}

}  // namespace

bool place_copies(ir::Program& program, const Target& options) { return place_region(program, nullptr, options); }

}  // namespace ferry::compiler
