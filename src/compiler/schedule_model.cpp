#include "compiler/schedule_model.h"

#include <algorithm>

#include <fmt/format.h>

#include "ferry/error.h"

namespace ferry::compiler {
namespace {

int64_t aligned(int64_t bytes) { return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

}  // namespace

ScheduleModel build_schedule_model(const ir::Program& p, const MemoryPlan& plan) {
  const size_t n = p.equations.size(), nv = p.values.size();
  if (plan.slots.size() != nv || plan.bodies.size() != n)
    throw Error(ErrorCode::invalid_argument, "optimal_schedule: the plan is not a plan of this region");
  ScheduleModel m;
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
    ScheduleModel::Eq& me = m.eqs[e];
    for (ir::ValueId v : eq.inputs) {
      auto u = static_cast<size_t>(v);
      int pe = producer[u];
      if (pe >= 0 && std::find(me.preds.begin(), me.preds.end(), pe) == me.preds.end()) me.preds.push_back(pe);
      // Readers are added equation by equation, so e is already there only as the last one (a
      // value read by many equations, a constant say, is never searched whole).
      std::vector<int>& readers = m.values[u].readers;
      if (readers.empty() || readers.back() != static_cast<int>(e)) {
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

int64_t peak_lower_bound(const ScheduleModel& m) {
  int64_t bound = 0, at_end = 0;
  for (const ScheduleModel::Value& v : m.values) at_end += v.to_end ? v.bytes : 0;
  for (const ScheduleModel::Eq& eq : m.eqs) {
    int64_t reads = 0, makes = 0;
    for (int u : eq.reads) reads += m.values[static_cast<size_t>(u)].bytes;
    for (int v : eq.makes) makes += m.values[static_cast<size_t>(v)].bytes;
    // Written in place, an output may share a dying input's buffer: count the larger side only.
    bound = std::max(bound, (eq.in_place.empty() ? reads + makes : std::max(reads, makes)) + eq.held);
  }
  return std::max(bound, at_end);
}

int64_t peak_of_order(const ScheduleModel& m, const std::vector<size_t>& order) {
  const size_t n = m.eqs.size();
  std::vector<char> done(n, 0);
  std::vector<size_t> unread(m.values.size());
  for (size_t v = 0; v < m.values.size(); ++v) unread[v] = m.values[v].readers.size();
  if (order.size() != n)
    throw Error(ErrorCode::invalid_argument, fmt::format("device_peak_of_order: {} positions for {} equations", order.size(), n));
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
    auto [during, after] = schedule_step(m, static_cast<int>(e), live, dies);
    peak = std::max(peak, during);
    live = after;
    done[e] = 1;
  }
  return peak;
}

}  // namespace ferry::compiler
