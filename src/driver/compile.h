// The compile driver: a lowered program to an executable. It resolves the backend once into a
// compiler::Target (rates, device memory, copy share, workspaces, which kernels exist), runs the
// compiler's pipeline with it, plans the memory and makes the runtime's executable: the one place
// where the compiler and the runtime meet.
#pragma once

#include <memory>
#include <vector>

#include "compiler/memory_plan.h"
#include "compiler/target.h"
#include "ferry/options.h"
#include "ir/program.h"
#include "runtime/executable.h"

namespace ferry::driver {

struct CompiledProgram {
  std::shared_ptr<const ir::Program> program;  // after the passes
  std::shared_ptr<const compiler::MemoryPlan> plan;
  std::shared_ptr<const runtime::Executable> executable;
  CompileOptions options;    // as given
  compiler::Target target;   // as resolved
};

// INVALID_ARGUMENT for options no compile accepts: a negative limit, a rate that is not positive
// and finite (dot_product_seconds: not >= 0).
void check_options(const CompileOptions& options);

// The target these options compile for: the backend's facts (UNIMPLEMENTED for a backend this build
// or machine lacks) with the options' choices over them. On a backend with memory of its own (a
// GPU), no limit means the memory free now.
compiler::Target resolve_target(const CompileOptions& options);

CompiledProgram compile(const std::shared_ptr<const ir::Program>& program, const std::vector<char>& donated,
                        const CompileOptions& options);

}  // namespace ferry::driver
