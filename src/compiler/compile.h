// The compile driver: from a lowered program to one ready to run on a backend. It checks the
// options, runs the pass pipeline (compiler/pipeline.h), plans memory with the backend's kernel
// workspaces, holds the plan to the device limit and binds every equation to a backend kernel. The
// tracing API (ferry/jit.h's Lowered::compile) and tools call it; it knows nothing of tracing.
#pragma once

#include <memory>
#include <vector>

#include "compiler/memory_plan.h"
#include "ferry/options.h"
#include "ir/program.h"
#include "runtime/executable.h"

namespace ferry::compiler {

struct CompiledProgram {
  std::shared_ptr<const ir::Program> program;  // after the passes
  std::shared_ptr<const MemoryPlan> plan;
  std::shared_ptr<const runtime::Executable> executable;
  CompileOptions options;  // as compiled with: a GPU's free memory and rates filled in (compile.cpp)
};

// INVALID_ARGUMENT for options no compile can use (a negative limit, a rate that is not positive
// and finite).
void check_options(const CompileOptions& options);

// `donated`: per program input, whether a call consumes it (jit's donate_argnums; may be empty).
// UNIMPLEMENTED for a backend this build lacks or a primitive its kernel table leaves out;
// RESOURCE_EXHAUSTED when the plan does not fit the device limit.
CompiledProgram compile(const std::shared_ptr<const ir::Program>& program, const std::vector<char>& donated,
                        const CompileOptions& options);

}  // namespace ferry::compiler
