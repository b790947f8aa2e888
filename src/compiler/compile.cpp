#include "compiler/compile.h"

#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "compiler/memory_analysis.h"
#include "compiler/pipeline.h"
#include "ferry/error.h"
#include "runtime/backend.h"
#include "runtime/workspace.h"
#include "compiler/lower_calls.h"

namespace ferry::compiler {
namespace {

// The cost model divides by its rates: a zero, negative, infinite or NaN rate would make every
// estimate meaningless (or NaN) and the placement of copies arbitrary.
void check_rate(double rate, std::string_view name) {
  if (!(rate > 0) || !std::isfinite(rate))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("CompileOptions.{} must be a positive, finite rate, got {}", name, rate));
}

}  // namespace

void check_options(const CompileOptions& options) {
  if (options.device_memory_limit < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("device_memory_limit must be >= 0 bytes (0 means no limit), got {}", options.device_memory_limit));
  check_rate(options.link_bandwidth_bytes_per_s, "link_bandwidth_bytes_per_s");
  check_rate(options.compute_flops_per_s, "compute_flops_per_s");
  check_rate(options.memory_bytes_per_s, "memory_bytes_per_s");
  check_rate(options.vector_flops_per_s, "vector_flops_per_s");
  check_rate(options.transcendentals_per_s, "transcendentals_per_s");
  if (!(options.dot_product_seconds >= 0) || !std::isfinite(options.dot_product_seconds))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("CompileOptions.dot_product_seconds must be >= 0 and finite, got {}", options.dot_product_seconds));
}

CompiledProgram compile(const std::shared_ptr<const ir::Program>& lowered, const std::vector<char>& donated,
                        const CompileOptions& given) {
  check_options(given);
  // On a backend with memory of its own (a GPU): no limit means the memory free now, and a rate
  // left at its default (the reference CPU machine's) is the device's. The automatic planner, the
  // cost model and the limit check see them.
  CompileOptions options = given;
  if (options.backend != "cpu") {
    const runtime::DeviceFacts facts = runtime::backend(options.backend).facts();
    if (facts.memory_bytes > 0) {
      const CompileOptions defaults;
      if (options.device_memory_limit == 0) options.device_memory_limit = facts.free_memory_bytes;
      auto device_default = [](double& rate, double reference, double device) {
        if (rate == reference && device > 0) rate = device;
      };
      device_default(options.link_bandwidth_bytes_per_s, defaults.link_bandwidth_bytes_per_s, facts.link_bandwidth_bytes_per_s);
      device_default(options.compute_flops_per_s, defaults.compute_flops_per_s, facts.compute_flops_per_s);
      device_default(options.memory_bytes_per_s, defaults.memory_bytes_per_s, facts.memory_bytes_per_s);
      device_default(options.vector_flops_per_s, defaults.vector_flops_per_s, facts.vector_flops_per_s);
      device_default(options.transcendentals_per_s, defaults.transcendentals_per_s, facts.transcendentals_per_s);
    }
  }
  // Fused groups only where the backend runs them as kernels (the CUDA backend has no fused kernel
  // yet: there every equation stays its own kernel).
  if (options.fuse && runtime::backend(options.backend).kernel(ir::op::fused) == nullptr) options.fuse = false;
  PlanOptions plan_options;
  plan_options.workspace = runtime::workspace_sizes(options.backend);
  plan_options.donated = donated;
  plan_options.temporaries_in_outputs = true;
  CompiledProgram out;
  out.options = options;
  out.program = run_pipeline(*lower_calls(lowered), options, {}, plan_options);
  out.plan = plan_memory(*out.program, /*outputs_external=*/false, plan_options);
  check_device_limit(*out.program, *out.plan, options.device_memory_limit);
  out.executable = std::make_shared<const runtime::Executable>(out.program, out.plan, options.backend,
                                                               runtime::ExecutableOptions{donated, options.checked});
  return out;
}

}  // namespace ferry::compiler
