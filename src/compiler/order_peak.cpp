#include "compiler/order_peak.h"

#include <algorithm>

#include "compiler/memory_plan.h"

namespace ferry::compiler {
namespace {

int64_t device_bytes(const ir::Program& p, ir::ValueId v) {
  const ir::Type& t = p.type(v);
  if (t.kind != MemoryKind::device) return 0;
  return (t.size_bytes() + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

// What an equation with a body needs besides its inputs and outputs: plan it alone (the body is
// already scheduled) and take what its arena holds beyond its outputs.
int64_t transient_of(const ir::Program& p, const ir::Equation& eq) {
  if (eq.subprograms.empty()) return 0;
  ir::Program alone;
  alone.name = "alone";
  std::vector<ir::ValueId> map(p.values.size(), -1);
  auto mapped = [&](ir::ValueId v) {
    if (map[static_cast<size_t>(v)] < 0) map[static_cast<size_t>(v)] = alone.add_value(p.type(v));
    return map[static_cast<size_t>(v)];
  };
  ir::Equation copy = eq;
  for (ir::ValueId& v : copy.inputs) {
    bool seen = map[static_cast<size_t>(v)] >= 0;
    v = mapped(v);
    if (!seen) alone.inputs.push_back(v);
  }
  for (ir::ValueId& v : copy.outputs) v = mapped(v);
  alone.outputs = copy.outputs;
  alone.equations.push_back(copy);
  auto plan = plan_memory(alone, /*outputs_external=*/false);
  int64_t outputs = 0;
  for (ir::ValueId v : eq.outputs) outputs += device_bytes(p, v);
  return std::max<int64_t>(0, plan->peak_live[kind_index(MemoryKind::device)] - outputs);
}

}  // namespace

OrderPeak::OrderPeak(const ir::Program& program) : program_(program), transient_(program.equations.size(), 0) {
  for (size_t e = 0; e < program.equations.size(); ++e) transient_[e] = transient_of(program, program.equations[e]);
}

int64_t OrderPeak::peak(const std::vector<size_t>& order) const {
  const ir::Program& p = program_;
  const size_t n = order.size(), nv = p.values.size();
  std::vector<int> last(nv, -1);       // position of the last reader
  std::vector<char> pinned(nv, 0);     // arguments (not counted) and outputs (never freed)
  for (ir::ValueId v : p.inputs) pinned[static_cast<size_t>(v)] = 1;
  for (ir::ValueId v : p.outputs) pinned[static_cast<size_t>(v)] = 2;
  for (size_t t = 0; t < n; ++t)
    for (ir::ValueId v : p.equations[order[t]].inputs) last[static_cast<size_t>(v)] = static_cast<int>(t);
  std::vector<int64_t> held(nv, 0);  // bytes a value's buffer holds (0 once handed on or freed)
  int64_t live = 0, peak = 0;
  for (size_t t = 0; t < n; ++t) {
    const ir::Equation& eq = p.equations[order[t]];
    std::vector<size_t> candidates = in_place_candidates(eq);
    for (ir::ValueId v : eq.outputs) {
      int64_t bytes = device_bytes(p, v);
      bool in_place = false;
      for (size_t c : candidates) {
        ir::ValueId u = eq.inputs[c];
        if (pinned[static_cast<size_t>(u)] || held[static_cast<size_t>(u)] != bytes || bytes == 0 ||
            last[static_cast<size_t>(u)] != static_cast<int>(t))
          continue;
        held[static_cast<size_t>(u)] = 0;  // the output takes over the buffer
        in_place = true;
        break;
      }
      if (!in_place) live += bytes;
      held[static_cast<size_t>(v)] = bytes;
    }
    peak = std::max(peak, live + transient_[order[t]]);
    // Inputs read for the last time, and outputs nothing reads, give their buffers back.
    for (ir::ValueId v : eq.inputs)
      if (last[static_cast<size_t>(v)] == static_cast<int>(t) && !pinned[static_cast<size_t>(v)]) {
        live -= held[static_cast<size_t>(v)];
        held[static_cast<size_t>(v)] = 0;
      }
    for (ir::ValueId v : eq.outputs)
      if (last[static_cast<size_t>(v)] < 0 && !pinned[static_cast<size_t>(v)]) {
        live -= held[static_cast<size_t>(v)];
        held[static_cast<size_t>(v)] = 0;
      }
  }
  return peak;
}

}  // namespace ferry::compiler
