#include "compiler/cost_analysis.h"

#include "compiler/step_time.h"
#include "prims/registry.h"

namespace ferry::compiler {

CostStats cost_stats(const ir::Program& p) {
  CostStats total;
  for (const ir::Equation& eq : p.equations) {
    if (!eq.subprograms.empty()) {
      double times = eq.prim == Primitive::scan ? static_cast<double>(std::get<ir::ScanParams>(eq.params).length) : 1.0;
      CostStats body = cost_stats(*eq.subprograms[0]);
      total.flops += times * body.flops;
      total.recompute_flops += times * body.recompute_flops;
      total.bytes_to_host += static_cast<int64_t>(times) * body.bytes_to_host;
      total.bytes_to_device += static_cast<int64_t>(times) * body.bytes_to_device;
      continue;
    }
    double flops = prims::cost(eq, p).flops;
    total.flops += flops;
    if (eq.rematerialized) total.recompute_flops += flops;
    if (eq.prim == ir::op::copy_start || eq.prim == Primitive::device_put) {
      MemoryKind from = p.type(eq.inputs[0]).kind, to = p.type(eq.outputs[0]).kind;
      int64_t bytes = p.type(eq.outputs[0]).size_bytes();
      if (from == MemoryKind::device && to != MemoryKind::device) total.bytes_to_host += bytes;
      if (from != MemoryKind::device && to == MemoryKind::device) total.bytes_to_device += bytes;
    }
  }
  return total;
}

CostStats cost_stats(const ir::Program& p, const Target& target) {
  CostStats stats = cost_stats(p);
  StepTime t = estimate_step_time(p, target);
  stats.estimated_seconds = t.seconds();
  stats.exposed_copy_seconds = t.exposed_copy_seconds;
  stats.exposed_collective_seconds = t.exposed_collective_seconds;
  stats.bytes_exchanged = t.bytes_exchanged;
  return stats;
}

}  // namespace ferry::compiler
