#include "driver/compile.h"

#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "compiler/lower_calls.h"
#include "compiler/memory_analysis.h"
#include "compiler/pipeline.h"
#include "ferry/error.h"
#include "runtime/backend.h"
#include "runtime/workspace.h"

namespace ferry::driver {
namespace {

// The cost model divides by its rates: a zero, negative, infinite or NaN rate would make every
// estimate meaningless (or NaN) and the placement of copies arbitrary.
void check_rate(double rate, std::string_view name) {
  if (!(rate > 0) || !std::isfinite(rate))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("CompileOptions.rates.{} must be a positive, finite rate, got {}", name, rate));
}

}  // namespace

void check_options(const CompileOptions& options) {
  if (options.device_memory_limit < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("device_memory_limit must be >= 0 bytes (0 means no limit), got {}", options.device_memory_limit));
  if (!options.rates) return;
  const Rates& r = *options.rates;
  check_rate(r.link_bandwidth_bytes_per_s, "link_bandwidth_bytes_per_s");
  check_rate(r.compute_flops_per_s, "compute_flops_per_s");
  check_rate(r.memory_bytes_per_s, "memory_bytes_per_s");
  check_rate(r.vector_flops_per_s, "vector_flops_per_s");
  check_rate(r.transcendentals_per_s, "transcendentals_per_s");
  check_rate(r.interconnect_bytes_per_s, "interconnect_bytes_per_s");
  if (!(r.dot_product_seconds >= 0) || !std::isfinite(r.dot_product_seconds))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("CompileOptions.rates.dot_product_seconds must be >= 0 and finite, got {}", r.dot_product_seconds));
}

compiler::Target resolve_target(const CompileOptions& options) {
  runtime::Backend& backend = runtime::backend(options.backend);
  const runtime::DeviceFacts facts = backend.facts();
  compiler::Target t;
  t.backend = options.backend;
  t.rates = options.rates.value_or(facts.rates);
  t.copy_compute_share = facts.copy_compute_share;
  t.unpinned_copies_synchronous = facts.unpinned_copies_synchronous;
  t.device_memory_limit = options.device_memory_limit;
  if (t.device_memory_limit == 0 && facts.memory_bytes > 0) t.device_memory_limit = facts.free_memory_bytes;
  t.fit_to_limit = options.fit_to_limit;
  // Fused groups only where the backend runs them as kernels (the CUDA backend has no fused kernel
  // yet: there every equation stays its own kernel).
  t.fuse = options.fuse && backend.kernel(ir::op::fused) != nullptr;
  t.workspace = runtime::workspace_sizes(options.backend);
  return t;
}

CompiledProgram compile(const std::shared_ptr<const ir::Program>& lowered, const std::vector<char>& donated,
                        const CompileOptions& options) {
  check_options(options);
  CompiledProgram out;
  out.options = options;
  out.target = resolve_target(options);
  compiler::PlanOptions plan_options;
  plan_options.workspace = out.target.workspace;
  plan_options.donated = donated;
  plan_options.temporaries_in_outputs = true;
  out.program = compiler::run_pipeline(*compiler::lower_calls(lowered), out.target, {}, plan_options);
  out.plan = compiler::plan_memory(*out.program, /*outputs_external=*/false, plan_options);
  compiler::check_device_limit(*out.program, *out.plan, out.target.device_memory_limit);
  // Carried state the planner keeps in host memory (compiler/offload_state.h): the executable also
  // takes it where the caller traced it.
  runtime::ExecutableOptions run_options{donated, options.checked};
  auto kinds_of = [](const ir::Program& p, const std::vector<ir::ValueId>& values) {
    std::vector<MemoryKind> k;
    for (ir::ValueId v : values) k.push_back(p.type(v).kind);
    return k;
  };
  const std::vector<MemoryKind> traced_in = kinds_of(*lowered, lowered->inputs),
                                traced_out = kinds_of(*lowered, lowered->outputs);
  if (traced_in != kinds_of(*out.program, out.program->inputs) && traced_in.size() == out.program->inputs.size()) {
    run_options.traced_kinds = traced_in;
    run_options.traced_output_kinds = traced_out;
  }
  out.executable = std::make_shared<const runtime::Executable>(out.program, out.plan, options.backend,
                                                               std::move(run_options));
  return out;
}

}  // namespace ferry::driver
