// The compiler's driver: the one place that lists every pass in order. Reading this file (and
// pipeline.cpp) tells the whole compiler. The verifier runs before the first pass and after each.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/memory_plan.h"
#include "compiler/target.h"
#include "ir/program.h"

namespace ferry::compiler {

// A pass rewrites a program in place and says whether it changed anything.
struct Pass {
  std::string name;
  std::function<bool(ir::Program&)> run;
};

// The passes for these options, in order. `plan_options` are buffer assignment's (the automatic
// planner plans candidate programs as compile will).
std::vector<Pass> passes_for(const Target& target, const PlanOptions& plan_options = {});

// Runs the passes on a copy of `program`. If `dump` is set it receives the IR text after each pass
// (as "// after <pass>\n<text>"). A verifier failure after a pass is INTERNAL and names the pass.
std::shared_ptr<const ir::Program> run_pipeline(const ir::Program& program, const Target& target,
                                                const std::function<void(const std::string&)>& dump = {},
                                                const PlanOptions& plan_options = {});

}  // namespace ferry::compiler
