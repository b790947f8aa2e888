#include "compiler/pipeline.h"

#include <fmt/format.h>

#include "compiler/auto_plan.h"
#include "compiler/cse.h"
#include "ir/dce.h"
#include "compiler/drop_names.h"
#include "compiler/fold_transposes.h"
#include "compiler/fuse.h"
#include "compiler/lower_collectives.h"
#include "compiler/place_collectives.h"
#include "compiler/lower_copies.h"
#include "compiler/materialize_outputs.h"
#include "compiler/place_copies.h"
#include "compiler/prune_scans.h"
#include "compiler/schedule.h"
#include "compiler/simplify.h"
#include "ferry/error.h"
#include "ir/printer.h"
#include "prims/verify.h"

namespace ferry::compiler {

namespace {

// Scans stop computing what nobody reads (prune_scans: differentiation leaves unused stacked
// cotangents and accumulators behind, each holding memory; after the automatic planner, which
// pairs a scan with its whole recomputation by their bodies as differentiation made them), names
// go (the policies have read them: drop_names), transposes read only by dot_generals go into
// their dimension numbers, every output gets its own buffer, transfers between memory kinds become
// asynchronous copies, elementwise chains become fused loops, the scheduler orders the rest for a
// low device peak, and the copies are placed around it by the cost model. Buffer assignment (plan_memory, an analysis run by compile) plans the final order.
std::vector<Pass> placement_passes(const Target& options) {
  std::vector<Pass> passes{
      {"prune_scans", prune_scans},
      {"drop_names", drop_names},
      {"fold_transposes", fold_transposes},
      {"materialize_outputs", materialize_outputs},
      {"lower_copies", lower_copies},
      {"lower_collectives", lower_collectives},
  };
  if (options.fuse) passes.push_back({"fuse", fuse_elementwise});
  passes.push_back({"schedule", schedule_for_memory});
  passes.push_back({"place_copies", [options](ir::Program& p) { return place_copies(p, options); }});
  passes.push_back({"place_collectives", [options](ir::Program& p) { return place_collectives(p, options); }});
  return passes;
}

// The placement passes on a copy of a program, then buffer assignment: what the automatic planner
// checks each of its choices with.
PlanTail placement_tail(const Target& options, const PlanOptions& plan_options) {
  return [options, plan_options](const ir::Program& program) {
    auto p = std::make_shared<ir::Program>(program);
    for (const Pass& pass : placement_passes(options)) pass.run(*p);
    std::shared_ptr<const MemoryPlan> plan = plan_memory(*p, /*outputs_external=*/false, plan_options);
    return std::pair{p, plan};
  };
}

}  // namespace

std::vector<Pass> passes_for(const Target& options, const PlanOptions& plan_options) {
  // Clean-ups first: differentiation leaves duplicated and unused work behind, and constants and
  // identities that simplify turns into scalars or removes. Then the automatic planner makes the
  // choices automatic checkpoints left open (it plans each candidate with the passes after it),
  // then placement.
  PlanTail tail = placement_tail(options, plan_options);
  // The planner poses its choice on the unfused plan (its candidates are values fusion renames).
  Target unfused = options;
  unfused.fuse = false;
  PlanTail pose_tail = placement_tail(unfused, plan_options);
  std::vector<Pass> passes{
      {"cse", eliminate_common_subexpressions},
      {"dce", ir::eliminate_dead_code},
      {"simplify", simplify},
      {"auto_plan",
       [options, tail, pose_tail, donated = plan_options.donated](ir::Program& p) {
         return plan_automatic(p, options, tail, nullptr, options.fuse ? &pose_tail : nullptr, donated);
       }},
  };
  for (Pass& pass : placement_passes(options)) passes.push_back(std::move(pass));
  return passes;
}

std::shared_ptr<const ir::Program> run_pipeline(const ir::Program& program, const Target& options,
                                                const std::function<void(const std::string&)>& dump,
                                                const PlanOptions& plan_options) {
  auto p = std::make_shared<ir::Program>(program);
  prims::verify(*p);
  if (dump) dump("// input\n" + ir::print(*p));
  for (const Pass& pass : passes_for(options, plan_options)) {
    bool changed = pass.run(*p);
    try {
      prims::verify(*p);
    } catch (const Error& e) {
      throw Error(ErrorCode::internal, fmt::format("pass {} produced an invalid program: {}", pass.name, e.message()));
    }
    if (dump) dump(fmt::format("// after {}{}\n{}", pass.name, changed ? "" : " (no change)", ir::print(*p)));
  }
  return p;
}

}  // namespace ferry::compiler
