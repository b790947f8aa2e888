#include "compiler/step_time.h"

#include <algorithm>
#include <vector>

#include "prims/registry.h"

namespace ferry::compiler {
namespace {

bool crosses_kinds(const ir::Program& p, const ir::Equation& eq) {
  return p.type(eq.inputs.back()).kind != p.type(eq.outputs[0]).kind;
}

}  // namespace

int64_t exchanged_bytes(const ir::Program& p, const ir::Equation& eq) {
  if (!ir::has(eq.prim, ir::kCollective) || ir::has(eq.prim, ir::kAsyncDone) || eq.inputs.empty()) return 0;
  const int64_t n = std::holds_alternative<ir::CollectiveParams>(eq.params)
                        ? std::get<ir::CollectiveParams>(eq.params).axis_size
                        : std::get<ir::CollectiveDimParams>(eq.params).axis_size;
  const bool all_reduce = eq.prim == Primitive::psum || eq.prim == ir::op::psum_start;
  const bool all_gather = eq.prim == Primitive::all_gather || eq.prim == ir::op::all_gather_start;
  const int64_t bytes = all_gather ? p.type(eq.outputs[0]).size_bytes() : p.type(eq.inputs[0]).size_bytes();
  return (all_reduce ? 2 : 1) * (n - 1) * bytes / n;
}

double equation_seconds(const prims::Cost& c, const Target& target) {
  double compute = c.dot_flops / target.rates.compute_flops_per_s + c.dot_products * target.rates.dot_product_seconds +
                   std::max(c.flops - c.dot_flops, 0.0) / target.rates.vector_flops_per_s +
                   c.transcendentals / target.rates.transcendentals_per_s;
  return std::max(compute, static_cast<double>(c.bytes_read + c.bytes_written) / target.rates.memory_bytes_per_s);
}

StepTime estimate_step_time(const ir::Program& p, const Target& target) {
  StepTime t;
  double now = 0, link_free = 0, waited = 0, net_free = 0, net_waited = 0;
  std::vector<double> transfer_end(p.values.size(), 0);  // by a copy_start's or collective start's result
  // A reshape of a value it reads last (not one of the program's own inputs or results) writes in
  // place over it (its registry entry says so) and moves nothing.
  std::vector<int> last_read(p.values.size(), -1);
  for (size_t e = 0; e < p.equations.size(); ++e)
    for (ir::ValueId v : p.equations[e].inputs) last_read[static_cast<size_t>(v)] = static_cast<int>(e);
  for (ir::ValueId v : p.inputs) last_read[static_cast<size_t>(v)] = -2;
  for (ir::ValueId v : p.outputs) last_read[static_cast<size_t>(v)] = -2;
  for (size_t e = 0; e < p.equations.size(); ++e) {
    const ir::Equation& eq = p.equations[e];
    if (eq.prim == Primitive::reshape && last_read[static_cast<size_t>(eq.inputs[0])] == static_cast<int>(e)) continue;
    // A fused group is one kernel: its cost rule counts only what it reads and writes.
    if (!eq.subprograms.empty() && eq.prim != ir::op::fused) {
      double times = eq.prim == Primitive::scan ? static_cast<double>(std::get<ir::ScanParams>(eq.params).length) : 1.0;
      StepTime body = estimate_step_time(*eq.subprograms[0], target);
      now += times * body.seconds();
      t.compute_seconds += times * body.compute_seconds;
      waited += times * body.exposed_copy_seconds;
      net_waited += times * body.exposed_collective_seconds;
      t.bytes_exchanged += static_cast<int64_t>(times) * body.bytes_exchanged;
      continue;
    }
    if (ir::has(eq.prim, ir::kCollective) && eq.prim != Primitive::axis_index) {
      if (eq.prim == ir::op::collective_done) {
        const double end = transfer_end[static_cast<size_t>(eq.inputs[0])];
        if (end > now) {
          net_waited += end - now;
          now = end;
        }
        continue;
      }
      const int64_t bytes = exchanged_bytes(p, eq);
      t.bytes_exchanged += bytes;
      const double start = std::max(now, net_free);
      net_free = start + static_cast<double>(bytes) / target.rates.interconnect_bytes_per_s;
      if (ir::has(eq.prim, ir::kAsyncStart)) {
        transfer_end[static_cast<size_t>(eq.outputs[0])] = net_free;
      } else {  // synchronous: the compute queue waits for it whole
        net_waited += net_free - now;
        now = net_free;
      }
      continue;
    }
    if (eq.prim == ir::op::copy_start) {
      double bytes = static_cast<double>(p.type(eq.outputs[0]).size_bytes());
      double start = std::max(now, link_free);
      link_free = start + bytes / target.rates.link_bandwidth_bytes_per_s;
      transfer_end[static_cast<size_t>(eq.outputs[0])] = link_free;
      // The cores it takes from the kernels (charged when it starts: the compute it overlaps is
      // what slows, and which compute that is matters little to the total).
      const double slowed = target.copy_compute_share * bytes / target.rates.link_bandwidth_bytes_per_s;
      now += slowed;
      t.compute_seconds += slowed;
      continue;
    }
    if (eq.prim == ir::op::copy_done) {
      double end = transfer_end[static_cast<size_t>(eq.inputs[0])];
      if (end > now) {
        waited += end - now;
        now = end;
      }
      continue;
    }
    if (eq.prim == Primitive::device_put && crosses_kinds(p, eq)) {  // synchronous: wait for the link, then copy
      double bytes = static_cast<double>(p.type(eq.outputs[0]).size_bytes());
      double start = std::max(now, link_free);
      link_free = start + bytes / target.rates.link_bandwidth_bytes_per_s;
      waited += link_free - now;
      now = link_free;
      continue;
    }
    double seconds = equation_seconds(prims::cost(eq, p), target);
    now += seconds;
    t.compute_seconds += seconds;
  }
  t.exposed_copy_seconds = waited;
  t.exposed_collective_seconds = net_waited;
  return t;
}

}  // namespace ferry::compiler
